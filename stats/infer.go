package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Inference over repetitions: the statistics that say how far a figure
// measured a few times can be trusted, and whether two sets of runs
// differ. Each repetition's figure is one observation (a run's mean
// throughput, say), as in any comparison of benchmark runs; the samples
// inside a run are not independent and are not used here.

// Interval is a confidence interval for a mean: Mean ± HalfWidth at the
// given confidence. HalfWidth is NaN when it cannot be given (fewer than two
// observations).
type Interval struct {
	// N is the number of observations; Mean their mean.
	N    int
	Mean float64
	// HalfWidth is Student's t quantile (two-sided, N-1 degrees of freedom)
	// times the standard error s/√N, with s the sample standard deviation.
	HalfWidth float64
}

// Lo and Hi are the interval's ends.
func (iv Interval) Lo() float64 { return iv.Mean - iv.HalfWidth }

// Hi is the upper end; see Lo.
func (iv Interval) Hi() float64 { return iv.Mean + iv.HalfWidth }

// MeanInterval returns the confidence interval (confidence in (0,1), e.g.
// 0.95) of the mean of xs by Student's t. NaN values are left out.
func MeanInterval(xs []float64, confidence float64) Interval {
	s := Summarize(xs)
	iv := Interval{N: s.N, Mean: s.Mean, HalfWidth: math.NaN()}
	if s.N < 2 {
		return iv
	}
	iv.HalfWidth = tQuantile(confidence, float64(s.N-1)) * s.SampleStdDev / math.Sqrt(float64(s.N))
	return iv
}

// tQuantile is the two-sided quantile of Student's t with df degrees of
// freedom: P(|T| <= q) = confidence.
func tQuantile(confidence, df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-confidence)/2)
}

// Difference is the outcome of Welch's t test of B's mean against A's.
type Difference struct {
	// NA and NB are the observations on each side, MeanA and MeanB their
	// means, Diff = MeanB - MeanA.
	NA, NB       int
	MeanA, MeanB float64
	Diff         float64
	// Lo and Hi bound Diff at the confidence asked for (Welch's interval);
	// DF is the Welch–Satterthwaite degrees of freedom. All three are NaN
	// when either side has fewer than two observations.
	Lo, Hi, DF float64
	// P is the two-sided p-value of "the means are equal" (NaN as above; 0
	// when both sides have no spread and differ, 1 when they are equal).
	P float64
}

// Welch compares the means of b and a with Welch's unequal-variances t
// test (Welch 1947), giving the interval at confidence. NaN values are
// left out.
func Welch(a, b []float64, confidence float64) Difference {
	sa, sb := Summarize(a), Summarize(b)
	d := Difference{NA: sa.N, NB: sb.N, MeanA: sa.Mean, MeanB: sb.Mean, Diff: sb.Mean - sa.Mean}
	nan := math.NaN()
	d.Lo, d.Hi, d.DF, d.P = nan, nan, nan, nan
	if sa.N < 2 || sb.N < 2 {
		return d
	}
	va := sa.SampleVariance / float64(sa.N)
	vb := sb.SampleVariance / float64(sb.N)
	se := math.Sqrt(va + vb)
	if se == 0 {
		// No spread on either side: the difference is exact.
		d.Lo, d.Hi, d.DF = d.Diff, d.Diff, math.Inf(1)
		d.P = 1
		if d.Diff != 0 {
			d.P = 0
		}
		return d
	}
	d.DF = (va + vb) * (va + vb) / (va*va/float64(sa.N-1) + vb*vb/float64(sb.N-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: d.DF}
	q := t.Quantile(1 - (1-confidence)/2)
	d.Lo, d.Hi = d.Diff-q*se, d.Diff+q*se
	d.P = 2 * t.Survival(math.Abs(d.Diff)/se)
	return d
}

// Holm returns the p-values adjusted by Holm's step-down method (Holm
// 1979), which bounds the chance of any false alarm among all the tests
// at the level chosen: compare each adjusted value with that level. NaN
// p-values (tests that could not be made) stay NaN and do not count.
func Holm(p []float64) []float64 {
	idx := make([]int, 0, len(p))
	for i, v := range p {
		if !math.IsNaN(v) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		switch {
		case p[i] < p[j]:
			return -1
		case p[i] > p[j]:
			return 1
		}
		return 0
	})
	out := make([]float64, len(p))
	for i, v := range p {
		if math.IsNaN(v) {
			out[i] = math.NaN()
		}
	}
	m := len(idx)
	running := 0.0
	for rank, i := range idx {
		adj := min(1, float64(m-rank)*p[i])
		running = max(running, adj) // the adjusted values never decrease
		out[i] = running
	}
	return out
}
