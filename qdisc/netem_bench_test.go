package qdisc

import (
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

// benchNetem measures one enqueue and the dequeues it makes due, per
// packet, in steady state: a packet arrives every spacing and everything
// due is released on each arrival.
func benchNetem(b *testing.B, cfg NetemConfig, spacing clock.Time) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	env := &Env{Pool: pool, Seed: 1}
	n, err := NewNetem(cfg, env, nil)
	if err != nil {
		b.Fatal(err)
	}
	env.Root = n
	var now clock.Time
	step := func() {
		p := pool.Get()
		p.SetLen(1500)
		n.Enqueue(now, p)
		for {
			q, _ := n.Dequeue(now)
			if q == nil {
				break
			}
			q.Free()
		}
		now += spacing
	}
	// Fill the pipe so that the queue holds delay/spacing packets.
	for range 2 * int(cfg.Delay+cfg.Jitter) / int(spacing) {
		step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		step()
	}
	b.StopTimer()
	coretest.CheckLive(b, pool, n.Len())
}

// BenchmarkNetemDelayJitter: delay 50ms 10ms (uniform, i.i.d.), a 1500-byte
// packet every 100µs (120 Mbit/s), about 500 packets queued, nearly all in
// the out-of-order heap.
func BenchmarkNetemDelayJitter(b *testing.B) {
	for _, mode := range []CorrelationMode{CorrelationCorrect, CorrelationKernel} {
		b.Run(mode.String(), func(b *testing.B) {
			benchNetem(b, NetemConfig{Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Correlation: mode}, 100*clock.Time(time.Microsecond))
		})
	}
	b.Run("correct-corr25", func(b *testing.B) {
		benchNetem(b, NetemConfig{Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, DelayCorr: 0.25}, 100*clock.Time(time.Microsecond))
	})
}

// BenchmarkNetemDelayRate: delay 50ms rate 150mbit, a 1500-byte packet
// every 100µs (120 Mbit/s offered), all through the in-order list.
func BenchmarkNetemDelayRate(b *testing.B) {
	benchNetem(b, NetemConfig{Delay: 50 * time.Millisecond, Rate: mbit(150)}, 100*clock.Time(time.Microsecond))
}
