package qdisc

import (
	"math"
	"testing"
	"time"

	"wanlab/clock"
)

// lossRun sends n packets one by one through a netem with cfg (no delay)
// and returns the loss pattern.
func lossRun(t *testing.T, cfg NetemConfig, n int) []bool {
	t.Helper()
	b := newBench(t, cfg)
	lost := make([]bool, n)
	for i := range lost {
		_, v := b.send(clock.Time(i), 100)
		lost[i] = v == Dropped
		b.drain(clock.Time(i), false)
	}
	b.checkLeaks(0)
	return lost
}

func fraction(xs []bool) float64 {
	k := 0
	for _, x := range xs {
		if x {
			k++
		}
	}
	return float64(k) / float64(len(xs))
}

// lag1 is the lag-1 autocorrelation of a series.
func lag1(xs []float64) float64 {
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var num, den float64
	for i, x := range xs {
		den += (x - m) * (x - m)
		if i > 0 {
			num += (x - m) * (xs[i-1] - m)
		}
	}
	return num / den
}

func boolsToFloats(xs []bool) []float64 {
	f := make([]float64, len(xs))
	for i, x := range xs {
		if x {
			f[i] = 1
		}
	}
	return f
}

// meanBurst is the mean length of runs of losses.
func meanBurst(lost []bool) float64 {
	runs, total := 0, 0
	for i, l := range lost {
		if l {
			total++
			if i == 0 || !lost[i-1] {
				runs++
			}
		}
	}
	return float64(total) / float64(runs)
}

func TestNetemKernelCorrelatedLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("millions of draws: run without -short")
	}
	for _, tc := range []struct {
		p, c      float64
		want, tol float64
	}{
		{0.01, 0.25, 0, 1e-5},
		{0.10, 0.25, 0.0173, 0.0005},
		{0.10, 0.50, 0.00105, 0.0002},
		{0.30, 0.50, 0.129, 0.002},
		{0.50, 0.50, 0.500, 0.003},
	} {
		cfg := NetemConfig{Loss: Loss{Kind: LossRandom, P: tc.p, Corr: tc.c}, Correlation: CorrelationKernel}
		got := fraction(lossRun(t, cfg, 1000000))
		if math.Abs(got-tc.want) > tc.tol {
			t.Errorf("kernel loss %v%% %v%%: realised %.5f%%, want %.5f%% ± %.5f%%", tc.p*100, tc.c*100, got*100, tc.want*100, tc.tol*100)
		}
	}
}

func TestNetemKernelCorrelatedReorder(t *testing.T) {
	cfg := NetemConfig{Delay: time.Millisecond, Reorder: 0.25, ReorderCorr: 0.5, Correlation: CorrelationKernel}
	b := newBench(t, cfg)
	const n = 400000
	for i := range n {
		now := clock.Time(i) * 10 * clock.Time(time.Microsecond)
		b.send(now, 100)
		b.drain(now, false)
	}
	got := float64(b.q.Stats().Requeues) / n
	if math.Abs(got-0.070) > 0.002 {
		t.Errorf("kernel reorder 25%% 50%%: %.2f%% reordered, want about 7.0%%", got*100)
	}
}

func TestNetemCorrectLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("millions of draws: run without -short")
	}
	for _, tc := range []struct{ p, c float64 }{
		{0.01, 0}, {0.01, 0.25}, {0.10, 0.25}, {0.10, 0.50}, {0.30, 0.80},
	} {
		cfg := NetemConfig{Loss: Loss{Kind: LossRandom, P: tc.p, Corr: tc.c}}
		lost := lossRun(t, cfg, 1000000)
		got := fraction(lost)
		// Standard error of a correlated chain's mean: sqrt(p(1-p)/n * (1+c)/(1-c)).
		se := math.Sqrt(tc.p * (1 - tc.p) / 1e6 * (1 + tc.c) / (1 - tc.c))
		if math.Abs(got-tc.p) > 5*se {
			t.Errorf("loss %v%% %v%%: realised %.4f%%, want %.4f%% ± %.4f%%", tc.p*100, tc.c*100, got*100, tc.p*100, 5*se*100)
		}
		if r := lag1(boolsToFloats(lost)); math.Abs(r-tc.c) > 0.01 {
			t.Errorf("loss %v%% %v%%: lag-1 correlation %.4f, want %.2f", tc.p*100, tc.c*100, r, tc.c)
		}
	}
}

