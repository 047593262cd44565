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
//     the chain did not decide.
//
// Later inputs (the router's CPU, say) add causes here; they do not add new
// definitions elsewhere.
package fidelity

import (
	"fmt"
	"time"

	"wanlab/qdisc"
)

// MaxLateness is the release lateness p99 above which no run is faithful.
const MaxLateness = time.Millisecond

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
}

// Cause is one reason a direction is not faithful.
type Cause struct {
	// Code is a stable identifier: "late_releases" or "ring_drops".
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
		v.Causes = append(v.Causes, Cause{Code: "late_releases", Text: fmt.Sprintf(
			"the router released packets late: lateness p99 %v exceeds %v (the smaller of %v and a tenth of the smallest configured one-way delay); the router lacked CPU time or the path asked for more packets per second than it can release",
			d.LatenessP99, tol, MaxLateness)})
	}
	if d.RingDrops > 0 {
		v.Causes = append(v.Causes, Cause{Code: "ring_drops", Text: fmt.Sprintf(
			"the kernel dropped %d packets in the TUN ring in front of the router, which the chain did not decide: the router did not read them in time",
			d.RingDrops)})
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
