package tfrc

import (
	"math"
	"testing"
)

// The weights are those of RFC 5348 §5.4's formula for n = 8.
func TestLossWeightsFollowTheFormula(t *testing.T) {
	const n = NumLossIntervals
	for i := range n {
		want := 1.0
		if i >= n/2 {
			want = 2 * float64(n-i) / float64(n+2)
		}
		if got := LossWeight(i); math.Abs(got-want) > 1e-15 {
			t.Errorf("w_%d = %g, want %g", i, got, want)
		}
	}
	want := []float64{1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2}
	for i, w := range want {
		if LossWeight(i) != w {
			t.Errorf("w_%d = %g, want %g", i, LossWeight(i), w)
		}
	}
}

// Hand-computed averages (Σw over 8 intervals = 6).
func TestMeanLossInterval(t *testing.T) {
	eight := []float64{10, 20, 30, 40, 50, 60, 70, 80}
	for _, c := range []struct {
		name   string
		i0     float64
		closed []float64
		want   float64
	}{
		{"no loss yet", 50, nil, 0},
		// I_tot1 = 100·6 = 600; I_tot0 = 10 + 100·5 = 510: I_0 is left out.
		{"short open interval is ignored", 10, []float64{100, 100, 100, 100, 100, 100, 100, 100}, 100},
		// I_tot0 = 400 + 500 = 900 > 600: I_0 counts.
		{"long open interval counts", 400, []float64{100, 100, 100, 100, 100, 100, 100, 100}, 150},
		// I_tot1 = 10+20+30+40 + .8·50+.6·60+.4·70+.2·80 = 220;
		// I_tot0 = 5+10+20+30 + .8·40+.6·50+.4·60+.2·70 = 165.
		{"weights", 5, eight, 220.0 / 6},
		// I_tot0 = 1000+10+20+30 + 32+30+24+14 = 1160.
		{"weights with I_0", 1000, eight, 1160.0 / 6},
		// Only the 8 most recent closed intervals count.
		{"ninth interval ignored", 5, append(append([]float64(nil), eight...), 1e9), 220.0 / 6},
		// k = 2: I_tot1 = 50+100, I_tot0 = 20+50, W_tot = 2.
		{"fewer than n", 20, []float64{50, 100}, 75},
		{"one closed, I_0 longer", 300, []float64{50}, 300},
	} {
		if got := MeanLossInterval(c.i0, c.closed); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: I_mean = %g, want %g", c.name, got, c.want)
		}
	}
}

func TestLossHistoryOpenInterval(t *testing.T) {
	var h lossHistory
	if p := h.p(1000); p != 0 {
		t.Fatalf("p before any loss = %g, want 0", p)
	}
	h.push(100, 0, 50) // first event: I_1 is the synthesised 50
	h.push(130, 0, 0)  // I_1 = 30, I_2 = 50
	// hi = 139: I_0 = 10; I_tot1 = 30+50 = 80, I_tot0 = 10+30 = 40.
	if p, want := h.p(139), 2.0/80; math.Abs(p-want) > 1e-15 {
		t.Errorf("p = %g, want %g", p, want)
	}
	// hi = 229: I_0 = 100; I_tot0 = 130 > 80.
	if p, want := h.p(229), 2.0/130; math.Abs(p-want) > 1e-15 {
		t.Errorf("p = %g, want %g", p, want)
	}
}
