package qdisc

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// tc-red(8)'s example, "red limit 400000 min 30000 max 90000 avpkt 1000
// burst 55 bandwidth 10Mbit" (probability 0.02 by default): the figures
// tc -d prints for it (ewma 5 probability 0.02 Scell_log 15) and the rest
// worked out by hand from iproute2's formulas: a burst of 55 needs
// 55 + 1 - 30000/1000 = 26 <= (1 - (1-W)^55)/W, first true at W = 1/32;
// 0.02/60000 doubles past 1 after 22 steps; avpkt takes 800 µs at 10
// Mbit/s, 12500 ticks, so -ln(1-1/32)/12500 per tick, 31 of which take
// 1.22e7 ticks, which needs cells of 2^15 to fit 512 of them; entry i is
// i·2^15·2.54e-6 truncated: 0 up to 12, 1 at 13, 8 at 100, 21 at 254.
func TestREDParamsFromTC(t *testing.T) {
	tc, err := redParamsFromTC(400000, 30000, 90000, 1000, 55, DefaultREDProbability, DefaultREDBandwidth)
	if err != nil {
		t.Fatal(err)
	}
	if tc.wlog != 5 || tc.plog != 22 || tc.cell != 15 || tc.maxP != 85899345 || tc.burst != 55 || tc.largeBurst {
		t.Errorf("Wlog %d Plog %d Scell_log %d max_P %d burst %d (large %v); want 5 22 15 85899345 55 (false)", tc.wlog, tc.plog, tc.cell, tc.maxP, tc.burst, tc.largeBurst)
	}
	for i, want := range map[int]uint8{0: 0, 1: 0, 12: 0, 13: 1, 100: 8, 254: 21, 255: 31} {
		if tc.stab[i] != want {
			t.Errorf("Stab[%d] = %d, want %d", i, tc.stab[i], want)
		}
	}
	if err := redCheck(tc); err != nil {
		t.Error(err)
	}
	var p redParams
	p.set(tc)
	// max_P / (max - min) = 85899345 / 60000; the target band is min +
	// 2/5 and 3/5 of 60000.
	if p.qthMin != 30000<<5 || p.qthMax != 90000<<5 || p.maxPDelta != 1431 || p.targetMin != 54000 || p.targetMax != 66000 || p.scellMax != 255<<15 {
		t.Errorf("parms %+v", p)
	}

	// Defaults: max limit/4, min max/3, burst (2 min + max)/(3 avpkt).
	tc, err = redParamsFromTC(400000, 0, 0, 1000, 0, DefaultREDProbability, DefaultREDBandwidth)
	if err != nil {
		t.Fatal(err)
	}
	if tc.qthMax != 100000 || tc.qthMin != 33333 || tc.burst != 55 {
		t.Errorf("defaults: min %d max %d burst %d; want 33333 100000 55", tc.qthMin, tc.qthMax, tc.burst)
	}
	// min alone: max is three times it.
	if tc, _ = redParamsFromTC(400000, 20000, 0, 1000, 0, DefaultREDProbability, DefaultREDBandwidth); tc.qthMax != 60000 {
		t.Errorf("min 20000: max %d, want 60000", tc.qthMax)
	}
}

func TestREDParamsErrors(t *testing.T) {
	for _, tc := range []struct {
		limit, min, max, avpkt, burst uint32
		prob                          float64
		want                          string
	}{
		{0, 0, 0, 1000, 0, 0.02, "limit and avpkt are required"},
		{400000, 0, 0, 0, 0, 0.02, "limit and avpkt are required"},
		{400000, 30000, 90000, 1000, 10, 0.02, "give burst 31 or more"},
		{400000, 30000, 90000, 1000, 55, 1, "outside (0, 1)"},
		{400000, 30000, 90000, 1000, 55, 0, "outside (0, 1)"},
		{400000, 90000, 30000, 1000, 200, 0.02, "give max above min"},
	} {
		_, err := redParamsFromTC(tc.limit, tc.min, tc.max, tc.avpkt, tc.burst, tc.prob, DefaultREDBandwidth)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc, err, tc.want)
		}
	}
}

// The average moves by W = 2^-Wlog towards the backlog at each arrival:
// after k arrivals at a constant backlog B it is B·(1 - (1-W)^k), within
// the fixed point's rounding.
func TestREDAverage(t *testing.T) {
	tc, _ := redParamsFromTC(400000, 30000, 90000, 1000, 55, DefaultREDProbability, DefaultREDBandwidth)
	var p redParams
	p.set(tc)
	var v redVars
	v.reset()
	const backlog = 50000
	for k := 1; k <= 200; k++ {
		v.qavg = p.calcQavg(&v, 0, backlog)
		want := backlog * (1 - math.Pow(1-1.0/32, float64(k)))
		if got := float64(v.qavg) / 32; math.Abs(got-want) > 1 {
			t.Fatalf("after %d arrivals the average is %.1f bytes, want %.1f", k, got, want)
		}
	}
}

