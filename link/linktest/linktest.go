// Package linktest provides small queue disciplines for testing links and
// the simulator without the real ones: a fixed-delay (optionally
// rate-limited, bounded) FIFO and a discipline that swaps packets in pairs.
// They implement qdisc.Qdisc directly and are built with link.Config.Build.
package linktest

import (
	"fmt"
	"time"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
)

// DelaySpec configures a Delay line.
type DelaySpec struct {
	// Delay is added to every packet.
	Delay time.Duration
	// Rate, when not zero, serialises packets as a link of that rate would,
	// before the delay: tts = max(now, previous tts - Delay) + len/Rate +
	// Delay, as netem's rate does for a constant delay.
	Rate qdisc.Rate
	// Limit, when not zero, is the most packets held; more are dropped with
	// qdisc.ReasonLimit.
	Limit int
	// DupEvery, when not zero, duplicates every DupEvery-th packet through
	// Env.Root, as netem's duplicate does.
	DupEvery int
	// MarkEvery, when not zero, CE-marks every MarkEvery-th packet offered
	// (duplicates included, counted as they arrive) if it is ECN-capable.
	MarkEvery int
}

// Kind returns "testdelay".
func (DelaySpec) Kind() string { return "testdelay" }

// Delay is a FIFO that releases each packet at its arrival time plus a
// fixed delay (and its serialisation time at Rate).
type Delay struct {
	spec  DelaySpec
	env   *qdisc.Env
	q     packet.Queue
	last  clock.Time // departure of the latest packet from the rate stage
	n     uint64     // packets offered, duplicates included
	orig  uint64     // packets offered that are not duplicates
	stats qdisc.Stats
}

// NewDelay returns a Delay line using env for drops, marks and duplicates.
func NewDelay(spec DelaySpec, env *qdisc.Env) *Delay {
	return &Delay{spec: spec, env: env}
}

// Builder returns a link.Config.Build function making a Delay line.
func Builder(spec DelaySpec) func(env *qdisc.Env) (qdisc.Qdisc, error) {
	return func(env *qdisc.Env) (qdisc.Qdisc, error) { return NewDelay(spec, env), nil }
}

// Enqueue implements qdisc.Qdisc.
func (d *Delay) Enqueue(now clock.Time, p *packet.Packet) qdisc.Verdict {
	if d.spec.Limit > 0 && d.q.Len() >= d.spec.Limit {
		d.stats.Drops++
		d.stats.DropsByReason[qdisc.ReasonLimit]++
		d.env.Drop(now, p, d, qdisc.ReasonLimit)
		return qdisc.Dropped
	}
	d.n++
	mark := d.spec.MarkEvery > 0 && d.n%uint64(d.spec.MarkEvery) == 0
	if !p.Dup {
		d.orig++
		if d.spec.DupEvery > 0 && d.orig%uint64(d.spec.DupEvery) == 0 && d.env.Pool != nil {
			c := d.env.Pool.Clone(p)
			c.Dup = true
			d.env.Root.Enqueue(now, c)
		}
	}
	if mark && packet.SetCE(p.Bytes()) {
		d.stats.Marks++
		d.env.Mark(now, p, d, qdisc.ReasonCEThreshold)
	}
	start := now
	if d.spec.Rate > 0 {
		start = max(now, d.last) + clock.Time(d.spec.Rate.TxTime(p.Len()))
		d.last = start
	}
	p.TimeToSend = start.Add(d.spec.Delay)
	p.Enqueued = now
	d.q.Push(p)
	return qdisc.Queued
}

// Dequeue implements qdisc.Qdisc.
func (d *Delay) Dequeue(now clock.Time) (*packet.Packet, clock.Time) {
	p := d.q.Front()
	if p == nil {
		return nil, clock.Never
	}
	if p.TimeToSend > now {
		return nil, p.TimeToSend
	}
	d.q.Pop()
	d.stats.Packets++
	d.stats.Bytes += uint64(p.Len())
	return p, now
}

// Peek implements qdisc.Qdisc.
func (d *Delay) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	p := d.q.Front()
	if p == nil {
		return nil, clock.Never
	}
	if p.TimeToSend > now {
		return nil, p.TimeToSend
	}
	return p, now
}

// Change takes a new DelaySpec, which applies to packets that arrive from
// now on; the queued packets keep their times.
func (d *Delay) Change(_ clock.Time, spec qdisc.Spec) error {
	s, ok := spec.(DelaySpec)
	if !ok {
		return fmt.Errorf("testdelay cannot take a %T", spec)
	}
	d.spec = s
	return nil
}

// Flush drops every queued packet with qdisc.ReasonFlushed.
func (d *Delay) Flush(now clock.Time) {
	for p := d.q.Pop(); p != nil; p = d.q.Pop() {
		d.stats.Drops++
		d.stats.DropsByReason[qdisc.ReasonFlushed]++
		d.env.Drop(now, p, d, qdisc.ReasonFlushed)
	}
}

