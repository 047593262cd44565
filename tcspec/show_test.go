package tcspec

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"wanlab/internal/tccases"
	"wanlab/packet"
	"wanlab/qdisc"
)

// showChain prints what `tc -s qdisc show` would for a chain with zero
// counters: the root is 1:, each next qdisc N+1: under N:1, as the table's
// commands build them; each qdisc's extended statistics are those of a
// new instance on env's device.
func showChain(t *testing.T, specs []qdisc.Spec, env *qdisc.Env) []string {
	t.Helper()
	benv := qdisc.Env{}
	if env != nil {
		benv = *env
	}
	benv.Pool = packet.NewPool(2048, 64) // netem's duplicates come from it
	root, err := qdisc.Build(specs, &benv)
	if err != nil {
		t.Fatalf("%s: %v", FormatChain(specs), err)
	}
	built := qdisc.Positions(root)
	var out []string
	for i, s := range specs {
		at := Placement{Handle: fmt.Sprintf("%d:", i+1), Parent: "root"}
		if i > 0 {
			at.Parent = fmt.Sprintf("%d:1", i)
		}
		out = append(out, ShowQdisc(s, at, env))
		if x := ShowOptionStats(built[i]); x != "" {
			out = append(out, strings.Split(strings.TrimSuffix(x, "\n"), "\n")...)
		}
		out = append(out, strings.Split(strings.TrimSuffix(ShowStats(qdisc.Stats{}), "\n"), "\n")...)
		// The table's cases end at an empty line, so it leaves out the
		// empty lines tc prints around cake's tin table and after
		// dualpi2's statistics.
		for _, l := range strings.Split(ShowXStats(built[i], 0), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// Every case of the table: what tcspec prints for the chain, extended
// statistics included, is what Linux's tc printed for the same commands.
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
		got := showChain(t, specs, nil)
		want := c.Output
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

// The extended statistics' formats with values that are not zero: codel's
// dropping state with a drop_next in the past, fq_codel's counters printed
// only when not zero, pie's probability with %lg.
func TestShowXStatsFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{showCoDelXStats(qdisc.CoDelXStats{Count: 3, LastCount: 2, LDelay: 12345 * time.Microsecond, Dropping: true,
			DropNext: -1500 * time.Microsecond, MaxPacket: 1514, ECNMark: 4, DropOverlimit: 1, CEMark: 7}),
			"  count 3 lastcount 2 ldelay 12.3ms dropping drop_next -1.5ms\n  maxpacket 1514 ecn_mark 4 drop_overlimit 1 ce_mark 7\n"},
		{showFQCoDelXStats(qdisc.FQCoDelXStats{MaxPacket: 1514, DropOverlimit: 9, NewFlowCount: 12, MemoryUsage: 4608, NewFlowsLen: 1, OldFlowsLen: 3}),
			"  maxpacket 1514 drop_overlimit 9 new_flow_count 12 ecn_mark 0 memory_used 4608\n  new_flows_len 1 old_flows_len 3\n"},
		{showPIEXStats(qdisc.PIEXStats{Prob: 0.0458123456, Delay: 30 * time.Millisecond, Estimator: true, AvgDQRate: 1250000,
			PacketsIn: 100, Overlimit: 1, Dropped: 5, MaxQ: 40, ECNMark: 2}),
			"  prob 0.0458123 delay 30ms avg_dq_rate 1250000\n  pkts_in 100 overlimit 1 dropped 5 maxq 40 ecn_mark 2\n"},
		{showPIEXStats(qdisc.PIEXStats{Prob: 1.92e-5}), "  prob 1.92e-05 delay 0us\n  pkts_in 0 overlimit 0 dropped 0 maxq 0 ecn_mark 0\n"},
		{showDualPI2XStats(qdisc.DualPI2XStats{Prob: 1 << 30, DelayC: 1500, DelayL: 200, PacketsInC: 10, PacketsInL: 20, MaxQ: 7,
			ECNMark: 5, StepMarks: 2, Credit: -3028, MemoryUsed: 9000, MaxMemoryUsed: 12000, MemoryLimit: 30280000}),
			"prob 0.250000 delay_c 1500us delay_l 200us\npkts_in_c 10 pkts_in_l 20 maxq 7\necn_mark 5 step_mark 2\ncredit -3028 (L-queue)\nmemory_used 9000 (max 12000) of memory limit 30280000\n\n"},
		{showREDXStats(qdisc.REDStats{ProbDrop: 10, ForcedDrop: 2, ProbMark: 5, ForcedMark: 1, PDrop: 3}), "  marked 6 early 12 pdrop 3 other 0 \n"},
	} {
		if c.got != c.want {
			t.Errorf("got  %q\nwant %q", c.got, c.want)
		}
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
