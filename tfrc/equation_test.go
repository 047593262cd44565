package tfrc

import (
	"math"
	"testing"
	"time"
)

// The expected values are the equation of RFC 5348 §3.1 with b = 1 and
// t_RTO = 4R, evaluated to 30 digits with Python's decimal module:
//
//	s / (R*sqrt(2*b*p/3) + t_RTO*(3*sqrt(3*b*p/8))*p*(1+32*p*p))
var equationTable = []struct {
	s    float64
	rtt  time.Duration
	p    float64
	want float64 // bytes/s
}{
	{1460, 100 * time.Millisecond, 0.01, 164005.062169969770527},
	{1000, 40 * time.Millisecond, 0.001, 959609.078478136392063},
	{1500, 200 * time.Millisecond, 0.1, 13275.7655834349299081},
	{536, 10 * time.Millisecond, 0.5, 2237.05839242630898634},
	{1472, 40 * time.Millisecond, 0.00001, 14251296.0973904246260},
	// About E2's steady state: 2 Mbit/s with the tbf queue full.
	{1472, 160 * time.Millisecond, 0.002, 247496.862691163822936},
}

func TestThroughputMatchesTheRFC(t *testing.T) {
	for _, c := range equationTable {
		got := Throughput(c.s, c.rtt, c.p)
		if math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("Throughput(s=%v, R=%v, p=%v) = %.9f, want %.9f", c.s, c.rtt, c.p, got, c.want)
		}
	}
}

func TestThroughputWithoutLossIsUnbounded(t *testing.T) {
	if x := Throughput(1460, 50*time.Millisecond, 0); !math.IsInf(x, 1) {
		t.Errorf("p = 0: %v, want +Inf", x)
	}
	if x := Throughput(1460, 0, 0.1); !math.IsInf(x, 1) {
		t.Errorf("R = 0: %v, want +Inf", x)
	}
}

// The equation falls as p rises, and scales as s/R.
func TestThroughputShape(t *testing.T) {
	prev := math.Inf(1)
	for p := 1e-8; p <= 1; p *= 1.5 {
		x := Throughput(1000, 100*time.Millisecond, p)
		if !(x < prev) {
			t.Fatalf("X(p=%g) = %g is not below X at the smaller p (%g)", p, x, prev)
		}
		prev = x
	}
	a := Throughput(1000, 100*time.Millisecond, 0.01)
	b := Throughput(2000, 50*time.Millisecond, 0.01)
	if math.Abs(b-4*a) > 1e-9*b {
		t.Errorf("doubling s and halving R gives %g, want 4×%g", b, a)
	}
}

func TestLossEventRateForInvertsTheEquation(t *testing.T) {
	for _, c := range equationTable {
		p := LossEventRateFor(c.s, c.rtt, c.want)
		if math.Abs(p-c.p) > 1e-9*c.p {
			t.Errorf("LossEventRateFor(s=%v, R=%v, X=%v) = %.12g, want %.12g", c.s, c.rtt, c.want, p, c.p)
		}
	}
	// Rates beyond the range clamp.
	if p := LossEventRateFor(1000, 100*time.Millisecond, 1); p != 1 {
		t.Errorf("a rate below X(p=1): p = %g, want 1", p)
	}
	if p := LossEventRateFor(1000, 100*time.Millisecond, 1e15); p != 1e-10 {
		t.Errorf("a huge rate: p = %g, want 1e-10", p)
	}
	if p := LossEventRateFor(1000, 0, 1e5); p != 0 {
		t.Errorf("no RTT: p = %g, want 0", p)
	}
}
