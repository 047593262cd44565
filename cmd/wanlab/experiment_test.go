package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wanlab/catalog"
	"wanlab/experiment"
	"wanlab/experiment/runner"
)

// TestExperimentRefusesWhatRunRefuses: every option value that wanlab run
// refuses (exit 2) is refused in an experiment file's test entry too, at
// that option's line and naming its key, before anything runs: both go
// through testrun.PrepareGiven (issue 26 item 7: streams: 0 ran 4 flows and was
// recorded as 0; item 13: options that do not apply).
func TestExperimentRefusesWhatRunRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		test, key, value string
	}{
		{"tcp_nup", "streams", "0"},
		{"tcp_nup", "streams", "1000"},
		{"tcp_nup", "streams", "0x"},
		{"rrul", "streams", "3"},
		{"udp_flood", "udp_size", "0"},
		{"udp_flood", "udp_size", "70000"},
		{"udp_flood", "udp_rate", "fast"},
		{"tcp_upload", "udp_rate", "1M"},
		{"tcp_upload", "duration", "0"},
		{"tcp_upload", "duration", "ten"},
		{"tcp_upload", "duration", "-5s"},
		{"tcp_upload", "step", "0"},
		{"tcp_upload", "lead", "300ms"},
		{"ping", "lead", "1s"},
		{"tfrc_upload", "tx_qlen", "-3"},
		{"tcp_upload", "tx_qlen", "5"},
		{"tcp_upload", "cc", "warp9"},
		{"tcp_upload", "cc", "up=cubic,sideways=bbr"},
		{"tcp_upload", "cc", "up=cubic,up=bbr"},
		{"tcp_download", "cc", "up=cubic"},
		{"quic_upload", "cc", "cubic"},
		{"ping", "cc", "reno"},
		{"udp_flood", "cc", "cubic"},
		{"tcp_upload", "tos", "CS9"},
		{"tcp_upload", "sndbuf", "-1"},
		{"tcp_upload", "tcp_rmem", "1 2"},
		{"tcp_upload", "sysctls", "kernel.panic=1"},
		{"tcp_upload", "framing", "atm"},
		{"tcp_upload", "granularity", "skb"},
		{"tcp_upload", "profile", "moon"},
		{"tcp_upload", "aqm", "choke"},
		{"tcp_upload", "trace_up", filepath.Join(dir, "none.trace")},
		{"tcp_upload", "lab", "wl-nosuch-testbed"},
		{"tcp_upload", "server", "iperf3 -s"},
		{"tcp_upload", "ipv6", "maybe"},
		{"tcp_upload", "direct", "maybe"},
	} {
		flag := "--" + strings.ReplaceAll(c.key, "_", "-")
		if c.key == "sysctls" {
			flag = "--sysctl"
		}
		value := c.value
		_, errOut, code := runWanlab(t, "run", c.test, flag, value)
		if code != exitUsage {
			t.Errorf("wanlab run %s %s %q: exit %d (%s); want 2", c.test, flag, value, code, strings.TrimSpace(errOut))
			continue
		}
		quoted, _ := json.Marshal(c.value)
		file := filepath.Join(dir, "x.yaml")
		text := fmt.Sprintf("tests:\n  - test: %s\n    %s: %s\n", c.test, c.key, quoted)
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, errOut, code = runWanlab(t, "experiment", "run", file, "--dry-run")
		if want := file + ":3: " + c.key + ": "; code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("experiment entry {test: %s, %s: %s}: exit %d, %q; want 2 and %q", c.test, c.key, quoted, code, errOut, want)
		}
	}
}

// TestShippedExamplesPass: every example experiment passes the whole
// check a run makes (each case's options through testrun.PrepareGiven), as
// --dry-run does without root.
func TestShippedExamplesPass(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	for _, f := range files {
		out, errOut, code := runWanlab(t, "experiment", "run", f, "--dry-run")
		if code != exitOK || !strings.Contains(out, "runs") {
			t.Errorf("experiment run %s --dry-run: exit %d\n%s", f, code, errOut)
		}
	}
}

