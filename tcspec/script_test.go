package tcspec

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"wanlab/qdisc"
)

func readScript(t *testing.T, text string, vars map[string]string) *Script {
	t.Helper()
	s, err := ParseScript(text, ScriptOptions{Vars: vars})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The CI tree of the kernel comparison, as a script writes it (variables,
// a silenced clearing of the device, $U32 split into words), becomes one
// htb with its classes, leaves and filters; its tc lines (FormatChain,
// FormatScript) read back into the same chain.
func TestScriptTree(t *testing.T) {
	b, err := os.ReadFile("../examples/dscp3.sh")
	if err != nil {
		t.Fatal(err)
	}
	s := readScript(t, string(b), nil)
	if dev, err := s.Device(); err != nil || dev != "eth0" {
		t.Fatalf("Device() = %q, %v", dev, err)
	}
	chain, err := s.Chain(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) != 1 {
		t.Fatalf("chain = %#v", chain)
	}
	h := chain[0].(qdisc.HTBConfig)
	if h.Handle != 1 || h.Default != 0x30 || len(h.Classes) != 4 || len(h.Filters) != 3 {
		t.Fatalf("htb = %+v", h)
	}
	want := []struct {
		id, parent qdisc.ClassID
		rate       qdisc.Rate
		leaf       qdisc.Spec
	}{
		{0x10001, 0x10000, 1250000, nil},
		{0x10010, 0x10001, 125000, qdisc.FifoConfig{Variant: "pfifo", Limit: 100}},
		{0x10020, 0x10001, 250000, qdisc.FifoConfig{Variant: "bfifo", Limit: 150000}},
		{0x10030, 0x10001, 375000, qdisc.FifoConfig{Variant: "pfifo", Limit: 100}},
	}
	for i, w := range want {
		c := h.Classes[i]
		if c.ID != w.id || c.Parent != w.parent || c.Rate != w.rate || c.Ceil != 1250000 {
			t.Errorf("class %d = %+v", i, c)
		}
		if (w.leaf == nil) != (c.Leaf == nil) || w.leaf != nil && !reflect.DeepEqual(c.Leaf, []qdisc.Spec{w.leaf}) {
			t.Errorf("class %v leaf = %#v, want %#v", c.ID, c.Leaf, w.leaf)
		}
	}
	for i, tos := range []uint32{0x28, 0x48, 0x68} {
		f := h.Filters[i]
		if f.Prio != 1 || f.Protocol != qdisc.ProtocolIP || f.ClassID != want[i+1].id || len(f.Keys) != 1 || f.Keys[0] != (qdisc.U32Key{Val: tos << 16, Mask: 0xfc << 16}) {
			t.Errorf("filter %d = %+v", i, f)
		}
	}
	text := FormatChain(chain)
	back, err := ParseChain(text, Options{})
	if err != nil || !reflect.DeepEqual(back, chain) {
		t.Errorf("ParseChain(FormatChain) = %#v, %v\n%s", back, err, text)
	}
	lines := FormatScript(chain, "eth1")
	if lines[0] != "tc qdisc add dev eth1 root handle 1: htb default 30" ||
		lines[2] != "tc class add dev eth1 parent 1:1 classid 1:10 htb rate 1Mbit ceil 10Mbit" ||
		lines[5] != "tc qdisc add dev eth1 parent 1:10 handle 10: pfifo limit 100" ||
		lines[8] != "tc filter add dev eth1 parent 1: protocol ip prio 1 u32 match u32 0x00280000 0x00fc0000 at 0 flowid 1:10" {
		t.Errorf("FormatScript:\n%s", strings.Join(lines, "\n"))
	}
	again, err := readScript(t, strings.Join(lines, "\n"), nil).Chain(nil)
	if err != nil || !reflect.DeepEqual(again, chain) {
		t.Errorf("the script of FormatScript = %#v, %v", again, err)
	}
	// Re-written with its variables expanded, the script names the same
	// lines.
	if s2 := readScript(t, s.String(), nil); s2.String() != s.String() {
		t.Errorf("String() does not read back:\n%s\n---\n%s", s.String(), s2.String())
	}
	s2 := readScript(t, s.String(), nil)
	for i := range s.cmds {
		if s2.cmds[i].line != s.cmds[i].line {
			t.Errorf("command %d is on line %d of String(), %d of the script", i+1, s2.cmds[i].line, s.cmds[i].line)
		}
	}
}

// Seed 002's router script, its tc lines as published: netem as the root
// on eth0 and eth1, tbf on netem's class 1:1, run unchanged, each device a
// direction; a chain in tc syntax and the lines make the same chain.
func TestScriptSeed002(t *testing.T) {
	const script = `
# set up the router: netem delay and a token bucket on both interfaces
tc qdisc add dev eth0 root handle 1:0 netem delay $DELAY
tc qdisc add dev eth0 parent 1:1 handle 10: tbf rate $RATE buffer 10000 limit 30000
tc qdisc add dev eth1 root handle 1:0 netem delay $DELAY
tc qdisc add dev eth1 parent 1:1 handle 10: tbf rate $RATE buffer 10000 limit 30000
`
	s := readScript(t, script, map[string]string{"DELAY": "20ms", "RATE": "1mbit"})
	if got := s.Devices(); !reflect.DeepEqual(got, []string{"eth0", "eth1"}) {
		t.Fatalf("Devices() = %v", got)
	}
	want, err := ParseChain("netem delay 20ms; tbf rate 1mbit buffer 10000 limit 30000", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"eth0", "eth1"} {
		got, err := s.Dev(dev).Chain(nil)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %#v, %v; want %#v", dev, got, err, want)
		}
	}
	if err := s.CheckDevices("eth0"); err == nil || !strings.Contains(err.Error(), "line 5") {
		t.Errorf("CheckDevices(eth0) = %v, want line 5 (the first eth1 line)", err)
	}
	if _, err := s.Device(); err == nil || !strings.Contains(err.Error(), "--up-dev eth0 --down-dev eth1") {
		t.Errorf("Device() = %v, want the two devices named", err)
	}
	// Unset, a variable is refused with its fix.
	_, err = ParseScript(script, ScriptOptions{Vars: map[string]string{"DELAY": "20ms"}})
	var se *ScriptError
	if !errors.As(err, &se) || se.Line != 4 || !strings.Contains(err.Error(), "--set RATE=VALUE") {
		t.Errorf("without RATE: %v", err)
	}
}

// What the kernel does to a device's tree, command by command, as this
// kernel (Linux 6.18, tc 6.1) did it in a namespace: each refusal with its
// words; a silenced command the kernel refuses changes nothing.
func TestScriptKernelRules(t *testing.T) {
	const tree = `tc qdisc add dev d0 root handle 1: htb default 10
tc class add dev d0 parent 1: classid 1:1 htb rate 10mbit
tc class add dev d0 parent 1:1 classid 1:10 htb rate 1mbit ceil 10mbit
tc class add dev d0 parent 1:1 classid 1:20 htb rate 1mbit ceil 10mbit
tc filter add dev d0 parent 1: protocol ip prio 3 u32 match ip tos 0x10 0xff flowid 1:20
`
	for _, c := range []struct {
		line, want string
	}{
		{"tc qdisc add dev d0 root handle 2: htb", "NLM_F_REPLACE needed to override"},
		{"tc qdisc add dev d0 root htb", "Exclusivity flag on"},
		{"tc qdisc replace dev d0 root handle 1: htb default 20", "Change operation not supported"},
		{"tc qdisc change dev d0 root htb default 20", "Change operation not supported"},
		{"tc class add dev d0 parent 1:1 classid 1:10 htb rate 1mbit", "File exists"},
		{"tc class change dev d0 classid 1:11 htb rate 1mbit", "No such file or directory"},
		{"tc class del dev d0 classid 1:1", "HTB class in use"},
		{"tc class del dev d0 classid 1:20", "HTB class in use"},
		{"tc qdisc add dev d0 parent 1:1 handle 11: pfifo", "has child classes"},
		{"tc qdisc add dev d0 parent 1:99 handle 12: pfifo", "Specified class not found"},
		{"tc qdisc add dev d0 parent 7:1 pfifo", "Failed to find specified qdisc"},
		{"tc filter add dev d0 parent 1: protocol ipv6 prio 3 u32 match ip6 priority 0 0 flowid 1:10", "Protocol mismatch"},
		{"tc filter add dev d0 parent 1:55 protocol ip prio 3 u32 match ip tos 0 0 flowid 1:10", "Specified class doesn't exist"},
		{"tc filter del dev d0 parent 1: prio 4", "Filter with specified priority/protocol not found"},
		{"tc qdisc del dev d0 parent 1:10", "Cannot delete qdisc with handle of zero"},
		{"tc qdisc del dev d0 root handle 7:", "Invalid handle"},
		{"tc class add dev d0 parent 1: classid 2:3 htb rate 1mbit", "different qdiscs"},
	} {
		s, err := ParseScript(tree+c.line, ScriptOptions{})
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		_, err = s.Steps(nil)
		var se *ScriptError
		if !errors.As(err, &se) || se.Line != 6 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want line 6: %q", c.line, err, c.want)
		}
		quiet, err := ParseScript(tree+c.line+" 2>/dev/null", ScriptOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if steps, err := quiet.Steps(nil); err != nil || len(steps) != 5 {
			t.Errorf("%s 2>/dev/null: %d steps, %v; want the line skipped", c.line, len(steps), err)
		}
	}
	// What the kernel accepts: a class changed under another parent keeps
	// its own; a class whose parent does not exist is a root class; the
	// filter's class goes once the filter does; a change of another kind
	// grafts a new qdisc; filters without a prio count down from 49152.
	s := readScript(t, tree+`tc class change dev d0 parent 1: classid 1:10 htb rate 2mbit
tc class add dev d0 parent 1:5 classid 1:30 htb rate 1mbit
tc filter del dev d0 parent 1: prio 3
tc class del dev d0 classid 1:20
tc qdisc add dev d0 parent 1:10 handle 10: bfifo limit 3000
tc qdisc change dev d0 parent 1:10 pfifo limit 30
tc filter add dev d0 parent 1: u32 match ip dsfield 0x28 0xfc flowid 1:10
tc filter add dev d0 parent 1: protocol ip u32 match ip dsfield 0x30 0xfc flowid 1:10
`, nil)
	chain, err := s.Chain(nil)
	if err != nil {
		t.Fatal(err)
	}
	h := chain[0].(qdisc.HTBConfig)
	if len(h.Classes) != 3 || h.Classes[1].Parent != 0x10001 || h.Classes[1].Rate != 250000 || h.Classes[2].Parent != 0x10005 {
		t.Errorf("classes = %+v", h.Classes)
	}
	if !reflect.DeepEqual(h.Classes[1].Leaf, []qdisc.Spec{qdisc.FifoConfig{Variant: "pfifo", Limit: 30}}) {
		t.Errorf("1:10's leaf = %#v", h.Classes[1].Leaf)
	}
	if len(h.Filters) != 2 || h.Filters[0].Prio != 49152 || h.Filters[0].Protocol != qdisc.ProtocolAll || h.Filters[1].Prio != 49151 {
		t.Errorf("filters = %+v", h.Filters)
	}
	if w := qdisc.Warnings(h, nil); len(w) == 0 || !strings.Contains(strings.Join(w, "\n"), "parent 1:5 does not exist") {
		t.Errorf("warnings = %q", w)
	}
}

// A script applied to a running tree (wanlab set): its qdiscs have the
// handles FormatScript gives them, and each command is one step.
func TestScriptStepsOnTree(t *testing.T) {
	base, err := ParseChain("netem delay 20ms; tbf rate 10mbit burst 10000 limit 30000", Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := readScript(t, `tc qdisc change dev eth0 parent 1:1 handle 2: tbf rate 2mbit burst 10000 limit 30000
tc qdisc change dev eth0 root handle 1: netem delay 30ms`, nil)
	steps, err := s.Steps(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSteps(base, steps, nil); err != nil {
		t.Fatal(err)
	}
	want, _ := ParseChain("netem delay 30ms; tbf rate 2mbit burst 10000 limit 30000", Options{})
	if len(steps) != 2 || steps[1].Line != 2 || !reflect.DeepEqual(steps[1].Chain, want) {
		t.Errorf("steps = %+v", steps)
	}
	// The handle of the running tbf is 2:, not the 10: a script may have
	// given it.
	s = readScript(t, "tc qdisc change dev eth0 parent 1:1 handle 10: tbf rate 2mbit burst 10000 limit 30000", nil)
	if _, err := s.Steps(base); err == nil || !strings.Contains(err.Error(), "tbf 2: is already there") {
		t.Errorf("a change naming another handle: %v", err)
	}
	// A qdisc's own refusal comes at its line.
	s = readScript(t, "\n\ntc qdisc del dev eth0 root\ntc qdisc add dev eth0 root handle 1: htb\ntc class add dev eth0 parent 1: classid 1:1 htb rate 8bit burst 1g", nil)
	steps, err = s.Steps(base)
	if err == nil {
		err = CheckSteps(base, steps, nil)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "line 5") || !strings.Contains(err.Error(), "beyond tc's buffer") {
		t.Errorf("a tbf the qdisc refuses: %v", err)
	}
}

// The shell a script of tc lines uses: quotes, ${VAR:-DEFAULT},
// assignments, export, several commands on a line, || true, a comment
// after a command, a continued line, exit.
func TestScriptShell(t *testing.T) {
	s := readScript(t, `#!/bin/bash
set -e
export IFACE=eth0
RATE=${RATE:-5mbit}; LAT="50ms"
tc qdisc add dev "$IFACE" root handle 1: tbf \
   rate ${RATE} burst 32k latency $LAT || true   # the bottleneck
echo done; exit 0
tc qdisc add dev eth0 parent 1:1 pfifo
`, map[string]string{"RATE": "3mbit"})
	chain, err := s.Chain(nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ParseChain("tbf rate 3mbit burst 32k latency 50ms", Options{})
	if !reflect.DeepEqual(chain, want) {
		t.Errorf("chain = %#v, want %#v", chain, want)
	}
	if s.Len() != 1 || !s.cmds[0].quiet || s.cmds[0].line != 5 {
		t.Errorf("commands = %+v", s.cmds)
	}
}

// tc -s class show, as this machine printed it for an htb tree built by
// the lines below (Linux 6.18, iproute2 6.1): the class lines and their
// counters, for classes just made (their buckets full).
func TestShowClassAsTC(t *testing.T) {
	s := readScript(t, `tc qdisc add dev d0 root handle 1: htb
tc class add dev d0 parent 1: classid 1:1 htb rate 10mbit ceil 20mbit burst 15k cburst 3000 overhead 20 mpu 64 prio 3 quantum 1514
tc class add dev d0 parent 1:1 classid 1:10 htb rate 3mbit ceil 10mbit linklayer atm prio 9
tc class add dev d0 parent 1:1 classid 1:20 htb rate 30kbit ceil 10gbit
tc qdisc add dev d0 parent 1:10 handle 10: tbf rate 1mbit burst 10000 limit 30000
tc qdisc add dev d0 parent 10:1 handle 11: bfifo limit 5000`, nil)
	chain, err := s.Chain(nil)
	if err != nil {
		t.Fatal(err)
	}
	root, err := qdisc.Build(chain, &qdisc.Env{})
	if err != nil {
		t.Fatal(err)
	}
	qs, cs := Layout(root)
	var b strings.Builder
	for _, q := range qs {
		if q.Hidden {
			continue
		}
		at := Placement{Handle: q.Handle.String(), Parent: "root"}
		if !q.Root {
			at.Parent = q.Parent.String()
		}
		b.WriteString(ShowQdisc(q.Qdisc.Config(), at, nil) + "\n")
	}
	for _, c := range cs {
		line := ClassLine{Kind: c.Kind, ID: c.ID, Parent: c.Parent, Root: c.Root, Leaf: c.Leaf}
		if c.HTB != nil {
			cl := c.HTB.Class
			line.HTB, line.Level = &cl, c.HTB.Level
		}
		b.WriteString(ShowClass(line) + "\n")
		if c.HTB != nil {
			b.WriteString(ShowClassStats(c.HTB.Stats, &HTBXStats{Tokens: c.HTB.Tokens, CTokens: c.HTB.CTokens}))
		}
		b.WriteString("\n")
	}
	// The kernel lists the classes in its hash's order; wanlab in the
	// order they were made. The qdisc under the tbf has the handle wanlab
	// gives it (the lowest free, 2:), where the script named it 11:.
	const want = `qdisc htb 1: root refcnt 2 r2q 10 default 0 direct_packets_stat 0 direct_qlen 1000
qdisc tbf 10: parent 1:10 rate 1Mbit burst 10000b lat 160ms 
qdisc bfifo 2: parent 10:1 limit 5000b
class htb 1:1 root rate 10Mbit overhead 20 ceil 20Mbit burst 15Kb cburst 3000b 
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) 
 backlog 0b 0p requeues 0
 lended: 0 borrowed: 0 giants: 0
 tokens: 192000 ctokens: 18750

class htb 1:10 parent 1:1 leaf 10: prio 7 rate 3Mbit ceil 10Mbit linklayer atm burst 1599b cburst 1600b 
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) 
 backlog 0b 0p requeues 0
 lended: 0 borrowed: 0 giants: 0
 tokens: 66656 ctokens: 20000

class htb 1:20 parent 1:1 prio 0 rate 30Kbit ceil 10Gbit burst 1599b cburst 0b 
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) 
 backlog 0b 0p requeues 0
 lended: 0 borrowed: 0 giants: 0
 tokens: 6666656 ctokens: 15

class tbf 10:1 parent 10: leaf 2: 

`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// Variables that double each other are refused once a command grows past
// what any tc line is, at the line where it does.
func TestScriptExpansionBound(t *testing.T) {
	in := "A=aaaaaaaa\nB=$A$A$A$A$A$A$A$A\nC=$B$B$B$B$B$B$B$B\nD=$C$C$C$C$C$C$C$C\nE=$D$D$D$D$D$D$D$D\nF=$E$E$E$E$E$E$E$E\nG=$F$F$F$F$F$F$F$F\n"
	_, err := ParseScript(in, ScriptOptions{})
	var se *ScriptError
	if !errors.As(err, &se) || se.Line != 6 || !strings.Contains(err.Error(), "KiB once its variables are expanded") {
		t.Errorf("%v; want line 6 refused", err)
	}
}

// The scripts in examples/*.tc (the reference trees of docs/fidelity.md)
// read as they are: each becomes the chain its lines describe, and its tc
// lines (FormatScript) read back into the same chain.
func TestScriptExamples(t *testing.T) {
	for _, c := range []struct {
		file             string
		kinds            []string // the chain's qdiscs, root first
		classes, filters int      // the root htb's
	}{
		{"simpleqos.tc", []string{"htb"}, 4, 2},
		{"wondershaper.tc", []string{"htb"}, 4, 3},
		{"e2-router.tc", []string{"netem", "tbf"}, 0, 0},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile("../examples/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			chain, err := readScript(t, string(b), nil).Chain(nil)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, s := range chain {
				kinds = append(kinds, s.Kind())
			}
			if !reflect.DeepEqual(kinds, c.kinds) {
				t.Fatalf("chain %v, want %v", kinds, c.kinds)
			}
			if h, ok := chain[0].(qdisc.HTBConfig); ok && (len(h.Classes) != c.classes || len(h.Filters) != c.filters) {
				t.Errorf("htb with %d classes and %d filters, want %d and %d", len(h.Classes), len(h.Filters), c.classes, c.filters)
			}
			again, err := readScript(t, strings.Join(FormatScript(chain, "eth1"), "\n"), nil).Chain(nil)
			if err != nil || !reflect.DeepEqual(again, chain) {
				t.Errorf("the script of FormatScript = %#v, %v", again, err)
			}
		})
	}
}
