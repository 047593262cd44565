package link

import (
	"math"
	"math/bits"
	"slices"

	"wanlab/qdisc"
	"wanlab/stats"
)

// Counters is a snapshot of what crossed a direction (or one flow of it).
// Packets are counted as buffers (a GSO super-packet counts once); bytes
// are packet.Len, the IP length.
//
// Every packet that entered is accounted for exactly once:
// Sent + Duplicated = Delivered + Dropped + Queued.
type Counters struct {
	// Sent counts packets offered to Enqueue; BytesIn their bytes.
	Sent, BytesIn uint64
	// Delivered counts packets returned by Dequeue (duplicates included);
	// BytesOut their bytes.
	Delivered, BytesOut uint64
	// Dropped counts packets discarded by the qdisc tree, and
	// DroppedByReason splits them by qdisc.Reason.
	Dropped         uint64
	DroppedByReason [qdisc.NumReasons]uint64
	// Marked counts CE marks (a packet marked by two disciplines counts
	// twice); marked packets are also delivered or dropped.
	Marked uint64
	// Duplicated counts the duplicates the tree made (netem's duplicate),
	// counted when they entered the tree.
	Duplicated uint64
	// Reordered counts delivered packets whose Seq was lower than the
	// highest Seq already delivered in their flow (RFC 4737's "reordered"
	// singleton); only packets with Flow >= 0 are considered.
	Reordered uint64
	// Queued is the number of packets still inside the direction: in the
	// qdisc tree, on the trace's wire, or due but not yet dequeued.
	Queued uint64
	// Delay summarises the delay (leave time - Arrival) of delivered
	// packets.
	Delay Delay
}

// Delay summarises delays in nanoseconds. Min, Max and Mean are exact. The
// percentiles interpolate linearly between order statistics as
// stats.Percentile (numpy's default) does; they are exact when Exact is set
// (Config.KeepDelays) and otherwise read from a stats.Hist, within 0.8 % of
// the exact figure. All fields are 0 when N is 0.
type Delay struct {
	N                             uint64
	Min, Mean, P50, P90, P99, Max float64
	Exact                         bool
}

// acc accumulates the counters of a direction or of one flow.
type acc struct {
	c          Counters
	sumHi      uint64 // 128-bit sum of delays, so the mean stays exact
	sumLo      uint64
	minD, maxD int64
	h          *stats.Hist // only without keep: exact samples make it redundant
	keep       bool
	samples    []int64
}

func (a *acc) delivered(n int, d int64) {
	a.c.Delivered++
	a.c.BytesOut += uint64(n)
	if d < 0 {
		d = 0
	}
	if a.c.Delivered == 1 || d < a.minD {
		a.minD = d
	}
	if d > a.maxD {
		a.maxD = d
	}
	var carry uint64
	a.sumLo, carry = bits.Add64(a.sumLo, uint64(d), 0)
	a.sumHi += carry
	if a.keep {
		a.samples = append(a.samples, d)
		return
	}
	if a.h == nil {
		a.h = new(stats.Hist)
	}
	a.h.Add(d)
}

func (a *acc) dropped(why qdisc.Reason) {
	a.c.Dropped++
	if int(why) < qdisc.NumReasons {
		a.c.DroppedByReason[why]++
	}
}

// snapshot returns the counters with Queued and Delay filled in.
func (a *acc) snapshot() Counters {
	c := a.c
	c.Queued = c.Sent + c.Duplicated - c.Delivered - c.Dropped
	n := c.Delivered
	if n == 0 {
		return c
	}
	sum := float64(a.sumHi)*math.Exp2(64) + float64(a.sumLo)
	d := Delay{N: n, Min: float64(a.minD), Max: float64(a.maxD), Mean: sum / float64(n)}
	if a.keep {
		s := make([]float64, len(a.samples))
		for i, v := range a.samples {
			s[i] = float64(v)
		}
		slices.Sort(s)
		d.P50 = stats.Percentile(s, 50)
		d.P90 = stats.Percentile(s, 90)
		d.P99 = stats.Percentile(s, 99)
		d.Exact = true
	} else {
		d.P50 = a.h.Percentile(50)
		d.P90 = a.h.Percentile(90)
		d.P99 = a.h.Percentile(99)
	}
	c.Delay = d
	return c
}

// reserve makes room for n more exact delays, so that recording them does
// not grow the slice (and copy it) along the way.
func (a *acc) reserve(n int) {
	if a.keep && n > 0 {
		a.samples = slices.Grow(a.samples, n)
	}
}
