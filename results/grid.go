package results

import (
	"math"
)

// The grid is Flent's common time axis (its x_values): x_k = k·step from
// T0, for k = 0 .. GridLen()-1. Flent computes its sums and averages on it,
// and its data file stores every series on it.

// gridEps is how close, as a fraction of the step, a sample's time must be
// to a grid point to count as taken there: it absorbs the rounding of
// k·step, not real lateness.
const gridEps = 1e-6

// gridReach is how far, in steps, a sample may be from a grid point and
// still be interpolated to it: Flent's aggregator allows 5 steps.
const gridReach = 5

// GridTime is the time of grid point k of a grid of the given step, in
// seconds from T0, rounded to the nanosecond so that 3·0.2 is 0.6, as a
// reader expects. Every writer of samples on the grid takes its times from
// here.
func GridTime(k int, step float64) float64 {
	return math.Round(float64(k)*step*1e9) / 1e9
}

// GridLen is the number of grid points: enough to reach the end of the run
// (lead, load and tail) and the latest sample of any series.
func (d *Document) GridLen() int {
	end := d.Run.TotalS()
	for i := range d.Series {
		if s := d.Series[i].Samples; len(s) > 0 {
			end = max(end, s[len(s)-1].T)
		}
	}
	for i := range d.Flows {
		for j := range d.Flows[i].Series {
			if s := d.Flows[i].Series[j].Samples; len(s) > 0 {
				end = max(end, s[len(s)-1].T)
			}
		}
	}
	step := d.Run.StepS
	if !(step > 0) || !(end >= 0) || math.IsInf(end, 0) {
		return 0
	}
	return int(math.Ceil(end/step-gridEps)) + 1
}

// Grid returns the series' values on n grid points of the given step, as
// Flent's aggregator interpolates them, NaN where there is no value:
//
//   - a sample within gridEps·step of a grid point is the value there (a
//     lost probe gives NaN);
//   - between two samples, both at most 5 steps from the point, the value
//     is interpolated linearly; it is NaN if either is a lost probe;
//   - before the first sample or after the last one, the nearest sample is
//     used if it is at most half a step away.
//
// Flent checks the 5-step reach only towards the later sample, and skips
// the point after a series' last sample when its value would repeat the
// previous point's; here both neighbours must be in reach and no point is
// skipped, so a series sampled on the grid comes back unchanged.
func Grid(samples []Sample, step float64, n int) []float64 {
	out := make([]float64, n)
	i := 0 // the first sample later than the current point, once past it
	for k := range out {
		x := GridTime(k, step)
		eps := gridEps * step
		for i < len(samples) && samples[i].T <= x+eps {
			i++
		}
		// samples[i-1] is the last sample at or before x (+eps), samples[i]
		// the first after.
		var v float64
		switch {
		case i > 0 && math.Abs(samples[i-1].T-x) <= eps:
			v = samples[i-1].V
		case i > 0 && i < len(samples):
			p, q := samples[i-1], samples[i]
			if x-p.T <= gridReach*step && q.T-x <= gridReach*step {
				v = p.V + (q.V-p.V)*(x-p.T)/(q.T-p.T)
			} else {
				v = math.NaN()
			}
		case i < len(samples) && samples[i].T-x <= step/2:
			v = samples[i].V
		case i > 0 && i == len(samples) && x-samples[i-1].T <= step/2:
			v = samples[i-1].V
		default:
			v = math.NaN()
		}
		out[k] = v
	}
	return out
}
