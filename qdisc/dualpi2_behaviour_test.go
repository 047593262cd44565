package qdisc

import (
	"math"
	"slices"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

// A scalable (L4S) source beside a classic one at a 100 Mbit/s bottleneck
// under the defaults: the L queue's sojourn stays within 1 ms at the 99th
// percentile (RFC 9332 §1: L4S queuing delay around 1 ms, the step
// threshold's default), while the classic flow keeps its rate.
//
// The scalable source is rate-based, in the style of RFC 9331's scalable
// congestion control: once per RTT (50 ms) it multiplies its rate by
// 1 - F/2, F the fraction of its packets that came back CE-marked in the
// RTT before, and adds one packet per RTT. The classic source is constant
// bit rate, Not-ECT, at 30 Mbit/s. When the two together exceed the link,
// the scheduler (90% to L) leaves the excess in the C queue, whose delay
// drives p' above 0; the coupled marks k·p' then pull the scalable flow
// back, which is the coupling at work: the L queue itself stays short.
func TestDualPI2ScalableSourceLatency(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestDualPI2(t, DualPI2Config{}, &Env{Observer: rec, Framing: FramingIP})
	const (
		linkRate = 100e6 / 8 // bytes/s
		size     = 1500
		rtt      = 50 * ms
		dur      = 20000 * ms
		warmup   = 5000 * ms
	)
	txTime := clock.Time(size / linkRate * 1e9) // 120 µs
	lRate := 50e6 / 8.0                         // bytes/s, to find its share
	cGap := clock.Time(size / (30e6 / 8) * 1e9) // 400 µs

	var (
		now, nextL, nextC, linkFree clock.Time
		nextRTT                     = rtt
		seq                         int64
		sojournL                    []float64
		cSent                       int
		// Feedback of the RTT before last: what the source learns now.
		got, marked, gotPrev, markedPrev int
	)
	for now < dur {
		now = min(nextL, nextC, linkFree, nextRTT)
		if now == nextRTT {
			if gotPrev > 0 {
				f := float64(markedPrev) / float64(gotPrev)
				lRate *= 1 - f/2
			}
			lRate += size / (float64(rtt) / 1e9)
			gotPrev, markedPrev, got, marked = got, marked, 0, 0
			nextRTT += rtt
		}
		if now == nextL {
			seq++
			q.Enqueue(now, coretest.UDP(pool, size, 1, tosECT1, seq))
			nextL += clock.Time(size / lRate * 1e9)
		}
		if now == nextC {
			seq++
			q.Enqueue(now, coretest.UDP(pool, size, 2, tosNotECT, seq))
			nextC += cGap
		}
		if now >= linkFree {
			p, _ := q.Dequeue(now)
			if p == nil {
				linkFree = min(nextL, nextC)
				continue
			}
			if srcPort(p) == 1 {
				got++
				if packet.ECNOf(p.Bytes()) == packet.CE {
					marked++
				}
				if now >= warmup {
					sojournL = append(sojournL, float64(now-p.Enqueued)/1e6)
				}
			} else if now >= warmup {
				cSent++
			}
			p.Free()
			linkFree = now + txTime
		}
	}
	slices.Sort(sojournL)
	p99 := sojournL[len(sojournL)*99/100]
	cMbit := float64(cSent) * size * 8 / (float64(dur-warmup) / 1e9) / 1e6
	t.Logf("L: %d packets, p50 %.3f ms, p99 %.3f ms, max %.3f ms; classic %.1f Mbit/s; L rate %.1f Mbit/s; drops %d, marks %d",
		len(sojournL), sojournL[len(sojournL)/2], p99, sojournL[len(sojournL)-1], cMbit, lRate*8/1e6, len(rec.drops), len(rec.marks))
	late := 0
	for _, m := range rec.marks {
		if m.t >= warmup {
			late++
		}
	}
	t.Logf("marks after warmup: %d (coupled %d, step %d in the whole run)", late, countEvents(rec.marks, ReasonDualPI2), countEvents(rec.marks, ReasonDualPI2Step))
	if late < 100 {
		t.Errorf("%d marks after the warmup: the scalable flow was not under control", late)
	}
	if p99 > 1.0 {
		t.Errorf("L queue p99 sojourn %.3f ms, want at most 1 ms", p99)
	}
	if cMbit < 29 {
		t.Errorf("classic flow got %.1f Mbit/s of its 30", cMbit)
	}
	if lRate*8/1e6 < 50 {
		t.Errorf("the scalable flow settled at %.1f Mbit/s: it did not take the rest of the link", lRate*8/1e6)
	}
	coretest.CheckLive(t, pool, q.Len())
}

// classic_protection: with both queues always backlogged by equal
// packets, the WRR credit (dequeue_packet) gives the C queue wc percent of
// the packets: each L packet adds wc·len to the credit, each C packet
// takes wl·len, and the C queue is served while the credit is positive.
// The credit starts at psched_mtu·(wc - wl), so the L queue goes first.
func TestDualPI2ClassicProtection(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	for _, wc := range []int{0, 10, 25, 50, 90, 100} {
		q := newTestDualPI2(t, DualPI2Config{ClassicProtection: wc, ClassicProtectionSet: wc == 0, TUpdate: 4 * time.Second, StepThresh: 4 * time.Second}, &Env{Framing: FramingIP})
		const n = 2000
		for i := range n {
			q.Enqueue(0, coretest.UDP(pool, 1500, 1, tosECT1, int64(i)))
			q.Enqueue(0, coretest.UDP(pool, 1500, 2, tosECT0, int64(i)))
		}
		c, first := 0, 0
		const served = 1000
		for i := range served {
			p, _ := q.Dequeue(clock.Time(i))
			if srcPort(p) == 2 {
				c++
			}
			if i == 0 {
				first = int(srcPort(p))
			}
			p.Free()
		}
		// Over 1000 packets the credit's bound of one packet of either
		// weight leaves the C count within one of wc% of them.
		if want := served * wc / 100; c < want-1 || c > want+1 {
			t.Errorf("classic_protection %d%%: C queue served %d of %d, want %d", wc, c, served, want)
		}
		if wantFirst := 1; wc > 50 {
			wantFirst = 2
			if first != wantFirst {
				t.Errorf("classic_protection %d%%: the C queue should go first (credit starts at %d)", wc, 1500*(2*wc-100))
			}
		} else if first != wantFirst {
			t.Errorf("classic_protection %d%%: the L queue should go first (credit starts at %d)", wc, 1500*(2*wc-100))
		}
		q.Flush(0)
	}
	coretest.CheckLive(t, pool, 0)
}

// The step AQM (do_step_aqm): an L packet is marked when its sojourn
// exceeds step_thresh (strictly), or, in packets, when the L queue it
// leaves behind is longer than the threshold; min_qlen_step exempts a
// packet that arrived at a shorter L queue.
func TestDualPI2Step(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	env := &Env{Observer: rec}
	q := newTestDualPI2(t, DualPI2Config{TUpdate: 4 * time.Second}, env) // step_thresh 1ms
	for i := range 3 {
		q.Enqueue(0, coretest.UDP(pool, 100, 1, tosECT1, int64(i)))
	}
	for i, at := range []clock.Time{ms - 1, ms, ms + 1} {
		p, _ := q.Dequeue(at)
		if got, want := packet.ECNOf(p.Bytes()) == packet.CE, i == 2; got != want {
			t.Errorf("sojourn %v: marked %v, want %v", time.Duration(at), got, want)
		}
		p.Free()
	}
	if x := q.XStats(2 * ms); x.StepMarks != 1 || x.ECNMark != 1 || countEvents(rec.marks, ReasonDualPI2Step) != 1 {
		t.Errorf("step marks %d, ecn marks %d, observer %v", x.StepMarks, x.ECNMark, rec.marks)
	}

	// In packets: step_thresh 3p marks while more than 3 stay behind.
	q = newTestDualPI2(t, DualPI2Config{TUpdate: 4 * time.Second, StepPackets: 3}, env)
	for i := range 6 {
		q.Enqueue(0, coretest.UDP(pool, 100, 1, tosECT1, int64(i)))
	}
	var got []bool
	for range 6 {
		p, _ := q.Dequeue(clock.Time(time.Second))
		got = append(got, packet.ECNOf(p.Bytes()) == packet.CE)
		p.Free()
	}
	if want := []bool{true, true, false, false, false, false}; !slices.Equal(got, want) {
		t.Errorf("step_thresh 3p: marks %v, want %v", got, want)
	}

	// min_qlen_step 2: the first two arrivals (at L lengths 0 and 1) are
	// exempt, whatever their sojourn.
	q = newTestDualPI2(t, DualPI2Config{TUpdate: 4 * time.Second, MinQlenStep: 2}, env)
	for i := range 4 {
		q.Enqueue(0, coretest.UDP(pool, 100, 1, tosECT1, int64(i)))
	}
	got = got[:0]
	for range 4 {
		p, _ := q.Dequeue(10 * ms)
		got = append(got, packet.ECNOf(p.Bytes()) == packet.CE)
		p.Free()
	}
	if want := []bool{false, false, true, true}; !slices.Equal(got, want) {
		t.Errorf("min_qlen_step 2: marks %v, want %v", got, want)
	}
	coretest.CheckLive(t, pool, 0)
}

// Classification (dualpi2_skb_classify): l4s_ect takes ECT(1) and CE to
// the L queue, any_ect every ECN-capable packet.
func TestDualPI2Classify(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	for _, c := range []struct {
		any  bool
		want [4]bool // Not-ECT, ECT(1), ECT(0), CE in L?
	}{{false, [4]bool{false, true, false, true}}, {true, [4]bool{false, true, true, true}}} {
		q := newTestDualPI2(t, DualPI2Config{AnyECT: c.any}, &Env{})
		for tos := range 4 {
			q.Enqueue(0, coretest.UDP(pool, 100, 1, uint8(tos), 0))
			if inL := q.lq.Len() == 1; inL != c.want[tos] {
				t.Errorf("any_ect %v: %v in L %v", c.any, packet.ECN(tos), inL)
			}
			q.Flush(0)
		}
	}
}

// The limits: the packet limit counts both queues (and overlimits), the
// memory limit each packet's truesize (length plus 804).
func TestDualPI2Limits(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestDualPI2(t, DualPI2Config{Limit: 5}, &Env{Observer: rec, Framing: FramingIP})
	for i := range 7 {
		q.Enqueue(0, coretest.UDP(pool, 1000, 1, uint8(i%2), int64(i)))
	}
	if s := q.Stats(); q.Len() != 5 || s.Drops != 2 || s.Overlimits != 2 || rec.count(ReasonLimit) != 2 {
		t.Errorf("limit 5: len %d, stats %+v", q.Len(), s)
	}
	q.Flush(0)
	q = newTestDualPI2(t, DualPI2Config{MemLimit: 3 * (1000 + 804)}, &Env{Observer: rec, Framing: FramingIP})
	for i := range 5 {
		q.Enqueue(0, coretest.UDP(pool, 1000, 1, tosECT1, int64(i)))
	}
	if x := q.XStats(0); q.Len() != 3 || x.MemoryUsed != 3*1804 || x.MaxMemoryUsed != 3*1804 {
		t.Errorf("memlimit: len %d, %+v", q.Len(), x)
	}
	// tc qdisc change to limit 1 drops from the head (ReasonLimit).
	if err := q.Change(0, DualPI2Config{Limit: 1}); err != nil || q.Len() != 1 {
		t.Errorf("change to limit 1: %v, len %d", err, q.Len())
	}
	if err := q.Change(0, DualPI2Config{CouplingFactor: 300}); err == nil {
		t.Error("coupling_factor 300 accepted")
	}
	q.Flush(0)
	coretest.CheckLive(t, pool, 0)
}

// Overload (must_drop): when k·p' passes 1, the C queue drops even
// ECN-capable packets at p'², and the L queue, with drop_on_overload,
// drops at p'² and marks the rest; with overflow the probability is
// capped at 1/k and nothing is dropped. Not-ECT C packets are dropped at
// p'² whatever the load.
func TestDualPI2Overload(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	run := func(cfg DualPI2Config, p float64, tos uint8) (drops, marks, n int) {
		rec := &recorder{}
		cfg.TUpdate, cfg.StepThresh = 4*time.Second, 4*time.Second
		q := newTestDualPI2(t, cfg, &Env{Observer: rec})
		q.tick(0)
		q.prob = uint32(p * dpi2MaxProb)
		for i := range 20000 {
			q.Enqueue(0, coretest.UDP(pool, 1500, 1, tos, int64(i)))
			if q.Len() >= 10 { // far from the two-MTU floor
				if p, _ := q.Dequeue(0); p != nil {
					p.Free()
					n++
				}
			}
		}
		q.Flush(0)
		return rec.count(ReasonDualPI2), countEvents(rec.marks, ReasonDualPI2), n
	}
	const sd = 4 * 0.0035 // four standard deviations of a fraction near 0.36 over 20000
	// p' = 0.6, k = 2: overload. p'² = 0.36.
	if d, m, _ := run(DualPI2Config{}, 0.6, tosECT0); math.Abs(float64(d)/20000-0.36) > sd || m != 0 {
		t.Errorf("C queue in overload: %d drops (want 36%%), %d marks (want 0)", d, m)
	}
	// (A packet that leaves less than two MTUs behind, after a run of
	// drops, escapes the AQM: a handful in 20000.)
	if d, m, n := run(DualPI2Config{}, 0.6, tosECT1); math.Abs(float64(d)/20000-0.36) > sd || m < n-n/500 {
		t.Errorf("L queue in overload: %d drops (want 36%%), %d marks of %d sent (want all)", d, m, n)
	}
	// overflow: p' capped at 1/k = 0.5 at the next update; set above it,
	// the L queue marks everything and drops nothing.
	if d, m, n := run(DualPI2Config{Overflow: true}, 0.6, tosECT1); d != 0 || m < n-n/500 {
		t.Errorf("overflow: %d drops, %d marks of %d", d, m, n)
	}
	if d, _, _ := run(DualPI2Config{}, 0.3, tosNotECT); math.Abs(float64(d)/20000-0.09) > 4*0.0021 {
		t.Errorf("Not-ECT C packets at p' 0.3: %d drops, want 9%%", d)
	}
	coretest.CheckLive(t, pool, 0)
}

// The timer caught up lazily gives what a timer firing every tupdate
// gives: two disciplines see the same packets, one asked at every update
// time, the other only at the packet events, across a busy period, a
// queue left standing (the probability at its ceiling), and a long idle
// period (the probability decaying to 0).
func TestDualPI2LazyTimer(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	mk := func() *DualPI2 { return newTestDualPI2(t, DualPI2Config{Limit: 100000}, &Env{}) }
	eager, lazy := mk(), mk()
	type ev struct {
		at  clock.Time
		enq bool
	}
	var evs []ev
	for i := range 3000 { // 3 s of 1 packet/ms in, 0.8/ms out: the queue builds
		evs = append(evs, ev{clock.Time(i)*ms + 300*us, true})
		if i%5 != 0 {
			evs = append(evs, ev{clock.Time(i)*ms + 700*us, false})
		}
	}
	// A queue standing 4 s, then drained at once, then 60 s idle.
	evs = append(evs, ev{7000 * ms, false})
	for i := range 700 {
		evs = append(evs, ev{7000*ms + clock.Time(i), false})
	}
	evs = append(evs, ev{67000 * ms, true}, ev{67001 * ms, false})
	// Another queue for a second, drained, then 300 ms idle: the
	// probability decays part of the way.
	for i := range 1000 {
		evs = append(evs, ev{68000*ms + clock.Time(i)*ms, true})
		if i%2 == 0 {
			evs = append(evs, ev{68000*ms + clock.Time(i)*ms + 500*us, false})
		}
	}
	for i := range 600 {
		evs = append(evs, ev{69000*ms + clock.Time(i), false})
	}
	evs = append(evs, ev{69300 * ms, true}, ev{69301 * ms, false})
	seq := int64(0)
	apply := func(q *DualPI2, e ev) {
		if e.enq {
			seq++
			q.Enqueue(e.at, coretest.UDP(pool, 1500, 1, tosECT0, seq))
		} else if p, _ := q.Dequeue(e.at); p != nil {
			p.Free()
		}
	}
	tick := clock.Time(300 * us)
	partial := false
	for _, e := range evs {
		apply(lazy, e)
		for ; tick < e.at; tick += ms {
			eager.tick(tick) // the timer: the updates due by tick
		}
		apply(eager, e)
		if eager.prob != lazy.prob || eager.lastDelay != lazy.lastDelay || eager.nextAt != lazy.nextAt {
			t.Fatalf("at %v: eager p %d last %d next %v; lazy p %d last %d next %v", time.Duration(e.at),
				eager.prob, eager.lastDelay, eager.nextAt, lazy.prob, lazy.lastDelay, lazy.nextAt)
		}
		if e.at == 69300*ms && lazy.prob != 0 {
			partial = true
		}
	}
	if !partial {
		t.Error("the short idle period decayed the probability to 0: the test misses a partial decay")
	}
}

// Peek decides on the next packet as qdisc_peek_dequeued does: it is
// taken off its queue, still counted, and the next Dequeue returns it.
func TestDualPI2Peek(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestDualPI2(t, DualPI2Config{}, &Env{})
	a, b := coretest.UDP(pool, 500, 1, tosECT1, 1), coretest.UDP(pool, 500, 2, tosNotECT, 2)
	q.Enqueue(0, a)
	q.Enqueue(0, b)
	if p, next := q.Peek(ms); p != a || next != ms || q.Len() != 2 || q.Backlog() != 2*514 {
		t.Fatalf("Peek = %v, %v; len %d backlog %d", p, next, q.Len(), q.Backlog())
	}
	if p, _ := q.Dequeue(2 * ms); p != a {
		t.Fatalf("Dequeue after Peek = %v, want the peeked packet", p)
	}
	if p, _ := q.Dequeue(2 * ms); p != b {
		t.Fatalf("second Dequeue = %v", p)
	}
	if p, next := q.Peek(3 * ms); p != nil || next != clock.Never {
		t.Fatalf("Peek of an empty dualpi2 = %v, %v", p, next)
	}
	if s := q.Stats(); s.Packets != 2 || s.Bytes != 2*514 {
		t.Errorf("stats %+v", s)
	}
	a.Free()
	b.Free()
	coretest.CheckLive(t, pool, 0)
}

func BenchmarkDualPI2(b *testing.B) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestDualPI2(b, DualPI2Config{}, &Env{})
	ps := make([]*packet.Packet, 8)
	for i := range ps {
		ps[i] = coretest.UDP(pool, 1500, 1000, uint8(i%3), int64(i))
	}
	benchSteady(b, q, ps, 4)
}

// drop_enqueue applies must_drop at enqueue: a Not-ECT classic packet is
// refused (Dropped, ReasonDualPI2) with probability p'², once more than
// two MTUs are queued.
func TestDualPI2DropEnqueue(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestDualPI2(t, DualPI2Config{DropEnqueue: true, TUpdate: 4 * time.Second}, &Env{Observer: rec})
	q.tick(0)
	q.prob = dpi2MaxProb / 2
	dropped := 0
	const n = 20000
	for i := range n {
		if q.Enqueue(0, coretest.UDP(pool, 1500, 2, tosNotECT, int64(i))) == Dropped {
			dropped++
		}
		if q.Len() > 3 {
			p, _ := q.Dequeue(0) // nothing is decided at dequeue
			p.Free()
		}
	}
	if f := float64(dropped) / n; math.Abs(f-0.25) > 4*math.Sqrt(0.25*0.75/n) || rec.count(ReasonDualPI2) != dropped {
		t.Errorf("drop_enqueue at p' 0.5: %d of %d refused (want 25%%), observer %d", dropped, n, rec.count(ReasonDualPI2))
	}
	q.Flush(0)
	coretest.CheckLive(t, pool, 0)
}
