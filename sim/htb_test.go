package sim

import (
	"math"
	"testing"
	"time"

	"wanlab/link"
	"wanlab/qdisc"
)

// The DSCPs of the three flows (AF11, AF21, AF41), as TOS bytes.
var threeTOS = [3]uint8{0x28, 0x48, 0x88}

// threeClasses is the tree of the measures: htb 1: with a root class 1:1
// of 10 Mbit/s and three leaves 1:10, 1:20, 1:30 of 1, 2 and 3 Mbit/s,
// each allowed to borrow up to 10, classified by DSCP through u32.
func threeClasses(t *testing.T, quantum int, prios [3]int) qdisc.HTBConfig {
	t.Helper()
	c := qdisc.HTBConfig{Handle: 1, Classes: []qdisc.HTBClass{
		{ID: qdisc.MakeClassID(1, 1), Rate: mbit(10), Ceil: mbit(10)},
	}}
	for i, tos := range threeTOS {
		id := qdisc.MakeClassID(1, uint16(0x10*(i+1)))
		c.Classes = append(c.Classes, qdisc.HTBClass{
			ID: id, Parent: qdisc.MakeClassID(1, 1), Rate: mbit(float64(i + 1)), Ceil: mbit(10),
			Quantum: quantum, Prio: prios[i],
		})
		f := qdisc.Filter{Parent: qdisc.MakeClassID(1, 0), Prio: 1, Protocol: qdisc.ProtocolIP, ClassID: id}
		if err := f.MatchField("ip", "dsfield", uint32(tos), 0xfc); err != nil {
			t.Fatal(err)
		}
		c.Filters = append(c.Filters, f)
	}
	return c
}

func mbit(m float64) qdisc.Rate { return qdisc.Rate(m * 1e6 / 8) }

// TestHTBSharesExcess runs three saturating flows through threeClasses
// and checks each class's rate against sch_htb's arithmetic, within 2%.
//
// The expected rates, from the kernel's rules (sch_htb.c):
//
//   - Every leaf is saturated (12 Mbit/s offered, more than any share).
//     A leaf under its rate sends at level 0 before any borrowing is
//     looked at (htb_dequeue walks the levels from 0), so each gets its
//     rate: 1, 2 and 3 Mbit/s.
//   - Every packet is charged to 1:1's rate too (htb_charge_class), whose
//     10 Mbit/s leave 10 - 6 = 4 Mbit/s to lend. A leaf over its rate and
//     under its 10 Mbit/s ceil is in 1:1's feed (htb_activate_prios) and
//     borrows at 1:1's level, 7, while 1:1 is under its rate.
//   - Leaves of one priority share the feed by DRR (htb_dequeue_tree): a
//     leaf sends until its deficit at level 7, less each packet, goes
//     negative, when it gains its quantum and the pointer moves on; over
//     many turns each sends its quantum a turn. The quantum is
//     rate/r2q (htb_change_class): 125000/10, 250000/10, 375000/10 =
//     12500, 25000, 37500 bytes, inside the kernel's 1000..200000. So
//     the 4 Mbit/s split 1:2:3: 0.667, 1.333, 2 Mbit/s, and the classes
//     get 1.667, 3.333, 5.0 Mbit/s.
//   - With quantum 1514 each, a 1514-byte packet (1500 bytes of IP and
//     the 14-byte Ethernet header htb counts) takes a whole quantum: one
//     packet a turn each, 4/3 Mbit/s each: 2.333, 3.333, 4.333 Mbit/s.
//   - With 1:10 at prio 0 and the others at prio 1, htb_dequeue serves
//     1:1's feed at priority 0 before priority 1: 1:10 borrows all 4
//     Mbit/s (its ceil, 10, does not bind): 5, 2, 3 Mbit/s.
//
// Rates count bytes as the device does (1514 a packet), as htb charges
// them and as ThroughputBps reports them.
func TestHTBSharesExcess(t *testing.T) {
	for _, c := range []struct {
		name    string
		quantum int
		prios   [3]int
		want    [3]float64 // Mbit/s
	}{
		{"quantum rate/r2q", 0, [3]int{}, [3]float64{1 + 4.0/6, 2 + 8.0/6, 3 + 2}},
		{"quantum 1514", 1514, [3]int{}, [3]float64{1 + 4.0/3, 2 + 4.0/3, 3 + 4.0/3}},
		{"1:10 at prio 0", 0, [3]int{0, 1, 1}, [3]float64{5, 2, 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{
				Up:       link.Config{Chain: []qdisc.Spec{threeClasses(t, c.quantum, c.prios)}},
				Duration: 10 * time.Second,
			}
			for _, tos := range threeTOS {
				cfg.Flows = append(cfg.Flows, CBR{Rate: mbit(12), Size: 1500, TOS: tos})
			}
			res, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			total := 0.0
			for i, f := range res.Flows {
				got := f.ThroughputBps / 1e6
				total += got
				t.Logf("class 1:%d0: %.4f Mbit/s, %d delivered, %d dropped", i+1, got, f.Delivered, f.Dropped)
				if math.Abs(got-c.want[i]) > 0.02*c.want[i] {
					t.Errorf("class 1:%d0: %.3f Mbit/s, want %.3f within 2%%", i+1, got, c.want[i])
				}
			}
			if math.Abs(total-10) > 0.2 {
				t.Errorf("the classes send %.3f Mbit/s together, want 1:1's 10", total)
			}
		})
	}
}

