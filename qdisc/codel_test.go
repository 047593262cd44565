package qdisc

import (
	"math"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

// newTestCoDel returns a constructor for the standing-queue tests, which
// hold more packets than codel's default limit; if qp is not nil it
// receives the discipline.
func newTestCoDel(t *testing.T, cfg CoDelConfig, qp ...**CoDel) func(env *Env) Qdisc {
	if cfg.Limit == 0 {
		cfg.Limit = 20000
	}
	return func(env *Env) Qdisc {
		q, err := NewCoDel(cfg, env)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range qp {
			*p = q
		}
		return q
	}
}

// startStanding fills the queue with 6000 packets at t=0 and then keeps
// one arrival and one dequeue per tick: every packet from t = 6000 ticks on
// waits 6000 units (6.1 ms), above target, with 600 kB queued.
func startStanding(t *testing.T, build func(env *Env) Qdisc, tos uint8) *standingQueue {
	s := newStandingQueue(t, build, tos)
	s.arrive(6000)
	return s
}

// Drop gaps under a standing queue above target, in codel units of 1024 ns, derived from the
// kernel's integer arithmetic with interval = MS2TIME(100) = 97656:
// linux: rec_inv_sqrt runs 0xFFFF, 32769, 36864, 31968, 28935, 26481 by
// codel_Newton_step, and each gap is (97656 * (rec << 16)) >> 32;
// exact: floor(97656 / sqrt(count)).
var (
	linuxGapUnits = []int64{97654, 48829, 54931, 47635, 43116, 39459}
	exactGapUnits = []int64{97656, 69053, 56381, 48828, 43673, 39867}
	// The linux gaps in µs, as codel_control_law's units give them.
	linuxGapsUS = []float64{99998, 50001, 56249, 48778, 44151, 40406}
)

func TestCoDelFirstDropAfterInterval(t *testing.T) {
	s := startStanding(t, newTestCoDel(t, CoDelConfig{}), 0)
	// t0: the first dequeue whose packet waited at least target.
	s.runUntil(1, 10000, func() bool { return s.sojourn >= kernelTarget })
	t0 := s.now.Add(-codelTick)
	s.runUntil(1, 200000, func() bool { return len(s.rec.drops) > 0 })
	first := s.rec.drops[0].t
	// The drop is at the first dequeue after t0 + interval (strictly after,
	// codel_time_after): t0 + 97657 ticks = t0 + 100.000768 ms.
	if want := t0.Add(kernelInterval + codelTick); first != want {
		t.Fatalf("first drop at %v, want %v (t0 %v + 100.000768ms)", first, want, t0)
	}
	if first.Sub(t0) < 100*time.Millisecond || first.Sub(t0)-codelTick >= 100*time.Millisecond {
		t.Fatalf("first drop %v after t0 is not the first dequeue after t0 + 100ms", first.Sub(t0))
	}
	if got := s.rec.drops[0].why; got != ReasonCoDel {
		t.Fatalf("drop reason %v, want codel", got)
	}
	s.checkNoLeak()
}

func TestCoDelDropGaps(t *testing.T) {
	for _, tc := range []struct {
		mode  InvSqrtMode
		units []int64
	}{
		{InvSqrtLinux, linuxGapUnits},
		{InvSqrtExact, exactGapUnits},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			s := startStanding(t, newTestCoDel(t, CoDelConfig{InvSqrt: tc.mode}), 0)
			s.runUntil(1, 1_000_000, func() bool { return len(s.rec.drops) > len(tc.units) })
			g := gaps(eventTimes(s.rec.drops, ReasonCoDel))
			for i, u := range tc.units {
				if want := time.Duration(u) * codelTick; g[i] != want {
					t.Errorf("gap after drop %d: %v, want %v", i+1, g[i], want)
				}
				us := float64(g[i]) / 1e3
				switch tc.mode {
				case InvSqrtLinux:
					if d := math.Abs(us - linuxGapsUS[i]); d > 0.5 {
						t.Errorf("gap after drop %d: %.3f µs, want %.0f µs", i+1, us, linuxGapsUS[i])
					}
				case InvSqrtExact:
					// Within the 1.024 µs clock (and the 0.256 µs that
					// MS2TIME truncates) of 100 ms / sqrt(n).
					ideal := 1e5 / math.Sqrt(float64(i+1))
					if d := math.Abs(us - ideal); d > 1.28 {
						t.Errorf("gap after drop %d: %.3f µs, 100ms/sqrt(%d) = %.3f µs", i+1, us, i+1, ideal)
					}
				}
			}
			s.checkNoLeak()
		})
	}
}

