package stats

import (
	"math"
	"testing"
)

func within(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Student's t quantiles against published tables (two-sided 95 %).
func TestTQuantile(t *testing.T) {
	for _, c := range []struct{ df, want float64 }{
		{1, 12.706}, {2, 4.303}, {4, 2.776}, {9, 2.262}, {29, 2.045}, {1e6, 1.960},
	} {
		if got := tQuantile(0.95, c.df); !within(got, c.want, 0.001) {
			t.Errorf("t(0.975, %g) = %.4f, want %.3f", c.df, got, c.want)
		}
	}
}

func TestMeanInterval(t *testing.T) {
	// Mean 10, sample sd 1 (values 9, 10, 11), n 3: 4.303 · 1/√3 = 2.484.
	iv := MeanInterval([]float64{9, 10, 11}, 0.95)
	if iv.N != 3 || iv.Mean != 10 || !within(iv.HalfWidth, 2.4843, 0.0005) {
		t.Errorf("%+v, want mean 10 ± 2.484", iv)
	}
	if iv := MeanInterval([]float64{5}, 0.95); iv.N != 1 || !math.IsNaN(iv.HalfWidth) {
		t.Errorf("one value: %+v, want no interval", iv)
	}
	if iv := MeanInterval([]float64{4, math.NaN(), 4}, 0.95); iv.N != 2 || iv.HalfWidth != 0 {
		t.Errorf("no spread: %+v", iv)
	}
}

// Welch's test against a worked example (R: t.test(b, a)).
func TestWelch(t *testing.T) {
	a := []float64{19.1, 20.3, 20.0, 19.6, 20.8}
	b := []float64{21.5, 22.3, 21.1, 22.8, 21.9}
	// Worked by hand and with arbitrary precision (mpmath): means 19.96
	// and 21.92, sample variances 0.423 and 0.442; t = 4.7123, Welch's
	// df = 7.99614, two-sided p = 0.0015192, 95 % interval 1.00078 to
	// 2.91922.
	d := Welch(a, b, 0.95)
	if !within(d.Diff, 1.96, 1e-9) || !within(d.DF, 7.99614, 1e-4) || !within(d.P, 0.0015192, 1e-6) ||
		!within(d.Lo, 1.00078, 1e-4) || !within(d.Hi, 2.91922, 1e-4) {
		t.Errorf("%+v", d)
	}
	if d := Welch(a, a, 0.95); d.Diff != 0 || !within(d.P, 1, 1e-9) {
		t.Errorf("same sample: %+v, want p 1", d)
	}
	if d := Welch([]float64{1}, b, 0.95); !math.IsNaN(d.P) || !math.IsNaN(d.Lo) {
		t.Errorf("one run: %+v, want no test", d)
	}
	if d := Welch([]float64{1, 1}, []float64{2, 2}, 0.95); d.P != 0 || d.Lo != 1 {
		t.Errorf("no spread, different: %+v", d)
	}
}

func TestHolm(t *testing.T) {
	// p = .01 .04 .03 .005 (m = 4): sorted .005 .01 .03 .04 → ×4 ×3 ×2 ×1 =
	// .02 .03 .06 .04 → monotone .02 .03 .06 .06.
	got := Holm([]float64{0.01, 0.04, 0.03, 0.005, math.NaN()})
	want := []float64{0.03, 0.06, 0.06, 0.02}
	for i, w := range want {
		if !within(got[i], w, 1e-12) {
			t.Errorf("Holm[%d] = %g, want %g (all %v)", i, got[i], w, got)
		}
	}
	if !math.IsNaN(got[4]) {
		t.Errorf("a NaN p-value became %g", got[4])
	}
}
