package link

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"

	"wanlab/clock"
)

// OpportunityBytes is the size of one delivery opportunity of a trace, as
// mahimahi's PACKET_SIZE: one full-size Ethernet payload.
const OpportunityBytes = 1500

// maxTraceMs bounds trace timestamps, and so the repeat period, so that
// opportunity times stay far from int64 overflow however many periods a
// queue waits for: 2^32 ms is about 50 days, and the 292 years of a
// nanosecond clock hold over 2,000 such periods (2^40 ms, 35 years, let a
// queue of nine packets on a one-opportunity trace overflow).
const maxTraceMs = 1 << 32

// Trace is a packet-delivery schedule in mahimahi's format: each line holds
// one integer, a time in milliseconds at which the link can deliver
// OpportunityBytes bytes; a time written k times gives k opportunities at
// that instant. The schedule repeats forever with a period equal to its last
// timestamp, so period q holds the opportunities q·P + t_i. Time 0 of the
// trace is time 0 of the clock.Time line it is used on.
//
// Each opportunity carries OpportunityBytes bytes of IP packets (whatever
// the direction's framing: mahimahi counts what its TUN devices carry), used
// as mahimahi's
// LinkQueue uses them (see Direction.Dequeue): several small packets can
// leave in one opportunity, a packet leaves when its last byte has been
// sent, and bytes that find no packet ready are lost. mahimahi refuses
// packets larger than an opportunity; here such a packet (a GSO
// super-packet, a jumbo frame) simply spans several opportunities.
//
// A Trace is immutable and may be shared by several directions.
type Trace struct {
	at     []clock.Time // opportunity times within one period, ascending
	period clock.Time
}

// ParseTrace parses a mahimahi trace. As mahimahi's LinkQueue it rejects
// empty lines, decreasing timestamps, an empty trace and a trace whose last
// timestamp is 0; a final newline is optional, and surrounding spaces and a
// trailing carriage return are tolerated. Errors name the 1-based line.
func ParseTrace(text []byte) (*Trace, error) {
	if len(text) > 0 && text[len(text)-1] == '\n' {
		text = text[:len(text)-1]
	}
	if len(text) == 0 {
		return nil, fmt.Errorf("trace: no timestamps; write one millisecond time per line, e.g. \"0\\n1\\n1\\n2\"")
	}
	t := &Trace{at: make([]clock.Time, 0, bytes.Count(text, []byte{'\n'})+1)}
	var last int64
	for i, line := range bytes.Split(text, []byte{'\n'}) {
		n := i + 1
		s := string(bytes.TrimSpace(line))
		if s == "" {
			return nil, fmt.Errorf("trace line %d: empty line; every line must hold one millisecond timestamp", n)
		}
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("trace line %d: %q is not a non-negative integer number of milliseconds", n, s)
		}
		if ms > maxTraceMs {
			return nil, fmt.Errorf("trace line %d: %d ms is beyond the largest supported timestamp %d ms", n, ms, int64(maxTraceMs))
		}
		if ms < last {
			return nil, fmt.Errorf("trace line %d: %d ms comes after %d ms; timestamps must not decrease", n, ms, last)
		}
		last = ms
		t.at = append(t.at, clock.Time(ms)*clock.Time(1e6))
	}
	if last == 0 {
		return nil, fmt.Errorf("trace: the last timestamp is 0, so the trace lasts no time; it sets the repeat period and must be positive")
	}
	t.period = clock.Time(last) * 1e6
	return t, nil
}

// Period returns the time after which the schedule repeats.
func (t *Trace) Period() clock.Time { return t.period }

// Len returns the number of delivery opportunities in one period.
func (t *Trace) Len() int { return len(t.at) }

// Next returns the time of the first delivery opportunity at or after at.
// Times before 0 are treated as 0.
func (t *Trace) Next(at clock.Time) clock.Time {
	c := t.seek(at)
	return c.t
}

// cursor names one delivery opportunity: the i-th of period q, at time t.
type cursor struct {
	q int64
	i int
	t clock.Time
}

// seek returns the first opportunity at or after at.
func (t *Trace) seek(at clock.Time) cursor {
	if at < 0 {
		at = 0
	}
	q := int64(at / t.period)
	off := at - clock.Time(q)*t.period
	if off == 0 && q > 0 {
		// The last opportunities of period q-1 fall on q·P too, and come
		// first in the schedule.
		q, off = q-1, t.period
	}
	i, _ := slices.BinarySearch(t.at, off)
	if i == len(t.at) {
		q, i = q+1, 0
	}
	return t.cursorAt(q, i)
}

func (t *Trace) cursorAt(q int64, i int) cursor {
	return cursor{q: q, i: i, t: clock.Time(q)*t.period + t.at[i]}
}

// next returns the opportunity after c.
func (t *Trace) next(c cursor) cursor {
	c.i++
	if c.i == len(t.at) {
		c.q, c.i = c.q+1, 0
	}
	return t.cursorAt(c.q, c.i)
}

// after reports whether opportunity a comes later than b in the schedule.
func (a cursor) after(b cursor) bool {
	return a.q > b.q || (a.q == b.q && a.i > b.i)
}
