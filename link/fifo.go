package link

import (
	"fmt"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
)

// direct is the qdisc of a direction without a chain: an unbounded FIFO
// whose packets are always ready. Without a trace it holds packets only
// between Enqueue and the next Dequeue; with one it plays mahimahi's
// default infinite queue.
type direct struct {
	env   *qdisc.Env // the direction's: its framing, where flushed packets go
	q     packet.Queue
	stats qdisc.Stats
}

// directSpec is direct's configuration; "direct" is not a tc kind.
type directSpec struct{}

func (directSpec) Kind() string { return "direct" }

func (d *direct) Enqueue(_ clock.Time, p *packet.Packet) qdisc.Verdict {
	d.q.Push(p)
	return qdisc.Queued
}

func (d *direct) Dequeue(now clock.Time) (*packet.Packet, clock.Time) {
	p := d.q.Pop()
	if p == nil {
		return nil, clock.Never
	}
	d.stats.Packets += uint64(p.Segments())
	d.stats.Bytes += uint64(d.env.PktLen(p))
	return p, now
}

func (d *direct) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	if d.q.Empty() {
		return nil, clock.Never
	}
	return d.q.Front(), now
}

func (d *direct) Len() int           { return d.q.Len() }
func (d *direct) Backlog() int       { return d.q.Bytes() + d.q.Segs()*d.env.Framing.HeaderLen() }
func (d *direct) Kind() string       { return "direct" }
func (d *direct) Child() qdisc.Qdisc { return nil }
func (d *direct) Config() qdisc.Spec { return directSpec{} }

func (d *direct) Stats() qdisc.Stats {
	s := d.stats
	s.Qlen, s.Backlog = d.q.Len(), d.Backlog()
	return s
}

// Change refuses every configuration: a direct path has none.
func (d *direct) Change(_ clock.Time, spec qdisc.Spec) error {
	return fmt.Errorf("a direct path takes no configuration (given %s)", spec.Kind())
}

// Flush drops every packet with ReasonFlushed.
func (d *direct) Flush(now clock.Time) {
	for p := d.q.Pop(); p != nil; p = d.q.Pop() {
		d.stats.Drops += uint64(p.Segments())
		d.stats.DropsByReason[qdisc.ReasonFlushed] += uint64(p.Segments())
		d.env.Drop(now, p, d, qdisc.ReasonFlushed)
	}
}

var _ qdisc.Qdisc = (*direct)(nil)
