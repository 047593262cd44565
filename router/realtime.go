package router

import (
	"time"

	"wanlab/clock"
)

// realtime maps CLOCK_REALTIME times, which the kernel stamps on the
// frames of a packet socket, onto the router's clock (clock.Real: the
// monotonic clock, from the router's creation). It is the one place that
// converts them.
//
// The two clocks advance at the same rate (the kernel's frequency
// corrections, NTP's, move both), so their offset changes only when the
// real-time clock is stepped (settimeofday, a leap second). measure reads
// CLOCK_REALTIME between two reads of the router's clock and takes the
// real time less the middle of that bracket: the offset is off by at most
// half the bracket, four vDSO clock reads, some tens of nanoseconds (the
// narrowest bracket of three tries, so that an interruption in one does
// not count). It measures again every realtimeRefresh, so that a step is
// followed that soon; until then arrivals keep their order and never lie
// ahead of the read (see frameIngress.arrival).
type realtime struct {
	clk      *clock.Real
	offset   int64      // CLOCK_REALTIME, in ns since the Unix epoch, at the router's time 0
	at       clock.Time // when offset was measured
	measured bool
}

// realtimeRefresh is how often the offset is measured again.
const realtimeRefresh = 100 * time.Millisecond

// measure measures the offset.
func (r *realtime) measure() {
	best := clock.Time(-1)
	for range 3 {
		a := r.clk.Now()
		w := time.Now().UnixNano()
		b := r.clk.Now()
		if best < 0 || b-a < best {
			best = b - a
			r.offset = w - int64(a+(b-a)/2)
			r.at = b
		}
	}
	r.measured = true
}

// toClock returns the router's time of t, in ns since the Unix epoch on
// CLOCK_REALTIME, as read at now: now if t is later, since no packet
// arrived after it was read.
func (r *realtime) toClock(t int64, now clock.Time) clock.Time {
	if !r.measured || time.Duration(now-r.at) >= realtimeRefresh {
		r.measure()
	}
	return min(clock.Time(t-r.offset), now)
}
