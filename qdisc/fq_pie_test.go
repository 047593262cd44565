package qdisc

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

func newTestFQPIE(t testing.TB, cfg FQPIEConfig, env *Env) *FQPIE {
	t.Helper()
	q, err := NewFQPIE(cfg, env)
	if err != nil {
		t.Fatalf("NewFQPIE(%+v): %v", cfg, err)
	}
	return q
}

// fqPIESlot returns the flow of fq_pie q that UDP packets from port go to.
func fqPIESlot(q *FQPIE, pool *packet.Pool, port uint16) int32 {
	p := coretest.UDP(pool, 64, port, 0, 0)
	defer p.Free()
	return flowSlot(p, q.seed, len(q.flows))
}

// fqPIEPortIn returns a UDP source port whose flow is in timer batch b.
func fqPIEPortIn(t *testing.T, q *FQPIE, pool *packet.Pool, b int32) uint16 {
	for port := uint16(1000); port < 60000; port++ {
		if fqPIESlot(q, pool, port)/fqPIETimerBatch == b {
			return port
		}
	}
	t.Fatalf("no port hashes into batch %d", b)
	return 0
}

// Each flow's PIE follows pie_calculate_probability's series for a
// constant 30 ms delay (pieConstantDelaySeries, the numbers pie_test.go
// checks), updated by fq_pie_timer: at HZ 250 first at 500 ms, then every
// 16 ms; with 4096 flows the timer takes two expiries a round (2048 flows
// each), so a round lasts 4 + 1 jiffies (20 ms) and the second batch's
// flows are updated one jiffy (4 ms) after the first's. An idle flow stays
// at 0.
func TestFQPIEFlowProbability(t *testing.T) {
	series := pieConstantDelaySeries(300)
	for _, c := range []struct {
		flows  int
		batch  int32
		offset clock.Time // of the batch's updates after 500 ms
		period clock.Time
	}{
		{1024, 0, 0, 16 * ms},
		{4096, 0, 0, 20 * ms},
		{4096, 1, 4 * ms, 20 * ms},
	} {
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		rec := &recorder{}
		q := newTestFQPIE(t, FQPIEConfig{Flows: c.flows}, &Env{Observer: rec})
		port := fqPIEPortIn(t, q, pool, c.batch)
		idx := fqPIESlot(q, pool, port)
		idle := (idx + 1) % int32(c.flows)
		first := 500*ms + c.offset
		for now := clock.Time(0); now < first+300*c.period; now += ms {
			if now >= 30*ms {
				p, _ := q.Dequeue(now)
				if p == nil || now-p.Enqueued != 30*ms {
					t.Fatalf("flows %d at %v: dequeued %v", c.flows, now, p)
				}
				p.Free()
			}
			q.Enqueue(now, coretest.UDP(pool, 64, port, 0, int64(now/ms)))
			n := 0
			if now >= first {
				n = int((now-first)/c.period) + 1
			}
			if got := q.pflows[idx].vars.prob; probOf(got) != series[n] {
				t.Fatalf("flows %d batch %d at %v: p = %g, want %g (update %d)", c.flows, c.batch, now, probOf(got), series[n], n)
			}
		}
		q.sync(idle)
		if q.pflows[idle].vars.prob != 0 || q.pflows[idle].updates != q.timer.due[idle/fqPIETimerBatch] {
			t.Errorf("flows %d: idle flow p = %g after %d updates", c.flows, probOf(q.pflows[idle].vars.prob), q.pflows[idle].updates)
		}
		if len(rec.drops) != 0 {
			t.Errorf("flows %d: %d drops below two MTUs of backlog", c.flows, len(rec.drops))
		}
		tqDrain(t, q, 10*clock.Time(time.Second), 10*clock.Time(time.Second))
		coretest.CheckLive(t, pool, 0)
	}
}