func TestCoDelReentry(t *testing.T) {
	for _, tc := range []struct {
		mode InvSqrtMode
		// First gap after re-entry with count = 9, in codel units. Linux:
		// rec_inv_sqrt at count 10 is 20647; one Newton step with count 9
		// gives 21748, and (97656 * (21748 << 16)) >> 32 = 32406 (33.184
		// ms). Exact: floor(97656 / 3) = 32552 (33.333 ms).
		gapUnits int64
	}{
		{InvSqrtLinux, 32406},
		{InvSqrtExact, 32552},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			var q *CoDel
			s := startStanding(t, newTestCoDel(t, CoDelConfig{InvSqrt: tc.mode}, &q), 0)
			s.runUntil(1, 2_000_000, func() bool { return q.vars.count == 10 })
			if q.vars.lastcount != 1 {
				t.Fatalf("lastcount %d, want 1", q.vars.lastcount)
			}
			// No arrivals for 2000 ticks: the packets behind the gap wait
			// about 4000 units, below target, and CoDel leaves the dropping
			// state before the 11th drop is due.
			for range 2000 {
				s.step(0)
			}
			s.runUntil(1, 20000, func() bool { return !q.vars.dropping })
			if q.vars.count != 10 {
				t.Fatalf("left dropping with count %d, want 10", q.vars.count)
			}
			for range 10000 {
				s.step(1)
			}
			drops := len(s.rec.drops)
			// A burst brings the sojourn back above target; an interval
			// later CoDel re-enters, well within 16 intervals.
			s.arrive(2000)
			s.runUntil(1, 400000, func() bool { return len(s.rec.drops) > drops })
			if q.vars.count != 9 || q.vars.lastcount != 9 {
				t.Fatalf("re-entered with count %d lastcount %d, want 9 and 9", q.vars.count, q.vars.lastcount)
			}
			s.runUntil(1, 400000, func() bool { return len(s.rec.drops) > drops+1 })
			got := s.rec.drops[drops+1].t.Sub(s.rec.drops[drops].t)
			if want := time.Duration(tc.gapUnits) * codelTick; got != want {
				t.Fatalf("first gap after re-entry %v, want %v", got, want)
			}
			s.checkNoLeak()
		})
	}
}

func TestCoDelMTUGuard(t *testing.T) {
	for _, tc := range []struct {
		held      int // packets of 1500 B kept queued
		wantDrops bool
	}{
		{2, false}, // 1500 B remain after each dequeue: <= MTU
		{3, true},  // 3000 B remain: the guard does not apply
	} {
		rec := &recorder{}
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		q, err := NewCoDel(CoDelConfig{}, &Env{Observer: rec, MTU: 1500})
		if err != nil {
			t.Fatal(err)
		}
		var now clock.Time
		for range tc.held {
			q.Enqueue(now, coretest.UDP(pool, 1500, 1, 0, 0))
		}
		now = now.Add(5 * time.Second * time.Duration(tc.held-1))
		// Every 5 s one dequeue and one arrival: each packet waits
		// 5 s * held, at least 10 s.
		for range 100 {
			now = now.Add(5 * time.Second)
			p, _ := q.Dequeue(now)
			if p == nil {
				t.Fatalf("held %d: queue ran empty at %v", tc.held, now)
			}
			if sojourn := now.Sub(p.Enqueued); sojourn < 10*time.Second {
				t.Fatalf("held %d: sojourn %v, want >= 10s", tc.held, sojourn)
			}
			p.Free()
			q.Enqueue(now, coretest.UDP(pool, 1500, 1, 0, 0))
		}
		if got := len(rec.drops) > 0; got != tc.wantDrops {
			t.Errorf("held %d: %d drops, want drops %v", tc.held, len(rec.drops), tc.wantDrops)
		}
		coretest.CheckLive(t, pool, q.Len())
	}
}

func TestCoDelECNMarksInsteadOfDrops(t *testing.T) {
	var q *CoDel
	s := startStanding(t, newTestCoDel(t, CoDelConfig{ECN: true}, &q), uint8(packet.ECT0))
	s.runUntil(1, 1_000_000, func() bool { return len(s.rec.marks) > len(linuxGapUnits) })
	if len(s.rec.drops) != 0 {
		t.Fatalf("%d drops with ecn and ECT traffic, want 0", len(s.rec.drops))
	}
	// Marks follow the same schedule as drops would.
	for i, g := range gaps(eventTimes(s.rec.marks, ReasonCoDel)) {
		if want := time.Duration(linuxGapUnits[i]) * codelTick; g != want {
			t.Errorf("gap after mark %d: %v, want %v", i+1, g, want)
		}
	}
	if s.marked != len(s.rec.marks) {
		t.Errorf("%d delivered packets carry CE, %d marks reported", s.marked, len(s.rec.marks))
	}
	if s.delivered+q.Len() != s.enqueued {
		t.Errorf("delivered %d + queued %d != enqueued %d", s.delivered, q.Len(), s.enqueued)
	}
	st := q.Stats()
	if st.Marks != uint64(len(s.rec.marks)) || st.Drops != 0 {
		t.Errorf("stats marks %d drops %d, want %d and 0", st.Marks, st.Drops, len(s.rec.marks))
	}
	if x := q.XStats(s.now); x.ECNMark != uint32(len(s.rec.marks)) || !x.Dropping {
		t.Errorf("xstats ecn_mark %d dropping %v, want %d and true", x.ECNMark, x.Dropping, len(s.rec.marks))
	}
	s.checkNoLeak()
}

