package qdisc

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func tableStats(t []int16) (mean, std, lo, hi float64) {
	var s, ss float64
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range t {
		x := float64(v) / DistScale
		s += x
		ss += x * x
		lo, hi = min(lo, x), max(hi, x)
	}
	n := float64(len(t))
	mean = s / n
	return mean, math.Sqrt(ss/n - mean*mean), lo, hi
}

func TestBuiltinDistributions(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		mean, std, lo, hi, tl float64
	}{
		{"normal", 0, 1.000, -4.0, 3.52, 0.005},
		{"pareto", -0.03, 0.82, -0.667, 4.0, 0.01},
		{"paretonormal", -0.03, 0.83, -1.50, 3.88, 0.01},
	} {
		d, ok := BuiltinDistribution(tc.name)
		if !ok || d.Name != tc.name || len(d.Table) != 4096 {
			t.Fatalf("%s: ok %v, %d entries", tc.name, ok, len(d.Table))
		}
		m, s, lo, hi := tableStats(d.Table)
		if math.Abs(m-tc.mean) > tc.tl || math.Abs(s-tc.std) > tc.tl || math.Abs(lo-tc.lo) > tc.tl || math.Abs(hi-tc.hi) > tc.tl {
			t.Errorf("%s: mean %.4f std %.4f range [%.3f, %.3f]; want %.2f %.2f [%.2f, %.2f]", tc.name, m, s, lo, hi, tc.mean, tc.std, tc.lo, tc.hi)
		}
		for i := 1; i < len(d.Table); i++ {
			if d.Table[i] < d.Table[i-1] {
				t.Fatalf("%s: entry %d decreases: an inverse CDF is monotone", tc.name, i)
			}
		}
	}
	// Spot values that follow from the generators' formulas.
	n, _ := BuiltinDistribution("normal")
	p, _ := BuiltinDistribution("pareto")
	pn, _ := BuiltinDistribution("paretonormal")
	if p.Table[0] != -5461 || p.Table[4095] != 32767 {
		t.Errorf("pareto[0] %d pareto[4095] %d, want -5461 (-1.5*4/3*8192) and the cap", p.Table[0], p.Table[4095])
	}
	// paretonormal mixes entry by entry, truncating; entry 0 uses the
	// normal value before normal.c's clipping (-4.008 rather than -4).
	for _, i := range []int{1, 1000, 2048, 4000} {
		if want := int16((int(n.Table[i]) + 3*int(p.Table[i])) / 4); pn.Table[i] != want {
			t.Errorf("paretonormal[%d] = %d, want %d", i, pn.Table[i], want)
		}
	}
	if clipped := int16((math.MinInt16 + 3*int(p.Table[0])) / 4); pn.Table[0] >= clipped {
		t.Errorf("paretonormal[0] = %d, want below %d (mixed before clipping)", pn.Table[0], clipped)
	}
	if n.Table[2048] != 0 && math.Abs(float64(n.Table[2048])) > 2 {
		t.Errorf("normal median entry %d, want about 0", n.Table[2048])
	}
	if u, ok := BuiltinDistribution("uniform"); !ok || u.Table != nil {
		t.Errorf("uniform: %v %v, want no table", u, ok)
	}
	if _, ok := BuiltinDistribution("experimental"); ok {
		t.Error("experimental is not builtin")
	}
}

func TestParseDistTable(t *testing.T) {
	tab, err := ParseDistTable([]byte("# normal\n 1 -2 3\n\n0x10 010 # comment 99\n-32768 32767\n"))
	want := []int16{1, -2, 3, 16, 8, -32768, 32767}
	if err != nil || len(tab) != len(want) {
		t.Fatalf("ParseDistTable = %v, %v; want %v", tab, err, want)
	}
	for i := range want {
		if tab[i] != want[i] {
			t.Errorf("entry %d = %d, want %d", i, tab[i], want[i])
		}
	}
	for _, tc := range []struct{ text, want string }{
		{"1 2\n3 abc 4\n", `line 2: "abc" is not an integer`},
		{"1\n40000\n", `line 2: "40000" is outside the int16 range`},
		{"# nothing\n\n", "no values"},
		{"0x\n", `line 1: "0x" is not an integer`},
		{strings.Repeat("1 ", MaxDistTable) + "\n2\n", "line 2: more than 16384 values"},
	} {
		if _, err := ParseDistTable([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDistTable(%.20q): error %v, want %q", tc.text, err, tc.want)
		}
	}
}

func TestMakeDistTable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	samples := make([]float64, 200000)
	for i := range samples {
		samples[i] = 50 + 7*r.NormFloat64()
	}
	tab, err := MakeDistTable(samples)
	if err != nil || len(tab) != 4096 {
		t.Fatalf("MakeDistTable: %d entries, %v", len(tab), err)
	}
	// Normalised samples: the table approximates the normal one.
	m, s, _, _ := tableStats(tab)
	if math.Abs(m) > 0.02 || math.Abs(s-1) > 0.03 {
		t.Errorf("table of normal samples: mean %.4f std %.4f, want 0 and 1", m, s)
	}
	n, _ := BuiltinDistribution("normal")
	for _, i := range []int{512, 1024, 2048, 3072, 3584} {
		if d := math.Abs(float64(tab[i]-n.Table[i])) / DistScale; d > 0.03 {
			t.Errorf("entry %d = %d, the normal table has %d", i, tab[i], n.Table[i])
		}
	}
	for i := 1; i < len(tab); i++ {
		if tab[i] < tab[i-1] {
			t.Fatalf("entry %d decreases", i)
		}
	}
	for _, bad := range [][]float64{nil, {1}, {2, 2, 2}, {1, math.Inf(1)}} {
		if _, err := MakeDistTable(bad); err == nil {
			t.Errorf("MakeDistTable(%v): no error", bad)
		}
	}
}
