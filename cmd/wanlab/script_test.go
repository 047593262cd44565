package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scriptHead is a valid start of a script: an htb with a parent class, a
// leaf and a filter; the line under test comes at line 6.
const scriptHead = `tc qdisc add dev eth0 root handle 1: htb default 20
tc class add dev eth0 parent 1: classid 1:1 htb rate 10mbit
tc class add dev eth0 parent 1:1 classid 1:10 htb rate 1mbit ceil 10mbit
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0x28 0xfc flowid 1:10
# the line under test:
`

// badScriptLines are lines of a script that tc would refuse, that the
// kernel would refuse on the tree the lines before make, or that wanlab
// cannot emulate, each with a word of the message that names the fix.
var badScriptLines = []struct{ line, want string }{
	// tc's own reading of the options.
	{"tc qdisc add dev eth0 parent 1:10 handle 10: pfifo limt 10", `"limt" is not a pfifo option`},
	{"tc qdisc add dev eth0 parent 1:10 handle 10: sfb target 20", `qdisc "sfb" is not supported`},
	{"tc qdisc add dev eth0 parent 1:10 handle 10: choke limit 1000 bandwidth 10mbit", `qdisc "choke" is not supported`},
	{"tc qdisc add dev eth0 parent 1:10 handle 10: tbf rate 1mbit burst 10k limit 0", "zero limit"},
	{"tc qdisc add dev eth0 parent 1:10 handle zz: pfifo", "bad handle"},
	{"tc class add dev eth0 parent 1:1 classid 1:30 htb ceil 10mbit", `"rate" is required`},
	{"tc class add dev eth0 parent 1:1 classid 1:30 htb rate 10mbit rate 5mbit", "given twice"},
	{"tc class add dev eth0 parent 1:1 classid 1:30 htb rate ten", "bad rate"},
	{"tc class add dev eth0 parent 1:1 classid 1:30 htb rate 1mbit burst 15q", "unknown unit"},
	{"tc class add dev eth0 parent 1:1 classid 1:30 htb rate 1mbit prio x", "bad number"},
	{"tc class add dev eth0 parent 1:1 classid 1:30 htb rate 50%", "percentage of the link speed"},
	{"tc class add dev eth0 parent 1:1 classid 1:30 htb rate 1mbit cbrust 3000", `"cbrust" is not a htb class option`},
	{"tc class add dev eth0 parent 1:1 handle 1:30 htb rate 1mbit", `try "classid"`},
	{"tc class add dev eth0 parent 1:1 classid 1:30 hfsc sc rate 1mbit", "wanlab's classes are htb's"},
	{"tc class add dev eth0 parent 1:1 classid 1:30 tbf rate 1mbit", "take no options of their own"},
	{"tc class add dev eth0 parent 1:1 classid 1:3g htb rate 1mbit", "bad class"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 fw classid 1:10", "u32 only"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 flower ip_proto tcp classid 1:10", "u32 only"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 u32 match ip tos 0x10 0xff flowid 1:10 action drop", "runs no actions"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 u32 match ip tos 0x10 0xff police rate 1mbit burst 10k", "policers"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 u32 match mark 1 0xff flowid 1:10", "firewall mark"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 u32 match ether src 00:11:22:33:44:55 flowid 1:10", "Ethernet header"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 u32 match ip dst 10.0.0.0/33 flowid 1:10", "not an address or a prefix"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 u32 match ip dsfield 0x28 flowid 1:10", "tc reads a mask in hex"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 u32 match ip tos 0x10 0xff", "no flowid"},
	{"tc filter add dev eth0 parent 1: protocol arp prio 2 u32 match u32 0 0 at 0 flowid 1:10", "IP packets only"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 u32 ht 800: match ip tos 0 0 flowid 1:10", "no hash tables"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 handle 800::1 u32 match ip tos 0 0 flowid 1:10", "u32 handles"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 u32 match ip tcp dport 80 0xffff flowid 1:10", "unknown field"},
	{"tc filter add dev eth0 parent 1: protocol ip prio 2 u32 match ip6 dst 2001:db8::/129 flowid 1:10", "not an address or a prefix"},
	{"tc filter change dev eth0 parent 1: protocol ip prio 1 u32 match ip tos 0 0 flowid 1:10", "delete the filter's prio and add it again"},
	{"tc filter add dev eth0 ingress protocol ip prio 2 u32 match ip tos 0 0 flowid 1:10", "egress"},
	{"tc qdisc add dev eth0 handle ffff: ingress", "egress"},
	{"tc qdisc replace dev eth0 root handle 1: htb offload", "runs htb itself"},
	{"tc qdisc add dev eth0 parent 1:10 stab overhead 20 pfifo", "size tables"},
	{"tc -batch commands.tc", "put the commands in the script itself"},
	{"tc qdisc link dev eth0 root htb", "tc qdisc replace"},
	{"tc chain add dev eth0 parent 1: chain 1", "tc qdisc, tc class and tc filter"},
	{"tc qdisc add parent 1:10 pfifo", `"dev DEV"`},
	// The shell, beyond what scripts of tc lines use.
	{"ip link set dev eth0 txqueuelen 100", "runs no other program"},
	{"ethtool -K eth0 tso off", "runs no other program"},
	{`if [ "$1" = start ]; then`, "not shell control flow"},
	{"tc qdisc add dev eth0 parent 1:10 handle 10: pfifo limit $LIMIT", "--set LIMIT=VALUE"},
	{"tc qdisc add dev eth0 parent 1:10 handle 10: pfifo limit $1", "the shell's own"},
	{"tc qdisc add dev eth0 parent 1:10 handle 10: pfifo limit $(cat limit)", "command substitution"},
	{"tc qdisc add dev eth0 parent 1:10 handle 10: pfifo | tee log", "no pipes"},
	{"tc qdisc add dev eth0 parent 1:10 handle 10: pfifo > log.txt", "no pipes, files"},
	{"tc qdisc add dev eth0 parent 1:10 handle 10: pfifo && echo ok", "chained with &&"},
	{"tc qdisc add dev eth0 parent 1:10 handle 10: pfifo || echo failed", `"||" runs another program`},
	{`tc qdisc add dev eth0 parent 1:10 handle 10: pfifo limit "10`, "unterminated"},
	// The kernel, on the tree the lines before make.
	{"tc qdisc add dev eth1 parent 1:10 handle 10: pfifo", "for one direction"},
	{"tc class add dev eth0 parent 1:1 classid 1:10 htb rate 2mbit", "File exists"},
	{"tc class del dev eth0 classid 1:10", "HTB class in use"},
	{"tc class del dev eth0 classid 1:1", "HTB class in use"},
	{"tc qdisc add dev eth0 root handle 2: htb", "NLM_F_REPLACE needed"},
	{"tc qdisc change dev eth0 root htb default 30", "Change operation not supported"},
	{"tc filter add dev eth0 parent 1:99 protocol ip prio 2 u32 match ip tos 0 0 flowid 1:10", "Specified class doesn't exist"},
	{"tc filter add dev eth0 parent 1: protocol ipv6 prio 1 u32 match ip6 priority 0 0 flowid 1:10", "Protocol mismatch"},
	{"tc qdisc add dev eth0 parent 1:1 handle 11: pfifo", "has child classes"},
	{"tc qdisc add dev eth0 parent 1:99 handle 11: pfifo", "Specified class not found"},
	{"tc qdisc del dev eth0 parent 2:1", "Failed to find specified qdisc"},
	{"tc qdisc del dev eth0 parent 1:10", "handle of zero"},
	// The disciplines' own refusals, when the tree is built.
	{"tc class add dev eth0 parent 1:1 classid 1:30 htb rate 8bit burst 1g", "beyond tc's buffer"},
	{"tc class add dev eth0 parent 1:1 classid 2:30 htb rate 1mbit", "different qdiscs"},
}

// Every bad line of a script is refused before anything is built, with
// exit 2 and its line number, by every command that takes a script.
func TestBadScriptLines(t *testing.T) {
	if len(badScriptLines) < 40 {
		t.Fatalf("%d bad lines; the issue asks for at least 40", len(badScriptLines))
	}
	dir := t.TempDir()
	for i, c := range badScriptLines {
		file := filepath.Join(dir, "bad.tc")
		if err := os.WriteFile(file, []byte(scriptHead+c.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"sim", "--up-script", file, "--duration", "1s"},
			{"run", "tcp_upload", "--up-script", file, "-o", filepath.Join(dir, "x.json.gz")},
		} {
			_, errOut, code := runWanlab(t, args...)
			if code != 2 || !strings.Contains(errOut, "line 6") || !strings.Contains(errOut, c.want) {
				t.Errorf("%d: %s with %q: exit %d, %q; want exit 2, line 6 and %q", i+1, args[0], c.line, code, strings.TrimSpace(errOut), c.want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.json.gz")); err == nil {
		t.Error("a refused run wrote its results file")
	}
}

// The scripts' flags of sim, up, set and run are the registry's, and a
// script and a chain for one direction are refused.
func TestScriptFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "up.tc")
	if err := os.WriteFile(file, []byte(scriptHead), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"sim", "--up-script", file, "--up", "netem delay 1ms"},
		{"up", "--up-script", file, "--both", "netem delay 1ms"},
		{"set", "--up-script", file, "--up", "netem delay 1ms"},
		{"run", "--up-script", file, "--up", "netem delay 1ms"},
	} {
		_, errOut, code := runWanlab(t, args...)
		if code != 2 || !strings.Contains(errOut, "both give the path of one direction") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	for _, cmd := range []string{"sim", "up", "set", "run"} {
		out, _, _ := runWanlab(t, cmd, "--help")
		for _, flag := range []string{"--up-script", "--down-script", "--script", "--up-dev", "--down-dev", "--set"} {
			if !strings.Contains(out, flag) {
				t.Errorf("wanlab %s --help lacks %s", cmd, flag)
			}
		}
	}
}
