package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"wanlab/internal/resultstest"
	"wanlab/netns"
	"wanlab/testrun"
)

// checkUsageLine runs wanlab with each case's arguments after prefix and
// checks that it is refused as a usage error: exit 2, nothing on stdout and
// one line on stderr, "wanlab: ...", that says want.
func checkUsageLine(t *testing.T, prefix []string, cases []usageCase) {
	t.Helper()
	for _, c := range cases {
		args := append(slices.Clip(prefix), c.args...)
		out, errOut, code := runWanlab(t, args...)
		msg := strings.TrimSpace(errOut)
		if code != exitUsage || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "wanlab: ") || !strings.Contains(msg, c.want) || out != "" {
			t.Errorf("wanlab %q: exit %d, stdout %q, stderr %q; want 2, nothing on stdout and one line with %q", args, code, out, errOut, c.want)
		}
	}
}

// Bad input to run, show and export exits 2 with one line that names the
// problem and the fix, before anything is created.
func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	checkUsageLine(t, nil, []usageCase{
		{[]string{"run", "rrul_cs8"}, `test "rrul_cs8" is unknown: use one of ping, tcp_upload`},
		{[]string{"run", "ping", "rrul"}, "run takes one test, and got 2 (ping rrul): run them one at a time"},
		{[]string{"run", "tcp_nup", "--streams", "0"}, "--streams 0: give 1 to 256 flows"},
		{[]string{"run", "udp_flood", "--udp-size", "0"}, "--udp-size 0: give a UDP payload from 24 to 65507 bytes"},
		{[]string{"run", "-o", ""}, "--output is empty: give a file name"},
		{[]string{"run", "--flent", ""}, "--flent is empty: give a file name"},
		{[]string{"run", "--pcap", ""}, "--pcap is empty: give a file name"},
		{[]string{"run", "--duration", "0"}, "--duration 0s: give a positive length"},
		{[]string{"run", "--duration", "ten"}, `"ten" is not a duration`},
		{[]string{"run", "--duration", "-5s"}, "--duration -5s"},
		{[]string{"run", "--duration", "9999h"}, "keep it within 24h"},
		{[]string{"run", "--step", "0"}, "--step 0s: give at least 10ms"},
		{[]string{"run", "--lead", "300ms"}, "whole number of steps"},
		{[]string{"run", "--cc", "up=cubic,sideways=bbr"}, "--cc up=cubic,down=bbr"},
		{[]string{"run", "--cc", "warp9"}, "--cc warp9: congestion control warp9 is not loaded (net.ipv4.tcp_available_congestion_control has "},
		{[]string{"run", "--cc", "up=cubic,up=bbr"}, `--cc "up=cubic,up=bbr" gives up twice`},
		{[]string{"run", "quic_upload", "--cc", "cubic"}, "quic_upload has none (its flow is QUIC, whose congestion control is quic-go's NewReno): drop --cc"},
		{[]string{"run", "ping", "--cc", "reno"}, "ping has no load flow: drop --cc"},
		{[]string{"run", "--lab", "wl-nosuch", "--seed", "5"}, "--seed: --lab wl-nosuch runs on that testbed, whose path draws from the seed it was started with"},
		{[]string{"run", "tcp_upload", "--sweep", "d=1ms,2ms", "--pcap", filepath.Join(dir, "x.pcap")}, "--pcap " + filepath.Join(dir, "x.pcap") + " with --sweep: each run writes its own"},
		{[]string{"run", "--lab", "nosuchlab"}, "--lab: testbed nosuchlab is not running; start it with `wanlab up --name nosuchlab`"},
		{[]string{"run", "--profile", "moon"}, `profile "moon" is unknown: use one of home, lte, geo, datacenter`},
		{[]string{"run", "--aqm", "choke"}, `--aqm "choke" is unknown: use one of fq_codel`},
		{[]string{"run", "--up", "netem delay fast"}, "--up:"},
		{[]string{"run", "--up", ""}, "empty chain"},
		{[]string{"run", "--at", "5s"}, "--at 5s changes nothing: follow it with the chains to set"},
		{[]string{"run", "--at", "soon", "--up", "netem delay 1ms"}, `"soon" is not a duration`},
		{[]string{"run", "--at", "2s", "--up", "netem delay 1ms", "--up", "netem delay 2ms"}, "--at 2s takes one --up"},
		{[]string{"run", "--at", "50s", "--up", "netem delay 1ms"}, "the time must lie inside the run"},
		{[]string{"run", "--streams", "3"}, "--streams is for tcp_nup, tcp_ndown, rrul_var, not rrul"},
		{[]string{"run", "tcp_nup", "--streams", "0x"}, `--streams "0x": give a whole number`},
		{[]string{"run", "--tos", "CS9"}, "neither a DSCP name"},
		{[]string{"run", "--sysctl", "kernel.panic=1"}, "only keys under net. are per host"},
		{[]string{"run", "--direct", "--profile", "lte"}, "--direct joins the hosts with a plain veth pair"},
		{[]string{"run", "--udp-rate", "1M"}, "--udp-rate and --udp-size are for udp_flood"},
		{[]string{"run", "-o", dir}, "is a directory: give a file name, e.g. " + filepath.Join(dir, "results.json.gz")},
		{[]string{"run", "-o", filepath.Join(dir, "none", "x.json.gz")}, "--output"},
		{[]string{"run", "--flent", "-", "-o", "-"}, "only one output can go to stdout"},
		{[]string{"run", "--frobnicate"}, "unknown flag: --frobnicate (see 'wanlab run --help')"},
		{[]string{"experiment", "run", "--frobnicate"}, "(see 'wanlab experiment run --help')"},
		{[]string{"run", "tfrc_upload", "--tx-qlen", "five"}, `--tx-qlen "five": give a whole number`},
		{[]string{"run", "tfrc_upload", "--tx-qlen", "-3"}, "--tx-qlen -3: give 0 (unbounded"},
		{[]string{"run", "tcp_upload", "--tx-qlen", "5"}, "tcp_upload has no TFRC flow"},
		{[]string{"run", "custom"}, "custom runs your own sender: give it with --client"},
		{[]string{"run", "custom", "--client", "true", "--server-wait", "1s"}, "there is no --server: drop it"},
		{[]string{"run", "custom", "--client", "true", "--server", "x", "--server-wait", "forever"}, `"forever" is not a duration`},
		{[]string{"run", "tcp_upload", "--client", "iperf3 -c @peer"}, "are the custom test's"},
		{[]string{"show"}, "accepts 1 arg"},
		{[]string{"show", filepath.Join(dir, "none.json.gz")}, "give a results file that wanlab run wrote"},
		{[]string{"export", filepath.Join(dir, "none.json.gz")}, "export needs --flent OUT"},
		{[]string{"export", "--flent", dir, "x"}, "is a directory"},
	})
	// The runs were in this process: their testbed would be run-PID.
	mine := "wl-" + fmt.Sprintf("run-%d-", os.Getpid())
	all, _ := netns.List()
	if i := slices.IndexFunc(all, func(n string) bool { return strings.HasPrefix(n, mine) }); i >= 0 {
		t.Errorf("bad input created namespace %s", all[i])
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("bad input wrote files: %v", ents)
	}
}