func TestNetemCorrectEvents(t *testing.T) {
	const n = 200000
	b := newBench(t, NetemConfig{Delay: time.Millisecond, Duplicate: 0.1, DuplicateCorr: 0.3,
		Corrupt: 0.05, CorruptCorr: 0.5, Reorder: 0.2, ReorderCorr: 0.4})
	dups, corrupt, originals := 0, 0, 0
	count := func() {
		for _, d := range b.out {
			if d.p.Dup {
				dups++
			} else {
				originals++
				if d.p.Corrupted {
					corrupt++
				}
			}
			d.p.Free()
		}
		b.out = b.out[:0]
	}
	for i := range n {
		now := clock.Time(i) * 10 * clock.Time(time.Microsecond)
		b.send(now, 100)
		b.drain(now, true)
		count()
	}
	b.drain(clock.Never-1, true)
	count()
	if got := float64(dups) / n; math.Abs(got-0.1) > 0.005 {
		t.Errorf("duplicate 10%%: %.2f%% duplicated", got*100)
	}
	if got := float64(corrupt) / float64(originals); math.Abs(got-0.05) > 0.004 {
		t.Errorf("corrupt 5%%: %.2f%% of originals corrupted", got*100)
	}
	// Each duplicate runs the pipeline too, so reorder is drawn n+dups times.
	if got := float64(b.q.Stats().Requeues) / float64(n+dups); math.Abs(got-0.2) > 0.006 {
		t.Errorf("reorder 20%%: %.2f%% reordered", got*100)
	}
	b.checkLeaks(0)
}

// delays sends n packets at 1 ms spacing and returns each one's delay.
func delays(t *testing.T, cfg NetemConfig, n int) []float64 {
	t.Helper()
	b := newBench(t, cfg)
	d := make([]float64, n)
	for i := range d {
		now := clock.Time(i) * ms
		p, _ := b.send(now, 100)
		d[i] = float64(p.TimeToSend - now)
		b.drain(now, false)
	}
	b.drain(clock.Never-1, false)
	b.checkLeaks(0)
	return d
}

func meanStd(xs []float64) (float64, float64) {
	var m, s float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return m, math.Sqrt(s / float64(len(xs)))
}

func TestNetemDelayCorrelation(t *testing.T) {
	const n = 200000
	base := NetemConfig{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, DelayCorr: 0.5}
	for _, tc := range []struct {
		mode      CorrelationMode
		dist      string
		corr, std float64 // std in ms
		corrTol   float64
	}{
		{CorrelationCorrect, "", 0.5, 10 / math.Sqrt(3), 0.01},
		{CorrelationKernel, "", 0.002, 10 / math.Sqrt(3), 0.01},
		{CorrelationCorrect, "normal", 0.5, 10, 0.01},
		{CorrelationCorrect, "paretonormal", 0.5, 8.3, 0.03},
	} {
		cfg := base
		cfg.Correlation = tc.mode
		cfg.Dist.Name = tc.dist
		d := delays(t, cfg, n)
		m, s := meanStd(d)
		// The pareto tables are not centred: their mean is about -0.03σ.
		wantMean := 100.0
		if dist, _ := BuiltinDistribution(tc.dist); dist.Table != nil {
			var sum float64
			for _, v := range dist.Table {
				sum += float64(v)
			}
			wantMean += 10 * sum / float64(len(dist.Table)) / DistScale
		}
		if math.Abs(m/1e6-wantMean) > 0.2 || math.Abs(s/1e6-tc.std) > 0.1 {
			t.Errorf("%v %q: mean %.3f ms std %.3f ms, want %.3f and %.2f", tc.mode, tc.dist, m/1e6, s/1e6, wantMean, tc.std)
		}
		if r := lag1(d); math.Abs(r-tc.corr) > tc.corrTol {
			t.Errorf("%v %q: lag-1 autocorrelation %.4f, want %.3f", tc.mode, tc.dist, r, tc.corr)
		}
		if tc.dist == "" {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, x := range d {
				lo, hi = min(lo, x), max(hi, x)
			}
			if lo < 90e6 || hi >= 110e6 || lo > 90.1e6 || hi < 109.9e6 {
				t.Errorf("%v: delays in [%v, %v], want the uniform range [90ms, 110ms)", tc.mode, lo, hi)
			}
		}
	}
}

