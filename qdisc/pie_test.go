package qdisc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

// ticksOf converts a duration to psched ticks.
func ticksOf(d time.Duration) uint64 { return uint64(d) >> 6 }

func defaultPIEParams() pieParams {
	return newPIEParams(ticksOf(DefaultPIETarget), DefaultPIEAlpha, DefaultPIEBeta, false)
}

func newTestPIE(t testing.TB, cfg PIEConfig, env *Env) *PIE {
	t.Helper()
	q, err := NewPIE(cfg, env)
	if err != nil {
		t.Fatalf("NewPIE(%+v): %v", cfg, err)
	}
	return q
}

func probOf(p uint64) float64 { return float64(p) / pieMaxProb }

// pie_calculate_probability (include/net/pie.h): with qdelay = qdelay_old = 25 ms only the alpha term
// acts: 0.125/s * 10 ms = 0.00125, halved below 10%.
func TestPIEDelta(t *testing.T) {
	pp := defaultPIEParams()
	qd := ticksOf(25 * time.Millisecond)
	for _, c := range []struct{ p, want float64 }{{0.05, 0.000625}, {0.5, 0.00125}} {
		d := pp.delta(uint64(c.p*pieMaxProb), qd, qd)
		if got := probOf(uint64(d)); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("p = %v: delta %.9f, want %v", c.p, got, c.want)
		}
	}
}

// pieConstantDelaySeries returns p after each of n updates from p = 0
// with a measured delay of 30 ms throughout (qdelay_old 0 at the first).
func pieConstantDelaySeries(n int) []float64 {
	pp := defaultPIEParams()
	var v pieVars
	v.reset()
	out := make([]float64, n+1)
	for i := 1; i <= n; i++ {
		v.qdelay = ticksOf(30 * time.Millisecond)
		pp.update(&v, 100000)
		out[i] = probOf(v.prob)
	}
	return out
}

// From p = 0 under a constant 30 ms delay (pie_calculate_probability),
// on the controller alone.
func TestPIEConstantDelay(t *testing.T) {
	series := pieConstantDelaySeries(400)
	for _, c := range []struct {
		n    int
		want string
	}{{1, "1.92e-05"}, {10, "0.000283"}, {100, "0.0458"}, {200, "0.179"}, {400, "0.554"}} {
		if got := fmt.Sprintf("%.3g", series[c.n]); got != c.want {
			t.Errorf("after %d updates p = %.5g, want %s", c.n, series[c.n], c.want)
		}
	}
}

// The same from p = 0 end to end: every packet waits exactly 30 ms, the queue
// stays under two MTUs (so nothing is dropped), the timer fires at 500 ms
// and then every 16 ms (15 ms rounded up to 4 ms jiffies).
func TestPIEConstantDelayEndToEnd(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestPIE(t, PIEConfig{}, &Env{Observer: rec})
	if q.TUpdate() != 16*time.Millisecond {
		t.Fatalf("TUpdate %v, want 16ms at HZ=250", q.TUpdate())
	}
	series := pieConstantDelaySeries(400)
	update := 0
	for now := clock.Time(0); update < 400; now += ms {
		if now >= 30*ms {
			p, _ := q.Dequeue(now)
			if p == nil || now-p.Enqueued != 30*ms {
				t.Fatalf("at %v: dequeued %v", now, p)
			}
			p.Free()
		}
		q.Enqueue(now, coretest.UDP(pool, 64, 1000, 0, int64(now/ms)))
		if now >= 500*ms && (now-500*ms)%(16*ms) == 0 {
			update++
			if got, want := q.Prob(), series[update]; got != want {
				t.Fatalf("after update %d at %v: p = %g, want %g", update, now, got, want)
			}
		} else if now < 500*ms && q.Prob() != 0 {
			t.Fatalf("p = %g at %v, before the first update at 500ms", q.Prob(), now)
		}
	}
	if len(rec.drops) != 0 {
		t.Errorf("%d drops below two MTUs of backlog", len(rec.drops))
	}
	if q.QDelay() != 30*time.Millisecond {
		t.Errorf("QDelay %v, want 30ms", q.QDelay())
	}
	tqDrain(t, q, 7*clock.Time(time.Second), 7*clock.Time(time.Second))
	coretest.CheckLive(t, pool, 0)
}

