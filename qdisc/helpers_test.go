package qdisc

import (
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

const ms = clock.Time(time.Millisecond)

// seen is one drop or mark a recorder saw.
type seen struct {
	t    clock.Time
	kind string // the kind of the discipline that acted
	why  Reason
	port uint16 // UDP source port: the test's flow
	seq  int64
}

// recorder is the tests' Observer: it records every drop and mark, and
// frees the dropped packets.
type recorder struct {
	drops, marks []seen
}

func (r *recorder) Drop(now clock.Time, p *packet.Packet, from Qdisc, why Reason) {
	r.drops = append(r.drops, seen{now, from.Kind(), why, srcPort(p), p.Seq})
	p.Free()
}

func (r *recorder) Mark(now clock.Time, p *packet.Packet, from Qdisc, why Reason) {
	r.marks = append(r.marks, seen{now, from.Kind(), why, srcPort(p), p.Seq})
}

// count returns how many drops had reason why.
func (r *recorder) count(why Reason) int { return countEvents(r.drops, why) }

// countEvents returns how many of evs had reason why.
func countEvents(evs []seen, why Reason) int {
	n := 0
	for _, e := range evs {
		if e.why == why {
			n++
		}
	}
	return n
}

// srcPort returns the UDP source port of p, or 0.
func srcPort(p *packet.Packet) uint16 {
	t, err := packet.ParseTuple(p.Bytes())
	if err != nil {
		return 0
	}
	return t.SrcPort
}

// benchSteady measures one 1500-byte packet in and one out of q per op,
// the clock advancing 12 µs (a packet time at 1 Gbit/s) per op, with the
// first queued of ps enqueued beforehand and the rest cycling.
func benchSteady(b *testing.B, q Qdisc, ps []*packet.Packet, queued int) {
	now := clock.Time(0)
	for _, p := range ps[:queued] {
		q.Enqueue(now, p)
	}
	free := ps[queued:]
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now += 12 * us
		q.Enqueue(now, free[len(free)-1])
		free = free[:len(free)-1]
		p, _ := q.Dequeue(now)
		free = append(free, p)
	}
}
