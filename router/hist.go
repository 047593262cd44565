package router

import "math/bits"

// latHist records release lateness in nanoseconds without allocating. It is
// log-linear: values below 2·latSub are exact; above, each power of two is
// split into latSub buckets, so a bucket's width is at most 1/latSub of its
// lower edge (percentiles within 1.6%).
type latHist struct {
	counts [latBuckets]uint64
	n      uint64
	max    int64
}

const (
	latSubBits = 5
	latSub     = 1 << latSubBits
	latMaxBits = 40 // 2^40 ns and more share the last bucket
	latBuckets = 2*latSub + (latMaxBits-latSubBits-1)*latSub
)

func latIndex(v int64) int {
	if v < 2*latSub {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - latSubBits - 1
	return min(2*latSub+(e-1)*latSub+int(v>>e)-latSub, latBuckets-1)
}

// latLow returns the smallest value of bucket i.
func latLow(i int) int64 {
	if i < 2*latSub {
		return int64(i)
	}
	e := (i-2*latSub)/latSub + 1
	return int64((i-2*latSub)%latSub+latSub) << e
}

func (h *latHist) add(v int64) {
	v = max(v, 0)
	h.counts[latIndex(v)]++
	h.n++
	h.max = max(h.max, v)
}

// quantile returns the value below which a fraction q of the samples lie:
// the upper edge of the bucket holding the rank, so that it never
// understates lateness, clamped to the maximum.
func (h *latHist) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n-1))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > rank {
			if i+1 < latBuckets {
				return min(latLow(i+1)-1, h.max)
			}
			return h.max
		}
	}
	return h.max
}

func (h *latHist) summary() Lateness {
	return Lateness{N: h.n, P50Ns: h.quantile(0.50), P99Ns: h.quantile(0.99), MaxNs: h.max}
}