// pie_vars_init and pie_process_dequeue: after a reset, 150 ms of dequeuing pass before any
// early drop, even at p = 50%.
func TestPIEBurstAllowance(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestPIE(t, PIEConfig{}, &Env{Observer: rec})
	seq := int64(0)
	for range 10 {
		q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, seq))
		seq++
	}
	q.vars.prob = pieMaxProb / 2 // before the first update, at 500 ms
	for now := 1 * ms; now < 400*ms; now += ms {
		if p, _ := q.Dequeue(now); p != nil {
			p.Free()
		}
		for range 2 {
			q.Enqueue(now, coretest.UDP(pool, 1500, 1000, 0, seq))
			seq++
		}
	}
	// The first dequeue (1 ms) starts the clock; the allowance is used up
	// by the dequeue at 151 ms.
	n := 0
	for _, d := range rec.drops {
		if d.why != ReasonPIE {
			continue
		}
		n++
		if d.t < 151*ms {
			t.Fatalf("early drop at %v, within the burst allowance", d.t)
		}
	}
	if n == 0 {
		t.Fatal("no early drop at p = 50% after the burst allowance")
	}
	tqDrain(t, q, 400*ms, 400*ms)
	coretest.CheckLive(t, pool, 0)
}

// After congestion and a long idle period, p has decayed to 0 and the
// controller has reset the burst allowance: the next burst is spared again.
func TestPIEResetAfterIdle(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestPIE(t, PIEConfig{}, &Env{})
	for now := clock.Time(0); now < 2*clock.Time(time.Second); now += ms {
		if now >= 30*ms {
			p, _ := q.Dequeue(now)
			p.Free()
		}
		q.Enqueue(now, coretest.UDP(pool, 64, 1000, 0, 0))
	}
	if q.Prob() < 0.01 || q.vars.burstTime != 0 {
		t.Fatalf("after 2s at 30ms delay: p = %g, burst %d; want congestion", q.Prob(), q.vars.burstTime)
	}
	tqDrain(t, q, 2*clock.Time(time.Second), 2*clock.Time(time.Second))
	q.Enqueue(60*clock.Time(time.Second), coretest.UDP(pool, 64, 1000, 0, 0))
	if q.Prob() != 0 || q.vars.burstTime != pieBurstTicks || q.vars.dqTstamp != pieInvalid {
		t.Errorf("after idle: p = %g, burst %d, dq_tstamp %d; want a reset", q.Prob(), q.vars.burstTime, q.vars.dqTstamp)
	}
	tqDrain(t, q, 60*clock.Time(time.Second), 60*clock.Time(time.Second))
	coretest.CheckLive(t, pool, 0)
}

// pie_calculate_probability's non-linear boost: above 250 ms every update adds at least 2%; the kernel
// lets p pass 1 (it clamps only at the u64 wrap).
func TestPIEHighDelay(t *testing.T) {
	pp := defaultPIEParams()
	qd := ticksOf(300 * time.Millisecond)
	for _, p0 := range []float64{0, 0.001, 0.05, 0.1, 0.5, 0.99} {
		v := pieVars{prob: uint64(p0 * pieMaxProb), qdelay: qd, qdelayOld: qd}
		for i := range 5 {
			before := v.prob
			pp.update(&v, 100000)
			if v.prob-before < pieMaxProb/50 {
				t.Errorf("p0 = %v, update %d: p rose by %g, want >= 2%%", p0, i, probOf(v.prob-before))
			}
		}
	}
	p99 := 0.99
	v := pieVars{prob: uint64(p99 * pieMaxProb), qdelay: qd, qdelayOld: qd}
	pp.update(&v, 100000)
	if got := probOf(v.prob); math.Abs(got-1.03) > 1e-6 {
		t.Errorf("from 0.99 at 300ms: p = %v, want 1.03 (2%% capped step + 2%% boost, unclamped)", got)
	}
	v.prob = math.MaxUint64 - 1000
	pp.update(&v, 100000)
	if v.prob != pieMaxProb {
		t.Errorf("at the u64 wrap: p = %d, want MAX_PROB", v.prob)
	}
}