// A sparse flow (a 100 B packet every 20 ms) beside 8 unresponsive bulk
// flows (1500 B every 6 ms each: 16 Mbit/s in all) on a 10 Mbit/s link
// waits at most for the packet on the wire: fq_pie serves it as a new
// flow, while the bulk flows queue up to PIE's target and beyond.
func TestFQPIESparseFlowDelay(t *testing.T) {
	pool := packet.NewPool(4096, packet.DefaultHeadroom)
	q := newTestFQPIE(t, FQPIEConfig{}, &Env{})
	const sparse = 5000
	seen := map[int32]uint16{}
	for _, port := range []uint16{2000, 2001, 2002, 2003, 2004, 2005, 2006, 2007, sparse} {
		idx := fqPIESlot(q, pool, port)
		if other, ok := seen[idx]; ok {
			t.Fatalf("ports %d and %d share flow %d", other, port, idx)
		}
		seen[idx] = port
	}
	const rate = 10e6 / 8 // bytes per second
	step := 100 * us
	var linkFree clock.Time
	var sparseDelays, bulkDelays []float64
	warm := clock.Time(2 * time.Second)
	for now := clock.Time(0); now < 5*clock.Time(time.Second); now += step {
		if now%(6*ms) == 0 {
			for i := range 8 {
				q.Enqueue(now, coretest.UDP(pool, 1500, uint16(2000+i), 0, 0))
			}
		}
		if now%(20*ms) == 3*ms {
			q.Enqueue(now, coretest.UDP(pool, 100, sparse, 0, 0))
		}
		if now < linkFree {
			continue
		}
		p, _ := q.Dequeue(now)
		if p == nil {
			continue
		}
		linkFree = now + clock.Time(float64(p.Len()+EthernetHeaderLen)/rate*1e9)
		if now >= warm {
			d := float64(now-p.Enqueued) / 1e6
			if srcPort(p) == sparse {
				sparseDelays = append(sparseDelays, d)
			} else {
				bulkDelays = append(bulkDelays, d)
			}
		}
		p.Free()
	}
	slices.Sort(sparseDelays)
	slices.Sort(bulkDelays)
	// 150 sparse packets in the 3 s measured, none lost.
	if len(sparseDelays) != 150 {
		t.Fatalf("%d sparse packets delivered after warm-up, want 150", len(sparseDelays))
	}
	p99 := sparseDelays[len(sparseDelays)*99/100]
	bulk50 := bulkDelays[len(bulkDelays)/2]
	// One full-size packet on the wire at 10 Mbit/s is 1.21 ms, the
	// polling step 0.1 ms.
	if p99 >= 5 || sparseDelays[len(sparseDelays)-1] > 1.4 {
		t.Errorf("sparse flow: p99 %.2f ms, max %.2f ms; want below 5 ms (at most one bulk packet's 1.21 ms)", p99, sparseDelays[len(sparseDelays)-1])
	}
	if bulk50 < 7.5 {
		t.Errorf("bulk flows: median delay %.2f ms, want a standing queue (PIE's target is 15 ms)", bulk50)
	}
	t.Logf("sparse p99 %.2f ms; bulk median %.2f ms; drops %d", p99, bulk50, q.Stats().Drops)
	tqDrain(t, q, 5*clock.Time(time.Second), 5*clock.Time(time.Second))
	coretest.CheckLive(t, pool, 0)
}

// fqPIECongested returns an fq_pie whose flow of port holds three 1500 B
// packets, its PIE at probability prob with a 20 ms delay and no burst
// allowance.
func fqPIECongested(t *testing.T, cfg FQPIEConfig, env *Env, pool *packet.Pool, port uint16, prob uint64) (*FQPIE, int32) {
	q := newTestFQPIE(t, cfg, env)
	for i := range 3 {
		q.Enqueue(0, coretest.UDP(pool, 1500, port, 0, int64(i)))
	}
	idx := fqPIESlot(q, pool, port)
	v := &q.pflows[idx].vars
	v.burstTime, v.prob, v.qdelay = 0, prob, ticksOf(20*time.Millisecond)
	return q, idx
}

