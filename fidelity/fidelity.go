// Package fidelity judges whether the emulator did what its chains said:
// the one definition of a faithful run that every view of wanlab (run
// summaries, results files, status, reports) uses.
//
// A direction is not faithful when the router released packets late enough
// to change what the hosts saw, or when packets were lost in front of the
// router where the chain cannot see them:
//
//   - its release lateness p99 exceeds the smaller of 1 ms and a tenth of the
//     smallest non-zero configured one-way delay of the run (a 10 ms path
//     tolerates 1 ms, a 2 ms path 0.2 ms, a path without delay 1 ms), or
//   - the TUN ring in front of the router dropped packets: those are drops
//     the chain did not decide, or
//   - the router's loop was saturated: it spent at least MaxBusy of its time
//     working on packets or holding reads back so as to release on time
//     what it had taken in, so that it, not the chain, set the pace (a
//     TCP flow through a path without a rate then runs as fast as the
//     router, and its packets wait in the ring in front of it).
//
// Later inputs add causes here; they do not add new definitions elsewhere.
package fidelity

import (
	"fmt"
	"time"

	"wanlab/qdisc"
)

// MaxLateness is the release lateness p99 above which no run is faithful.
const MaxLateness = time.Millisecond

// MaxBusy is the share of its running time a router loop may spend working
// on packets (reading, deciding, writing) before it counts as saturated.
const MaxBusy = 0.95

// Direction is what the verdict needs to know about one direction.
type Direction struct {
	// Name is "up" or "down".
	Name string
	// Releases is how many release lateness samples there are; LatenessP99
	// their 99th percentile.
	Releases    uint64
	LatenessP99 time.Duration
	// RingDrops counts packets the kernel dropped at the TUN ring in front
	// of the direction's router loop.
	RingDrops uint64
	// Running is how long the direction's loop has run; Busy how much of
	// that it spent in passes that read or released packets (0 when not
	// known: no cpu_saturated cause then); Held how much it spent holding
	// reads back while packets waited in front of it, because it could
	// not have released more on time.
	Running, Busy, Held time.Duration
}

// CauseLateReleases is the Code of the cause that the lateness p99
// exceeded the tolerance.
const CauseLateReleases = "late_releases"

// Has reports whether v names the cause of the given code.
func (v Verdict) Has(code string) bool {
	for _, c := range v.Causes {
		if c.Code == code {
			return true
		}
	}
	return false
}

// Cause is one reason a direction is not faithful.
type Cause struct {
	// Code is a stable identifier: "late_releases", "ring_drops" or
	// "cpu_saturated".
	Code string `json:"code"`
	// Text explains it to a person, with the figures.
	Text string `json:"text"`
}

// Verdict is the judgement of one direction.
type Verdict struct {
	Direction string `json:"direction"`
	Faithful  bool   `json:"faithful"`
	// Tolerance is the lateness p99 that was allowed, in ns.
	ToleranceNs int64   `json:"tolerance_ns"`
	Causes      []Cause `json:"causes,omitempty"`
}

// Tolerance returns the lateness p99 a run whose smallest non-zero one-way
// delay is minDelay may have (0: no delay configured).
func Tolerance(minDelay time.Duration) time.Duration {
	if minDelay > 0 && minDelay/10 < MaxLateness {
		return minDelay / 10
	}
	return MaxLateness
}