// advance must equal update applied n times, whatever it skips.
func TestPIEAdvanceMatchesSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	delays := []time.Duration{0, 64, 7*time.Millisecond + 499*time.Microsecond, 7500 * time.Microsecond,
		10 * time.Millisecond, 15 * time.Millisecond, 30 * time.Millisecond, 300 * time.Millisecond}
	probs := []uint64{0, 1, 63, pieMaxProb / 1000000, pieMaxProb/10 - 1, pieMaxProb / 10, pieMaxProb / 2,
		pieMaxProb, math.MaxUint64 - 12345}
	for i := range 400 {
		est := i%4 == 3
		pp := newPIEParams(ticksOf(DefaultPIETarget), 1+rng.IntN(32), 1+rng.IntN(32), est)
		var v pieVars
		v.reset()
		v.prob = probs[rng.IntN(len(probs))]
		if rng.IntN(3) == 0 {
			v.prob = rng.Uint64()
		}
		v.qdelay = ticksOf(delays[rng.IntN(len(delays))])
		v.qdelayOld = v.qdelay
		if rng.IntN(2) == 0 {
			v.qdelayOld = ticksOf(delays[rng.IntN(len(delays))])
		}
		if est && rng.IntN(3) > 0 {
			v.avgDQRate = 1 + rng.Uint32N(20000)
		}
		backlog := []uint32{0, 1000, 100000}[rng.IntN(3)]
		n := []int64{1, 2, 17, 1000, 30000}[rng.IntN(5)]
		want := v
		for range n {
			pp.update(&want, backlog)
		}
		got := v
		pp.advance(&got, backlog, n)
		if got != want {
			t.Fatalf("case %d (est %v, backlog %d, n %d, from %+v):\nadvance %+v\nsteps   %+v", i, est, backlog, n, v, got, want)
		}
	}
}

// A stall of any length costs a bounded amount of work.
func TestPIELongStallIsCheap(t *testing.T) {
	pp := defaultPIEParams()
	for _, c := range []struct {
		delay   time.Duration
		backlog uint32
		prob    uint64
	}{
		{0, 0, math.MaxUint64}, // idle: decay to 0, then reset
		{0, 5000, pieMaxProb},  // tiny queue: linear decrease
		{10 * time.Millisecond, 50000, pieMaxProb / 3},
		{30 * time.Millisecond, 50000, 0},     // climbs through every region
		{300 * time.Millisecond, 50000, 0},    // climbs past 1 and wraps, forever
		{time.Millisecond, 50000, pieMaxProb}, // falls through every region
	} {
		v := pieVars{prob: c.prob, qdelay: ticksOf(c.delay), qdelayOld: ticksOf(c.delay)}
		if work := pp.advance(&v, c.backlog, 1e12); work > 1200 {
			t.Errorf("delay %v backlog %d: %d updates computed for 1e12 due", c.delay, c.backlog, work)
		}
	}
}

