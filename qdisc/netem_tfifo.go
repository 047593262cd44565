package qdisc

import (
	"wanlab/clock"
	"wanlab/packet"
)

// tfifo is netem's internal time-ordered queue: packets leave in order of
// TimeToSend, ties in order of arrival (Packet.Order).
//
// Like the kernel's, it has two parts. A packet whose time to send is not
// earlier than the newest one of the linear list is appended to it, which
// is the only case without jitter and costs O(1); any other goes into a
// binary heap (the kernel's rbtree). The heap's keys are stored inline so
// that sifting does not chase packet pointers.
//
// Invariant: whenever the heap is not empty, the list is not empty either,
// and its tail has a later time to send than every heap entry (a heap entry
// was earlier than the tail when it was inserted, the tail only grows, and
// the list cannot drain past a heap entry that is due before it). So the
// list's tail is the latest packet of the whole tfifo, as skb_rb_last and
// t_tail together are in the kernel, and a tie between the heap's head and
// the list's head is always won by the list, whose packet arrived first.
type tfifo struct {
	list ring
	heap []tfEntry
	hb   int // wire bytes in the heap
	hs   int // wire segments in the heap
}

type tfEntry struct {
	tts   clock.Time
	order uint64
	p     *packet.Packet
}

func (a *tfEntry) less(b *tfEntry) bool {
	return a.tts < b.tts || (a.tts == b.tts && a.order < b.order)
}

func (t *tfifo) Len() int   { return t.list.Len() + len(t.heap) }
func (t *tfifo) Segs() int  { return t.list.Segs() + t.hs }
func (t *tfifo) Bytes() int { return t.list.Bytes() + t.hb }

// units returns the units the tfifo holds, as u counts them.
func (t *tfifo) units(u units) int {
	if u.gso {
		return t.Len()
	}
	return t.Segs()
}

// push inserts p, whose TimeToSend and Order are set.
func (t *tfifo) push(p *packet.Packet) {
	if tail := t.list.Back(); tail == nil || p.TimeToSend >= tail.TimeToSend {
		t.list.Push(p)
		return
	}
	t.hb += p.WireLen()
	t.hs += p.Segments()
	t.heap = append(t.heap, tfEntry{tts: p.TimeToSend, order: p.Order, p: p})
	h := t.heap
	i := len(h) - 1
	e := h[i]
	for i > 0 {
		parent := (i - 1) / 2
		if !e.less(&h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = e
}

// peek returns the packet that leaves next, or nil.
func (t *tfifo) peek() *packet.Packet {
	l := t.list.Front()
	if len(t.heap) == 0 {
		return l
	}
	if l == nil || t.heap[0].tts < l.TimeToSend {
		return t.heap[0].p
	}
	return l
}

// last returns the packet with the latest time to send, or nil.
func (t *tfifo) last() *packet.Packet { return t.list.Back() }

// pop removes and returns the packet peek returns.
func (t *tfifo) pop() *packet.Packet {
	l := t.list.Front()
	if len(t.heap) == 0 || (l != nil && t.heap[0].tts >= l.TimeToSend) {
		return t.list.Pop()
	}
	h := t.heap
	p := h[0].p
	t.hb -= p.WireLen()
	t.hs -= p.Segments()
	n := len(h) - 1
	e := h[n]
	h[n] = tfEntry{}
	h = h[:n]
	t.heap = h
	if n == 0 {
		return p
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].less(&h[c]) {
			c = r
		}
		if !h[c].less(&e) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = e
	return p
}

// cutFront takes the first k units of the packet peek returns off the
// tfifo and returns them as one packet; the rest stays first in line, with
// the same time to send and order.
func (t *tfifo) cutFront(k int, env *Env) *packet.Packet {
	l := t.list.Front()
	if len(t.heap) == 0 || (l != nil && t.heap[0].tts >= l.TimeToSend) {
		return env.cutFront(&t.list, k)
	}
	p := t.heap[0].p
	t.hb -= p.WireLen()
	t.hs -= p.Segments()
	head, tail := env.cut(p, k)
	t.heap[0].p = tail
	t.hb += tail.WireLen()
	t.hs += tail.Segments()
	return head
}
