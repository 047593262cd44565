package qdisc

import (
	"fmt"
	"math"

	"wanlab/clock"
	"wanlab/packet"
)

// fifoVariant selects the admission rule of a Fifo.
type fifoVariant uint8

const (
	fifoPackets  fifoVariant = iota // pfifo: tail drop at limit packets
	fifoBytes                       // bfifo: tail drop at limit bytes
	fifoHeadDrop                    // pfifo_head_drop: drop the oldest at limit packets
)

// Fifo is one of the kernel's single-queue FIFOs (sch_fifo.c):
//
//   - pfifo accepts a packet while fewer than Limit packets are queued and
//     drops it otherwise (ReasonLimit);
//   - bfifo accepts a packet iff the backlog plus its length stays within
//     Limit bytes (ReasonLimit), lengths as the device counts them
//     (Env.PktLen: the Ethernet header included by default);
//   - pfifo_head_drop always accepts the new packet; when Limit packets are
//     already queued it first drops the oldest one (ReasonHeadDrop) and
//     returns Congested, as the kernel returns NET_XMIT_CN.
//
// The rules apply to each packet as Env.Granularity counts them: the
// segments of a super-packet one after the other, as they would arrive.
// Dequeue is never throttled: it returns the head, or nil and clock.Never.
type Fifo struct {
	env     *Env
	kind    string
	variant fifoVariant
	limit   int
	u       units
	q       ring
	stats   Stats
}

var _ Qdisc = (*Fifo)(nil)

// defaultBfifo is the bfifo of limit bytes that tbf and red make as their
// child when they are given none (the kernel's fifo_create_dflt); parent
// names them in the error.
func defaultBfifo(parent string, limit int, env *Env) (*Fifo, error) {
	f, err := NewFifo(FifoConfig{Variant: "bfifo", Limit: limit}, env)
	if err != nil {
		return nil, fmt.Errorf("%s: default child: %w", parent, err)
	}
	return f, nil
}

// NewFifo returns the FIFO that cfg.Variant names ("" means pfifo). A zero
// Limit means the kernel's default, used when tc passes no options:
// env.QueueLen() packets, or env.QueueLen()*env.PschedMTU() bytes for bfifo.
// (An explicit "limit 0", which the kernel accepts and which makes the
// queue drop everything, cannot be expressed.)
func NewFifo(cfg FifoConfig, env *Env) (*Fifo, error) {
	if err := env.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Kind(), err)
	}
	f := &Fifo{env: env, kind: cfg.Kind(), u: unitsOf(env)}
	switch f.kind {
	case "pfifo":
		f.variant = fifoPackets
	case "bfifo":
		f.variant = fifoBytes
	case "pfifo_head_drop":
		f.variant = fifoHeadDrop
	default:
		return nil, fmt.Errorf("unknown fifo variant %q; use pfifo, bfifo or pfifo_head_drop", cfg.Variant)
	}
	if cfg.Limit < 0 || int64(cfg.Limit) > math.MaxUint32 {
		unit := "packets"
		if f.variant == fifoBytes {
			unit = "bytes"
		}
		return nil, fmt.Errorf("%s: limit %d out of range; give a limit in %s between 1 and %d, or none for the default", f.kind, cfg.Limit, unit, uint32(math.MaxUint32))
	}
	f.limit = cfg.Limit
	if f.limit == 0 {
		f.limit = env.QueueLen()
		if f.variant == fifoBytes {
			f.limit *= env.PschedMTU()
		}
	}
	return f, nil
}

// Enqueue applies the variant's admission rule to p.
func (f *Fifo) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := f.enqueueUnits(now, p)
	return v
}

func (f *Fifo) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	switch f.variant {
	case fifoBytes:
		room := f.limit - f.Backlog()
		if f.u.whole(p) <= room {
			f.q.Push(p)
			return 0, Queued
		}
		return admitBytes(now, p, &f.q, room, f, f.env, f.u, &f.stats)
	case fifoHeadDrop:
		n := f.u.count(p)
		excess := f.Len() + n - f.limit
		if excess <= 0 {
			f.q.Push(p)
			return 0, Queued
		}
		// Each arriving unit pushes out the oldest: the excess leaves
		// from the head, which p's own first units join when it alone
		// is longer than the limit.
		old := min(excess, f.Len())
		dropFront(now, &f.q, old, f, f.env, f.u, &f.stats, ReasonHeadDrop)
		if own := excess - old; own >= n {
			dropUnits(now, p, f, f.env, f.u, &f.stats, ReasonHeadDrop)
		} else {
			if own > 0 {
				var head *packet.Packet
				head, p = f.env.cut(p, own)
				dropUnits(now, head, f, f.env, f.u, &f.stats, ReasonHeadDrop)
			}
			f.q.Push(p)
		}
		return 0, Congested
	}
	room := f.limit - f.Len()
	if f.u.count(p) <= room {
		f.q.Push(p)
		return 0, Queued
	}
	return admitCount(now, p, &f.q, room, f, f.env, f.u, &f.stats)
}