// TestShippedExamplesPinAndReference: every TCP test entry of every
// example pins its congestion control, so that no run takes the machine's
// default (issue 18: E3 ran on BBR, this machine's default); and each
// example's published figures (examples/NAME.ref.csv) parse, name values
// of its grid, and each appears in a table that one of the `wanlab table
// ... --reference` commands of the example's header lays out, made here
// from synthetic runs of the example's every case. A worked example that
// reproduces no seed (E4) has no such figures.
func TestShippedExamplesPinAndReference(t *testing.T) {
	// noSeed are the worked examples that reproduce no seed's
	// measurement, so have no published figures to set beside theirs.
	noSeed := map[string]string{
		"e4-rtt-fairness.yaml": "E4 runs Flent's rtt_fair4be on a dumbbell as a worked example, not a seed's experiment",
	}
	files, _ := filepath.Glob("../../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			content, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b := shippedBackend{newRunner(&streams{in: strings.NewReader(""), out: io.Discard, err: io.Discard})}
			p, err := experiment.Load(f, content, experiment.LoadOptions{Backend: b, TC: tcOptions()})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range p.Cases {
				for _, r := range c.Runs {
					if r.Repetition != 1 || !runsTCP(t, r.Test) {
						continue
					}
					if cc, _ := r.Option("cc"); len(cc) != 1 || cc[0] == "" {
						t.Errorf("case %d (%s), %s: no cc: a TCP test entry pins its congestion control", c.Number, c.Label(), r.Test)
					}
				}
			}

			if why, ok := noSeed[filepath.Base(f)]; ok {
				t.Logf("no published figures: %s", why)
				return
			}
			refName := "examples/" + strings.TrimSuffix(filepath.Base(f), ".yaml") + ".ref.csv"
			ref, err := experiment.ReadReference("../../" + refName)
			if err != nil {
				t.Fatal(err)
			}
			commands := headerTables(content, refName)
			if len(commands) == 0 {
				t.Fatalf("the header names no `wanlab table ... --reference %s`", refName)
			}
			p.Pause = 0
			dir := filepath.Join(t.TempDir(), p.Name+"-results")
			if _, err := experiment.Execute(context.Background(), p, b, experiment.ExecOptions{Dir: dir}); err != nil {
				t.Fatal(err)
			}
			shown := map[int]bool{}
			for _, o := range commands {
				o.Reference = ref
				o.Warnf = func(format string, args ...any) { t.Errorf(format, args...) }
				tables, err := experiment.Tables(dir, o)
				if err != nil {
					t.Errorf("table --where %v --series %q --stat %s: %v", o.Where, o.Series, o.Stat, err)
					continue
				}
				for _, tb := range tables {
					for _, row := range tb.Cells {
						for _, cell := range row {
							if cell.Reference != nil {
								shown[cell.Reference.Line] = true
							}
						}
					}
				}
			}
			for _, row := range ref.Rows {
				if !shown[row.Line] {
					t.Errorf("%s:%d: %v %q %s = %g is in no table of the example's header", refName, row.Line, row.Vars, row.Series, row.Stat, row.Value)
				}
			}
		})
	}
}

// shippedBackend checks an example's runs as `wanlab experiment run`
// does and writes synthetic results for them (resultsBackend's).
type shippedBackend struct{ *runner.Backend }

func (b shippedBackend) Run(ctx context.Context, r *experiment.Run, path string) error {
	return resultsBackend{}.Run(ctx, r, path)
}

// runsTCP says whether a test has a TCP load flow.
func runsTCP(t *testing.T, test string) bool {
	ct, err := catalog.Lookup(test, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fl := range ct.Flows {
		if fl.Transport == catalog.TCP {
			return true
		}
	}
	return false
}

// headerTables returns the table options of the `wanlab table DIR ...
// --reference REF` commands an experiment file's header comments give,
// each line one command with --where, --series, --stat and --reference.
func headerTables(content []byte, ref string) []experiment.TableOptions {
	var out []experiment.TableOptions
	for _, line := range strings.Split(string(content), "\n") {
		line, ok := strings.CutPrefix(strings.TrimSpace(line), "#")
		if !ok || !strings.HasPrefix(strings.TrimSpace(line), "wanlab table ") {
			continue
		}
		if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		args := quotedFields(line)[3:]
		o := experiment.TableOptions{Stat: "mean", Where: map[string][]string{}}
		hasRef := false
		for i := 0; i+1 < len(args); i += 2 {
			switch args[i] {
			case "--where":
				k, v, _ := strings.Cut(args[i+1], "=")
				o.Where[k] = strings.Split(v, ",")
			case "--series":
				o.Series = args[i+1]
			case "--stat":
				o.Stat = args[i+1]
			case "--reference":
				hasRef = args[i+1] == ref
			}
		}
		if hasRef {
			out = append(out, o)
		}
	}
	return out
}

// quotedFields splits a command line at spaces, keeping "double quoted"
// words whole, as a shell does for these simple lines.
func quotedFields(s string) []string {
	var out []string
	var word strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				out = append(out, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, word.String())
	}
	return out
}

// TestExperimentListForOneValue: a list for an option that takes one value
// is refused at its line; it used to run with the last value alone.
func TestExperimentListForOneValue(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x.yaml")
	os.WriteFile(file, []byte("tests:\n  - test: tcp_upload\n    duration: [10s, 20s]\n    sysctls: [net.ipv4.tcp_sack=0, net.ipv4.tcp_dsack=0]\n"), 0o644)
	_, errOut, code := runWanlab(t, "experiment", "run", file, "--dry-run")
	if want := file + ":3: duration: takes one value, and is given 2 (10s, 20s)"; code != exitUsage || !strings.Contains(errOut, want) || strings.Contains(errOut, "sysctls") {
		t.Errorf("exit %d, %q; want 2 and only %q", code, errOut, want)
	}
}
