package qdisc

import (
	"fmt"

	"wanlab/clock"
	"wanlab/packet"
)

// pfifoFastBands is the number of bands of pfifo_fast (PFIFO_FAST_BANDS).
const pfifoFastBands = 3

// prio2band is pfifo_fast's fixed priomap (sch_generic.c): skb->priority &
// 15 (TC_PRIO_MAX) to band. It is also tc's default priomap for prio.
var prio2band = [16]uint8{1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}

// PfifoFast is pfifo_fast (sch_generic.c), the kernel's classic default
// qdisc: three FIFO bands served in strict priority, band 0 first.
//
// A packet's band is prio2band[priority&15], its priority what the
// kernel's forwarding path leaves in skb->priority (forwardPriority): from
// the TOS for IPv4, 0 for IPv6 and non-IP packets, which land in band 1.
// In TOS terms: "low delay" (0x10) without "throughput" (0x08) goes to
// band 0, "throughput" without "low delay" to band 2, everything else to
// band 1 (so EF, 0xB8, is band 1).
//
// Each band holds env.QueueLen() packets, as the per-band rings of Linux
// 4.16 and later (3×txqueuelen in total); a packet whose band is full is
// dropped with ReasonLimit.
type PfifoFast struct {
	env   *Env
	limit int
	u     units
	bands [pfifoFastBands]ring
	stats Stats
}

var _ Qdisc = (*PfifoFast)(nil)

// NewPfifoFast returns a pfifo_fast with bands of env.QueueLen() packets.
func NewPfifoFast(_ PfifoFastConfig, env *Env) (*PfifoFast, error) {
	if err := env.Check(); err != nil {
		return nil, fmt.Errorf("pfifo_fast: %w", err)
	}
	return &PfifoFast{env: env, limit: env.QueueLen(), u: unitsOf(env)}, nil
}

// pfifoFastBand returns the band of an IP packet starting at b.
func pfifoFastBand(b []byte) int { return int(prio2band[forwardPriority(b)]) }

// Enqueue appends p to its band, or drops it if the band is full (the
// segments of a super-packet beyond the room left, under
// GranularitySegment).
func (q *PfifoFast) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := q.enqueueUnits(now, p)
	return v
}

func (q *PfifoFast) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	b := &q.bands[pfifoFastBand(p.Bytes())]
	room := q.limit - q.u.inRing(b)
	if q.u.count(p) <= room {
		b.Push(p)
		return 0, Queued
	}
	return admitCount(now, p, b, room, q, q.env, q.u, &q.stats)
}

// Dequeue returns the head of the first non-empty band.
func (q *PfifoFast) Dequeue(now clock.Time) (*packet.Packet, clock.Time) {
	return q.dequeueRun(now, nil)
}

func (q *PfifoFast) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	for i := range q.bands {
		b := &q.bands[i]
		h := b.Front()
		if h == nil {
			continue
		}
		var p *packet.Packet
		switch {
		case !q.u.one(h):
			p = popAdmitted(b, h, g, now, q.u, q.env)
		case g == nil || g.admit(now, q.u.whole(h)):
			p = b.Pop()
		}
		if p == nil {
			return nil, now
		}
		q.u.sent(&q.stats, p)
		return p, now
	}
	return nil, clock.Never
}

// Peek returns the packet Dequeue would return, without removing it.
func (q *PfifoFast) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	for i := range q.bands {
		if p := q.bands[i].Front(); p != nil {
			return p, now
		}
	}
	return nil, clock.Never
}

// Len returns the number of packets in all bands.
func (q *PfifoFast) Len() int {
	return q.u.inRing(&q.bands[0]) + q.u.inRing(&q.bands[1]) + q.u.inRing(&q.bands[2])
}

// Backlog returns the number of bytes in all bands, as the device counts
// them.
func (q *PfifoFast) Backlog() int {
	return q.u.backlog(&q.bands[0]) + q.u.backlog(&q.bands[1]) + q.u.backlog(&q.bands[2])
}

// BandLen returns the number of packets in band i (0, 1 or 2).
func (q *PfifoFast) BandLen(i int) int { return q.bands[i].Len() }

// Stats returns the counters; every drop is ReasonLimit.
func (q *PfifoFast) Stats() Stats {
	s := q.stats
	s.Qlen, s.Backlog = q.Len(), q.Backlog()
	return s
}

// Kind returns "pfifo_fast".
func (q *PfifoFast) Kind() string { return "pfifo_fast" }

// Child returns nil: pfifo_fast's bands are not qdiscs.
func (q *PfifoFast) Child() Qdisc { return nil }

// Change accepts pfifo_fast's only configuration, which has no options,
// and changes nothing.
func (q *PfifoFast) Change(_ clock.Time, spec Spec) error {
	_, err := specAs[PfifoFastConfig](q, spec)
	return err
}

// Flush drops the packets of every band with ReasonFlushed.
func (q *PfifoFast) Flush(now clock.Time) {
	for i := range q.bands {
		flushRing(now, &q.bands[i], q, q.env, q.u, &q.stats)
	}
}

// Config returns PfifoFastConfig{}: pfifo_fast has no options.
func (q *PfifoFast) Config() Spec { return PfifoFastConfig{} }