// An idle period decays the average by the table's shift, looked up with
// the idle time in µs, or linearly where the table says 0.
func TestREDIdleDecay(t *testing.T) {
	tc, _ := redParamsFromTC(400000, 30000, 90000, 1000, 55, DefaultREDProbability, DefaultREDBandwidth)
	var p redParams
	p.set(tc)
	v := redVars{qavg: 60000 << 5, idle: true, idleStart: 1_000_000}
	// 13 cells of 2^15 µs: Stab[13] = 1, half.
	if got := p.calcQavg(&v, 1_000_000+13<<15*1000, 0); got != 60000<<5>>1 {
		t.Errorf("after 13 cells idle: %d, want %d", got, 60000<<5>>1)
	}
	// 100 µs: entry 0, linear: qavg - qavg·100/2^15.
	want := uint64(60000<<5) - uint64(60000<<5)*100>>15
	if got := p.calcQavg(&v, 1_000_000+100_000, 0); got != want {
		t.Errorf("after 100 µs idle: %d, want %d", got, want)
	}
	// Beyond Scell_max the last entry, 31.
	if got := p.calcQavg(&v, 1_000_000+1e12, 0); got != uint64(60000<<5)>>31 {
		t.Errorf("after a long idle: %d, want %d", got, uint64(60000<<5)>>31)
	}
}

// The count rule: at a constant average between the thresholds the gap
// between marks is uniform in 1..qR/x (x the average above min, bytes),
// so the marked fraction is 1/E[ceil(qR/x)], about twice the ramp's
// probability pb = max_P·x/(max - min).
func TestREDCountRule(t *testing.T) {
	tc, _ := redParamsFromTC(400000, 30000, 90000, 1000, 55, DefaultREDProbability, DefaultREDBandwidth)
	var p redParams
	p.set(tc)
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func() uint32 { return rng.Uint32() }
	for _, avg := range []uint64{40000, 60000, 85000} {
		var v redVars
		v.reset()
		const n = 2_000_000
		marks := 0
		for range n {
			if p.action(&v, avg<<5, draw) == redProbMark {
				marks++
			}
		}
		x := float64(avg - 30000)
		pb := float64(p.maxP) / (1 << 32) * x / 60000
		qRmax := float64(uint64(1)<<32) / float64(p.maxPDelta)
		// E[ceil(U·qRmax/x)] for U uniform: qRmax/(2x) + 1/2.
		want := 1 / (qRmax/(2*x) + 0.5)
		got := float64(marks) / n
		if math.Abs(got-want)/want > 0.02 {
			t.Errorf("avg %d: marked fraction %.5f, want %.5f (count rule)", avg, got, want)
		}
		if math.Abs(got-2*pb)/(2*pb) > 0.1 {
			t.Errorf("avg %d: marked fraction %.5f, want about 2·pb = %.5f", avg, got, 2*pb)
		}
	}
	// At or above max every packet is a hard mark; below min none.
	var v redVars
	v.reset()
	if a := p.action(&v, 90000<<5, draw); a != redHardMark {
		t.Errorf("at max: %v, want a hard mark", a)
	}
	if a := p.action(&v, 29999<<5, draw); a != redDontMark || v.qcount != -1 {
		t.Errorf("below min: %v, qcount %d; want no mark, -1", a, v.qcount)
	}
}

// Adaptive RED: above the target band max_P grows by min(1 %, max_P/4);
// below it shrinks to 0.9 of itself; in it, it stays.
func TestREDAdapt(t *testing.T) {
	tc, _ := redParamsFromTC(400000, 30000, 90000, 1000, 55, DefaultREDProbability, DefaultREDBandwidth)
	var p redParams
	p.set(tc)
	maxP := p.maxP
	v := redVars{qavg: 70000 << 5}
	p.adapt(&v, 0)
	if p.maxP != maxP+maxP/4 {
		t.Errorf("above the band: max_P %d, want %d", p.maxP, maxP+maxP/4)
	}
	maxP = p.maxP
	v.qavg = 60000 << 5
	p.adapt(&v, 0)
	if p.maxP != maxP {
		t.Errorf("in the band: max_P %d, want %d", p.maxP, maxP)
	}
	v.qavg = 40000 << 5
	p.adapt(&v, 0)
	if p.maxP != maxP/10*9 || p.maxPDelta != (p.maxP+30000)/60000 {
		t.Errorf("below the band: max_P %d (divisor %d), want %d", p.maxP, p.maxPDelta, maxP/10*9)
	}
}