// With ecn, fq_pie_qdisc_enqueue marks an ECT packet chosen for an early
// drop while the flow's probability is at most ecn_prob percent of
// MAX_PROB ((MAX_PROB / 100) * ecn_prob), and drops it above.
func TestFQPIEECNProb(t *testing.T) {
	for _, c := range []struct {
		ecn        bool
		ecnProb    int
		prob       uint64
		tos        uint8
		mark, drop bool
	}{
		{true, 0, pieMaxProb / 20, 0x02, true, false},          // 5% under the default 10: marked
		{true, 0, pieMaxProb / 100 * 10, 0x01, true, false},    // exactly 10%: ECT(1) marked
		{true, 0, pieMaxProb/100*10 + 1, 0x01, false, true},    // just above: dropped
		{true, 20, pieMaxProb / 100 * 15, 0x02, true, false},   // 15% under ecn_prob 20
		{true, 20, pieMaxProb / 100 * 20, 0x02, true, false},   // exactly 20%
		{true, 20, pieMaxProb/100*20 + 1, 0x02, false, true},   // above 20%
		{true, 20, pieMaxProb / 100 * 15, 0x00, false, true},   // Not-ECT: dropped
		{false, 20, pieMaxProb / 100 * 15, 0x02, false, true},  // noecn: dropped
		{true, 99, pieMaxProb / 100 * 99, 0x03, true, false},   // CE already: counts as marked
		{true, 99, pieMaxProb/100*99 + 100, 0x02, false, true}, // above 99%
		{true, 1, pieMaxProb / 2, 0x02, false, true},           // 50% over ecn_prob 1
	} {
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		rec := &recorder{}
		q, _ := fqPIECongested(t, FQPIEConfig{ECN: c.ecn, ECNProb: c.ecnProb, Limit: 100000}, &Env{Observer: rec}, pool, 1000, c.prob)
		for i := range 300 {
			q.Enqueue(ms, coretest.UDP(pool, 1500, 1000, c.tos, int64(10+i)))
		}
		s, x := q.Stats(), q.XStats()
		name := fmt.Sprintf("ecn %v ecn_prob %d p %.6g tos %#x", c.ecn, c.ecnProb, probOf(c.prob), c.tos)
		if (s.Marks > 0) != c.mark || (s.DropsByReason[ReasonPIE] > 0) != c.drop || int(s.Marks) != len(rec.marks) ||
			uint64(x.ECNMark) != s.Marks || uint64(x.Dropped) != s.Drops || x.PacketsIn != 3+300-uint32(s.Drops) {
			t.Errorf("%s: %d marks, %d pie drops, xstats %+v", name, s.Marks, s.DropsByReason[ReasonPIE], x)
		}
		for _, m := range rec.marks {
			if m.why != ReasonPIE {
				t.Errorf("%s: mark for %v", name, m.why)
			}
		}
		tqDrain(t, q, ms, ms)
		coretest.CheckLive(t, pool, 0)
	}
}

// In Linux 6.1, fq_pie's memory_limit drops nothing: an arrival while the
// memory in use exceeds memory_limit plus the packet's truesize counts in
// overmemory. 1500 B IP packets are 1514 B on Ethernet and 2318 B of
// truesize (DefaultFQCoDelMemOverhead 804): with memory_limit 10000, the
// 7th arrival is the first to find 13908 > 10000 + 2318. A limit of
// 2^32-1 wraps in the kernel's u32 sum, to 2317: every arrival after the
// first counts.
func TestFQPIEMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		limit      int
		overmemory uint32
	}{{10000, 4}, {math.MaxUint32, 9}, {0, 0}} {
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		rec := &recorder{}
		q := newTestFQPIE(t, FQPIEConfig{MemoryLimit: c.limit}, &Env{Observer: rec})
		for i := range 10 {
			q.Enqueue(0, coretest.UDP(pool, 1500, uint16(1000+i%3), 0, int64(i)))
		}
		x := q.XStats()
		if x.Overmemory != c.overmemory || x.MemoryUsage != 10*2318 || q.Len() != 10 || len(rec.drops) != 0 {
			t.Errorf("memory_limit %d: xstats %+v, %d held, %d drops; want overmemory %d and every packet queued", c.limit, x, q.Len(), len(rec.drops), c.overmemory)
		}
		for range 4 {
			p, _ := q.Dequeue(0)
			p.Free()
		}
		if x := q.XStats(); x.MemoryUsage != 6*2318 {
			t.Errorf("memory_limit %d: %d bytes in use after 4 of 10 left, want %d", c.limit, x.MemoryUsage, 6*2318)
		}
		tqDrain(t, q, 0, 0)
		coretest.CheckLive(t, pool, 0)
	}
}