// The first update comes HZ/2 jiffies after the qdisc starts, then every
// tupdate rounded up to whole jiffies.
func TestPIETimer(t *testing.T) {
	for _, c := range []struct {
		hz      int
		tupdate time.Duration
		want    time.Duration
	}{
		{250, 0, 16 * time.Millisecond},
		{100, 0, 20 * time.Millisecond},
		{1000, 0, 15 * time.Millisecond},
		{300, 0, 16666666 * time.Nanosecond},
		{250, 30 * time.Millisecond, 32 * time.Millisecond},
	} {
		q := newTestPIE(t, PIEConfig{TUpdate: c.tupdate}, &Env{HZ: c.hz})
		if q.TUpdate() != c.want {
			t.Errorf("HZ %d tupdate %v: TUpdate %v, want %v", c.hz, c.tupdate, q.TUpdate(), c.want)
		}
		start := 7 * clock.Time(time.Second)
		q.tick(start)
		var times []clock.Time
		for now := start; len(times) < 3; now += 100 * us {
			before := q.nextJ
			q.tick(now)
			if q.nextJ != before {
				times = append(times, now-start)
			}
		}
		half := clock.Time(500 * time.Millisecond)
		// Jiffies at HZ=300 begin on whole ns rounded up; the polling grid
		// is 100 us.
		step := (clock.Time(c.want) + 100*us - 1) / (100 * us) * (100 * us)
		if times[0] != half || times[1]-times[0] > step || times[1]-times[0] < clock.Time(c.want) ||
			times[2] < half+2*clock.Time(c.want) {
			t.Errorf("HZ %d: updates at %v after start, want 500ms then every %v", c.hz, times, c.want)
		}
	}
}

func TestPIELimit(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestPIE(t, PIEConfig{Limit: 5}, &Env{Observer: rec})
	for i := range 7 {
		q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, int64(i)))
	}
	s := q.Stats()
	if s.Qlen != 5 || s.Drops != 2 || s.DropsByReason[ReasonLimit] != 2 || s.Overlimits != 2 {
		t.Errorf("Stats %+v, want 5 queued and 2 limit drops", s)
	}
	if c := q.Config().(PIEConfig); c.Limit != 5 || c.Target != 15*time.Millisecond || c.Alpha != 2 || c.Beta != 20 || c.TUpdate != 15*time.Millisecond {
		t.Errorf("Config %+v", c)
	}
	tqDrain(t, q, 0, 0)
	coretest.CheckLive(t, pool, 0)
}

func TestPIEValidation(t *testing.T) {
	for _, cfg := range []PIEConfig{
		{Limit: -1}, {Alpha: 33}, {Beta: -1}, {Target: -time.Millisecond},
		{TUpdate: 500 * time.Nanosecond}, {Target: 2 * time.Hour},
	} {
		if _, err := NewPIE(cfg, &Env{}); err == nil {
			t.Errorf("NewPIE(%+v) accepted", cfg)
		}
	}
	if _, err := NewPIE(PIEConfig{}, &Env{HZ: -100}); err == nil {
		t.Error("NewPIE accepted a negative HZ")
	}
}

// pieCongested returns a PIE whose controller is set to probability p with
// a 20 ms delay and no burst allowance, holding three 1500 B packets.
func pieCongested(t *testing.T, cfg PIEConfig, env *Env, pool *packet.Pool, p float64) *PIE {
	q := newTestPIE(t, cfg, env)
	for i := range 3 {
		q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, int64(i)))
	}
	q.vars.burstTime = 0
	q.vars.prob = uint64(p * pieMaxProb)
	q.vars.qdelay = ticksOf(20 * time.Millisecond)
	return q
}

