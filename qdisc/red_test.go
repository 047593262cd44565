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

// redExample is tc-red(8)'s example, 1514-byte frames on Ethernet.
var redExample = REDConfig{Limit: 400000, Min: 30000, Max: 90000, Avpkt: 1000, Burst: 55, Bandwidth: 10_000_000 / 8}

func newTestRED(t testing.TB, cfg REDConfig, env *Env, child Qdisc) *RED {
	t.Helper()
	q, err := NewRED(cfg, env, child)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// Below min nothing happens; at or above max every packet is dropped
// (forced), or with ECN marked unless harddrop; a packet that is not
// ECN-capable is dropped even with ECN, and queued with nodrop.
func TestREDActions(t *testing.T) {
	for _, c := range []struct {
		name            string
		cfg             REDConfig
		tos             uint8
		drop, mark, any bool
	}{
		{"drop", redExample, 0x02, true, false, true},
		{"ecn ECT(0)", withFlags(redExample, true, false, false), 0x02, false, true, true},
		{"ecn CE", withFlags(redExample, true, false, false), 0x03, false, true, true},
		{"ecn Not-ECT", withFlags(redExample, true, false, false), 0x00, true, false, true},
		{"ecn harddrop", withFlags(redExample, true, true, false), 0x02, true, false, true},
		{"ecn nodrop Not-ECT", withFlags(redExample, true, false, true), 0x00, false, false, false},
	} {
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		rec := &recorder{}
		q := newTestRED(t, c.cfg, &Env{Observer: rec}, nil)
		for i := range 10 {
			// An average of twice max before each arrival: one step
			// towards a small backlog leaves it above max, so every
			// arrival is a forced decision.
			q.v.qavg, q.v.idle = uint64(q.p.qthMax)<<1, false
			q.Enqueue(ms, coretest.UDP(pool, 1500, 1000, c.tos, int64(i)))
		}
		x := q.XStats()
		if (x.ForcedDrop > 0) != c.drop || (x.ForcedMark > 0) != c.mark || (q.Stats().Overlimits == 10) != true {
			t.Errorf("%s: %+v, overlimits %d; want drops %v marks %v", c.name, x, q.Stats().Overlimits, c.drop, c.mark)
		}
		if c.drop && rec.count(ReasonRED) != 10 {
			t.Errorf("%s: %d red drops reported, want 10", c.name, rec.count(ReasonRED))
		}
		if c.mark && (len(rec.marks) != 10 || q.Len() != 10) {
			t.Errorf("%s: %d marks, %d queued; want 10 and 10", c.name, len(rec.marks), q.Len())
		}
		if !c.any && (q.Len() != 10 || len(rec.marks) != 0 || rec.count(ReasonRED) != 0) {
			t.Errorf("%s: %d queued, %d marks, %d drops; want all 10 queued untouched", c.name, q.Len(), len(rec.marks), rec.count(ReasonRED))
		}
		tqDrain(t, q, ms, ms)
		coretest.CheckLive(t, pool, 0)
	}
}

func withFlags(c REDConfig, ecn, harddrop, nodrop bool) REDConfig {
	c.ECN, c.HardDrop, c.NoDrop = ecn, harddrop, nodrop
	return c
}

// The default child is a bfifo of limit bytes: what it refuses counts as
// pdrop and in red's drops, not as early drops.
func TestREDLimit(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	// min far above the limit, so that only the child's limit acts.
	q := newTestRED(t, REDConfig{Limit: 5 * 1514, Min: 100000, Max: 200000, Avpkt: 1000}, &Env{Observer: rec}, nil)
	for i := range 7 {
		q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, int64(i)))
	}
	s, x := q.Stats(), q.XStats()
	if s.Qlen != 5 || s.Drops != 2 || x.PDrop != 2 || x.ProbDrop+x.ForcedDrop != 0 || rec.count(ReasonLimit) != 2 {
		t.Errorf("Stats %+v, xstats %+v; want 5 queued and 2 pdrops", s, x)
	}
	tqDrain(t, q, 0, 0)
	coretest.CheckLive(t, pool, 0)
}

// The count rule end to end: a queue held at a constant backlog between
// the thresholds (one packet out for each in, ECT packets marked rather
// than dropped so that the backlog stays) marks about 2·pb of the
// arrivals, pb = max_P·(avg - min)/(max - min) (the measure:
// within 10 %), and exactly what the count rule gives for the average the
// queue settles at (within 3 %).
func TestREDCountRuleEndToEnd(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	cfg := withFlags(redExample, true, false, false)
	q := newTestRED(t, cfg, &Env{Observer: rec}, nil)
	const backlogPkts = 40 // 40 × 1514 = 60560 bytes: half way up the ramp
	now := clock.Time(0)
	seq := int64(0)
	for range backlogPkts {
		q.Enqueue(now, coretest.UDP(pool, 1500, 1000, 0x02, seq))
		seq++
	}
	// Let the average settle (2^-5 a packet: a few hundred arrivals).
	step := func() {
		now += 100 * us
		q.Enqueue(now, coretest.UDP(pool, 1500, 1000, 0x02, seq))
		seq++
		p, _ := q.Dequeue(now)
		p.Free()
	}
	for range 2000 {
		step()
	}
	marks0 := q.XStats().ProbMark
	const n = 1_000_000
	for range n {
		step()
	}
	marked := float64(q.XStats().ProbMark-marks0) / n
	avg := float64(q.AverageQueue())
	x := avg - 30000
	pb := q.MaxP() * x / 60000
	qRmax := float64(uint64(1)<<32) / float64(q.p.maxPDelta)
	rule := 1 / (qRmax/(2*x) + 0.5)
	if math.Abs(marked-rule)/rule > 0.03 {
		t.Errorf("marked %.5f of arrivals at an average of %.0f bytes; the count rule gives %.5f", marked, avg, rule)
	}
	if math.Abs(marked-2*pb)/(2*pb) > 0.1 {
		t.Errorf("marked %.5f of arrivals, want about 2·pb = %.5f", marked, 2*pb)
	}
	if q.XStats().ForcedMark != 0 || q.Stats().Drops != 0 {
		t.Errorf("forced marks or drops at a constant backlog: %+v", q.XStats())
	}
	tqDrain(t, q, now, now)
	coretest.CheckLive(t, pool, 0)
}

