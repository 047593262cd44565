package qdisc

import (
	"testing"
	"time"

	"wanlab/clock"
)

type outcome struct {
	lost bool
	tts  clock.Time
}

func runSeeded(t *testing.T, cfg NetemConfig, envSeed uint64, n int) []outcome {
	t.Helper()
	b := newBench(t, cfg)
	b.env.Seed = envSeed
	// Rebuild so that the env seed applies.
	q, err := NewNetem(cfg, b.env, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.q, b.env.Root = q, q
	out := make([]outcome, n)
	for i := range out {
		now := clock.Time(i) * ms
		p, v := b.send(now, 100)
		out[i].lost = v == Dropped
		if !out[i].lost {
			out[i].tts = p.TimeToSend
		}
		b.drain(now, false)
	}
	b.drain(clock.Never-1, false)
	b.checkLeaks(0)
	return out
}

func equalOutcomes(a, b []outcome) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNetemSeedReproducible(t *testing.T) {
	for _, mode := range []CorrelationMode{CorrelationCorrect, CorrelationKernel} {
		cfg := NetemConfig{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, DelayCorr: 0.3,
			Loss: Loss{Kind: LossRandom, P: 0.1, Corr: 0.2}, Correlation: mode, Limit: 5000}
		a := runSeeded(t, cfg, 5, 2000)
		b := runSeeded(t, cfg, 5, 2000)
		c := runSeeded(t, cfg, 6, 2000)
		if !equalOutcomes(a, b) {
			t.Errorf("%v: same seed, different outcomes", mode)
		}
		if equalOutcomes(a, c) {
			t.Errorf("%v: different env seeds, same outcomes", mode)
		}
		cfg.Seed, cfg.SeedSet = 5, true
		if d := runSeeded(t, cfg, 77, 2000); !equalOutcomes(a, d) {
			t.Errorf("%v: cfg seed 5 must override the env seed and equal env seed 5", mode)
		}
	}
}

// TestNetemKernelBitExact replays what sch_netem.c computes for "loss 10%
// delay 100ms 10ms seed 12345": per packet one prandom_u32_state draw
// for the loss decision (lost when P >= it) and, if kept, one for the
// delay ((rnd % 2σ) + μ - σ).
func TestNetemKernelBitExact(t *testing.T) {
	const seed = 12345
	cfg := NetemConfig{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond,
		Loss: Loss{Kind: LossRandom, P: 0.1}, Correlation: CorrelationKernel, Seed: seed, SeedSet: true, Limit: 5000}
	got := runSeeded(t, cfg, 0, 3000)
	ref := refTaus113{}
	i := uint32(seed>>32 ^ seed<<10 ^ seed)
	ref.z = [4]uint32{i + 2*b2u(i < 2), i + 8*b2u(i < 8), i + 16*b2u(i < 16), i + 128*b2u(i < 128)}
	P := uint32(429496730) // rint(0.1 * (2^32-1))
	sigma := uint32(10 * time.Millisecond)
	for k, o := range got {
		now := clock.Time(k) * ms
		lost := P >= ref.next()
		want := outcome{lost: lost}
		if !lost {
			want.tts = now + clock.Time(int64(ref.next()%(2*sigma))+int64(100*time.Millisecond)-int64(sigma))
		}
		if o != want {
			t.Fatalf("packet %d: %+v, want %+v", k, o, want)
		}
	}
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