// With ECN, early "drops" of ECT packets become CE marks while p <= 10%.
func TestPIEECN(t *testing.T) {
	for _, c := range []struct {
		prob       uint64
		tos        uint8
		mark, drop bool
	}{
		{pieMaxProb / 20, 0x02, true, false},   // ECT(0) at 5%: marked
		{pieMaxProb / 20, 0x00, false, true},   // Not-ECT: dropped
		{pieMaxProb / 5, 0x02, false, true},    // 20%: dropped even if ECT
		{pieMaxProb / 10, 0x01, true, false},   // ECT(1) at exactly 10%
		{pieMaxProb/10 + 1, 0x01, false, true}, // just above 10%
		{pieMaxProb / 20, 0x03, true, false},   // CE already: counts as marked
	} {
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		rec := &recorder{}
		q := pieCongested(t, PIEConfig{ECN: true}, &Env{Observer: rec}, pool, 0)
		q.vars.prob = c.prob
		var marked []*packet.Packet
		for i := range 200 {
			p := coretest.UDP(pool, 1500, 1000, c.tos, int64(10+i))
			before := len(rec.marks)
			q.Enqueue(ms, p)
			if len(rec.marks) > before {
				marked = append(marked, p)
			}
		}
		s := q.Stats()
		if (s.Marks > 0) != c.mark || (s.DropsByReason[ReasonPIE] > 0) != c.drop || int(s.Marks) != len(rec.marks) {
			t.Errorf("p %g tos %#x: %d marks, %d pie drops", probOf(c.prob), c.tos, s.Marks, s.DropsByReason[ReasonPIE])
		}
		for _, p := range marked {
			if !p.Marked || packet.ECNOf(p.Bytes()) != packet.CE || !packet.IPv4HeaderValid(p.Bytes()) {
				t.Errorf("p %g tos %#x: marked packet has ECN %v, Marked %v", probOf(c.prob), c.tos, packet.ECNOf(p.Bytes()), p.Marked)
			}
		}
		tqDrain(t, q, ms, ms)
		coretest.CheckLive(t, pool, 0)
	}
}

// Bytemode scales the probability by size/MTU for packets up to one MTU,
// both as the device counts them: on Ethernet a 1500-byte IP packet is
// 1514 bytes, one psched_mtu, and carries the full probability; on a TUN
// device (FramingIP) the MTU is 1500.
func TestPIEBytemode(t *testing.T) {
	for _, c := range []struct {
		framing  Framing
		bytemode bool
		ipSize   int
		scale    uint64 // numerator over mtu; 0: the full probability
		mtu      uint64
	}{
		{FramingEthernet, false, 136, 0, 1514},
		{FramingEthernet, true, 136, 150, 1514},
		{FramingEthernet, true, 1500, 1514, 1514},
		{FramingEthernet, true, 3000, 0, 1514},
		{FramingIP, true, 150, 150, 1500},
		{FramingIP, true, 1500, 1500, 1500},
	} {
		pool := packet.NewPool(4096, packet.DefaultHeadroom)
		q := pieCongested(t, PIEConfig{Bytemode: c.bytemode}, &Env{Framing: c.framing}, pool, 0.5)
		if uint64(q.params.mtu) != c.mtu {
			t.Errorf("%v: mtu %d, want %d", c.framing, q.params.mtu, c.mtu)
		}
		q.vars.accuProb = 0
		q.Enqueue(0, coretest.UDP(pool, c.ipSize, 1000, 0, 9))
		want := q.vars.prob
		if c.scale != 0 {
			want = c.scale * (q.vars.prob / c.mtu)
		}
		if q.vars.accuProb != want {
			t.Errorf("%v bytemode %v IP size %d: accu_prob %d, want %d", c.framing, c.bytemode, c.ipSize, q.vars.accuProb, want)
		}
		tqDrain(t, q, 0, 0)
		coretest.CheckLive(t, pool, 0)
	}
}

