// Package clock defines wanlab's notion of time: int64 nanoseconds on a
// monotonic time line, passed explicitly to every part of the core.
//
// The core never reads the wall clock; it is handed "now" and answers with the
// next time it needs to be called. That makes every discipline steppable on a
// virtual clock (tests, the simulator) and on the real clock (the router)
// with the same code.
package clock

import (
	"math"
	"time"
)

// Time is a point on a monotonic time line, in nanoseconds. Its zero is
// arbitrary (the start of a simulation, or a process-local epoch).
type Time int64

// Never is a deadline that never comes: "call me when something else happens".
const Never Time = math.MaxInt64

// Add returns t+d.
func (t Time) Add(d time.Duration) Time { return t + Time(d) }

// Sub returns the duration t-u.
func (t Time) Sub(u Time) time.Duration { return time.Duration(t - u) }

// Before reports whether t is earlier than u.
func (t Time) Before(u Time) bool { return t < u }

// Seconds returns t in seconds since the epoch of its time line.
func (t Time) Seconds() float64 { return float64(t) / 1e9 }

// String formats t as a duration since the epoch, e.g. "1.2ms"; Never prints
// as "never".
func (t Time) String() string {
	if t == Never {
		return "never"
	}
	return time.Duration(t).String()
}

// Min returns the earlier of a and b.
func Min(a, b Time) Time {
	if a < b {
		return a
	}
	return b
}

// Clock is a source of the current time.
type Clock interface {
	Now() Time
}

// Manual is a Clock that moves only when told to; the zero value reads 0.
type Manual struct{ t Time }

// Now returns the manual clock's current time.
func (m *Manual) Now() Time { return m.t }

// Set moves the clock to t.
func (m *Manual) Set(t Time) { m.t = t }

// Advance moves the clock forward by d.
func (m *Manual) Advance(d time.Duration) { m.t += Time(d) }

var _ Clock = (*Manual)(nil)
