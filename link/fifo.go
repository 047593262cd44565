package link

import (
	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
)

// fifo is an unbounded FIFO of packets in a circular buffer of a power-of-
// two size: no allocation in steady state.
type fifo struct {
	buf   []*packet.Packet
	head  int
	n     int
	bytes int
}

func (f *fifo) push(p *packet.Packet) {
	if f.n == len(f.buf) {
		size := max(2*len(f.buf), 16)
		nb := make([]*packet.Packet, size)
		for i := range f.n {
			nb[i] = f.buf[(f.head+i)&(len(f.buf)-1)]
		}
		f.buf, f.head = nb, 0
	}
	f.buf[(f.head+f.n)&(len(f.buf)-1)] = p
	f.n++
	f.bytes += p.Len()
}

func (f *fifo) pop() *packet.Packet {
	if f.n == 0 {
		return nil
	}
	p := f.buf[f.head]
	f.buf[f.head] = nil
	f.head = (f.head + 1) & (len(f.buf) - 1)
	f.n--
	f.bytes -= p.Len()
	return p
}

// direct is the qdisc of a direction without a chain: an unbounded FIFO
// whose packets are always ready. Without a trace it holds packets only
// between Enqueue and the next Dequeue; with one it plays mahimahi's
// default infinite queue.
type direct struct {
	q     fifo
	stats qdisc.Stats
}

// directSpec is direct's configuration; "direct" is not a tc kind.
type directSpec struct{}

func (directSpec) Kind() string { return "direct" }

func (d *direct) Enqueue(_ clock.Time, p *packet.Packet) qdisc.Verdict {
	d.q.push(p)
	return qdisc.Queued
}

func (d *direct) Dequeue(now clock.Time) (*packet.Packet, clock.Time) {
	p := d.q.pop()
	if p == nil {
		return nil, clock.Never
	}
	d.stats.Packets++
	d.stats.Bytes += uint64(p.Len())
	return p, now
}

func (d *direct) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	if d.q.n == 0 {
		return nil, clock.Never
	}
	return d.q.buf[d.q.head], now
}

func (d *direct) Len() int           { return d.q.n }
func (d *direct) Backlog() int       { return d.q.bytes }
func (d *direct) Kind() string       { return "direct" }
func (d *direct) Child() qdisc.Qdisc { return nil }
func (d *direct) Config() qdisc.Spec { return directSpec{} }

func (d *direct) Stats() qdisc.Stats {
	s := d.stats
	s.Qlen, s.Backlog = d.q.n, d.q.bytes
	return s
}

// Drain hands over every packet, oldest first.
func (d *direct) Drain(yield func(*packet.Packet)) {
	for p := d.q.pop(); p != nil; p = d.q.pop() {
		yield(p)
	}
}

var (
	_ qdisc.Qdisc = (*direct)(nil)
	_ Drainer     = (*direct)(nil)
)
