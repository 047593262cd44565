package link

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/stats"
)

func TestDirectPassesAtOnce(t *testing.T) {
	pool := newPool()
	rec := &recorder{}
	d, err := New(Config{Name: "up", Env: qdisc.Env{Pool: pool}, Hook: rec})
	if err != nil {
		t.Fatal(err)
	}
	if d.Root() != nil {
		t.Errorf("direct path has root %v", d.Root())
	}
	if p, next := d.Dequeue(0); p != nil || next != clock.Never {
		t.Fatalf("idle Dequeue = %v, %v; want nil, Never", p, next)
	}
	for i := range 3 {
		d.Enqueue(5*ms, mk(pool, 0, int64(i), 100, 0))
	}
	seqs, next := drainAll(d, 5*ms)
	if !slices.Equal(seqs, []int64{0, 1, 2}) || next != clock.Never {
		t.Errorf("got %v next %v", seqs, next)
	}
	c := d.Counters()
	// Bytes count as the device does: with the Ethernet header (the
	// default framing), 114 per 100-byte IP packet.
	if c.Sent != 3 || c.Delivered != 3 || c.BytesIn != 342 || c.BytesOut != 342 {
		t.Errorf("counters %+v", c)
	}
	if c.Delay.N != 3 || c.Delay.Max != 0 || c.Delay.Mean != 0 {
		t.Errorf("direct delay %+v, want all 0", c.Delay)
	}
	if rec.count(Enqueue) != 3 || rec.count(Dequeue) != 3 || rec.evs[0].Time != 5*ms {
		t.Errorf("events %+v", rec.evs)
	}
	checkBalance(t, d, pool, 0)
}

func TestDelayLineTimesAndDeadlines(t *testing.T) {
	d, pool := delayDir(t, delaySpec{Delay: 20 * time.Millisecond}, Config{Name: "down"})
	d.Enqueue(0, mk(pool, 0, 0, 1000, 0))
	d.Enqueue(3*ms, mk(pool, 0, 1, 1000, 0))
	if p, next := d.Dequeue(10 * ms); p != nil || next != 20*ms {
		t.Fatalf("Dequeue(10ms) = %v, %v; want nil, 20ms", p, next)
	}
	seqs, next := drainAll(d, 20*ms)
	if !slices.Equal(seqs, []int64{0}) || next != 23*ms {
		t.Fatalf("at 20ms got %v next %v", seqs, next)
	}
	checkBalance(t, d, pool, 0)
	seqs, next = drainAll(d, 25*ms)
	if !slices.Equal(seqs, []int64{1}) || next != clock.Never {
		t.Fatalf("at 25ms got %v next %v", seqs, next)
	}
	c := d.Counters()
	// Delays: 20 ms and 22 ms (released late, at 25 ms).
	if c.Delay.Min != 20e6 || c.Delay.Max != 22e6 || c.Delay.Mean != 21e6 {
		t.Errorf("delay %+v", c.Delay)
	}
	checkBalance(t, d, pool, 0)
}

func TestDropsAreCountedReportedAndFreed(t *testing.T) {
	rec := &recorder{}
	d, pool := delayDir(t, delaySpec{Delay: 10 * time.Millisecond, Limit: 3}, Config{Hook: rec, PerFlow: true})
	for i := range 5 {
		d.Enqueue(clock.Time(i), mk(pool, int32(i%2), int64(i), 200, 0))
	}
	c := d.Counters()
	if c.Dropped != 2 || c.DroppedByReason[qdisc.ReasonLimit] != 2 || c.Queued != 3 {
		t.Fatalf("counters %+v", c)
	}
	var drops []Event
	for _, e := range rec.evs {
		if e.Kind == Drop {
			drops = append(drops, e)
		}
	}
	if len(drops) != 2 || drops[0].Qdisc.Kind() != "testdelay" || drops[0].Reason != qdisc.ReasonLimit || drops[0].Time != 3 {
		t.Errorf("drop events %+v", drops)
	}
	checkBalance(t, d, pool, 0)
	fc := d.FlowCounters()
	// Flow 0 sent seqs 0,2,4 (4 dropped); flow 1 sent 1,3 (3 dropped).
	if fc[0].Sent != 3 || fc[0].Dropped != 1 || fc[1].Sent != 2 || fc[1].Dropped != 1 || fc[0].Queued != 2 {
		t.Errorf("flow counters %+v", fc)
	}
	drainAll(d, clock.Time(time.Second))
	checkBalance(t, d, pool, 0)
	coretest.CheckLive(t, pool, 0)
}

