package stats

import (
	"math"
	"testing"
)

func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.12g, want %.12g", name, got, want)
	}
}

// The textbook set {2,4,4,4,5,5,7,9}: mean 5, squared deviations sum to 32,
// so the population variance is 32/8 = 4 (std dev 2) and the sample
// variance 32/7.
func TestSummarizePopulationAndSample(t *testing.T) {
	xs := []float64{9, 4, 2, 5, 4, 7, 4, 5}
	orig := append([]float64(nil), xs...)
	s := Summarize(xs)
	for i := range xs {
		if xs[i] != orig[i] {
			t.Fatalf("Summarize modified its input: %v", xs)
		}
	}
	if s.N != 8 {
		t.Errorf("N = %d, want 8", s.N)
	}
	near(t, "Mean", s.Mean, 5, 1e-12)
	near(t, "Variance", s.Variance, 4, 1e-12)
	near(t, "StdDev", s.StdDev, 2, 1e-12)
	near(t, "SampleVariance", s.SampleVariance, 32.0/7, 1e-12)
	near(t, "SampleStdDev", s.SampleStdDev, math.Sqrt(32.0/7), 1e-12)
	near(t, "Min", s.Min, 2, 0)
	near(t, "Max", s.Max, 9, 0)
	near(t, "Total", s.Total, 40, 0)
	// Sorted: 2 4 4 4 5 5 7 9. Median: rank 3.5 -> (4+5)/2.
	near(t, "Median", s.Median, 4.5, 1e-12)
	// P90: rank 0.9*7 = 6.3 -> 7 + 0.3*(9-7) = 7.6.
	near(t, "P90", s.P90, 7.6, 1e-12)
	// P99: rank 6.93 -> 7 + 0.93*2 = 8.86.
	near(t, "P99", s.P99, 8.86, 1e-12)
	// P25: rank 1.75 -> 4 + 0.75*0 = 4.
	near(t, "P25", s.P25, 4, 1e-12)
	// P75: rank 5.25 -> 5 + 0.25*(7-5) = 5.5.
	near(t, "P75", s.P75, 5.5, 1e-12)
}

// StdDev must be Python's statistics.pstdev (what Flent prints), not
// stdev. For {20, 22, 24, 25, 26}: mean 23.4, squared deviations
// 11.56+1.96+0.36+2.56+6.76 = 23.2, so pstdev = sqrt(23.2/5) = 2.154066 and
// stdev = sqrt(23.2/4) = 2.408319.
func TestSummarizeStdDevIsPopulation(t *testing.T) {
	s := Summarize([]float64{20, 22, 24, 25, 26})
	near(t, "StdDev", s.StdDev, 2.154066, 1e-6)
	near(t, "SampleStdDev", s.SampleStdDev, 2.408319, 1e-6)
}

func TestPercentileLinear(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	cases := []struct{ p, want float64 }{
		{0, 1}, {100, 4}, {25, 1.75}, {50, 2.5}, {90, 3.7}, {-5, 1}, {150, 4},
		{33.3, 1.999}, // rank 0.999
	}
	for _, c := range cases {
		near(t, "Percentile", Percentile(xs, c.p), c.want, 1e-12)
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("Percentile of an empty slice should be NaN")
	}
	near(t, "single", Percentile([]float64{7}, 99), 7, 0)
}

func TestSummarizeSkipsNaNAndEmpty(t *testing.T) {
	s := Summarize([]float64{math.NaN(), 1, 3, math.NaN()})
	if s.N != 2 || s.Mean != 2 || s.Median != 2 {
		t.Errorf("NaNs not skipped: %+v", s)
	}
	e := Summarize(nil)
	if e.N != 0 || !math.IsNaN(e.Mean) || !math.IsNaN(e.P99) || !math.IsNaN(e.StdDev) {
		t.Errorf("empty summary: %+v", e)
	}
	one := Summarize([]float64{5})
	if one.StdDev != 0 || !math.IsNaN(one.SampleStdDev) {
		t.Errorf("one sample: StdDev %v SampleStdDev %v", one.StdDev, one.SampleStdDev)
	}
}

func TestWeightedTotal(t *testing.T) {
	// 10 Mbit/s for 0.5 s + 20 Mbit/s for 0.25 s = 10 Mbit.
	near(t, "WeightedTotal", WeightedTotal([]float64{10, 20, math.NaN()}, []float64{0.5, 0.25, 1}), 10, 1e-12)
}

func TestJitter3550(t *testing.T) {
	// D = 2, 1, 4: J = 2/16 = 0.125; 0.125 + (1-0.125)/16 = 0.1796875;
	// 0.1796875 + (4-0.1796875)/16 = 0.41845703125.
	near(t, "jitter", Jitter3550([]float64{10, 12, 11, 15}), 0.41845703125, 1e-15)
	near(t, "NaN skipped", Jitter3550([]float64{10, math.NaN(), 12, 11, 15}), 0.41845703125, 1e-15)
	near(t, "one sample", Jitter3550([]float64{3}), 0, 0)
	// A constant transit time (fixed delay plus clock offset) has no jitter.
	near(t, "constant", Jitter3550([]float64{1e6, 1e6, 1e6}), 0, 0)
	// Alternating D of 16 converges to 16.
	alt := make([]float64, 2000)
	for i := range alt {
		alt[i] = float64(16 * (i % 2))
	}
	near(t, "converges", Jitter3550(alt), 16, 1e-9)
}

func TestJain(t *testing.T) {
	near(t, "equal", Jain([]float64{3, 3, 3, 3}), 1, 1e-15)
	near(t, "one takes all", Jain([]float64{5, 0, 0, 0}), 0.25, 1e-15)
	near(t, "1,2,3", Jain([]float64{1, 2, 3}), 36.0/42, 1e-15)
	near(t, "all zero", Jain([]float64{0, 0}), 1, 0)
	if !math.IsNaN(Jain(nil)) {
		t.Error("Jain(nil) should be NaN")
	}
}

// The running estimator gives the same figures, packet by packet, as the
// slice form: the hand-computed sequence from TestJitter3550.
func TestJitterRunning(t *testing.T) {
	var j Jitter
	near(t, "empty", j.Value(), 0, 0)
	near(t, "first", j.Add(10), 0, 0)
	near(t, "second", j.Add(12), 0.125, 1e-15)
	near(t, "lost", j.Add(math.NaN()), 0.125, 1e-15)
	near(t, "third", j.Add(11), 0.1796875, 1e-15)
	near(t, "fourth", j.Add(15), 0.41845703125, 1e-15)
	near(t, "value", j.Value(), 0.41845703125, 1e-15)
}

func BenchmarkJitterAdd(b *testing.B) {
	b.ReportAllocs()
	var j Jitter
	for i := 0; b.Loop(); i++ {
		j.Add(float64(i % 7))
	}
}
