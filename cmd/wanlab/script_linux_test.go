package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A testbed built from a script of tc lines: status prints its tree as tc
// -s qdisc show and tc -s class show do; set applies a script to the
// running tree command by command, and refuses one with a line the kernel
// would refuse before changing anything, naming the line of the file.
func TestCLIScriptTree(t *testing.T) {
	wanlabBin(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tree := write("tree.sh", `#!/bin/sh
tc qdisc del dev eth1 root 2>/dev/null
tc qdisc add dev eth1 root handle 1: htb default 20
tc class add dev eth1 parent 1: classid 1:1 htb rate ${RATE}
tc class add dev eth1 parent 1:1 classid 1:10 htb rate 1mbit ceil ${RATE}
tc class add dev eth1 parent 1:1 classid 1:20 htb rate 9mbit ceil ${RATE}
tc qdisc add dev eth1 parent 1:10 handle 10: pfifo limit 50
tc filter add dev eth1 parent 1: protocol ip prio 1 u32 match ip dsfield 0xb8 0xfc flowid 1:10
`)
	name := uniqueName()
	upDetached(t, name, "--script", tree, "--up-dev", "eth1", "--down-dev", "eth0", "--set", "RATE=10mbit")
	out := mustCLI(t, "status", name)
	for _, want := range []string{
		"up (client → server):\n  tc qdisc add dev DEV root handle 1: htb default 20\n  tc class add dev DEV parent 1: classid 1:1 htb rate 10Mbit\n",
		"\nqdisc htb 1: root refcnt 2 r2q 10 default 0x20 direct_packets_stat 0 direct_qlen 1000\n",
		"\nqdisc pfifo 10: parent 1:10 limit 50p\n",
		"\nclass htb 1:1 root rate 10Mbit ceil 10Mbit burst 1600b cburst 1600b \n",
		"\nclass htb 1:10 parent 1:1 leaf 10: prio 0 rate 1Mbit ceil 10Mbit burst 1600b cburst 1600b \n",
		"\nclass htb 1:20 parent 1:1 prio 0 rate 9Mbit ceil 10Mbit burst 1598b cburst 1600b \n", // 1600 bytes at 9 Mbit/s are 1422 µs of ticks, 1598 bytes again
		"\n lended: 0 borrowed: 0 giants: 0\n tokens: 200000 ctokens: 20000\n",
		"down (server → client): direct (no qdisc)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	// A class changed in place, and a leaf added, by a script on the
	// running tree.
	change := write("change.sh", "tc class change dev eth0 parent 1:1 classid 1:10 htb rate 2mbit ceil 10mbit\ntc qdisc add dev eth0 parent 1:20 handle 20: bfifo limit 30000\n")
	set := mustCLI(t, "set", name, "--up-script", change)
	if !strings.Contains(set, name+" up: line 1: tc class change dev eth0 parent 1:1 classid 1:10 htb rate 2mbit ceil 10mbit\n  1 htb: changed\n") ||
		!strings.Contains(set, name+" up: line 2: tc qdisc add dev eth0 parent 1:20 handle 20: bfifo limit 30000\n") {
		t.Errorf("set printed:\n%s", set)
	}
	out = mustCLI(t, "status", name)
	if !strings.Contains(out, "class htb 1:10 parent 1:1 leaf 10: prio 0 rate 2Mbit ceil 10Mbit") || !strings.Contains(out, "\nqdisc bfifo 20: parent 1:20 limit 30000b\n") {
		t.Errorf("status after set:\n%s", out)
	}
	// The filter still sends to 1:10: its deletion is refused at its
	// line, and nothing of the script is applied.
	bad := write("bad.sh", "tc class change dev eth0 parent 1:1 classid 1:20 htb rate 5mbit ceil 10mbit\n\ntc class del dev eth0 classid 1:10\n")
	_, errOut, code := cli(t, "set", name, "--up-script", bad)
	if code != 2 || !strings.Contains(errOut, "line 3") || !strings.Contains(errOut, "HTB class in use") {
		t.Errorf("set with a class in use: exit %d, %q", code, errOut)
	}
	if out := mustCLI(t, "status", name); !strings.Contains(out, "class htb 1:20 parent 1:1 leaf 20: prio 0 rate 9Mbit") {
		t.Errorf("a refused script changed the tree:\n%s", out)
	}
}