// Two backlogged flows, of 1500 B and 300 B packets, get equal bytes by
// DRR within a quantum and a packet: each round the big flow sends one
// 1514 B packet and the small one five of 314 B (its deficit of 1514 goes
// negative by the last).
func TestFQPIEFairness(t *testing.T) {
	pool := packet.NewPool(4096, packet.DefaultHeadroom)
	q := newTestFQPIE(t, FQPIEConfig{}, &Env{})
	if fqPIESlot(q, pool, 1000) == fqPIESlot(q, pool, 1001) {
		t.Fatal("the two flows share a queue")
	}
	for i := range 1000 {
		q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, int64(i)))
		q.Enqueue(0, coretest.UDP(pool, 300, 1001, 0, int64(i)))
	}
	bytes := map[uint16]int{}
	for range 600 {
		p, _ := q.Dequeue(0)
		bytes[srcPort(p)] += p.Len() + EthernetHeaderLen
		p.Free()
		if d := bytes[1000] - bytes[1001]; d > 1514+314 || d < -(1514+314) {
			t.Fatalf("bytes %v differ by more than a quantum and a packet", bytes)
		}
	}
	if bytes[1000] < 100*1514 || bytes[1001] < 100*1514 {
		t.Errorf("bytes %v: both flows should have sent about 100 rounds", bytes)
	}
	tqDrain(t, q, 0, 0)
	coretest.CheckLive(t, pool, 0)
}

// limit counts the packets of every flow; a drop at it is ReasonLimit,
// counted in the xstats (overlimit, dropped), not in tc's overlimits.
func TestFQPIELimit(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestFQPIE(t, FQPIEConfig{Limit: 5}, &Env{Observer: rec})
	for i := range 7 {
		q.Enqueue(0, coretest.UDP(pool, 1500, uint16(1000+i), 0, int64(i)))
	}
	s, x := q.Stats(), q.XStats()
	if s.Qlen != 5 || s.Drops != 2 || s.DropsByReason[ReasonLimit] != 2 || s.Overlimits != 0 ||
		x.Overlimit != 2 || x.Dropped != 2 || x.PacketsIn != 5 {
		t.Errorf("Stats %+v, xstats %+v: want 5 queued and 2 limit drops", s, x)
	}
	c := q.Config().(FQPIEConfig)
	if c.Limit != 5 || c.Flows != 1024 || c.Target != 15*time.Millisecond || c.TUpdate != 15*time.Millisecond ||
		c.Alpha != 2 || c.Beta != 20 || c.Quantum != 1514 || c.MemoryLimit != 32<<20 || c.ECNProb != 10 || c.ECN {
		t.Errorf("Config %+v", c)
	}
	tqDrain(t, q, 0, 0)
	coretest.CheckLive(t, pool, 0)
}

