package runner

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"wanlab/experiment"
	"wanlab/testrun"
)

// The keys of a test entry are the registry's, but those the experiment
// sets itself, and docs/experiments.md names those and the ones not
// available yet.
func TestKeysAreTheRegistrys(t *testing.T) {
	b := New(Config{})
	var owned, notYet []string
	for _, op := range testrun.Registry() {
		isKey := slices.Contains(b.Keys(), op.Key)
		switch op.Experiment {
		case testrun.ByExperiment:
			if op.Key != "test" {
				owned = append(owned, "`"+op.Key+"`")
			}
		case testrun.NotInExperiments:
			notYet = append(notYet, "`"+op.Key+"`")
		}
		if isKey == (op.Experiment == testrun.ByExperiment) {
			t.Errorf("%s: a key %v, but the registry says %v", op.Key, isKey, op.Experiment)
		}
	}
	doc, err := os.ReadFile("../../docs/experiments.md")
	if err != nil {
		t.Fatal(err)
	}
	last := len(owned) - 1
	if want := strings.Join(owned[:last], ", ") + " and " + owned[last] + " belong to the experiment"; !strings.Contains(string(doc), want) {
		t.Errorf("docs/experiments.md should say %q", want)
	}
	for _, k := range notYet {
		if !regexp.MustCompile(regexp.QuoteMeta(k) + `[^|]*is not available in experiment files yet`).Match(doc) {
			t.Errorf("docs/experiments.md should say that %s is not available in experiment files yet", k)
		}
	}
}

func testRun(test string, opts ...experiment.Option) *experiment.Run {
	return &experiment.Run{Case: &experiment.Case{Up: "netem delay 5ms", Down: "netem delay 6ms"}, Test: test, TestIndex: 1,
		Repetition: 1, Seed: 42, Options: opts, Title: "c1", File: "c001-" + test + "-r1.json.gz"}
}

// A test entry's options are set as their flags would be, and the results
// record the command line that stands for them.
func TestOptionsAsTheirFlags(t *testing.T) {
	b := New(Config{})
	r := testRun("tcp_upload",
		experiment.Option{Key: "duration", Values: []string{"10s"}},
		experiment.Option{Key: "sysctls", Values: []string{"net.ipv4.tcp_sack=0", "", "net.ipv4.tcp_dsack=0"}},
		experiment.Option{Key: "cc", Values: []string{""}},
		experiment.Option{Key: "pcap", Values: []string{"true"}})
	dir := t.TempDir()
	setup, x, err := b.prepare(r, dir+"/c001-tcp_upload-r1.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	want := "wanlab run tcp_upload --up netem delay 5ms --down netem delay 6ms --duration 10s --sysctl net.ipv4.tcp_sack=0 --sysctl net.ipv4.tcp_dsack=0 " +
		"--title c1 --seed 42 --pcap " + dir + "/c001-tcp_upload-r1.pcap"
	if got := strings.Join(x.argv, " "); got != want {
		t.Errorf("argv\n %s\nwant\n %s", got, want)
	}
	if setup.Duration.String() != "10s" || len(x.o.Sysctls) != 2 || x.o.CC != "" || x.o.Seed != 42 || x.o.Output != dir+"/c001-tcp_upload-r1.json.gz" {
		t.Errorf("options %+v", x.o)
	}
	r.Quick = true
	if x, err = b.options(r); err != nil || *x.o.Duration != QuickDuration || *x.o.Lead != QuickLeadTail {
		t.Errorf("quick: %v, %+v", err, x.o)
	}
}

// A problem with one option is reported at its key: the key the parser or
// the check names (testrun.BadOption.Key), not one read from a message.
func TestBadOptionAtItsKey(t *testing.T) {
	b := New(Config{})
	for _, c := range []struct {
		test string
		opt  experiment.Option
		key  string // "" for no one key of the entry
		want string
	}{
		{"tcp_nup", experiment.Option{Key: "streams", Values: []string{"0x"}}, "streams", `--streams "0x": give a whole number`},
		{"udp_flood", experiment.Option{Key: "rcvbuf", Values: []string{"65536"}}, "rcvbuf", "udp_flood has none"},
		{"tcp_upload", experiment.Option{Key: "rcvbuf", Values: []string{"-1"}}, "rcvbuf", "--rcvbuf -1: give a size"},
		{"tcp_upload", experiment.Option{Key: "tail", Values: []string{"300ms"}}, "tail", "whole number of steps"},
		{"ping", experiment.Option{Key: "tail", Values: []string{"1s"}}, "tail", "ping has none"},
		{"tcp_upload", experiment.Option{Key: "flent", Values: []string{"x.flent.gz"}}, "flent", "give flent: true"},
		{"tcp_upload", experiment.Option{Key: "at", Values: []string{"1s"}}, "at", "not available in experiment files yet"},
		{"tcp_upload", experiment.Option{Key: "duration", Values: []string{"1s", "2s"}}, "duration", "takes one value, and is given 2"},
		{"tcp_upload", experiment.Option{Key: "direct", Values: []string{"true"}}, "", "--direct joins the hosts"}, // the path's fault: --up
		{"nosuch", experiment.Option{Key: "title", Values: []string{"x"}}, "", `test "nosuch" is unknown`},
	} {
		err := b.Check(testRun(c.test, c.opt))
		var oe *experiment.OptionError
		switch {
		case err == nil || !strings.Contains(err.Error(), c.want):
			t.Errorf("%s %v: %v; want %q", c.test, c.opt, err, c.want)
		case c.key == "" && errors.As(err, &oe):
			t.Errorf("%s %v: %v is about key %q; want no one key", c.test, c.opt, err, oe.Key)
		case c.key != "" && (!errors.As(err, &oe) || oe.Key != c.key):
			t.Errorf("%s %v: %v; want an *experiment.OptionError of key %q", c.test, c.opt, err, c.key)
		}
	}
}

// A test entry's script reads the case's variables, as --set would give
// them, after the entry's own set: values; a run without a script gets
// none.
func TestScriptReadsCaseVariables(t *testing.T) {
	dir := t.TempDir()
	script := dir + "/tree.sh"
	if err := os.WriteFile(script, []byte("tc qdisc add dev eth1 root handle 1: htb default 10\ntc class add dev eth1 parent 1: classid 1:10 htb rate $rate ceil ${ceil}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := New(Config{})
	r := testRun("tcp_upload", experiment.Option{Key: "up_script", Values: []string{script}}, experiment.Option{Key: "set", Values: []string{"ceil=20mbit"}})
	r.Case.Up = ""
	r.Case.Vars = []experiment.Var{{Name: "rate", Value: "5mbit"}, {Name: "ceil", Value: "10mbit"}}
	setup, x, err := b.prepare(r, dir+"/c001-tcp_upload-r1.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(x.argv, " "); !strings.Contains(got, "--up-script "+script+" --set ceil=20mbit --set rate=5mbit") {
		t.Errorf("argv %s", got)
	}
	if !strings.Contains(setup.UpText, "htb rate 5Mbit ceil 20Mbit") {
		t.Errorf("up %s", setup.UpText)
	}
	x, err = b.options(testRun("tcp_upload"))
	if err != nil || len(x.o.ScriptVars) != 0 {
		t.Errorf("without a script: %v, set %v", err, x.o.ScriptVars)
	}
}
