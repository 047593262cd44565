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
	var j Jitter
	for _, t := range transit {
		j.Add(t)
	}
	return j.Value()
}

// Jitter is RFC 3550's interarrival jitter estimator (section 6.4.1, the
// code in appendix A.8) fed one transit time at a time, for a receiver that
// reports it as packets arrive; Jitter3550 is the same over a slice. The
// zero value is ready and reads 0. Transit times are in any unit (the
// estimate is in the same unit); NaN entries (lost packets) are skipped.
type Jitter struct {
	j, prev float64
	have    bool
}

// Add takes the transit time of the next packet to arrive and returns the
// updated estimate.
func (e *Jitter) Add(transit float64) float64 {
	if math.IsNaN(transit) {
		return e.j
	}
	if e.have {
		e.j += (math.Abs(transit-e.prev) - e.j) / 16
	}
	e.prev, e.have = transit, true
	return e.j
}

// Value returns the current estimate: 0 until two packets have arrived.
func (e *Jitter) Value() float64 { return e.j }

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