// Judge returns the verdict on d in a run whose smallest non-zero
// configured one-way delay is minDelay.
func Judge(d Direction, minDelay time.Duration) Verdict {
	tol := Tolerance(minDelay)
	v := Verdict{Direction: d.Name, Faithful: true, ToleranceNs: int64(tol)}
	if d.Releases > 0 && d.LatenessP99 > tol {
		v.Causes = append(v.Causes, Cause{Code: CauseLateReleases, Text: fmt.Sprintf(
			"the router released packets late: lateness p99 %v exceeds %v (the smaller of %v and a tenth of the smallest configured one-way delay); the router lacked CPU time or the path asked for more packets per second than it can release",
			d.LatenessP99, tol, MaxLateness)})
	}
	if d.RingDrops > 0 {
		v.Causes = append(v.Causes, Cause{Code: "ring_drops", Text: fmt.Sprintf(
			"the kernel dropped %d packets in the TUN ring in front of the router, which the chain did not decide: the router did not read them in time",
			d.RingDrops)})
	}
	if d.Running > 0 && d.Busy > 0 && float64(d.Busy+d.Held) >= MaxBusy*float64(d.Running) {
		v.Causes = append(v.Causes, Cause{Code: "cpu_saturated", Text: fmt.Sprintf(
			"the router's loop was saturated: of its %v it spent %.0f%% working on packets and %.0f%% holding reads back so as to release on time what it had taken in (%.0f%% in all at most is kept up with); the router, not the chain, set the pace, and packets waited in front of it: give the router more CPU, or compare with --granularity gso, which takes GSO super-packets whole",
			d.Running.Round(time.Millisecond), 100*float64(d.Busy)/float64(d.Running), 100*float64(d.Held)/float64(d.Running), 100*MaxBusy)})
	}
	v.Faithful = len(v.Causes) == 0
	return v
}

// OneWayDelay returns the constant one-way delay a chain configures: the
// sum of its netems' delays (jitter and rate left out).
func OneWayDelay(chain []qdisc.Spec) time.Duration {
	var d time.Duration
	for _, s := range chain {
		if n, ok := s.(qdisc.NetemConfig); ok {
			d += n.Delay
		}
	}
	return d
}

// BottleneckRate returns the rate a chain configures: the smallest
// non-zero rate among the disciplines a packet crosses in turn, 0 if none
// sets one. A tbf or a netem sets its rate. An htb sets what its tree can
// send at most: the sum of its root classes' ceilings (a root class
// borrows from nobody), each lowered to what its leaf chain allows. A prio
// sets the sum of its bands' rates, and none if a band has none: a band
// without a limit can take the whole link.
func BottleneckRate(chain []qdisc.Spec) qdisc.Rate {
	var smallest qdisc.Rate
	for _, s := range chain {
		if r := specRate(s); r != 0 && (smallest == 0 || r < smallest) {
			smallest = r
		}
	}
	return smallest
}

// specRate is the rate one discipline of a chain sets, 0 for none.
func specRate(s qdisc.Spec) qdisc.Rate {
	switch c := s.(type) {
	case qdisc.TBFConfig:
		return c.Rate
	case qdisc.NetemConfig:
		return c.Rate
	case qdisc.HTBConfig:
		return htbRate(c)
	case qdisc.PrioConfig:
		var sum qdisc.Rate
		for b := range c.NumBands() {
			var leaf []qdisc.Spec
			if b < len(c.Leaves) {
				leaf = c.Leaves[b]
			}
			r := BottleneckRate(leaf)
			if r == 0 {
				return 0
			}
			sum += r
		}
		return sum
	}
	return 0
}

// htbRate is the sum of an htb's root classes' ceilings, each lowered to
// its leaf chain's rate. A class whose parent is no class created before
// it is a root class, as in the kernel.
func htbRate(c qdisc.HTBConfig) qdisc.Rate {
	classes := make(map[qdisc.ClassID]bool, len(c.Classes))
	var sum qdisc.Rate
	for _, cl := range c.Classes {
		root := !classes[cl.Parent]
		classes[cl.ID] = true
		if !root {
			continue
		}
		r := cl.Ceil
		if r == 0 {
			r = cl.Rate
		}
		if l := BottleneckRate(cl.Leaf); l != 0 && l < r {
			r = l
		}
		sum += r
	}
	return sum
}

// MinDelay returns the smallest non-zero one-way delay among the chains
// (0 if none configures a delay).
func MinDelay(chains ...[]qdisc.Spec) time.Duration {
	var m time.Duration
	for _, c := range chains {
		if d := OneWayDelay(c); d > 0 && (m == 0 || d < m) {
			m = d
		}
	}
	return m
}