// --version prints the version results files record, and nothing else.
func TestVersion(t *testing.T) {
	out, errOut, code := runWanlab(t, "--version")
	if want := "wanlab " + wanlabVersion() + "\n"; code != exitOK || out != want || errOut != "" {
		t.Errorf("wanlab --version: exit %d, stdout %q, stderr %q; want exit 0 and %q", code, out, errOut, want)
	}
}

// export refuses to write the Flent file over the results file it reads,
// which would lose the run, and leaves that file as it was.
func TestExportKeepsItsInput(t *testing.T) {
	in := filepath.Join(t.TempDir(), "run.json.gz")
	if err := os.WriteFile(in, []byte("the run"), 0o644); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(filepath.Dir(in), "alias")
	if err := os.Symlink(in, alias); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{in, alias} {
		_, errOut, code := runWanlab(t, "export", "--flent", out, in)
		if code != exitUsage || !strings.Contains(errOut, "which would be lost: give another name") {
			t.Errorf("export --flent %s %s: exit %d, stderr %q; want exit 2 refusing to lose the input", out, in, code, errOut)
		}
	}
	if b, err := os.ReadFile(in); err != nil || string(b) != "the run" {
		t.Errorf("the input became %q (%v)", b, err)
	}
}

// TestEveryOptionIsAFlagAKeyAndARow: every option of the registry is a
// flag of wanlab run with the registry's help, a key of an experiment's
// test entries (unless the experiment sets it itself), and a row of
// docs/options.md holding the same help; and run has no flag the registry
// lacks (issue 17 item 1).
func TestEveryOptionIsAFlagAKeyAndARow(t *testing.T) {
	doc, err := os.ReadFile("../../docs/options.md")
	if err != nil {
		t.Fatal(err)
	}
	c := newRunCommand(&streams{in: strings.NewReader(""), out: new(strings.Builder), err: new(strings.Builder)})
	keys := newRunner(&streams{err: new(strings.Builder)}).Keys()
	for _, op := range testrun.Registry() {
		if op.Flag != "" {
			f := c.Flags().Lookup(op.Flag)
			switch {
			case f == nil:
				t.Errorf("%s is not a flag of wanlab run", op.Name())
			case f.Usage != op.Usage() || f.Shorthand != op.Short:
				t.Errorf("%s: the flag's help is %q (-%s), the registry's %q (-%s)", op.Name(), f.Usage, f.Shorthand, op.Usage(), op.Short)
			}
		}
		if isKey := slices.Contains(keys, op.Key); isKey != (op.Experiment != testrun.ByExperiment) {
			t.Errorf("key %s: an experiment key %v, but the registry says %v", op.Key, isKey, op.Experiment)
		}
		row := fmt.Sprintf("| `%s` |", op.Key)
		i := strings.Index(string(doc), row)
		if i < 0 {
			t.Errorf("docs/options.md has no row for %s", op.Key)
			continue
		}
		line := string(doc[strings.LastIndexByte(string(doc[:i]), '\n')+1:])
		line = line[:strings.IndexByte(line, '\n')]
		if !strings.Contains(line, testrun.MarkdownText(op.Usage())) || op.Flag != "" && !strings.Contains(line, "`--"+op.Flag+"`") {
			t.Errorf("docs/options.md's row of %s lacks its flag or its help %q:\n%s", op.Key, op.Usage(), line)
		}
	}
	c.Flags().VisitAll(func(f *pflag.Flag) {
		// --sweep makes run an experiment (docs/experiments.md): it is no
		// option of one run.
		if f.Name != "sweep" && slices.IndexFunc(testrun.Registry(), func(op *testrun.Option) bool { return op.Flag == f.Name }) < 0 {
			t.Errorf("run --%s is not in the registry (testrun.Registry)", f.Name)
		}
	})
}

// TestRunGraphOfARunStoppedBeforeItsFirstSample: a run interrupted before
// its first sample gets no graph and no failure of the graph's (which
// would bury why the run stopped); one with a sample is drawn.
func TestRunGraphOfARunStoppedBeforeItsFirstSample(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	setup := &testrun.Setup{}
	setup.Test.Plot = "all_scaled"
	doc := resultstest.Run("tcp_upload", "t", 1, resultstest.DefaultPath)
	doc.Run.Partial = true
	if graph, err := writeRunGraph(context.Background(), path, setup, doc); err != nil || graph == "" {
		t.Errorf("a partial run with samples: graph %q, %v; want one drawn", graph, err)
	}
	for i := range doc.Series {
		doc.Series[i].Samples = nil
	}
	path = filepath.Join(dir, "empty.json")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	graph, err := writeRunGraph(context.Background(), path, setup, doc)
	if !errors.Is(err, errNoSamples) || graph != "" {
		t.Errorf("no samples: graph %q, %v; want none, errNoSamples", graph, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "empty*.png")); len(m) > 0 {
		t.Errorf("no samples: drew %v", m)
	}
}
