package tcspec

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"wanlab/qdisc"
)

// The qdisc lines of htb and prio, as tc reads them.
func TestClassfulQdiscLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		want qdisc.Spec
		out  string
	}{
		{"tc qdisc add dev eth0 root handle 1: htb default 20", qdisc.HTBConfig{Default: 0x20, R2Q: 10}, "htb default 20"},
		{"htb r2q 5 default 0x1a direct_qlen 64", qdisc.HTBConfig{Default: 0x1a, R2Q: 5, DirectQLen: 64}, "htb default 1a r2q 5 direct_qlen 64"},
		{"htb r2q 0 debug 0123", qdisc.HTBConfig{R2Q: 1}, "htb r2q 1"},
		{"htb d 10", qdisc.HTBConfig{Default: 0x10, R2Q: 10}, "htb default 10"}, // "d" is default's prefix first
		{"prio", qdisc.PrioConfig{Bands: 3, Priomap: qdisc.DefaultPriomap()}, "prio"},
		{"prio bands 2 priomap 1 1 1 1 1 1 0 0 1 1 1 1 1 1 1 1", qdisc.PrioConfig{Bands: 2, Priomap: []uint8{1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}}, "prio bands 2 priomap 1 1 1 1 1 1 0 0 1 1 1 1 1 1 1 1"},
		{"prio bands 4 priomap 3 3", qdisc.PrioConfig{Bands: 4, Priomap: []uint8{3, 3, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}}, "prio bands 4 priomap 3 3 2 2 1 2 0 0 1 1 1 1 1 1 1 1"},
	} {
		got, err := Parse(c.in, Options{})
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%q) = %#v, %v; want %#v", c.in, got, err, c.want)
			continue
		}
		if out := Format(got); out != c.out {
			t.Errorf("Format(%q) = %q, want %q", c.in, out, c.out)
		}
		roundTrip(t, c.in)
	}
	for _, c := range []struct{ in, token, msg string }{
		{"htb offload", "offload", "wanlab runs htb itself"},
		{"htb direct_qlen 0", "0", "drops every unclassified packet"},
		{"htb default 1g", "1g", "bad number"},
		{"htb quantum 1500", "quantum", "htb takes: default"},
		{"prio bands 1", "1", "prio takes 2 to 16 bands"},
		{"prio priomap 0 3", "3", "priomap element 3 is out of the 3 bands"},
		{"prio priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", "0", "more than 16 elements"},
		{"prio multiqueue", "multiqueue", "leave it out"},
		{"prio 3", "3", "prio takes: bands"},
	} {
		_, err := Parse(c.in, Options{})
		var te *Error
		if !errors.As(err, &te) || te.Token != c.token || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Parse(%q) = %v; want token %q and %q", c.in, err, c.token, c.msg)
		}
	}
}