func TestCoDelECNStillDropsNotECT(t *testing.T) {
	s := startStanding(t, newTestCoDel(t, CoDelConfig{ECN: true}), uint8(packet.NotECT))
	s.runUntil(1, 200000, func() bool { return len(s.rec.drops) > 0 })
	if len(s.rec.marks) != 0 {
		t.Fatalf("%d marks of Not-ECT packets", len(s.rec.marks))
	}
	s.checkNoLeak()
}

func TestCoDelCEThreshold(t *testing.T) {
	for _, tos := range []uint8{uint8(packet.ECT1), uint8(packet.NotECT)} {
		// 1500 packets queued: a sojourn of 1500 units (1.536 ms), above a
		// 1 ms ce_threshold (976 units) and below target.
		s := newStandingQueue(t, newTestCoDel(t, CoDelConfig{CEThreshold: time.Millisecond}), tos)
		s.arrive(1500)
		wantMarks := 0
		for range 20000 {
			s.step(1)
			if s.sojourn > 976*codelTick {
				wantMarks++
			}
		}
		if tos == uint8(packet.NotECT) {
			wantMarks = 0
		}
		if len(s.rec.drops) != 0 {
			t.Errorf("tos %d: %d drops below target", tos, len(s.rec.drops))
		}
		if got := countEvents(s.rec.marks, ReasonCEThreshold); got != wantMarks || wantMarks != len(s.rec.marks) {
			t.Errorf("tos %d: %d ce_threshold marks (%d in all), want %d", tos, got, len(s.rec.marks), wantMarks)
		}
		if tos != uint8(packet.NotECT) && wantMarks < 18000 {
			t.Errorf("only %d packets waited above the threshold", wantMarks)
		}
		s.checkNoLeak()
	}
}

func TestCoDelDropCapPerDequeue(t *testing.T) {
	var q *CoDel
	s := startStanding(t, newTestCoDel(t, CoDelConfig{Limit: 10000}, &q), 0)
	s.runUntil(1, 200000, func() bool { return len(s.rec.drops) > 0 })
	s.arrive(3000)
	// Ten seconds without a dequeue: the schedule is far behind, and
	// catching up would take thousands of drops.
	s.now = s.now.Add(10 * time.Second)
	before := len(s.rec.drops)
	p, _ := q.Dequeue(s.now)
	if p == nil {
		t.Fatal("no packet after the idle time")
	}
	p.Free()
	if got := len(s.rec.drops) - before; got != codelMaxDropsPerDequeue {
		t.Fatalf("one dequeue dropped %d packets, want %d", got, codelMaxDropsPerDequeue)
	}
	if next := q.vars.dropNext; !next.after(codelNow(s.now)) {
		t.Fatalf("drop_next %d not after now %d: schedule not restarted", next, codelNow(s.now))
	}
	s.checkNoLeak()
}

func TestCoDelPeekDecidesOnce(t *testing.T) {
	var q *CoDel
	s := startStanding(t, newTestCoDel(t, CoDelConfig{}, &q), 0)
	s.runUntil(1, 200000, func() bool { return len(s.rec.drops) > 0 })
	// Run until the next drop is due, then peek at that instant.
	for !codelNow(s.now).afterEq(q.vars.dropNext) {
		s.step(1)
	}
	n, drops := q.Len(), len(s.rec.drops)
	p, _ := q.Peek(s.now)
	if p == nil || len(s.rec.drops) != drops+1 {
		t.Fatalf("peek: packet %v, %d new drops, want a packet and 1 drop", p != nil, len(s.rec.drops)-drops)
	}
	if q.Len() != n-1 {
		t.Fatalf("after peek Len %d, want %d (peeked packet still counted)", q.Len(), n-1)
	}
	if p2, _ := q.Peek(s.now); p2 != p {
		t.Fatal("second peek returned another packet")
	}
	p3, _ := q.Dequeue(s.now.Add(time.Millisecond))
	if p3 != p || len(s.rec.drops) != drops+1 {
		t.Fatalf("dequeue after peek: same packet %v, %d new drops; want the peeked one and no more drops", p3 == p, len(s.rec.drops)-drops)
	}
	p3.Free()
	s.checkNoLeak()
}

