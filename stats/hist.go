package stats

import (
	"math/bits"
	"slices"
)

// Hist is a log-linear histogram of non-negative integers (wanlab records
// durations in nanoseconds): values below 2·HistSub are counted exactly;
// above, each power of two is split into HistSub equal buckets, so a
// bucket is at most 1/HistSub of its lower edge wide and its midpoint is
// within 1/(2·HistSub), 0.8 %, of every value in it. Values of 2^40 (18
// minutes in nanoseconds) and more share the last bucket. The count, the
// minimum and the maximum are exact, and so is every percentile while at
// most HistExact values have been recorded: a summary of a few pings must
// not read twenty values that share one bucket as its midpoint.
//
// Add allocates nothing and takes constant time, so a Hist can sit on a
// per-packet path; the zero value is an empty histogram. A Hist is about
// 20 KiB: keep it by pointer or inside a larger value.
type Hist struct {
	counts   [histBuckets]uint64
	first    [HistExact]int64 // the first values recorded, for exact percentiles
	n        uint64
	min, max int64
}

// HistSub is the number of buckets per power of two.
const HistSub = 1 << histSubBits

// HistExact is how many values a Hist keeps as they are: up to this
// count its percentiles are exact.
const HistExact = 256

const (
	histSubBits = 6
	histMaxBits = 40
	histBuckets = 2*HistSub + (histMaxBits-histSubBits-1)*HistSub
)

func histIndex(v int64) int {
	if v < 2*HistSub {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - histSubBits - 1 // v>>e is in [HistSub, 2·HistSub)
	return min(2*HistSub+(e-1)*HistSub+int(v>>e)-HistSub, histBuckets-1)
}

// histMid returns the representative value of bucket i: the value itself in
// the exact range, the midpoint of the bucket above it.
func histMid(i int) float64 {
	lo, hi := histRange(i)
	return (float64(lo) + float64(hi)) / 2
}

// histRange returns the smallest and the largest value of bucket i.
func histRange(i int) (lo, hi int64) {
	if i < 2*HistSub {
		return int64(i), int64(i)
	}
	e := (i-2*HistSub)/HistSub + 1
	lo = int64((i-2*HistSub)%HistSub+HistSub) << e
	return lo, lo + int64(1)<<e - 1
}

// Add records v; a negative v is recorded as 0.
func (h *Hist) Add(v int64) {
	v = max(v, 0)
	if h.n < HistExact {
		h.first[h.n] = v
	}
	h.counts[histIndex(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.n++
}

// N returns the number of values recorded.
func (h *Hist) N() uint64 { return h.n }

// Min returns the smallest value recorded (0 when there is none).
func (h *Hist) Min() int64 { return h.min }

// Max returns the largest value recorded (0 when there is none).
func (h *Hist) Max() int64 { return h.max }

// rank returns an estimate of the k-th smallest value (0-based): the
// midpoint of its bucket's values that lie between the exact minimum and
// maximum, so that the first and the last are exact and a value in the
// bucket of either is never read past it.
func (h *Hist) rank(k uint64) float64 {
	switch k {
	case 0:
		return float64(h.min)
	case h.n - 1:
		return float64(h.max)
	}
	i := histBuckets - 1
	var seen uint64
	for j, c := range h.counts {
		seen += c
		if seen > k {
			i = j
			break
		}
	}
	lo, hi := histRange(i)
	return (float64(max(lo, h.min)) + float64(min(hi, h.max))) / 2
}

// Percentile returns the p-th percentile (p in [0,100]) of the values
// recorded as Percentile does for sorted samples: numpy's linear
// interpolation between order statistics, which Flent uses. Up to
// HistExact values it is exact; past them each order statistic is read as
// its bucket's midpoint (see rank), exact below 2·HistSub and within
// 0.8 % above. It returns 0 when nothing was recorded.
func (h *Hist) Percentile(p float64) float64 {
	if h.n == 0 {
		return 0
	}
	if h.n <= HistExact {
		var buf [HistExact]float64
		s := buf[:h.n]
		for i, v := range h.first[:h.n] {
			s[i] = float64(v)
		}
		slices.Sort(s)
		return Percentile(s, p)
	}
	p = min(max(p, 0), 100)
	r := float64(h.n-1) * p / 100
	k := uint64(r)
	v := h.rank(k)
	if k+1 < h.n && r > float64(k) {
		v += (h.rank(k+1) - v) * (r - float64(k))
	}
	return min(max(v, float64(h.min)), float64(h.max))
}
