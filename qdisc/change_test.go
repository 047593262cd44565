package qdisc

import (
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

// netem_change: every queued packet keeps its time to send; packets that
// arrive later get the new delay, and with a new rate serialise after the
// latest packet still queued.
func TestNetemChangeKeepsDepartures(t *testing.T) {
	b := newBench(t, NetemConfig{Delay: 100 * time.Millisecond})
	for i := range 3 {
		b.send(clock.Time(i)*ms, 100)
	}
	if err := b.q.Change(5*ms, NetemConfig{Delay: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	b.send(5*ms, 100)
	if err := b.q.Change(6*ms, NetemConfig{Delay: 10 * time.Millisecond, Rate: mbit(10)}); err != nil {
		t.Fatal(err)
	}
	b.send(6*ms, 1500)
	b.runUntil(0, clock.Time(time.Second))
	// The 1500-byte packet (1514 bytes on Ethernet) at 10 Mbit/s leaves
	// 1.2112 ms after the latest queued packet (102 ms).
	want := []departure{{15 * ms, 3, nil}, {100 * ms, 0, nil}, {101 * ms, 1, nil}, {102 * ms, 2, nil}, {102*ms + 1211200, 4, nil}}
	if !slices.Equal(b.out, want) {
		t.Errorf("departures %v, want %v", b.out, want)
	}
	if b.q.Config().(NetemConfig).Rate != mbit(10) {
		t.Errorf("config %+v", b.q.Config())
	}
	b.checkLeaks(0)
}

// A netem with its own seed reseeds its stream with it on every change, as
// the kernel does: after a change the draws start over. Without one, each
// change draws from a new stream derived from the position's seed, the
// same one in every run.
func TestNetemChangeReseeds(t *testing.T) {
	delays := func(cfg NetemConfig) []clock.Time {
		b := newBench(t, cfg)
		var tts []clock.Time
		for i := range 200 {
			if i == 100 {
				if err := b.q.Change(clock.Time(i)*ms, cfg); err != nil {
					t.Fatal(err)
				}
			}
			now := clock.Time(i) * ms
			p, _ := b.send(now, 100)
			tts = append(tts, p.TimeToSend-now)
			b.drain(now, false)
		}
		b.drain(clock.Never-1, false)
		return tts
	}
	cfg := NetemConfig{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, Correlation: CorrelationKernel, Seed: 5, SeedSet: true}
	got := delays(cfg)
	if !slices.Equal(got[:100], got[100:]) {
		t.Error("seed 5: the draws after the change do not start over")
	}
	cfg.SeedSet = false
	a, b := delays(cfg), delays(cfg)
	if !slices.Equal(a, b) {
		t.Error("without a seed, two runs differ")
	}
	if slices.Equal(a[:100], a[100:]) {
		t.Error("without a seed, the change replayed the first stream")
	}
}

// A configuration netem refuses changes nothing.
func TestNetemChangeRefused(t *testing.T) {
	b := newBench(t, NetemConfig{Delay: 100 * time.Millisecond})
	for _, bad := range []Spec{NetemConfig{Reorder: 0.5}, CoDelConfig{}, &NetemConfig{}} {
		if err := b.q.Change(0, bad); err == nil {
			t.Errorf("Change(%#v) accepted", bad)
		}
	}
	if b.q.Config().(NetemConfig).Delay != 100*time.Millisecond {
		t.Errorf("config %+v after refused changes", b.q.Config())
	}
}

// codel_change drops from the head, without CoDel's decision, down to a
// lower limit; CoDel's state carries on.
func TestCoDelChangeDropsToLimit(t *testing.T) {
	rec := &recorder{}
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q, err := NewCoDel(CoDelConfig{}, &Env{Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		p := coretest.UDP(pool, 100, 1, 0, 0)
		p.Seq = int64(i)
		q.Enqueue(0, p)
	}
	q.vars.count = 7
	if err := q.Change(ms, CoDelConfig{Limit: 4, Target: 2 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 4 || len(rec.drops) != 6 || countEvents(rec.drops, ReasonLimit) != 6 || rec.drops[0].seq != 0 || rec.drops[5].seq != 5 {
		t.Fatalf("len %d, drops %+v; want the 6 oldest dropped for limit", q.Len(), rec.drops)
	}
	if q.vars.count != 7 || q.params.target != codelFromDuration(2*time.Millisecond) || q.Config().(CoDelConfig).Limit != 4 {
		t.Errorf("count %d target %d config %+v", q.vars.count, q.params.target, q.Config())
	}
	if st := q.Stats(); st.Drops != 6 || st.DropsByReason[ReasonLimit] != 6 {
		t.Errorf("stats %+v", st)
	}
	if err := q.Change(ms, CoDelConfig{Limit: -1}); err == nil || q.Config().(CoDelConfig).Limit != 4 {
		t.Errorf("a negative limit: %v, config %+v", err, q.Config())
	}
	tqDrain(t, q, ms, ms)
	coretest.CheckLive(t, pool, 0)
}

// fq_codel_change dequeues through its own scheduler (DRR, new flows
// first) while it holds more than the new limit or memory_limit, and
// drops what it dequeues; the number of flows cannot change.
func TestFQCoDelChange(t *testing.T) {
	const a, b = 1, 2
	f := newFramedFQTest(t, FQCoDelConfig{ECN: true}, FramingEthernet)
	f.distinct(a, b)
	// B becomes a new flow first, so the scheduler serves it first; the
	// fattest flow, which an overflow would hit, is A.
	for range 2 {
		f.send(0, b, 1000)
	}
	for range 8 {
		f.send(0, a, 1000)
	}
	if err := f.q.Change(ms, FQCoDelConfig{Limit: 8, ECN: true}); err != nil {
		t.Fatal(err)
	}
	if f.q.Len() != 8 || len(f.rec.drops) != 2 || f.rec.drops[0].port != b || f.rec.drops[1].port != b {
		t.Fatalf("len %d, drops %+v; want B's two packets, dequeued first", f.q.Len(), f.rec.drops)
	}
	// A lower memory_limit: each packet holds 1014 + 804 bytes.
	truesize := 1014 + DefaultFQCoDelMemOverhead
	if err := f.q.Change(ms, FQCoDelConfig{Limit: 8, MemoryLimit: 5 * truesize, ECN: true}); err != nil {
		t.Fatal(err)
	}
	if f.q.Len() != 5 || f.q.XStats().MemoryUsage != uint32(5*truesize) {
		t.Fatalf("len %d memory %d after memory_limit %d", f.q.Len(), f.q.XStats().MemoryUsage, 5*truesize)
	}
	if st := f.q.Stats(); st.DropsByReason[ReasonLimit] != 5 || st.Drops != 5 {
		t.Errorf("stats %+v", st)
	}
	err := f.q.Change(ms, FQCoDelConfig{Flows: 2048})
	if err == nil || !strings.Contains(err.Error(), "flows") || f.q.Config().(FQCoDelConfig).MemoryLimit != 5*truesize {
		t.Errorf("a new flow count: %v, config %+v", err, f.q.Config())
	}
	for f.recv(ms) != 0 {
	}
	f.checkNoLeak()
}

// pie_change drops from the head down to a lower limit; the drop
// probability carries on.
func TestPIEChange(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestPIE(t, PIEConfig{}, &Env{Observer: rec})
	for i := range 6 {
		q.Enqueue(0, coretest.UDP(pool, 100, 1000, 0, int64(i)))
	}
	q.vars.prob = pieMaxProb / 4
	if err := q.Change(ms, PIEConfig{Limit: 2, Target: 30 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 2 || rec.count(ReasonLimit) != 4 || rec.drops[0].seq != 0 || rec.drops[3].seq != 3 {
		t.Fatalf("len %d, drops %+v", q.Len(), rec.drops)
	}
	if q.vars.prob != pieMaxProb/4 || q.Config().(PIEConfig).Target != 30*time.Millisecond {
		t.Errorf("prob %v config %+v", q.Prob(), q.Config())
	}
	if err := q.Change(ms, PIEConfig{Alpha: 33}); err == nil || q.Config().(PIEConfig).Limit != 2 {
		t.Errorf("alpha 33: %v, config %+v", err, q.Config())
	}
	tqDrain(t, q, ms, ms)
	coretest.CheckLive(t, pool, 0)
}

// tbf_change keeps the queue, refills both buckets to the new sizes
// without moving t_c, and gives the default bfifo the new limit, which
// drops nothing already queued.
func TestTBFChange(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestTBF(t, TBFConfig{Rate: oneMbit, Burst: 4096, Limit: 54096}, &Env{Observer: rec, Framing: FramingIP})
	for i := range 5 {
		q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, int64(i)))
	}
	if deps := tqDrain(t, q, 0, 0); len(deps) != 2 {
		t.Fatalf("the full bucket let %d packets go, want 2", len(deps))
	}
	if err := q.Change(ms, TBFConfig{Rate: 2 * oneMbit, Burst: 3000, Limit: 3000}); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 3 || q.Child().(*Fifo).Limit() != 3000 {
		t.Fatalf("len %d, child limit %d", q.Len(), q.Child().(*Fifo).Limit())
	}
	// The refilled 3000-byte bucket (12 ms at 2 Mbit/s) sends two at
	// once; the third waits 6 ms for its credit.
	got := departureTimes(tqDrain(t, q, ms, clock.Never-1))
	if want := []clock.Time{ms, ms, 7 * ms}; !equalTimes(got, want) {
		t.Errorf("departures %v, want %v", got, want)
	}
	// The default child now holds 3000 bytes: a third 1500-byte packet
	// does not fit.
	for i := range 3 {
		q.Enqueue(8*ms, coretest.UDP(pool, 1500, 1000, 0, int64(10+i)))
	}
	if rec.count(ReasonLimit) != 1 {
		t.Errorf("drops %+v, want one for the new limit", rec.drops)
	}
	if err := q.Change(8*ms, TBFConfig{Rate: oneMbit, Burst: 3000}); err == nil || q.Config().(TBFConfig).Rate != 2*oneMbit {
		t.Errorf("no limit with the default child: %v, config %+v", err, q.Config())
	}
	tqDrain(t, q, 8*ms, clock.Never-1)
	coretest.CheckLive(t, pool, 0)
}

// The fifos take a new limit as the kernel's fifo change does: nothing
// queued is dropped, new arrivals see it.
func TestFifoChange(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	f := newTestFifo(t, FifoConfig{Variant: "pfifo", Limit: 5}, &Env{Observer: rec})
	for i := range 5 {
		f.Enqueue(0, coretest.UDP(pool, 100, 1000, 0, int64(i)))
	}
	if err := f.Change(0, FifoConfig{Variant: "pfifo", Limit: 2}); err != nil {
		t.Fatal(err)
	}
	if v := f.Enqueue(0, coretest.UDP(pool, 100, 1000, 0, 5)); f.Len() != 5 || v != Dropped || len(rec.drops) != 1 {
		t.Fatalf("len %d, verdict %v, drops %+v", f.Len(), v, rec.drops)
	}
	for _, bad := range []Spec{FifoConfig{Variant: "bfifo"}, FifoConfig{Variant: "pfifo", Limit: -1}, PfifoFastConfig{}} {
		if err := f.Change(0, bad); err == nil || f.Limit() != 2 {
			t.Errorf("Change(%+v): %v, limit %d", bad, err, f.Limit())
		}
	}
	tqDrain(t, f, 0, 0)
	pf, _ := NewPfifoFast(PfifoFastConfig{}, nil)
	if err := pf.Change(0, PfifoFastConfig{}); err != nil {
		t.Errorf("pfifo_fast: %v", err)
	}
	coretest.CheckLive(t, pool, 0)
}

// Flush empties every discipline, children included, reporting each
// packet with ReasonFlushed.
func TestFlush(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	for _, chain := range [][]Spec{
		{NetemConfig{Delay: time.Second, Reorder: 0.3}, TBFConfig{Rate: oneMbit, Burst: 1514, Limit: 1 << 20}, FQCoDelConfig{}},
		{TBFConfig{Rate: oneMbit, Burst: 1514, Limit: 1 << 20}},
		{CoDelConfig{}}, {PIEConfig{}}, {FQPIEConfig{}}, {PfifoFastConfig{}}, {FifoConfig{Variant: "bfifo"}},
	} {
		rec := &recorder{}
		env := &Env{Observer: rec, Pool: pool}
		q, err := Build(chain, env)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			q.Enqueue(clock.Time(i)*ms, coretest.UDP(pool, 1000, 1000, uint8(i%3)<<3, int64(i)))
		}
		q.Peek(30 * ms)
		held := q.Len()
		q.Flush(30 * ms)
		if q.Len() != 0 || q.Backlog() != 0 || rec.count(ReasonFlushed) != held || held == 0 {
			t.Errorf("%s: held %d, after Flush len %d backlog %d, %d flushed", q.Kind(), held, q.Len(), q.Backlog(), rec.count(ReasonFlushed))
		}
		coretest.CheckLive(t, pool, 0)
	}
}