// A flow on no list becomes a new flow with a quantum of credit; the xstats
// count new flows and the lists' lengths.
func TestFQPIENewFlows(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestFQPIE(t, FQPIEConfig{}, &Env{Framing: FramingIP})
	for i := range 3 {
		q.Enqueue(0, coretest.UDP(pool, 1000, uint16(1000+i), 0, int64(i)))
		q.Enqueue(0, coretest.UDP(pool, 1000, uint16(1000+i), 0, int64(i)))
	}
	if x := q.XStats(); x.NewFlowCount != 3 || x.NewFlowsLen != 3 || x.OldFlowsLen != 0 {
		t.Errorf("xstats %+v, want 3 new flows", x)
	}
	// Each flow sends one 1000 B packet (quantum 1500 on TUN leaves 500
	// credit), then a second (-500): the first three dequeues are one per
	// flow in order, all three flows' deficit still positive.
	var ports []uint16
	for range 3 {
		p, _ := q.Dequeue(0)
		ports = append(ports, srcPort(p))
		p.Free()
	}
	if fmt.Sprint(ports) != "[1000 1000 1001]" {
		t.Errorf("dequeue order %v: a new flow keeps its turn while its deficit lasts", ports)
	}
	tqDrain(t, q, 0, 0)
	if x := q.XStats(); x.NewFlowsLen != 0 || x.OldFlowsLen != 0 || x.NewFlowCount != 3 {
		t.Errorf("after draining: xstats %+v", x)
	}
	coretest.CheckLive(t, pool, 0)
}

func TestFQPIEValidation(t *testing.T) {
	for _, cfg := range []FQPIEConfig{
		{Flows: MaxFQPIEFlows + 1}, {Quantum: MaxFQPIEQuantum + 1}, {ECNProb: 100}, {Alpha: 33}, {Beta: 33},
		{Limit: -1}, {Target: 500 * time.Nanosecond}, {TUpdate: 2 * time.Hour}, {MemoryLimit: math.MaxUint32 + 1},
	} {
		if _, err := NewFQPIE(cfg, &Env{}); err == nil {
			t.Errorf("NewFQPIE(%+v) accepted", cfg)
		}
	}
	for _, cfg := range []FQPIEConfig{{Flows: MaxFQPIEFlows}, {Quantum: 1}, {Quantum: MaxFQPIEQuantum}, {ECNProb: 99}, {Alpha: 32}} {
		if _, err := NewFQPIE(cfg, &Env{}); err != nil {
			t.Errorf("NewFQPIE(%+v): %v", cfg, err)
		}
	}
}

// fq_pie_change keeps the flows and their PIE, refuses new flows, and
// drops through the scheduler what exceeds a lower limit; a new tupdate
// applies from the next round: with the first round at 500 ms and tupdate
// 16 ms, a change to 40 ms at 510 ms leaves the update at 516 ms in place
// and the next at 556 ms.
func TestFQPIEChange(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestFQPIE(t, FQPIEConfig{}, &Env{Observer: rec})
	for i := range 6 {
		q.Enqueue(0, coretest.UDP(pool, 1500, uint16(1000+i%2), 0, int64(i)))
	}
	if err := q.Change(510*ms, FQPIEConfig{Flows: 512}); err == nil {
		t.Error("Change accepted a new number of flows")
	}
	if err := q.Change(510*ms, FQPIEConfig{Limit: 4, TUpdate: 40 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 4 || rec.count(ReasonLimit) != 2 || q.TUpdate() != 40*time.Millisecond {
		t.Errorf("after Change: %d held, %d limit drops, tupdate %v", q.Len(), rec.count(ReasonLimit), q.TUpdate())
	}
	for _, c := range []struct {
		at  clock.Time
		due int64
	}{{515 * ms, 1}, {516 * ms, 2}, {555 * ms, 2}, {556 * ms, 3}, {596 * ms, 4}} {
		q.timer.tick(c.at)
		if q.timer.due[0] != c.due {
			t.Errorf("at %v: %d updates due, want %d", c.at, q.timer.due[0], c.due)
		}
	}
	tqDrain(t, q, 600*ms, 600*ms)
	coretest.CheckLive(t, pool, 0)
}

// The drop draws come from Env.Seed.
func TestFQPIESeeded(t *testing.T) {
	run := func(seed uint64) []int64 {
		pool := packet.NewPool(4096, packet.DefaultHeadroom)
		rec := &recorder{}
		q, _ := fqPIECongested(t, FQPIEConfig{Limit: 100000}, &Env{Observer: rec, Seed: seed}, pool, 1000, pieMaxProb/100*30)
		for i := range 2000 {
			q.Enqueue(ms, coretest.UDP(pool, 1500, 1000, 0, int64(i)))
		}
		tqDrain(t, q, ms, ms)
		var seqs []int64
		for _, d := range rec.drops {
			seqs = append(seqs, d.seq)
		}
		return seqs
	}
	a, b, c := run(42), run(42), run(43)
	if fmt.Sprint(a) != fmt.Sprint(b) || fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("drops do not follow the seed")
	}
	// Drops at accumulated 0.85..8.5 of p = 0.3: between one in 29 and one
	// in 3 packets.
	if len(a) < 2000/29 || len(a) > 2000/3 {
		t.Errorf("%d drops of 2000 at p = 0.3", len(a))
	}
}

// BenchmarkFQPIE: default fq_pie, four flows of 1500 B packets, one in and
// one out per op, the clock advancing 12 us per op (the timer's updates
// included).
func BenchmarkFQPIE(b *testing.B) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestFQPIE(b, FQPIEConfig{}, &Env{})
	ps := make([]*packet.Packet, 16)
	for i := range ps {
		ps[i] = coretest.UDP(pool, 1500, uint16(1000+i%4), 0, int64(i))
	}
	benchSteady(b, q, ps, 8)
}

