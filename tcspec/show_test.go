package tcspec

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"wanlab/internal/tccases"
	"wanlab/qdisc"
)

// showChain prints what `tc -s qdisc show` would for a chain with zero
// counters: the root is 1:, each next qdisc N+1: under N:1, as the table's
// commands build them.
func showChain(specs []qdisc.Spec, env *qdisc.Env) []string {
	var out []string
	for i, s := range specs {
		at := Placement{Handle: fmt.Sprintf("%d:", i+1), Parent: "root"}
		if i > 0 {
			at.Parent = fmt.Sprintf("%d:1", i)
		}
		out = append(out, ShowQdisc(s, at, env))
		out = append(out, strings.Split(strings.TrimSuffix(ShowStats(qdisc.Stats{}), "\n"), "\n")...)
	}
	return out
}

// Every case of the table: what tcspec prints for the chain is what
// Linux's tc printed for the same commands, extended statistics aside
// (wanlab does not print them).
func TestShowMatchesLinuxTC(t *testing.T) {
	cases, err := tccases.Parse(tccases.Linux61)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 50 {
		t.Fatalf("only %d cases in the table", len(cases))
	}
	opt := Options{LoadDist: func(string) ([]int16, error) { return []int16{0}, nil }}
	for _, c := range cases {
		specs, err := ParseChain(c.Chain(), opt)
		if err != nil {
			t.Errorf("line %d: %s: tc took it, tcspec refused it: %v", c.Line, c.Chain(), err)
			continue
		}
		got := showChain(specs, nil)
		want := c.WithoutXStats()
		same := strings.Join(got, "\n") == strings.Join(want, "\n")
		switch {
		case c.Differs != "" && same:
			t.Errorf("line %d: %s: the table says wanlab differs (%s), but it prints what tc did: drop the differs line", c.Line, c.Chain(), c.Differs)
		case c.Differs == "" && !same:
			t.Errorf("line %d: %s:\n got %q\nwant %q", c.Line, c.Chain(), got, want)
		}
	}
}

func TestShowUnits(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{showTime(499), "499us"},
		{showTime(10499), "10.5ms"},
		{showTime(99999), "100ms"},
		{showTime(1500000), "1.5s"},
		{showTime64(1500), "1.5us"},
		{showTime64(999), "999ns"},
		{showSize(32766), "32Kb"},
		{showSize(1514000), "1514000b"},
		{showSize(33554432), "32Mb"},
		{showSize(0), "0b"},
		{showRate(1250000), "10Mbit"},
		{showRate(312500), "2500Kbit"},
		{showRate(1250000000), "10Gbit"},
		{showRate(154321), "1234Kbit"},
		{showPercent(0.01), "1%"},
		{showPercent(0.000001), "0.000100001%"},
		{showPercent(1), "100%"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestShowStatsWrapsAs32Bits(t *testing.T) {
	got := ShowStats(qdisc.Stats{Bytes: 1 << 40, Packets: 1 << 33, Drops: 1<<32 + 5, Backlog: 3028, Qlen: 2})
	want := " Sent 1099511627776 bytes 8589934592 pkt (dropped 5, overlimits 0 requeues 0) \n backlog 3028b 2p requeues 0\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// fq_pie_dump's values as tc prints them on other devices: the quantum is
// psched_mtu (1500 on TUN), tupdate whole jiffies (20 ms at HZ 100), and
// a target above 2^32 ns wraps in the dump's u32 of ns: 5 s is 5e9 ns,
// 705032704 ns once wrapped, which tc prints as 705ms; pie's dump does the
// same.
func TestShowFQPIEDevice(t *testing.T) {
	env := &qdisc.Env{Framing: qdisc.FramingIP, HZ: 100}
	got := ShowQdisc(qdisc.FQPIEConfig{Target: 5 * time.Second, TUpdate: 15 * time.Millisecond}, Placement{Handle: "1:"}, env)
	want := "qdisc fq_pie 1: root refcnt 2 limit 10240p flows 1024 target 705ms tupdate 20ms alpha 2 beta 20 quantum 1500b memory_limit 32Mb ecn_prob 10 "
	if got != want {
		t.Errorf("ShowQdisc\n got %q\nwant %q", got, want)
	}
	if got := ShowQdisc(qdisc.PIEConfig{Target: 5 * time.Second}, Placement{Handle: "1:"}, env); !strings.Contains(got, "target 705ms tupdate 20ms") {
		t.Errorf("pie: %q", got)
	}
}