// inversions sends packets at 1 ms spacing and returns the fraction of
// adjacent departures that left in the opposite order of arrival.
func inversions(t *testing.T, cfg NetemConfig, n int) float64 {
	b := newBench(t, cfg)
	for i := range n {
		now := clock.Time(i) * ms
		b.drain(now, false)
		b.send(now, 1500)
	}
	b.drain(clock.Never-1, false)
	if len(b.out) != n {
		t.Fatalf("%d departures, want %d", len(b.out), n)
	}
	inv := 0
	for i := 1; i < n; i++ {
		if b.out[i].seq < b.out[i-1].seq {
			inv++
		}
	}
	b.checkLeaks(0)
	return float64(inv) / float64(n-1)
}

func TestNetemJitterReordering(t *testing.T) {
	// Uniform ±10 ms at 1 ms spacing: (2J-Δ)²/(2(2J)²) = 19²/800 = 45.1%.
	cfg := NetemConfig{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, Limit: 10000}
	for _, mode := range []CorrelationMode{CorrelationCorrect, CorrelationKernel} {
		cfg.Correlation = mode
		if got := inversions(t, cfg, 100000); math.Abs(got-0.45125) > 0.01 {
			t.Errorf("%v: %.2f%% adjacent inversions, want 45.1%%", mode, got*100)
		}
	}
	rated := cfg
	rated.Rate = mbit(1000)
	if got := inversions(t, rated, 20000); got != 0 {
		t.Errorf("with rate 1gbit: %.2f%% inversions, want 0", got*100)
	}
	fifo := cfg
	fifo.FIFOJitter = true
	if got := inversions(t, fifo, 20000); got != 0 {
		t.Errorf("with fifo_jitter: %.2f%% inversions, want 0", got*100)
	}
}

func TestNetemMarkovModels(t *testing.T) {
	if testing.Short() {
		t.Skip("millions of draws: run without -short")
	}
	ge := Loss{Kind: LossGEModel, GEP: 0.01, GER: 0.10, OneMinusH: 1, OneMinusK: 0}
	state := StateLoss(0.01)
	state.P31 = 0.10
	for _, mode := range []CorrelationMode{CorrelationCorrect, CorrelationKernel} {
		for _, tc := range []struct {
			name        string
			loss        Loss
			want, burst float64
		}{
			{"gemodel 1% 10% 100% 0%", ge, 1.0 / 11, 10},
			{"state 1% 10%", state, 1.0 / 11, 10},
			{"gemodel 5%", GELoss(0.05), 0.05, 1 / 0.95},
		} {
			lost := lossRun(t, NetemConfig{Loss: tc.loss, Correlation: mode}, 1000000)
			got, burst := fraction(lost), meanBurst(lost)
			if math.Abs(got-tc.want) > 0.003 {
				t.Errorf("%v %s: %.3f%% lost, want %.2f%%", mode, tc.name, got*100, tc.want*100)
			}
			if math.Abs(burst-tc.burst)/tc.burst > 0.03 {
				t.Errorf("%v %s: mean burst %.2f, want %.2f", mode, tc.name, burst, tc.burst)
			}
		}
	}
}