// admitCount queues the first room units of p in r and drops the rest
// (ReasonLimit): a packet limit met unit by unit. It returns how many it
// dropped and the verdict.
func admitCount(now clock.Time, p *packet.Packet, r *ring, room int, from Qdisc, env *Env, u units, st *Stats) (int, Verdict) {
	n := u.count(p)
	switch {
	case n <= room:
		r.Push(p)
		return 0, Queued
	case room <= 0:
		dropUnits(now, p, from, env, u, st, ReasonLimit)
		return n, Dropped
	}
	head, tail := env.cut(p, room)
	r.Push(head)
	dropUnits(now, tail, from, env, u, st, ReasonLimit)
	return n - room, Congested
}

// admitBytes queues in r the units of p that fit in room bytes, unit by
// unit, and drops the others (ReasonLimit): a byte limit. The units of a
// super-packet are of one length but the last, which may fit where the
// others did not.
func admitBytes(now clock.Time, p *packet.Packet, r *ring, room int, from Qdisc, env *Env, u units, st *Stats) (int, Verdict) {
	n := u.count(p)
	if u.whole(p) <= room {
		r.Push(p)
		return 0, Queued
	}
	room = max(room, 0)
	full := u.size(p, 0)
	fit := min(n-1, room/full)
	lastFits := u.size(p, n-1) <= room-fit*full
	if fit == 0 && !lastFits {
		dropUnits(now, p, from, env, u, st, ReasonLimit)
		return n, Dropped
	}
	rest := p
	if fit > 0 {
		var head *packet.Packet
		head, rest = env.cut(p, fit)
		r.Push(head)
	}
	// rest holds units fit to n-1, of which only the last may fit.
	dropped := n - fit
	switch {
	case !lastFits:
		dropUnits(now, rest, from, env, u, st, ReasonLimit)
	default:
		drop, last := env.cut(rest, n-1-fit)
		dropUnits(now, drop, from, env, u, st, ReasonLimit)
		r.Push(last)
		dropped--
	}
	return dropped, verdict(n, dropped, true)
}

// dropFront drops the first k units of r from its head (a unit at a time,
// cutting the head packet where k ends inside it), reported by from for
// why.
func dropFront(now clock.Time, r *ring, k int, from Qdisc, env *Env, u units, st *Stats, why Reason) {
	for k > 0 {
		h := r.Front()
		if h == nil {
			return
		}
		n := u.count(h)
		if n <= k {
			dropUnits(now, r.Pop(), from, env, u, st, why)
			k -= n
			continue
		}
		dropUnits(now, env.cutFront(r, k), from, env, u, st, why)
		return
	}
}

// Dequeue returns the head packet, or nil and clock.Never when empty.
func (f *Fifo) Dequeue(now clock.Time) (*packet.Packet, clock.Time) { return f.dequeueRun(now, nil) }

func (f *Fifo) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	h := f.q.Front()
	if h == nil {
		return nil, clock.Never
	}
	var p *packet.Packet
	switch {
	case !f.u.one(h):
		p = popAdmitted(&f.q, h, g, now, f.u, f.env)
	case g == nil || g.admit(now, f.u.whole(h)):
		p = f.q.Pop()
	}
	if p == nil {
		return nil, now
	}
	f.u.sent(&f.stats, p)
	return p, now
}

// Peek returns the head packet without removing it.
func (f *Fifo) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	if p := f.q.Front(); p != nil {
		return p, now
	}
	return nil, clock.Never
}

// Len returns the number of queued packets.
func (f *Fifo) Len() int { return f.u.inRing(&f.q) }

// Backlog returns the number of queued bytes, as the device counts them.
func (f *Fifo) Backlog() int { return f.u.backlog(&f.q) }

// Stats returns the counters; drops are ReasonLimit or ReasonHeadDrop.
func (f *Fifo) Stats() Stats {
	s := f.stats
	s.Qlen, s.Backlog = f.Len(), f.Backlog()
	return s
}

// Kind returns "pfifo", "bfifo" or "pfifo_head_drop".
func (f *Fifo) Kind() string { return f.kind }

// Child returns nil: the fifos are not classful.
func (f *Fifo) Child() Qdisc { return nil }

// Config returns the variant and the effective limit.
func (f *Fifo) Config() Spec { return FifoConfig{Variant: f.kind, Limit: f.limit} }

// Change takes a new limit, as the kernel's fifo change does: packets
// beyond it stay queued (only new arrivals see it). A zero limit is the
// default, as in NewFifo.
func (f *Fifo) Change(_ clock.Time, spec Spec) error {
	c, err := specAs[FifoConfig](f, spec)
	if err != nil {
		return err
	}
	if c.Kind() != f.kind {
		return fmt.Errorf("%s: cannot become %s in place", f.kind, c.Kind())
	}
	g, err := NewFifo(c, f.env)
	if err != nil {
		return err
	}
	f.limit = g.limit
	return nil
}

// Flush drops every queued packet with ReasonFlushed.
func (f *Fifo) Flush(now clock.Time) { flushRing(now, &f.q, f, f.env, f.u, &f.stats) }

// Limit returns the effective limit, in packets or (bfifo) bytes.
func (f *Fifo) Limit() int { return f.limit }