func TestCoDelLimit(t *testing.T) {
	rec := &recorder{}
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q, err := NewCoDel(CoDelConfig{Limit: 5}, &Env{Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		want := Queued
		if i == 5 {
			want = Dropped
		}
		if v := q.Enqueue(0, coretest.UDP(pool, 100, 1, 0, 0)); v != want {
			t.Fatalf("enqueue %d: verdict %d, want %d", i, v, want)
		}
	}
	if len(rec.drops) != 1 || rec.drops[0].why != ReasonLimit {
		t.Fatalf("drops %+v, want one limit drop", rec.drops)
	}
	st := q.Stats()
	// Backlog counts the Ethernet header of each packet.
	if st.Drops != 1 || st.DropsByReason[ReasonLimit] != 1 || st.Qlen != 5 || st.Backlog != 5*114 {
		t.Fatalf("stats %+v", st)
	}
	if x := q.XStats(0); x.DropOverlimit != 1 {
		t.Fatalf("drop_overlimit %d, want 1", x.DropOverlimit)
	}
	coretest.CheckLive(t, pool, q.Len())
}

func TestCoDelConfig(t *testing.T) {
	q, err := NewCoDel(CoDelConfig{}, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	want := CoDelConfig{Limit: 1000, Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond}
	if got := q.Config(); got != want {
		t.Fatalf("config %+v, want %+v", got, want)
	}
	// The MTU guard is psched_mtu: 1514 on Ethernet, 1500 on a TUN device.
	if q.params.target != 4882 || q.params.interval != 97656 || q.params.mtu != 1514 || q.params.ecn || q.params.ceThreshold != codelDisabledThreshold {
		t.Fatalf("params %+v", q.params)
	}
	if q, _ := NewCoDel(CoDelConfig{}, &Env{Framing: FramingIP}); q.params.mtu != 1500 {
		t.Fatalf("TUN: MTU guard %d, want 1500", q.params.mtu)
	}
	for _, tc := range []struct {
		cfg  CoDelConfig
		want string
	}{
		{CoDelConfig{Limit: -1}, "limit"},
		{CoDelConfig{Target: -time.Millisecond}, "target"},
		{CoDelConfig{Interval: 5000 * time.Second}, "interval"},
		{CoDelConfig{CEThreshold: -1}, "ce_threshold"},
		{CoDelConfig{InvSqrt: 7}, "invsqrt"},
	} {
		if _, err := NewCoDel(tc.cfg, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.cfg, err, tc.want)
		}
	}
}

func TestCoDelBuild(t *testing.T) {
	q, err := Build([]Spec{CoDelConfig{Limit: 50}}, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := q.(*CoDel); !ok || c.Config().(CoDelConfig).Limit != 50 || c.Kind() != "codel" {
		t.Fatalf("built %T %+v", q, q.Config())
	}
	if _, err := Build([]Spec{CoDelConfig{}, FQCoDelConfig{}}, &Env{}); err == nil {
		t.Fatal("codel accepted a child")
	}
}

func TestCoDelNewtonStep(t *testing.T) {
	// Q0.16 values from the kernel's arithmetic, by hand for count 2:
	// invsqrt = 0xFFFF0000, invsqrt^2 >> 32 = 0xFFFE0001,
	// 3<<32 - 2*0xFFFE0001 = 2^32 + 2^18 - 2, >> 2 = 2^30 + 2^16 - 1,
	// * 0xFFFF0000 >> 31 = 2^31 + 98300, >> 16 = 32769.
	v := codelVars{count: 1, recInvSqrt: 0xFFFF}
	for _, want := range []uint16{32769, 36864, 31968, 28935, 26481, 24588, 23037, 21746, 20647} {
		v.count++
		v.newtonStep()
		if v.recInvSqrt != want {
			t.Fatalf("count %d: rec_inv_sqrt %d, want %d", v.count, v.recInvSqrt, want)
		}
	}
}

func TestCoDelTimeWraps(t *testing.T) {
	a, b := codelTime(math.MaxUint32-10), codelTime(5)
	if !b.after(a) || a.after(b) || !a.before(b) || !b.afterEq(a) {
		t.Fatal("comparisons are not wrap-safe")
	}
	if got := codelNow(clock.Time(5 << 42)); got != 0 {
		t.Fatalf("codelNow does not wrap at 2^32 units: %d", got)
	}
}
