package link

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"

	"wanlab/qdisc"
	"wanlab/stats"
)

// Counters is a snapshot of what crossed a direction (or one flow of it).
// Packets are wire segments: a GSO super-packet counts as the segments it
// stands for (packet.Segments); bytes are framed bytes as the emulated
// device counts them (qdisc.Env.PktLen: the IP length plus the framing's
// header, 14 bytes on Ethernet framing, for every segment).
//
// Every packet that entered is accounted for exactly once:
// Sent + Duplicated = Delivered + Dropped + Queued.
//
// Its JSON form is part of wanlab's output contract (docs/results-format.md):
// snake_case keys, drops by reason as an object keyed by reason name.
type Counters struct {
	// Sent counts packets offered to Enqueue; BytesIn their bytes.
	Sent    uint64 `json:"sent"`
	BytesIn uint64 `json:"bytes_in"`
	// Delivered counts packets returned by Dequeue (duplicates included);
	// BytesOut their bytes.
	Delivered uint64 `json:"delivered"`
	BytesOut  uint64 `json:"bytes_out"`
	// Dropped counts packets discarded by the qdisc tree, and
	// DroppedByReason splits them by qdisc.Reason.
	Dropped         uint64  `json:"dropped"`
	DroppedByReason Reasons `json:"dropped_by_reason"`
	// Marked counts CE marks (a packet marked by two disciplines counts
	// twice); marked packets are also delivered or dropped.
	Marked uint64 `json:"marked"`
	// Duplicated counts the duplicates the tree made (netem's duplicate),
	// counted when they entered the tree.
	Duplicated uint64 `json:"duplicated"`
	// Reordered counts delivered packets whose Seq was lower than the
	// highest Seq already delivered in their flow (RFC 4737's "reordered"
	// singleton, stats.Reorder); only packets with Flow >= 0 are
	// considered.
	Reordered uint64 `json:"reordered"`
	// Queued is the number of packets still inside the direction: in the
	// qdisc tree, on the trace's wire, or due but not yet dequeued.
	Queued uint64 `json:"queued"`
	// Delay summarises the delay (leave time - Arrival) of delivered
	// packets: one sample per buffer, a super-packet that left whole
	// being one.
	Delay Delay `json:"delay"`
}

// Delay summarises delays in nanoseconds. Min, Max and Mean are exact. The
// percentiles interpolate linearly between order statistics as
// stats.Percentile (numpy's default) does; they are exact when Exact is set
// (Config.KeepDelays) and otherwise read from a stats.Hist: exact up to
// stats.HistExact delays, within 0.8 % of the exact figure past them. All
// fields are 0 when N is 0.
type Delay struct {
	N     uint64  `json:"n"`
	Min   float64 `json:"min_ns"`
	Mean  float64 `json:"mean_ns"`
	P50   float64 `json:"p50_ns"`
	P90   float64 `json:"p90_ns"`
	P99   float64 `json:"p99_ns"`
	Max   float64 `json:"max_ns"`
	Exact bool    `json:"exact"`
}

// Reasons counts packets per qdisc.Reason. Its JSON form is an object
// keyed by the reasons' names (qdisc.Reason.String) that leaves out the
// reasons with no packets: {"limit": 3, "codel": 12}.
type Reasons [qdisc.NumReasons]uint64

// MarshalJSON implements json.Marshaler.
func (r Reasons) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for why, n := range r {
		if n == 0 {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, qdisc.Reason(why).String())
		b = append(b, ':')
		b = strconv.AppendUint(b, n, 10)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON implements json.Unmarshaler; an unknown reason name is an
// error.
func (r *Reasons) UnmarshalJSON(b []byte) error {
	var m map[string]uint64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*r = Reasons{}
	for name, n := range m {
		i := slices.IndexFunc(qdisc.Reasons(), func(why qdisc.Reason) bool { return why.String() == name })
		if i < 0 {
			return fmt.Errorf("link: unknown drop reason %q", name)
		}
		r[i] = n
	}
	return nil
}

// Total returns the sum of the counts.
func (r *Reasons) Total() uint64 {
	var t uint64
	for _, n := range r {
		t += n
	}
	return t
}

// QdiscCounters are one discipline instance's counters as `tc -s qdisc
// show` prints them, in the JSON naming of Counters. Packets and bytes are
// what the discipline dequeued (framed bytes, as the device's qdiscs count
// them); Qlen and Backlog what it holds now.
type QdiscCounters struct {
	Packets         uint64  `json:"packets"`
	Bytes           uint64  `json:"bytes"`
	Dropped         uint64  `json:"dropped"`
	DroppedByReason Reasons `json:"dropped_by_reason"`
	Overlimits      uint64  `json:"overlimits"`
	Requeues        uint64  `json:"requeues"`
	Marked          uint64  `json:"marked"`
	Qlen            int     `json:"qlen"`
	Backlog         int     `json:"backlog_bytes"`
}

// QdiscCountersOf converts a discipline's qdisc.Stats.
func QdiscCountersOf(s qdisc.Stats) QdiscCounters {
	return QdiscCounters{
		Packets:         s.Packets,
		Bytes:           s.Bytes,
		Dropped:         s.Drops,
		DroppedByReason: Reasons(s.DropsByReason),
		Overlimits:      s.Overlimits,
		Requeues:        s.Requeues,
		Marked:          s.Marks,
		Qlen:            s.Qlen,
		Backlog:         s.Backlog,
	}
}

// acc accumulates the counters of a direction or of one flow.
type acc struct {
	c          Counters
	sumHi      uint64 // 128-bit sum of delays, so the mean stays exact
	sumLo      uint64
	minD, maxD int64
	n          uint64      // delay samples: one per delivered packet (buffer)
	h          *stats.Hist // only without keep: exact samples make it redundant
	keep       bool
	samples    []int64
}

// delivered counts a packet of segs wire segments and n bytes that left
// after d ns: one delay sample.
func (a *acc) delivered(segs, n int, d int64) {
	a.c.Delivered += uint64(segs)
	a.c.BytesOut += uint64(n)
	a.n++
	if d < 0 {
		d = 0
	}
	if a.n == 1 || d < a.minD {
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

// dropped counts segs wire segments dropped for why.
func (a *acc) dropped(segs uint64, why qdisc.Reason) {
	a.c.Dropped += segs
	if int(why) < qdisc.NumReasons {
		a.c.DroppedByReason[why] += segs
	}
}

// snapshot returns the counters with Queued and Delay filled in.
func (a *acc) snapshot() Counters {
	c := a.c
	c.Queued = c.Sent + c.Duplicated - c.Delivered - c.Dropped
	n := a.n
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

// stopKeeping moves the kept delays into the histogram and keeps no more.
func (a *acc) stopKeeping() {
	if !a.keep {
		return
	}
	a.keep = false
	if a.h == nil {
		a.h = new(stats.Hist)
	}
	for _, d := range a.samples {
		a.h.Add(d)
	}
	a.samples = nil
}

// reserve makes room for n more exact delays, so that recording them does
// not grow the slice (and copy it) along the way.
func (a *acc) reserve(n int) {
	if a.keep && n > 0 {
		a.samples = slices.Grow(a.samples, n)
	}
}
