package link

// Test disciplines for the link tests: a fixed-delay (optionally
// rate-limited, bounded) FIFO and a discipline that swaps packets in pairs,
// deterministic where the real ones draw random numbers. A direction gets
// one through newWithRoot.

import (
	"errors"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
)

// delaySpec configures a delayLine.
type delaySpec struct {
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
func (delaySpec) Kind() string { return "testdelay" }

// delayLine is a FIFO that releases each packet at its arrival time plus a
// fixed delay (and its serialisation time at Rate).
type delayLine struct {
	spec  delaySpec
	env   *qdisc.Env
	q     packet.Queue
	last  clock.Time // departure of the latest packet from the rate stage
	n     uint64     // packets offered, duplicates included
	orig  uint64     // packets offered that are not duplicates
	stats qdisc.Stats
}

// newDelayLine returns a delayLine using env for drops, marks and duplicates.
func newDelayLine(spec delaySpec, env *qdisc.Env) *delayLine {
	return &delayLine{spec: spec, env: env}
}

// delayBuilder returns a newWithRoot builder making a delayLine.
func delayBuilder(spec delaySpec) func(env *qdisc.Env) (qdisc.Qdisc, error) {
	return func(env *qdisc.Env) (qdisc.Qdisc, error) { return newDelayLine(spec, env), nil }
}

// Enqueue implements qdisc.Qdisc.
func (d *delayLine) Enqueue(now clock.Time, p *packet.Packet) qdisc.Verdict {
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
func (d *delayLine) Dequeue(now clock.Time) (*packet.Packet, clock.Time) {
	p, next := d.Peek(now)
	if p == nil {
		return nil, next
	}
	d.q.Pop()
	d.stats.Packets++
	d.stats.Bytes += uint64(p.Len())
	return p, now
}

// Peek implements qdisc.Qdisc.
func (d *delayLine) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	p := d.q.Front()
	if p == nil {
		return nil, clock.Never
	}
	if p.TimeToSend > now {
		return nil, p.TimeToSend
	}
	return p, now
}

// Change refuses: the tests change chains of real disciplines only.
func (d *delayLine) Change(clock.Time, qdisc.Spec) error { return errNoChange }

// Flush drops every queued packet with qdisc.ReasonFlushed.
func (d *delayLine) Flush(now clock.Time) { flushQueue(now, &d.q, d, d.env, &d.stats) }

var errNoChange = errors.New("the test disciplines take no change")

// flushQueue drops every packet of q, reported by from.
func flushQueue(now clock.Time, q *packet.Queue, from qdisc.Qdisc, env *qdisc.Env, st *qdisc.Stats) {
	for p := q.Pop(); p != nil; p = q.Pop() {
		st.Drops++
		st.DropsByReason[qdisc.ReasonFlushed]++
		env.Drop(now, p, from, qdisc.ReasonFlushed)
	}
}

// Len implements qdisc.Qdisc.
func (d *delayLine) Len() int { return d.q.Len() }

// Backlog implements qdisc.Qdisc.
func (d *delayLine) Backlog() int { return d.q.Bytes() }

// Kind returns "testdelay".
func (d *delayLine) Kind() string { return "testdelay" }

// Child returns nil: a delayLine has no child.
func (d *delayLine) Child() qdisc.Qdisc { return nil }

// Config returns the delaySpec.
func (d *delayLine) Config() qdisc.Spec { return d.spec }

// Stats implements qdisc.Qdisc.
func (d *delayLine) Stats() qdisc.Stats {
	s := d.stats
	s.Qlen, s.Backlog = d.q.Len(), d.q.Bytes()
	return s
}

// swapSpec configures a swapper.
type swapSpec struct {
	// Hold is how long a lone packet waits for a partner before it leaves
	// alone.
	Hold time.Duration
}

// Kind returns "testswap".
func (swapSpec) Kind() string { return "testswap" }

// swapper releases packets in pairs, the second of each pair first: arrivals
// 0 1 2 3 leave as 1 0 3 2. A packet without a partner leaves after Hold.
type swapper struct {
	spec  swapSpec
	env   *qdisc.Env
	q     packet.Queue
	ahead *packet.Packet // the first of a pair, due right after its partner
	stats qdisc.Stats
}

// newSwapper returns a swapper that reports flushed packets to env.
func newSwapper(spec swapSpec, env *qdisc.Env) *swapper { return &swapper{spec: spec, env: env} }

// swapBuilder returns a newWithRoot builder making a swapper.
func swapBuilder(spec swapSpec) func(env *qdisc.Env) (qdisc.Qdisc, error) {
	return func(env *qdisc.Env) (qdisc.Qdisc, error) { return newSwapper(spec, env), nil }
}

// Enqueue implements qdisc.Qdisc.
func (s *swapper) Enqueue(now clock.Time, p *packet.Packet) qdisc.Verdict {
	p.Enqueued = now
	s.q.Push(p)
	return qdisc.Queued
}

// Dequeue implements qdisc.Qdisc.
func (s *swapper) Dequeue(now clock.Time) (*packet.Packet, clock.Time) {
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
func (s *swapper) Peek(now clock.Time) (*packet.Packet, clock.Time) {
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

// Change refuses: the tests change chains of real disciplines only.
func (s *swapper) Change(clock.Time, qdisc.Spec) error { return errNoChange }

// Flush drops every packet held with qdisc.ReasonFlushed.
func (s *swapper) Flush(now clock.Time) {
	if p := s.ahead; p != nil {
		s.ahead = nil
		s.q.PushFront(p)
	}
	flushQueue(now, &s.q, s, s.env, &s.stats)
}

// Len implements qdisc.Qdisc.
func (s *swapper) Len() int {
	if s.ahead != nil {
		return s.q.Len() + 1
	}
	return s.q.Len()
}

// Backlog implements qdisc.Qdisc.
func (s *swapper) Backlog() int {
	if s.ahead != nil {
		return s.q.Bytes() + s.ahead.Len()
	}
	return s.q.Bytes()
}

// Kind returns "testswap".
func (s *swapper) Kind() string { return "testswap" }

// Child returns nil: a swapper has no child.
func (s *swapper) Child() qdisc.Qdisc { return nil }

// Config returns the swapSpec.
func (s *swapper) Config() qdisc.Spec { return s.spec }

// Stats implements qdisc.Qdisc.
func (s *swapper) Stats() qdisc.Stats {
	st := s.stats
	st.Qlen, st.Backlog = s.Len(), s.Backlog()
	return st
}

var (
	_ qdisc.Qdisc = (*delayLine)(nil)
	_ qdisc.Qdisc = (*swapper)(nil)
)

// newWithRoot makes a direction whose tree build makes (nil for a direct
// path), with the direction's Env, instead of one from cfg.Chain.
func newWithRoot(t testing.TB, cfg Config, build func(env *qdisc.Env) (qdisc.Qdisc, error)) *Direction {
	t.Helper()
	cfg.Chain = nil
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	root, err := build(d.env)
	if err != nil {
		t.Fatal(err)
	}
	d.setRoot(root)
	return d
}
