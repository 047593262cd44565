package qdisc

import (
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

// codelBenchObserver keeps dropped packets for reuse instead of freeing
// them, so that the benchmark loop allocates nothing.
type codelBenchObserver struct {
	spare []*packet.Packet
	drops int
}

func (o *codelBenchObserver) Drop(_ clock.Time, p *packet.Packet, _ Qdisc, _ Reason) {
	o.spare = append(o.spare, p)
	o.drops++
}

func (o *codelBenchObserver) Mark(clock.Time, *packet.Packet, Qdisc, Reason) {}

// codelBench measures one enqueue plus one dequeue per op, one op per µs of
// virtual time, around a standing queue of queued packets from flows
// flows. Packets are reused: each delivered (or dropped) packet is
// enqueued again, so the queue keeps its length and its sojourn time
// (queued µs). With rehash the flow hash is cleared before each enqueue, as
// for a packet fresh from the device.
func codelBench(b *testing.B, build func(env *Env) Qdisc, queued, flows int, rehash bool) {
	obs := &codelBenchObserver{spare: make([]*packet.Packet, 0, 4096)}
	pool := packet.NewPool(256, packet.DefaultHeadroom)
	q := build(&Env{Observer: obs, MTU: 1500, Seed: 1})
	var now clock.Time
	for i := range queued {
		q.Enqueue(now, coretest.UDP(pool, 100, uint16(1000+i%flows), 0, 0))
	}
	step := func() {
		now = now.Add(time.Microsecond)
		p, _ := q.Dequeue(now)
		if rehash {
			p.Hash = 0
		}
		q.Enqueue(now, p)
		for _, d := range obs.spare {
			if rehash {
				d.Hash = 0
			}
			q.Enqueue(now, d)
		}
		obs.spare = obs.spare[:0]
	}
	// Warm up for 200 ms of virtual time: rings grown and, above target,
	// CoDel in its dropping state.
	for range 200000 {
		step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	drops := obs.drops
	for range b.N {
		step()
	}
	b.ReportMetric(float64(obs.drops-drops)/float64(b.N), "drops/op")
}

func BenchmarkCoDel(b *testing.B) {
	build := func(env *Env) Qdisc {
		q, err := NewCoDel(CoDelConfig{Limit: 10000}, env)
		if err != nil {
			b.Fatal(err)
		}
		return q
	}
	// 64 packets queued wait 64 µs: below target.
	b.Run("below_target", func(b *testing.B) { codelBench(b, build, 64, 1, false) })
	// 8000 packets queued wait 8 ms: above target, dropping.
	b.Run("dropping", func(b *testing.B) { codelBench(b, build, 8000, 1, false) })
}

func BenchmarkFQCoDel(b *testing.B) {
	build := func(env *Env) Qdisc {
		q, err := NewFQCoDel(FQCoDelConfig{ECN: true}, env)
		if err != nil {
			b.Fatal(err)
		}
		return q
	}
	b.Run("16flows_below_target", func(b *testing.B) { codelBench(b, build, 64, 16, false) })
	b.Run("16flows_below_target_rehash", func(b *testing.B) { codelBench(b, build, 64, 16, true) })
	b.Run("16flows_dropping", func(b *testing.B) { codelBench(b, build, 8000, 16, false) })
}