// Each flow catches up on the timer's updates when its packets come and
// go; catching every flow up every millisecond instead (as the kernel's
// timer runs them, batch by batch) changes nothing: the same drops, marks
// and controller states. 4100 flows make three batches a jiffy apart.
func TestFQPIELazyTimerIsExact(t *testing.T) {
	run := func(eager bool) ([]seen, []seen, []fqPIEFlow) {
		pool := packet.NewPool(4096, packet.DefaultHeadroom)
		rec := &recorder{}
		q := newTestFQPIE(t, FQPIEConfig{Flows: 4100, Target: 5 * time.Millisecond, ECN: true, ECNProb: 90}, &Env{Observer: rec, Seed: 7})
		// Three flows in each batch.
		var ports []uint16
		per := map[int32]int{}
		for port := uint16(1000); len(ports) < 9; port++ {
			if b := fqPIESlot(q, pool, port) / fqPIETimerBatch; per[b] < 3 {
				per[b]++
				ports = append(ports, port)
			}
		}
		for now := clock.Time(0); now < 1500*ms; now += 250 * us {
			for i, port := range ports {
				if (now/(250*us))%clock.Time(i+1) == 0 {
					q.Enqueue(now, coretest.UDP(pool, 1000, port, uint8(i%2)*2, int64(now)))
				}
			}
			if p, _ := q.Dequeue(now); p != nil {
				p.Free()
			}
			if eager && now%ms == 0 {
				q.timer.tick(now)
				for i := range q.pflows {
					q.sync(int32(i))
				}
			}
		}
		q.timer.tick(1500 * ms)
		for i := range q.pflows {
			q.sync(int32(i))
		}
		tqDrain(t, q, 1500*ms, 1500*ms)
		coretest.CheckLive(t, pool, 0)
		return rec.drops, rec.marks, q.pflows
	}
	ld, lm, lf := run(false)
	ed, em, ef := run(true)
	if len(ld) < 100 || len(lm) < 100 {
		t.Fatalf("%d drops, %d marks: the test does not bite", len(ld), len(lm))
	}
	if fmt.Sprint(ld) != fmt.Sprint(ed) || fmt.Sprint(lm) != fmt.Sprint(em) {
		t.Errorf("lazy: %d drops %d marks; eager: %d drops %d marks", len(ld), len(lm), len(ed), len(em))
	}
	for i := range lf {
		if lf[i] != ef[i] {
			t.Fatalf("flow %d: lazy %+v, eager %+v", i, lf[i], ef[i])
		}
	}
}
