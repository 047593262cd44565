package calibrate

import (
	"os"
	"strings"
	"testing"
)

// The tree test floods each leaf class by the first DSCP that reaches it
// (DSCP 0 goes to the default class), at 120 % of the smallest ceil on
// its way up; a script and a chain, or a test of the wrong kind, are
// refused.
func TestTreeFlows(t *testing.T) {
	script, err := os.ReadFile("../examples/dscp3.sh")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Script: string(script)}
	specs, err := cfg.Check()
	if err != nil {
		t.Fatal(err)
	}
	flows, err := treeFlows(specs, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		class string
		tos   uint8
	}{{"1:30", 0}, {"1:10", 0x28}, {"1:20", 0x48}}
	if len(flows) != len(want) {
		t.Fatalf("flows %+v", flows)
	}
	for i, w := range want {
		if f := flows[i]; f.class.String() != w.class || f.tos != w.tos || f.rate != 12e6 {
			t.Errorf("flow %d = %v tos %#x at %d bit/s, want %s tos %#x at 12 Mbit/s", i, f.class, f.tos, f.rate, w.class, w.tos)
		}
	}
	_, sc, err := scriptChain(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cmds := scriptCommands(sc, "wl-r1"); len(cmds) != 12 || cmds[0].String() != "tc qdisc del dev wl-r1 root" || !cmds[0].quiet ||
		cmds[11].String() != "tc filter add dev wl-r1 parent 1: protocol ip prio 1 u32 match ip dsfield 0x68 0xfc flowid 1:30" {
		t.Errorf("commands %v", cmds)
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Script: string(script), Chain: "tbf rate 1mbit burst 10k latency 1ms"}, "give one"},
		{Config{Script: string(script), Tests: []Test{UDP}}, "tree test"},
		{Config{Chain: "tbf rate 1mbit burst 10k latency 1ms", Tests: []Test{Tree}}, "give --script"},
		{Config{Script: "tc qdisc add dev eth0 root tbf rate 1mbit burst 10k latency 1ms"}, "no tree of classes"},
		{Config{Script: "tc qdisc add dev eth0 root handle 1: htb\ntc class add dev eth0 parent 1: classid 1:1 htb rate 1mbit\ntc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip sport 80 0xffff flowid 1:1"}, "no DSCP reaches"},
		{Config{Script: "tc qdisc add dev eth0 root handle 1: htb\n\ntc class add dev eth0 parent 1: classid 1:1 htb rate"}, "line 3"},
	} {
		if _, err := c.cfg.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.cfg, err, c.want)
		}
	}
}

// The tree test's rows are per class, goodput within 1 % and drops
// within 10 %.
func TestCompareTree(t *testing.T) {
	ms := []Measurement{
		{Engine: Kernel, Test: Tree, Classes: []ClassFigures{{Class: "1:10", GoodputBps: 1.62e6, Drops: 3422}, {Class: "1:20", GoodputBps: 3.24e6, Drops: 2870}}},
		{Engine: Wanlab, Test: Tree, Classes: []ClassFigures{{Class: "1:10", GoodputBps: 1.60e6, Drops: 3422}, {Class: "1:20", GoodputBps: 3.239e6, Drops: 3200}}},
	}
	rows := Compare(ms)
	if len(rows) != 4 {
		t.Fatalf("rows %+v", rows)
	}
	for i, want := range []struct {
		class  string
		metric Metric
		within bool
	}{{"1:10", Goodput, false}, {"1:10", Drops, true}, {"1:20", Goodput, true}, {"1:20", Drops, false}} {
		r := rows[i]
		if r.Class != want.class || r.Metric != want.metric || r.Within != want.within || r.Tolerance != TreeTolerance(want.metric) {
			t.Errorf("row %d = %+v, want %s %s within %v", i, r, want.class, want.metric, want.within)
		}
	}
	var b strings.Builder
	PrintRows(&b, rows)
	if !strings.Contains(b.String(), "tree  goodput 1:10           1.620 Mbit/s         1.600 Mbit/s   0.9877  NO (±1 %)") {
		t.Errorf("PrintRows:\n%s", b.String())
	}
}
