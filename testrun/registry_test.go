package testrun

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wanlab/catalog"
	"wanlab/internal/rundir"
	"wanlab/lab"
	"wanlab/tcspec"
)

// TestOptionsApplyOrAreRefused: every option, given in a run of every
// test (and with --direct, and with --lab), is either taken or refused
// with one message that names the option, the test (or the mode that
// refuses it) and the fix, as its registry entry says (issue 17 item 2):
// no option is recorded as if it had done something it did not.
func TestOptionsApplyOrAreRefused(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "TRACE")
	if err := os.WriteFile(trace, []byte("1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeScripts(t, dir)
	t.Chdir(dir) // the default results file's directory
	type context struct {
		name, test string
		mode       string // "--direct" or "--lab", or "" for the run's own testbed
	}
	var contexts []context
	for _, name := range catalog.Names() {
		contexts = append(contexts, context{name: name, test: name})
	}
	contexts = append(contexts, context{"tcp_upload --direct", "tcp_upload", "--direct"}, context{"tcp_upload --lab", "tcp_upload", "--lab"})
	refusals := 0
	for _, op := range Registry() {
		if op.Flag == "" {
			continue // the test itself
		}
		for _, c := range contexts {
			if op.Name() == c.mode {
				continue
			}
			o := Defaults()
			o.Test = c.test
			given := map[string]bool{}
			if c.test == "custom" {
				o.Client, o.Server = "true", "true"
			}
			switch c.mode {
			case "--direct":
				o.Direct, given["direct"] = true, true
			case "--lab":
				o.Lab, given["lab"] = "wl-nosuch", true
			}
			setExample(t, &o, op.Key, dir)
			if op.Key == "trace_up" || op.Key == "trace_down" {
				*map[string]*string{"trace_up": &o.TraceUp, "trace_down": &o.TraceDown}[op.Key] = trace
			}
			given[op.Flag] = true
			if op.Key == "at" {
				given["up"] = true
			}
			// The scripts' companions: a device names a direction of
			// --script, and --script needs one; --set a script's
			// variables.
			for _, with := range map[string][][2]string{
				"up_dev":   {{"script", "DIR/both.tc"}, {"down_dev", "eth0"}},
				"down_dev": {{"script", "DIR/both.tc"}, {"up_dev", "eth1"}},
				"script":   {{"up_dev", "eth1"}, {"down_dev", "eth0"}},
				"set":      {{"up_script", "DIR/up.tc"}},
			}[op.Key] {
				if err := LookupOption(with[0]).Set(&o, strings.ReplaceAll(with[1], "DIR", dir)); err != nil {
					t.Fatal(err)
				}
			}
			test, _ := catalog.Lookup(c.test, catalog.Options{Streams: o.Streams})
			why := op.NotFor != nil && op.NotFor(test, &o) != ""
			_, err := PrepareGiven(o, func(f string) bool { return given[f] }, tcspec.Options{})
			var bad *BadOption
			switch {
			case why:
				refusals++
				msg := op.NotFor(test, &o)
				about := c.test
				plain := o
				plain.Direct, plain.Lab = false, ""
				if c.mode != "" && op.NotFor(test, &plain) == "" {
					about = c.mode // the mode refuses it, not the test
				}
				// --direct and --lab refuse each other: either may say so.
				modeKey := strings.TrimPrefix(c.mode, "--")
				if !errors.As(err, &bad) || bad.Key != op.Key && bad.Key != modeKey || err.Error() != msg {
					t.Errorf("%s in %s: %v (key %q); want the registry's refusal %q", op.Name(), c.name, err, keyOf(err), msg)
				}
				if !strings.Contains(msg, op.Name()) || !strings.Contains(msg, about) || !strings.Contains(msg, "drop") || strings.Contains(msg, "\n") {
					t.Errorf("%s in %s: the refusal %q should name the option, %s and the fix, on one line", op.Name(), c.name, msg, about)
				}
			case c.mode == "--lab" || op.Key == "lab":
				// Nothing of the lab runs here: the option passed if the
				// missing testbed is all that Prepare refused.
				if err == nil || !errors.As(err, &bad) || bad.Key != "lab" || !strings.Contains(err.Error(), "is not running") {
					t.Errorf("%s in %s: %v; want it taken, and only the missing testbed refused", op.Name(), c.name, err)
				}
			case err != nil && op.Key != "cc" && needsMissingCC(test) && keyOf(err) == "test" && strings.Contains(err.Error(), "is not loaded"):
				// cubic_westwood's westwood, on a kernel without it: the
				// test is refused whatever the option, unless --cc
				// replaces it (TestPrepareFlowCongestionControl).
			case err != nil && (test.Clients > 1 || test.Servers > 1) && (op.Key == "servers" || op.Key == "dataplane") && keyOf(err) == op.Key:
				// The example's value does not fit a test of many hosts
				// (--servers 2 for rtt_fair's 4, the packet plane, which
				// carries two hosts): the refusal names the value, not the
				// option, and the dumbbell's tests check it.
			case err != nil && rundir.Rootless() && op.Key == "dataplane" && strings.Contains(err.Error(), "needs real root"):
				// The packet plane, in a user namespace
				// (TestPrepareRootless).
			case err != nil:
				t.Errorf("%s %q in %s: %v; want it taken", op.Name(), examples[op.Key], c.name, err)
			}
		}
	}
	if refusals == 0 {
		t.Fatal("nothing was refused: is the registry's NotFor wired?")
	}
}

// writeScripts writes the scripts the options' examples name into dir:
// an htb tree for up, seed 002's netem and tbf for down, both by device.
func writeScripts(t *testing.T, dir string) {
	t.Helper()
	for name, text := range map[string]string{
		"up.tc": `tc qdisc add dev eth1 root handle 1: htb default 10
tc class add dev eth1 parent 1: classid 1:10 htb rate ${RATE:-1mbit}`,
		"down.tc": `tc qdisc add dev eth0 root handle 1:0 netem delay 20ms
tc qdisc add dev eth0 parent 1:1 handle 10: tbf rate 1mbit buffer 10000 limit 30000`,
		"both.tc": `tc qdisc add dev eth0 root handle 1:0 netem delay 20ms
tc qdisc add dev eth1 root handle 1:0 netem delay 20ms`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func keyOf(err error) string {
	var bad *BadOption
	if errors.As(err, &bad) {
		return bad.Key
	}
	return "(not a *BadOption)"
}

// A value an option's type cannot take is refused by the option's own
// parser, the same for the flag and the experiment file, naming the option,
// the value and what to give; a given zero that Options cannot tell from
// "not given" is refused naming the fix.
func TestOptionParsers(t *testing.T) {
	for _, c := range []struct{ key, value, want string }{
		{"streams", "x", `--streams "x": give a whole number`},
		{"streams", "99999999999999999999", `--streams "99999999999999999999" is out of range: give a whole number that fits`},
		{"seed", "-1", `--seed "-1": give a whole number from 0 up`},
		{"ipv6", "maybe", `--ipv6 "maybe": give true or false`},
		{"duration", "ten", `--duration "ten" is not a duration: write e.g. 30s, 500ms or 2m`},
		{"tx_qlen", "five", `--tx-qlen "five": give a whole number`},
		{"at", "soon", `--at "soon" is not a duration: write the time into the run, e.g. --at 20s`},
		{"up", " ", "--up: empty chain: give qdiscs in tc syntax"},
	} {
		o := Defaults()
		err := LookupOption(c.key).Set(&o, c.value)
		var bad *BadOption
		if !errors.As(err, &bad) || bad.Key != c.key || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s %q: %v (key %q); want %q", c.key, c.value, err, keyOf(err), c.want)
		}
	}
	o := Defaults()
	for _, op := range Registry() {
		if op.ZeroFix == "" {
			continue
		}
		if err := CheckGiven(o, func(f string) bool { return f == op.Flag }); !IsBadOption(err) || !strings.Contains(err.Error(), op.ZeroFix) {
			t.Errorf("%s given its zero value: %v; want its fix %q", op.Name(), err, op.ZeroFix)
		}
	}
	// Repeatable options add; the others take the last value.
	for _, v := range []string{"net.ipv4.tcp_sack=0", "net.ipv4.tcp_dsack=0"} {
		LookupOption("sysctls").Set(&o, v)
	}
	if got := LookupOption("sysctls").Texts(&o); len(got) != 2 {
		t.Errorf("two --sysctl give %q", got)
	}
}

// needsMissingCC reports whether a TCP flow of test sets a congestion
// control the kernel has not loaded.
func needsMissingCC(test catalog.Test) bool {
	for _, cc := range test.CongestionControls() {
		if lab.CheckLoadedCC(cc) != nil {
			return true
		}
	}
	return false
}
