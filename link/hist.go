package link

import "math/bits"

// The delay histogram is log-linear: values below 2·histSub are counted
// exactly; above, each power of two is split into histSub equal buckets, so
// a bucket is at most 1/histSub of its lower edge wide and its midpoint is
// within 1/(2·histSub) (0.8%) of any value in it.
const (
	histSubBits = 6
	histSub     = 1 << histSubBits
	// histMaxBits bounds the range: delays of 2^40 ns (18 minutes) and more
	// share the last bucket (the exact maximum is kept apart).
	histMaxBits = 40
	histBuckets = 2*histSub + (histMaxBits-histSubBits-1)*histSub
)

// hist records non-negative durations in nanoseconds without allocating.
type hist struct {
	counts [histBuckets]uint64
}

func histIndex(v int64) int {
	if v < 2*histSub {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	e := bits.Len64(uint64(v)) - histSubBits - 1 // v>>e is in [histSub, 2·histSub)
	idx := 2*histSub + (e-1)*histSub + int(v>>e) - histSub
	if idx >= histBuckets {
		return histBuckets - 1
	}
	return idx
}

// histMid returns the representative value of bucket idx: the value itself
// in the exact range, the midpoint of the bucket above it.
func histMid(idx int) float64 {
	if idx < 2*histSub {
		return float64(idx)
	}
	e := (idx-2*histSub)/histSub + 1
	m := int64((idx-2*histSub)%histSub + histSub)
	lo := m << e
	return float64(lo) + float64(int64(1)<<e)/2 - 0.5
}

func (h *hist) add(v int64) { h.counts[histIndex(v)]++ }

// rank returns an estimate of the k-th smallest value (0-based).
func (h *hist) rank(k uint64) float64 {
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > k {
			return histMid(i)
		}
	}
	return histMid(histBuckets - 1)
}

// percentile estimates the p-th percentile of n recorded values with
// numpy's linear interpolation between the order statistics, clamped to the
// exact extremes.
func (h *hist) percentile(n uint64, p float64, lo, hi float64) float64 {
	if n == 0 {
		return 0
	}
	r := float64(n-1) * p / 100
	k := uint64(r)
	a := h.rank(k)
	v := a
	if k+1 < n {
		b := h.rank(k + 1)
		v = a + (b-a)*(r-float64(k))
	}
	return min(max(v, lo), hi)
}
