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
// Dequeue is never throttled: it returns the head, or nil and clock.Never.
type Fifo struct {
	env     *Env
	kind    string
	variant fifoVariant
	limit   int
	hdr     int // the framing's header, counted in every packet's length
	q       ring
	stats   Stats
}

var _ Qdisc = (*Fifo)(nil)

// NewFifo returns the FIFO that cfg.Variant names ("" means pfifo). A zero
// Limit means the kernel's default, used when tc passes no options:
// env.QueueLen() packets, or env.QueueLen()*env.PschedMTU() bytes for bfifo.
// (An explicit "limit 0", which the kernel accepts and which makes the
// queue drop everything, cannot be expressed.)
func NewFifo(cfg FifoConfig, env *Env) (*Fifo, error) {
	if err := env.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Kind(), err)
	}
	f := &Fifo{env: env, kind: cfg.Kind(), hdr: env.headerLen()}
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
	switch f.variant {
	case fifoBytes:
		if f.Backlog()+p.Len()+f.hdr <= f.limit {
			f.q.Push(p)
			return Queued
		}
	case fifoHeadDrop:
		if f.q.Len() < f.limit {
			f.q.Push(p)
			return Queued
		}
		f.drop(now, f.q.Pop(), ReasonHeadDrop)
		f.q.Push(p)
		return Congested
	default:
		if f.q.Len() < f.limit {
			f.q.Push(p)
			return Queued
		}
	}
	f.drop(now, p, ReasonLimit)
	return Dropped
}

func (f *Fifo) drop(now clock.Time, p *packet.Packet, why Reason) {
	f.stats.Drops++
	f.stats.DropsByReason[why]++
	f.env.Drop(now, p, f, why)
}

// Dequeue returns the head packet, or nil and clock.Never when empty.
func (f *Fifo) Dequeue(now clock.Time) (*packet.Packet, clock.Time) {
	p := f.q.Pop()
	if p == nil {
		return nil, clock.Never
	}
	f.stats.Packets++
	f.stats.Bytes += uint64(p.Len() + f.hdr)
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
func (f *Fifo) Len() int { return f.q.Len() }

// Backlog returns the number of queued bytes, as the device counts them.
func (f *Fifo) Backlog() int { return framedBytes(&f.q, f.hdr) }

// Stats returns the counters; drops are ReasonLimit or ReasonHeadDrop.
func (f *Fifo) Stats() Stats {
	s := f.stats
	s.Qlen, s.Backlog = f.q.Len(), f.Backlog()
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
func (f *Fifo) Flush(now clock.Time) { flushRing(now, &f.q, f, f.env, &f.stats) }

// Limit returns the effective limit, in packets or (bfifo) bytes.
func (f *Fifo) Limit() int { return f.limit }
