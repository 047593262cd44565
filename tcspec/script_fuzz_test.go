package tcspec

import (
	"os"
	"reflect"
	"testing"
)

// FuzzParseScript: any text is read or refused without a panic; a script
// that makes a chain makes one whose tc lines (FormatChain) read back into
// the same chain, and whose commands written back (String) read back into
// the same script.
func FuzzParseScript(f *testing.F) {
	if b, err := os.ReadFile("../examples/dscp3.sh"); err == nil {
		f.Add(string(b))
	}
	for _, s := range []string{
		"tc qdisc add dev eth0 root handle 1:0 netem delay 20ms\ntc qdisc add dev eth0 parent 1:1 handle 10: tbf rate 1mbit buffer 10000 limit 30000",
		"tc qdisc add dev d root handle 1: prio bands 4\ntc qdisc add dev d parent 1:2 pfifo limit 5\ntc filter add dev d parent 1: protocol ip prio 2 u32 match ip protocol 17 0xff match ip dport 53 0xffff flowid 1:1",
		"R=${R:-1mbit}; tc qdisc add dev x root handle 1: htb default 1 r2q 5\ntc class add dev x parent 1: classid 1:1 htb rate $R quantum 1514 prio 2 || true",
		"tc class add dev x parent 1: classid 1:1 htb rate 1mbit 2>/dev/null\ntc filter add dev x parent 1: u32 match ip6 dst 2001:db8::/32 flowid 1:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		s, err := ParseScript(text, ScriptOptions{Vars: map[string]string{"R": "2mbit"}})
		if err != nil {
			return
		}
		again, err := ParseScript(s.String(), ScriptOptions{})
		if err != nil {
			t.Fatalf("String() does not read back: %v\n%s", err, s.String())
		}
		if len(again.cmds) != len(s.cmds) {
			t.Fatalf("String() reads back as %d commands, not %d:\n%s", len(again.cmds), len(s.cmds), s.String())
		}
		for i, c := range s.cmds {
			a := again.cmds[i]
			if a.line != c.line || a.quiet != c.quiet || !reflect.DeepEqual(a.words, c.words) {
				t.Fatalf("String() reads back command %d as line %d %q, not line %d %q:\n%s", i+1, a.line, a.words, c.line, c.words, s.String())
			}
		}
		if _, err := s.Device(); err != nil {
			return
		}
		chain, err := s.Chain(nil)
		if err != nil || len(chain) == 0 {
			return
		}
		text2 := FormatChain(chain)
		back, err := ParseChain(text2, Options{})
		if err != nil || !reflect.DeepEqual(back, chain) {
			t.Fatalf("FormatChain does not read back: %v\n%s\n%#v\n%#v", err, text2, chain, back)
		}
	})
}