// Len implements qdisc.Qdisc.
func (d *Delay) Len() int { return d.q.Len() }

// Backlog implements qdisc.Qdisc.
func (d *Delay) Backlog() int { return d.q.Bytes() }

// Kind returns "testdelay".
func (d *Delay) Kind() string { return "testdelay" }

// Child returns nil: a Delay has no child.
func (d *Delay) Child() qdisc.Qdisc { return nil }

// Config returns the DelaySpec.
func (d *Delay) Config() qdisc.Spec { return d.spec }

// Stats implements qdisc.Qdisc.
func (d *Delay) Stats() qdisc.Stats {
	s := d.stats
	s.Qlen, s.Backlog = d.q.Len(), d.q.Bytes()
	return s
}

// SwapSpec configures a Swap.
type SwapSpec struct {
	// Hold is how long a lone packet waits for a partner before it leaves
	// alone.
	Hold time.Duration
}

// Kind returns "testswap".
func (SwapSpec) Kind() string { return "testswap" }

// Swap releases packets in pairs, the second of each pair first: arrivals
// 0 1 2 3 leave as 1 0 3 2. A packet without a partner leaves after Hold.
type Swap struct {
	spec  SwapSpec
	env   *qdisc.Env
	q     packet.Queue
	ahead *packet.Packet // the first of a pair, due right after its partner
	stats qdisc.Stats
}

// NewSwap returns a Swap that reports flushed packets to env.
func NewSwap(spec SwapSpec, env *qdisc.Env) *Swap { return &Swap{spec: spec, env: env} }

// SwapBuilder returns a link.Config.Build function making a Swap.
func SwapBuilder(spec SwapSpec) func(env *qdisc.Env) (qdisc.Qdisc, error) {
	return func(env *qdisc.Env) (qdisc.Qdisc, error) { return NewSwap(spec, env), nil }
}

// Enqueue implements qdisc.Qdisc.
func (s *Swap) Enqueue(now clock.Time, p *packet.Packet) qdisc.Verdict {
	p.Enqueued = now
	s.q.Push(p)
	return qdisc.Queued
}

// Dequeue implements qdisc.Qdisc.
func (s *Swap) Dequeue(now clock.Time) (*packet.Packet, clock.Time) {
	p, next := s.Peek(now)
	if p == nil {
		return nil, next
	}
	if p == s.ahead {
		s.ahead = nil
	} else if s.q.Len() >= 2 {
		first := s.q.Pop()
		s.q.Pop()
		s.ahead = first
	} else {
		s.q.Pop()
	}
	s.stats.Packets++
	s.stats.Bytes += uint64(p.Len())
	return p, now
}

// Peek implements qdisc.Qdisc.
func (s *Swap) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	switch {
	case s.ahead != nil:
		return s.ahead, now
	case s.q.Len() >= 2:
		return s.q.At(1), now
	case s.q.Len() == 1:
		p := s.q.Front()
		if due := p.Enqueued.Add(s.spec.Hold); due > now {
			return nil, due
		}
		return p, now
	}
	return nil, clock.Never
}

// Change takes a new SwapSpec; the queued packets stay.
func (s *Swap) Change(_ clock.Time, spec qdisc.Spec) error {
	c, ok := spec.(SwapSpec)
	if !ok {
		return fmt.Errorf("testswap cannot take a %T", spec)
	}
	s.spec = c
	return nil
}

// Flush drops every packet held with qdisc.ReasonFlushed.
func (s *Swap) Flush(now clock.Time) {
	if p := s.ahead; p != nil {
		s.ahead = nil
		s.drop(now, p)
	}
	for p := s.q.Pop(); p != nil; p = s.q.Pop() {
		s.drop(now, p)
	}
}

func (s *Swap) drop(now clock.Time, p *packet.Packet) {
	s.stats.Drops++
	s.stats.DropsByReason[qdisc.ReasonFlushed]++
	s.env.Drop(now, p, s, qdisc.ReasonFlushed)
}

// Len implements qdisc.Qdisc.
func (s *Swap) Len() int {
	if s.ahead != nil {
		return s.q.Len() + 1
	}
	return s.q.Len()
}

// Backlog implements qdisc.Qdisc.
func (s *Swap) Backlog() int {
	if s.ahead != nil {
		return s.q.Bytes() + s.ahead.Len()
	}
	return s.q.Bytes()
}

// Kind returns "testswap".
func (s *Swap) Kind() string { return "testswap" }

// Child returns nil: a Swap has no child.
func (s *Swap) Child() qdisc.Qdisc { return nil }

// Config returns the SwapSpec.
func (s *Swap) Config() qdisc.Spec { return s.spec }

// Stats implements qdisc.Qdisc.
func (s *Swap) Stats() qdisc.Stats {
	st := s.stats
	st.Qlen, st.Backlog = s.Len(), s.Backlog()
	return st
}

var (
	_ qdisc.Qdisc = (*Delay)(nil)
	_ qdisc.Qdisc = (*Swap)(nil)
)
