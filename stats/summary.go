// Package stats computes the summary figures wanlab reports: counts, means,
// percentiles, spreads, RFC 3550 jitter and Jain's fairness index.
//
// The definitions are Flent's (flent/formatters.py), so that wanlab's numbers
// can be compared with Flent's: percentiles interpolate linearly between
// order statistics as numpy.percentile does by default, and the standard
// deviation and variance are population figures (numpy's ddof=0). The sample
// figures (ddof=1) are given next to them under their own names.
//
// Everything here is pure and allocation-light; no function modifies its
// input.
package stats

import (
	"math"
	"slices"
)

// Summary describes a set of samples. When N is 0 every figure is NaN, as
// numpy's are for an empty array; callers check N before printing.
type Summary struct {
	// N is the number of samples used (NaNs are not counted).
	N int
	// Mean is the arithmetic mean.
	Mean float64
	// Median is the 50th percentile (the mean of the two middle samples
	// when N is even).
	Median float64
	// Min and Max are the extreme samples.
	Min, Max float64
	// P25, P75, P90, P95, P99 and P999 are the 25th, 75th, 90th, 95th, 99th
	// and 99.9th percentiles, by Percentile.
	P25, P75, P90, P95, P99, P999 float64
	// StdDev and Variance are the population standard deviation and
	// variance: the mean squared deviation divided by N (numpy's default,
	// ddof=0, and what Flent prints).
	StdDev, Variance float64
	// SampleStdDev and SampleVariance divide by N-1 instead (ddof=1, the
	// unbiased estimator of the variance); they are NaN when N < 2.
	SampleStdDev, SampleVariance float64
	// Total is the sum of the samples. It is meaningful for quantities that
	// add up (bytes, packets), not for rates or delays; see WeightedTotal
	// for the integral of a rate.
	Total float64
}

// Summarize returns the summary of xs. NaN samples stand for missing values
// (Flent's nulls) and are left out. xs is not modified.
func Summarize(xs []float64) Summary {
	sorted := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			sorted = append(sorted, x)
		}
	}
	n := len(sorted)
	if n == 0 {
		nan := math.NaN()
		return Summary{Mean: nan, Median: nan, Min: nan, Max: nan,
			P25: nan, P75: nan, P90: nan, P95: nan, P99: nan, P999: nan,
			StdDev: nan, Variance: nan, SampleStdDev: nan, SampleVariance: nan, Total: nan}
	}
	slices.Sort(sorted)
	s := Summary{N: n, Min: sorted[0], Max: sorted[n-1]}
	for _, x := range sorted {
		s.Total += x
	}
	s.Mean = s.Total / float64(n)
	// Two passes: the squared deviations from the mean, rather than
	// E[x²]-E[x]², which cancels catastrophically for large, close values.
	var ss float64
	for _, x := range sorted {
		d := x - s.Mean
		ss += d * d
	}
	s.Variance = ss / float64(n)
	s.StdDev = math.Sqrt(s.Variance)
	if n > 1 {
		s.SampleVariance = ss / float64(n-1)
		s.SampleStdDev = math.Sqrt(s.SampleVariance)
	} else {
		s.SampleVariance, s.SampleStdDev = math.NaN(), math.NaN()
	}
	s.Median = Percentile(sorted, 50)
	s.P25 = Percentile(sorted, 25)
	s.P75 = Percentile(sorted, 75)
	s.P90 = Percentile(sorted, 90)
	s.P95 = Percentile(sorted, 95)
	s.P99 = Percentile(sorted, 99)
	s.P999 = Percentile(sorted, 99.9)
	return s
}

// Percentile returns the p-th percentile (p in [0,100]) of sorted, which
// must be in ascending order, with numpy.percentile's default "linear"
// method: the value at rank h = (n-1)·p/100, interpolated linearly between
// the order statistics floor(h) and floor(h)+1. p outside [0,100] is
// clamped. It returns NaN for an empty slice.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 || math.IsNaN(p) {
		return math.NaN()
	}
	p = min(max(p, 0), 100)
	h := float64(n-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	frac := h - float64(lo)
	a, b := sorted[lo], sorted[lo+1]
	// a + (b-a)·frac, written so that equal neighbours give exactly a.
	return a + (b-a)*frac
}

// WeightedTotal returns Σ vals[i]·durs[i], the integral of a rate sampled
// over intervals of the given lengths, as Flent's Total for throughput series
// (Mbit/s over seconds gives Mbit). Pairs where either value is NaN are
// skipped; the shorter slice sets the length.
func WeightedTotal(vals, durs []float64) float64 {
	var t float64
	for i := range min(len(vals), len(durs)) {
		if math.IsNaN(vals[i]) || math.IsNaN(durs[i]) {
			continue
		}
		t += vals[i] * durs[i]
	}
	return t
}
