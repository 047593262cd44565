package packet

// Queue is a FIFO of packets in a growable circular buffer of a power-of-two
// size: no allocation in steady state, O(1) at both ends. It counts the
// packets (buffers) it holds, the wire segments they stand for and their
// wire bytes (WireLen). The zero value is an empty queue.
type Queue struct {
	buf   []*Packet
	head  int
	n     int
	segs  int
	bytes int
}

// Len returns the number of packets (buffers) held.
func (r *Queue) Len() int { return r.n }

// Segs returns the number of wire segments the packets held stand for.
func (r *Queue) Segs() int { return r.segs }

// Bytes returns the wire bytes (WireLen) of the packets held.
func (r *Queue) Bytes() int { return r.bytes }

// Empty reports whether the queue holds nothing.
func (r *Queue) Empty() bool { return r.n == 0 }

func (r *Queue) add(p *Packet) {
	r.segs += p.Segments()
	r.bytes += p.WireLen()
}

func (r *Queue) sub(p *Packet) {
	r.segs -= p.Segments()
	r.bytes -= p.WireLen()
}

// Push appends p at the tail.
func (r *Queue) Push(p *Packet) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = p
	r.n++
	r.add(p)
}

// PushFront puts p at the head.
func (r *Queue) PushFront(p *Packet) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.head = (r.head - 1) & (len(r.buf) - 1)
	r.buf[r.head] = p
	r.n++
	r.add(p)
}

// Front returns the head packet, or nil.
func (r *Queue) Front() *Packet {
	if r.n == 0 {
		return nil
	}
	return r.buf[r.head]
}

// Back returns the tail packet, or nil.
func (r *Queue) Back() *Packet {
	if r.n == 0 {
		return nil
	}
	return r.buf[(r.head+r.n-1)&(len(r.buf)-1)]
}

// Pop removes and returns the head packet, or nil.
func (r *Queue) Pop() *Packet {
	if r.n == 0 {
		return nil
	}
	p := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	r.sub(p)
	return p
}

// PopBack removes and returns the tail packet, or nil.
func (r *Queue) PopBack() *Packet {
	if r.n == 0 {
		return nil
	}
	i := (r.head + r.n - 1) & (len(r.buf) - 1)
	p := r.buf[i]
	r.buf[i] = nil
	r.n--
	r.sub(p)
	return p
}

// At returns the i-th packet from the head (0 is the head); i must be in
// [0, Len()).
func (r *Queue) At(i int) *Packet { return r.buf[(r.head+i)&(len(r.buf)-1)] }

func (r *Queue) grow() {
	size := 2 * len(r.buf)
	if size == 0 {
		size = 16
	}
	nb := make([]*Packet, size)
	for i := 0; i < r.n; i++ {
		nb[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = nb, 0
}
