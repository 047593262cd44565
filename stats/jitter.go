package stats

import "math"

// Jitter3550 returns the RFC 3550 (section 6.4.1) interarrival jitter of a
// series of transit times, in the units of transit: for each consecutive
// pair, D = transit[i] - transit[i-1] and J += (|D| - J)/16, starting from
// J = 0. A transit time is a packet's arrival time minus its send time; a
// constant clock offset between sender and receiver cancels out in D, so
// unsynchronised clocks are fine. The result is the estimator's value after
// the last packet (the figure an RTCP receiver report would carry), not an
// average; it is 0 for fewer than two samples. NaN entries (lost packets)
// are skipped.
func Jitter3550(transit []float64) float64 {
	var j, prev float64
	have := false
	for _, t := range transit {
		if math.IsNaN(t) {
			continue
		}
		if have {
			j += (math.Abs(t-prev) - j) / 16
		}
		prev, have = t, true
	}
	return j
}

// Jain returns Jain's fairness index of the allocations xs:
// (Σx)² / (n·Σx²), which is 1 when all are equal and 1/n when one takes
// everything. The values are meant to be non-negative. When every value is
// zero the allocation is equal (everyone got nothing) and the index is 1.
// It is NaN for an empty slice.
func Jain(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}