// TestHTBBorrowsLevelByLevel checks borrowing through two levels: 1:1
// (10 Mbit/s) over 1:10 (5 Mbit/s, ceil 10) and 1:20 (2, ceil 2); 1:10
// over 1:11 and 1:12 (1 Mbit/s each, ceil 10). Saturating flows into
// 1:11, 1:12 and 1:20. From sch_htb.c's rules:
//
//   - 1:20 sends its 2 Mbit/s at level 0 and, its ceil its rate, never
//     borrows; 1:11 and 1:12 send 1 each at level 0.
//   - 1:10, at level 6, lends what of its 5 its leaves' own sends leave:
//     3 Mbit/s, by DRR over its feed with equal quanta (12500 bytes):
//     1.5 each.
//   - 1:1, at level 7, lends what of its 10 the rest leaves: 10 - 2 - 5
//     = 3, to 1:10 (over its rate, under its ceil), whose leaves borrow
//     through it by DRR at level 7: 1.5 each.
//
// So 1:11 and 1:12 get 4 Mbit/s each and 1:20 2. (A ceil near a leaf's
// share changes the split more than its rate suggests: with tc's default
// cburst, a packet's worth, a leaf that reaches its ceil in the middle
// of its DRR turn leaves the feed, and the turn moves on to its sibling;
// with 1:12's ceil at 5, it gets 2.8 and 1:11 5.2.)
func TestHTBBorrowsLevelByLevel(t *testing.T) {
	id := func(m uint16) qdisc.ClassID { return qdisc.MakeClassID(1, m) }
	c := qdisc.HTBConfig{Handle: 1, Classes: []qdisc.HTBClass{
		{ID: id(1), Rate: mbit(10)},
		{ID: id(0x10), Parent: id(1), Rate: mbit(5), Ceil: mbit(10)},
		{ID: id(0x20), Parent: id(1), Rate: mbit(2)},
		{ID: id(0x11), Parent: id(0x10), Rate: mbit(1), Ceil: mbit(10)},
		{ID: id(0x12), Parent: id(0x10), Rate: mbit(1), Ceil: mbit(10)},
	}}
	for i, to := range []uint16{0x11, 0x12, 0x20} {
		f := qdisc.Filter{Prio: 1, Protocol: qdisc.ProtocolIP, ClassID: id(to)}
		if err := f.MatchField("ip", "dsfield", uint32(threeTOS[i]), 0xfc); err != nil {
			t.Fatal(err)
		}
		c.Filters = append(c.Filters, f)
	}
	cfg := Config{Up: link.Config{Chain: []qdisc.Spec{c}}, Duration: 10 * time.Second}
	for _, tos := range threeTOS {
		cfg.Flows = append(cfg.Flows, CBR{Rate: mbit(12), Size: 1500, TOS: tos})
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{4, 4, 2} {
		got := res.Flows[i].ThroughputBps / 1e6
		t.Logf("flow %d: %.4f Mbit/s", i, got)
		if math.Abs(got-want) > 0.02*want {
			t.Errorf("flow %d: %.3f Mbit/s, want %.3f within 2%%", i, got, want)
		}
	}
}