func TestMarksAndDuplicates(t *testing.T) {
	rec := &recorder{}
	d, pool := delayDir(t, delaySpec{Delay: time.Millisecond, DupEvery: 2, MarkEvery: 3}, Config{Hook: rec, PerFlow: true})
	for i := range 6 {
		d.Enqueue(0, mk(pool, 7, int64(i), 300, packet.ECT0))
	}
	c := d.Counters()
	// Originals 2, 4 and 6 are duplicated, each dup entering the tree just
	// before its original: arrivals o1 o2 d2 o3 o4 d4 o5 o6 d6, so the 3rd,
	// 6th and 9th (the dups) are marked.
	if c.Sent != 6 || c.Duplicated != 3 || c.Marked != 3 || c.Queued != 9 {
		t.Fatalf("counters %+v", c)
	}
	var got []int64
	marked := 0
	for {
		p, _ := d.Dequeue(clock.Time(time.Second))
		if p == nil {
			break
		}
		got = append(got, p.Seq)
		if p.Marked {
			if packet.ECNOf(p.Bytes()) != packet.CE || !packet.IPv4HeaderValid(p.Bytes()) {
				t.Errorf("marked packet not CE with a valid checksum")
			}
			marked++
		}
		p.Free()
	}
	if len(got) != 9 || marked != 3 {
		t.Errorf("delivered %v, %d marked", got, marked)
	}
	c = d.Counters()
	// Duplicates carry their original's Seq, so they are not reordered.
	if c.Delivered != 9 || c.Reordered != 0 {
		t.Errorf("counters %+v", c)
	}
	if fc := d.FlowCounters()[7]; fc.Duplicated != 3 || fc.Delivered != 9 || fc.Marked != 3 {
		t.Errorf("flow counters %+v", fc)
	}
	if rec.count(Mark) != 3 || rec.count(Enqueue) != 9 {
		t.Errorf("%d marks, %d enqueues", rec.count(Mark), rec.count(Enqueue))
	}
	checkBalance(t, d, pool, 0)
}

func TestReorderingPerRFC4737(t *testing.T) {
	pool := newPool()
	d := newWithRoot(t, Config{PerFlow: true}, swapBuilder(swapSpec{Hold: time.Millisecond}))
	// One flow, seqs 0..9: leaves as 1 0 3 2 5 4 7 6 9 8; each even one
	// comes after a higher seq, so 5 are reordered.
	for i := range 10 {
		d.Enqueue(0, mk(pool, 0, int64(i), 100, 0))
	}
	seqs, _ := drainAll(d, 0)
	if !slices.Equal(seqs, []int64{1, 0, 3, 2, 5, 4, 7, 6, 9, 8}) {
		t.Fatalf("order %v", seqs)
	}
	if c := d.Counters(); c.Reordered != 5 {
		t.Errorf("Reordered = %d, want 5", c.Reordered)
	}
	// Two interleaved flows A0 B0 A1 B1 leave as B0 A0 B1 A1: each flow is
	// in order by itself, so nothing is reordered.
	d2 := newWithRoot(t, Config{PerFlow: true}, swapBuilder(swapSpec{}))
	for i := range 4 {
		d2.Enqueue(0, mk(pool, int32(i%2), int64(i/2), 100, 0))
	}
	drainAll(d2, 0)
	if c := d2.Counters(); c.Reordered != 0 || c.Delivered != 4 {
		t.Errorf("two flows: %+v", c)
	}
	// Unknown flows (router traffic) are not judged.
	d3 := newWithRoot(t, Config{}, swapBuilder(swapSpec{}))
	for i := range 4 {
		d3.Enqueue(0, mk(pool, -1, int64(i), 100, 0))
	}
	drainAll(d3, 0)
	if c := d3.Counters(); c.Reordered != 0 {
		t.Errorf("unknown flow: Reordered = %d", c.Reordered)
	}
	// A lone packet waits for its hold time.
	d.Enqueue(ms, mk(pool, 0, 10, 100, 0))
	if p, next := d.Dequeue(ms); p != nil || next != 2*ms {
		t.Errorf("lone packet: %v, %v", p, next)
	}
	if seqs, _ := drainAll(d, 2*ms); !slices.Equal(seqs, []int64{10}) {
		t.Errorf("lone packet: %v", seqs)
	}
	coretest.CheckLive(t, pool, 0)
}

