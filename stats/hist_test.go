package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHistExactBelowTwoSub(t *testing.T) {
	var h Hist
	for v := int64(0); v < 2*HistSub; v++ {
		h.Add(v)
	}
	s := make([]float64, 2*HistSub)
	for i := range s {
		s[i] = float64(i)
	}
	for _, p := range []float64{0, 1, 25, 50, 90, 99, 100} {
		if got, want := h.Percentile(p), Percentile(s, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if h.N() != 2*HistSub || h.Min() != 0 || h.Max() != 2*HistSub-1 {
		t.Errorf("n %d min %d max %d", h.N(), h.Min(), h.Max())
	}
}

// TestHistPrecision checks the stated bound: every percentile within
// 1/(2·HistSub) of the exact one, over values spanning nine decades.
func TestHistPrecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Hist
	s := make([]float64, 0, 20000)
	for range cap(s) {
		v := int64(math.Exp(rng.Float64() * 21)) // 1 ns to 1.3 s
		h.Add(v)
		s = append(s, float64(v))
	}
	slices.Sort(s)
	bound := 1.0 / (2 * HistSub)
	for _, p := range []float64{0, 10, 50, 90, 99, 99.9, 100} {
		got, want := h.Percentile(p), Percentile(s, p)
		if math.Abs(got-want) > bound*want+0.5 {
			t.Errorf("p%v = %v, exact %v: off by more than %.2f%%", p, got, want, 100*bound)
		}
	}
	if float64(h.Min()) != s[0] || float64(h.Max()) != s[len(s)-1] {
		t.Errorf("min %d max %d, want %v %v", h.Min(), h.Max(), s[0], s[len(s)-1])
	}
}

func TestHistEdges(t *testing.T) {
	var h Hist
	if h.Percentile(50) != 0 || h.N() != 0 {
		t.Fatal("empty histogram has a percentile")
	}
	h.Add(-5)
	h.Add(math.MaxInt64)
	if h.Min() != 0 || h.Max() != math.MaxInt64 {
		t.Errorf("min %d max %d", h.Min(), h.Max())
	}
	if got := h.Percentile(100); got != math.MaxInt64 {
		t.Errorf("p100 = %v, want the exact maximum", got)
	}
	for v := int64(1); v > 0 && v < 1<<62; v *= 3 {
		if i := histIndex(v); i < 0 || i >= histBuckets {
			t.Fatalf("index %d of %d out of range", i, v)
		}
		if i := histIndex(v); i < histBuckets-1 && (v < int64(histMid(i)+0.5)-int64(histMid(i)/HistSub) || float64(v) > histMid(i)*(1+1.0/HistSub)+1) {
			t.Errorf("%d in bucket %d of midpoint %v", v, i, histMid(i))
		}
	}
}

func TestHistAddAllocatesNothing(t *testing.T) {
	h := new(Hist)
	v := int64(1)
	if n := testing.AllocsPerRun(1000, func() { h.Add(v); v = v*7 + 3 }); n != 0 {
		t.Errorf("Add allocates %v times", n)
	}
}

func TestReorder(t *testing.T) {
	var r Reorder
	var got []bool
	for _, s := range []int64{1, 2, 4, 3, 4, 5, 2, 6} {
		got = append(got, r.Arrive(s))
	}
	want := []bool{false, false, false, true, false, false, true, false}
	if !slices.Equal(got, want) {
		t.Errorf("reordered %v, want %v", got, want)
	}
	var neg Reorder
	if neg.Arrive(-10) || !neg.Arrive(-11) {
		t.Error("the first packet sets the mark whatever its number")
	}
}

// smallSets are sample sets with their percentiles worked by hand with
// numpy.percentile's default ("linear") method, the one Flent uses: rank
// h = (n-1)·p/100, interpolated between the order statistics floor(h) and
// floor(h)+1. The values are delays in ns, where a histogram bucket is
// 0.26 ms wide, so that a bucket's midpoint is not good enough.
var smallSets = []struct {
	name          string
	xs            []int64
	p50, p90, p99 float64
}{
	{"n=1", []int64{20_000_000}, 20_000_000, 20_000_000, 20_000_000},
	// h = 0.5, 0.9, 0.99 between 20 and 20.1 ms.
	{"n=2", []int64{20_100_000, 20_000_000}, 20_050_000, 20_090_000, 20_099_000},
	// h = 1, 1.8, 1.98: 20.01 + 0.8·0.03, 20.01 + 0.98·0.03.
	{"n=3", []int64{20_040_000, 19_990_000, 20_010_000}, 20_010_000, 20_034_000, 20_039_400},
	// h = 1.5, 2.7, 2.97 over 19.99 20 20.01 20.045 ms.
	{"n=4", []int64{20_000_000, 20_045_000, 19_990_000, 20_010_000}, 20_005_000, 20_034_500, 20_043_950},
	// 1..20 µs past 20 ms: h = 9.5, 17.1, 18.81.
	{"n=20", seq(20_001_000, 1_000, 20), 20_010_500, 20_018_100, 20_019_810},
	// Like the router's delay summary of a 20-ping run that printed
	// "mean 20.005, median 20.045, max 20.045": nineteen pings near 20 ms
	// and one at 20.045 ms, all in one bucket, whose midpoint (20.05 ms)
	// was clamped to the maximum. Sorted: 19.999 ×6, 20.000 ×8, 20.001
	// ×5, 20.045; h = 9.5 falls among the 20.000s, h = 17.1 among the
	// 20.001s, h = 18.81 between the last 20.001 and 20.045:
	// 20.001 + 0.81·0.044.
	{"router", append(append(append(rep(19_999_000, 6), rep(20_000_000, 8)...), rep(20_001_000, 5)...), 20_045_000), 20_000_000, 20_001_000, 20_036_640},
}

func seq(from, step int64, n int) []int64 {
	xs := make([]int64, n)
	for i := range xs {
		xs[i] = from + int64(i)*step
	}
	return xs
}

func rep(v int64, n int) []int64 { return seq(v, 0, n) }

// TestHistSmallNExact: with few values a histogram's percentiles are
// numpy's exactly, as Percentile gives them for the sorted samples.
func TestHistSmallNExact(t *testing.T) {
	for _, c := range smallSets {
		var h Hist
		s := make([]float64, len(c.xs))
		for i, x := range c.xs {
			h.Add(x)
			s[i] = float64(x)
		}
		slices.Sort(s)
		for _, w := range []struct{ p, want float64 }{{50, c.p50}, {90, c.p90}, {99, c.p99}} {
			// The hand-worked answer, by the slice method and by the
			// histogram.
			if got := Percentile(s, w.p); math.Abs(got-w.want) > 1e-6 {
				t.Errorf("%s: Percentile p%v = %.1f, want %.1f", c.name, w.p, got, w.want)
			}
			if got := h.Percentile(w.p); math.Abs(got-w.want) > 1e-6 {
				t.Errorf("%s: Hist p%v = %.1f, want %.1f", c.name, w.p, got, w.want)
			}
		}
	}
}

// TestHistManyInOneBucket: past the values it keeps exactly, a histogram
// whose values share a bucket still gives a median within the values'
// range and the stated bound, not the bucket's midpoint clamped to the
// maximum.
func TestHistManyInOneBucket(t *testing.T) {
	var h Hist
	var s []float64
	for i := range 10 * HistExact {
		v := int64(20_000_000)
		if i%100 == 0 {
			v = 20_045_000
		}
		h.Add(v)
		s = append(s, float64(v))
	}
	slices.Sort(s)
	got, want := h.Percentile(50), Percentile(s, 50)
	if got >= float64(h.Max()) || math.Abs(got-want) > want/(2*HistSub) {
		t.Errorf("median %.0f of %d values, exact %.0f, max %d: want within %.2f%% of the exact one and below the max",
			got, h.N(), want, h.Max(), 100.0/(2*HistSub))
	}
}
