package qdisc

import (
	"testing"

	"wanlab/clock"
)

// tqDeparture is a packet released by a discipline.
type tqDeparture struct {
	t   clock.Time
	seq int64
	len int
}

// tqDrain calls Dequeue from start on, jumping to each returned deadline,
// until q reports clock.Never or the time passes until. It frees every
// packet it receives.
func tqDrain(t *testing.T, q Qdisc, start, until clock.Time) []tqDeparture {
	t.Helper()
	var out []tqDeparture
	now := start
	for now <= until {
		p, next := q.Dequeue(now)
		if p != nil {
			out = append(out, tqDeparture{now, p.Seq, p.Len()})
			p.Free()
			continue
		}
		if next == clock.Never {
			break
		}
		if next <= now {
			t.Fatalf("%s: Dequeue(%v) returned no packet and next %v, not in the future", q.Kind(), now, next)
		}
		now = next
	}
	return out
}
