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
