package qdisc

import "wanlab/packet"

// ring is a FIFO of packets in a growable circular buffer: no allocation in
// steady state, O(1) at both ends.
type ring struct {
	buf   []*packet.Packet
	head  int
	n     int
	bytes int
}

func (r *ring) Len() int    { return r.n }
func (r *ring) Bytes() int  { return r.bytes }
func (r *ring) Empty() bool { return r.n == 0 }

// Push appends p at the tail.
func (r *ring) Push(p *packet.Packet) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = p
	r.n++
	r.bytes += p.Len()
}

// PushFront puts p at the head.
func (r *ring) PushFront(p *packet.Packet) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.head = (r.head - 1) & (len(r.buf) - 1)
	r.buf[r.head] = p
	r.n++
	r.bytes += p.Len()
}

// Front returns the head packet, or nil.
func (r *ring) Front() *packet.Packet {
	if r.n == 0 {
		return nil
	}
	return r.buf[r.head]
}

// Back returns the tail packet, or nil.
func (r *ring) Back() *packet.Packet {
	if r.n == 0 {
		return nil
	}
	return r.buf[(r.head+r.n-1)&(len(r.buf)-1)]
}

// Pop removes and returns the head packet, or nil.
func (r *ring) Pop() *packet.Packet {
	if r.n == 0 {
		return nil
	}
	p := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	r.bytes -= p.Len()
	return p
}

func (r *ring) grow() {
	size := 2 * len(r.buf)
	if size == 0 {
		size = 16
	}
	nb := make([]*packet.Packet, size)
	for i := 0; i < r.n; i++ {
		nb[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = nb, 0
}