// With the drain-rate estimator, qdelay is backlog / measured rate: 30
// packets of 1000 B drained at 1000 B/ms read as 30 ms.
func TestPIEEstimator(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestPIE(t, PIEConfig{DQRateEstimator: true}, &Env{})
	for range 30 {
		q.Enqueue(0, coretest.UDP(pool, 1000, 1000, 0, 0))
	}
	for now := ms; now <= clock.Time(time.Second); now += ms {
		p, _ := q.Dequeue(now)
		p.Free()
		q.Enqueue(now, coretest.UDP(pool, 1000, 1000, 0, 0))
	}
	if d := q.QDelay(); d < 28*time.Millisecond || d > 32*time.Millisecond {
		t.Errorf("estimated delay %v, want about 30ms", d)
	}
	if q.Prob() == 0 {
		t.Error("p still 0 at twice the target delay")
	}
	tqDrain(t, q, 2*clock.Time(time.Second), 2*clock.Time(time.Second))
	coretest.CheckLive(t, pool, 0)
}

// Peek dequeues and measures as qdisc_peek_dequeued; Dequeue hands over the
// same packet without measuring again.
func TestPIEPeek(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestPIE(t, PIEConfig{}, &Env{})
	q.Enqueue(0, coretest.UDP(pool, 100, 1000, 0, 0))
	q.Enqueue(0, coretest.UDP(pool, 100, 1000, 0, 1))
	p, _ := q.Peek(10 * ms)
	if p == nil || p.Seq != 0 || q.Len() != 2 || q.Backlog() != 2*114 || q.QDelay() != 10*time.Millisecond {
		t.Fatalf("Peek: %v, Len %d, Backlog %d, QDelay %v", p, q.Len(), q.Backlog(), q.QDelay())
	}
	if p2, _ := q.Dequeue(20 * ms); p2 != p || q.QDelay() != 10*time.Millisecond {
		t.Errorf("Dequeue after Peek: %v, QDelay %v", p2, q.QDelay())
	}
	p.Free()
	tqDrain(t, q, 20*ms, 20*ms)
	if p, next := q.Peek(30 * ms); p != nil || next != clock.Never {
		t.Errorf("empty Peek: %v, %v", p, next)
	}
	coretest.CheckLive(t, pool, 0)
}

// The random stream comes from Env.Seed: the same seed drops the same
// packets, another seed others.
func TestPIESeeded(t *testing.T) {
	run := func(seed uint64) []int64 {
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		rec := &recorder{}
		q := pieCongested(t, PIEConfig{Limit: 100000}, &Env{Observer: rec, Seed: seed}, pool, 0.3)
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
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("same seed, different drops")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("different seeds, same drops")
	}
	// Drops at accumulated 0.85..8.5 of p = 0.3: between one in 29 and one
	// in 3 packets.
	if len(a) < 2000/29 || len(a) > 2000/3 {
		t.Errorf("%d drops of 2000 at p = 0.3", len(a))
	}
}

// BenchmarkPIE: default pie, one 1500 B packet in and one out per op, the
// clock advancing 12 us per op (timer updates included).
func BenchmarkPIE(b *testing.B) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestPIE(b, PIEConfig{}, &Env{})
	ps := make([]*packet.Packet, 8)
	for i := range ps {
		ps[i] = coretest.UDP(pool, 1500, 1000, 0, int64(i))
	}
	benchSteady(b, q, ps, 4)
}

// pie_qdisc_enqueue's own counters: a unit admitted counts in pkts_in and
// raises maxq to the queue length it found (before joining it); one
// refused at the limit counts in overlimit and dropped.
func TestPIEXStatsCounters(t *testing.T) {
	pool := packet.NewPool(2048, 64)
	q := newTestPIE(t, PIEConfig{Limit: 5}, &Env{Pool: pool})
	for seq := range int64(7) {
		q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, seq))
	}
	x := q.XStats()
	if x.PacketsIn != 5 || x.MaxQ != 4 || x.Overlimit != 2 || x.Dropped != 2 || x.ECNMark != 0 || x.Prob != 0 || x.Estimator {
		t.Errorf("after 7 arrivals at a limit of 5: %+v; want pkts_in 5, maxq 4, overlimit 2, dropped 2", x)
	}
	q.Flush(0)
	coretest.CheckLive(t, pool, 0)
}
