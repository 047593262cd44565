package testrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wanlab/results"
)

// A run whose up path is a script's htb tree: its results record the
// tree's tc lines and, at the end, its qdiscs and classes with their
// counts over the run, which the summary prints as tc would. The flood
// (best effort, TOS 0) goes to the default class, 1:20.
func TestRunScriptTree(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tree.sh")
	if err := os.WriteFile(file, []byte(`tc qdisc add dev eth1 root handle 1: htb default 20
tc class add dev eth1 parent 1: classid 1:1 htb rate 20mbit
tc class add dev eth1 parent 1:1 classid 1:10 htb rate 1mbit ceil 20mbit
tc class add dev eth1 parent 1:1 classid 1:20 htb rate ${RATE} ceil ${RATE}
tc qdisc add dev eth1 parent 1:20 handle 20: pfifo limit 30
tc filter add dev eth1 parent 1: protocol ip prio 1 u32 match ip dsfield 0xb8 0xfc flowid 1:10
`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := short("udp_flood", 2*time.Second)
	o.UpScript, o.ScriptVars, o.UDPRate = file, []string{"RATE=5mbit"}, "10mbit"
	doc := runDoc(t, o)
	if !strings.HasPrefix(doc.Run.Path.Up, "tc qdisc add dev DEV root handle 1: htb default 20; ") || doc.Run.Options["up_script"] != file || doc.Run.Options["set"] != "RATE=5mbit" {
		t.Errorf("path %q, options %v", doc.Run.Path.Up, doc.Run.Options)
	}
	up := routerReport(t, doc).Directions[0]
	if len(up.Qdiscs) != 2 || len(up.Classes) != 3 {
		t.Fatalf("qdiscs %+v, classes %+v", up.Qdiscs, up.Classes)
	}
	var c20 results.ClassReport
	for _, c := range up.Classes {
		if c.ClassID == "1:20" {
			c20 = c
		}
	}
	// 10 Mbit/s offered to a class of 5: about half is dropped at its
	// pfifo, and what is delivered went through it.
	if c20.Packets == 0 || c20.Packets > up.Delivered || up.Delivered-c20.Packets > 20 || c20.Dropped == 0 || c20.Dropped > up.Dropped {
		t.Errorf("class 1:20 %+v; direction delivered %d, dropped %d", c20, up.Delivered, up.Dropped)
	}
	if rate := float64(c20.Bytes) * 8 / 2.8e6; rate < 3 || rate > 6.5 {
		t.Errorf("class 1:20 sent %.2f Mbit/s over the run, want about 5 (less the lead and tail)", rate)
	}
	var b strings.Builder
	if err := results.WriteSummary(&b, doc, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), " up   tree of tc lines:\n        tc qdisc add dev DEV root handle 1: htb default 20\n        tc class add") ||
		!strings.Contains(b.String(), "class htb 1:20 parent 1:1 leaf 20: prio 0 rate 5Mbit ceil 5Mbit") {
		t.Errorf("the summary does not show the tree:\n%s", b.String())
	}
}