// An idle period starts when red's dequeue finds nothing, as the root's
// device dequeues it; below a tbf, which peeks first, it never does, and
// the average then decays one arrival at a time.
func TestREDIdleStartsOnlyWhenDequeued(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	root := newTestRED(t, redExample, &Env{}, nil)
	root.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, 1))
	tqDrain(t, root, 0, 0)
	if !root.v.idle || root.v.idleStart != 0 {
		t.Errorf("a root red dequeued empty: idle %v since %v, want idle since 0", root.v.idle, root.v.idleStart)
	}

	red := newTestRED(t, redExample, &Env{}, nil)
	tbf, err := NewTBF(TBFConfig{Rate: 10_000_000 / 8, Burst: 32 << 10}, &Env{}, red)
	if err != nil {
		t.Fatal(err)
	}
	tbf.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, 2))
	tqDrain(t, tbf, 0, 0)
	if red.v.idle {
		t.Error("a red below tbf started an idle period: the kernel's tbf peeks and never dequeues an empty red")
	}
	coretest.CheckLive(t, pool, 0)
}

// Adaptive RED as Linux 6.1 runs it when tc configured it: with the
// average held above the target band, max_P does not move, since the
// kernel never arms the timer (tcArmsAdaptiveTimer; TestREDAdapt checks
// red.h's algorithm itself).
func TestREDAdaptiveTimer(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	cfg := redExample
	cfg.Adaptive = true
	q := newTestRED(t, cfg, &Env{}, nil)
	q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, 0)) // starts the timer
	start := q.p.maxP
	q.v.qavg = 80000 << q.p.wlog
	q.tick(clock.Time(2*time.Second + 1))
	// Linux 6.1 with tc 6.1 never arms the timer (tcArmsAdaptiveTimer):
	// max_P stays as given, as the guest's tc showed after 20 s.
	if q.p.maxP != start {
		t.Errorf("after 2 s above the band: max_P %d, want %d as given (the timer is not armed)", q.p.maxP, start)
	}
	tqDrain(t, q, 2*clock.Time(time.Second), 2*clock.Time(time.Second))
	coretest.CheckLive(t, pool, 0)
}

// tc qdisc change on red drops its queue and starts the average again, as
// __red_change replaces the child.
func TestREDChangeFlushes(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestRED(t, redExample, &Env{Observer: rec}, nil)
	for i := range 5 {
		q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, int64(i)))
	}
	c := redExample
	c.Limit = 200000
	if err := q.Change(ms, c); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 0 || rec.count(ReasonFlushed) != 5 || q.v.qavg != 0 || !q.v.idle {
		t.Errorf("after change: %d queued, %d flushed, qavg %d, idle %v", q.Len(), rec.count(ReasonFlushed), q.v.qavg, q.v.idle)
	}
	if got := q.Child().(*Fifo).limit; got != 200000 {
		t.Errorf("new child's limit %d, want 200000", got)
	}
	coretest.CheckLive(t, pool, 0)
}

// BenchmarkRED: tc-red(8)'s example, one 1500 B packet in and one out per
// op with about 40 queued (between the thresholds, so each arrival runs
// the count rule).
func BenchmarkRED(b *testing.B) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestRED(b, withFlags(redExample, true, false, false), &Env{}, nil)
	ps := make([]*packet.Packet, 48)
	for i := range ps {
		ps[i] = coretest.UDP(pool, 1500, 1000, 0x02, int64(i))
	}
	benchSteady(b, q, ps, 40)
}

// What tc or the kernel refuses is refused before anything is built,
// naming the fix.
func TestREDConfigureRefuses(t *testing.T) {
	for _, c := range []struct {
		cfg  REDConfig
		want string
	}{
		{REDConfig{Limit: 400000, Avpkt: 1000, Min: 90000, Max: 30000}, "max 30000 is below min 90000"},
		{REDConfig{Limit: 400000, Avpkt: 1000, NoDrop: true}, "nodrop needs ecn"},
		{REDConfig{Limit: 400000, Avpkt: 1000, Burst: 1}, "give burst 34 or more"},
	} {
		if _, err := NewRED(c.cfg, &Env{}, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