func TestHistogramPercentilesWithinOnePercent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var a acc
	xs := make([]float64, 0, 20000)
	for range 20000 {
		// Log-uniform from 1 µs to 10 s, so every octave is exercised.
		v := int64(1e3 * math.Pow(10, r.Float64()*7))
		a.c.Sent++
		a.delivered(1, 100, v)
		xs = append(xs, float64(v))
	}
	slices.Sort(xs)
	c := a.snapshot()
	if c.Delay.Exact {
		t.Error("histogram figures claim to be exact")
	}
	for _, q := range []struct {
		p   float64
		got float64
	}{{50, c.Delay.P50}, {90, c.Delay.P90}, {99, c.Delay.P99}} {
		want := stats.Percentile(xs, q.p)
		if rel := (q.got - want) / want; rel > 0.01 || rel < -0.01 {
			t.Errorf("p%v = %v, exact %v (%.2f%%)", q.p, q.got, want, 100*rel)
		}
	}
	if c.Delay.Min != xs[0] || c.Delay.Max != xs[len(xs)-1] {
		t.Errorf("min/max %v %v, want %v %v", c.Delay.Min, c.Delay.Max, xs[0], xs[len(xs)-1])
	}
	// Small values are exact.
	var b acc
	for _, v := range []int64{3, 5, 7, 9} {
		b.delivered(1, 1, v)
	}
	if s := b.snapshot(); s.Delay.P50 != 6 || s.Delay.P90 != 8.4 {
		t.Errorf("small values: %+v", s.Delay)
	}
}

func TestKeepDelaysIsExact(t *testing.T) {
	d, pool := delayDir(t, delaySpec{}, Config{KeepDelays: true})
	// Delays 0..99 ms: leave each at 100 ms.
	for i := range 100 {
		d.Enqueue(clock.Time(i)*ms, mk(pool, 0, int64(i), 100, 0))
	}
	drainAll(d, 100*ms)
	c := d.Counters().Delay
	// Delays are 1..100 ms; P90 at rank 89.1 -> 90.1 ms; P99 at 98.01 ->
	// 99.01 ms; median 50.5 ms.
	if !c.Exact || c.P50 != 50.5e6 || c.P90 != 90.1e6 || c.P99 != 99.01e6 || c.Min != 1e6 || c.Max != 100e6 {
		t.Errorf("delay %+v", c)
	}
}

func TestZeroAllocsPerPacket(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"plain", Config{}},
		{"hook", Config{Hook: &countHook{}}},
		{"perflow", Config{PerFlow: true}},
		{"trace", Config{Trace: everyMs(t)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, pool := delayDir(t, delaySpec{Delay: time.Millisecond}, tc.cfg)
			now := clock.Time(0)
			step := func() {
				d.Enqueue(now, mk(pool, 3, int64(now), 1500, 0))
				now += ms
				p, _ := d.Dequeue(now)
				if p == nil {
					t.Fatalf("nothing left at %v", now)
				}
				p.Free()
			}
			for range 100 {
				step()
			}
			if n := testing.AllocsPerRun(1000, step); n != 0 {
				t.Errorf("%v allocations per packet", n)
			}
		})
	}
}

type countHook struct{ n int }

func (h *countHook) Event(*Event) { h.n++ }

func TestConfigErrors(t *testing.T) {
	_, err := New(Config{Name: "up", Chain: []qdisc.Spec{delaySpec{}}})
	if err == nil || !strings.HasPrefix(err.Error(), "up: ") {
		t.Errorf("unregistered kind: %v", err)
	}
}

func BenchmarkEnqueueDequeue(b *testing.B) {
	for _, bc := range []struct {
		name  string
		cfg   Config
		build func(*qdisc.Env) (qdisc.Qdisc, error)
	}{
		{"direct", Config{}, nil},
		{"testdelay", Config{}, delayBuilder(delaySpec{Delay: time.Millisecond})},
		// What the simulator asks for: per-flow counters and exact delays.
		{"direct-perflow-keep", Config{PerFlow: true, KeepDelays: true}, nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			pool := newPool()
			cfg := bc.cfg
			cfg.Env.Pool = pool
			build := bc.build
			if build == nil {
				build = func(*qdisc.Env) (qdisc.Qdisc, error) { return nil, nil }
			}
			d := newWithRoot(b, cfg, build)
			ps := make([]*packet.Packet, 64)
			for i := range ps {
				ps[i] = mk(pool, 0, 0, 1500, 0)
			}
			d.ReserveDelays(b.N, map[int32]int{0: b.N})
			b.ReportAllocs()
			b.ResetTimer()
			now := clock.Time(0)
			for i := range b.N {
				p := ps[i&63]
				p.Seq = int64(i)
				d.Enqueue(now, p)
				now += ms
				q, _ := d.Dequeue(now)
				ps[i&63] = q
			}
		})
	}
}

func TestDirectionSeed(t *testing.T) {
	up, down := DirectionSeed(1, "up"), DirectionSeed(1, "down")
	if up == down || up == DirectionSeed(2, "up") || up == 1 {
		t.Errorf("seeds up %d down %d, up of run 2 %d: want all different", up, down, DirectionSeed(2, "up"))
	}
	if DirectionSeed(1, "up") != up {
		t.Error("DirectionSeed is not a function of its arguments")
	}
}
