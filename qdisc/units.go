package qdisc

import (
	"fmt"

	"wanlab/clock"
	"wanlab/packet"
)

// Granularity says what the disciplines of a tree take as one packet when
// a GSO super-packet (a packet.Packet of several Segs) reaches them.
type Granularity uint8

const (
	// GranularitySegment, the zero value and wanlab's default, makes every
	// wire segment of a super-packet a packet, as a link that carries the
	// segments sees them: each discipline decides per segment, in segment
	// order, when the super-packet reaches it (netem's draws at enqueue,
	// tbf's tokens, CoDel's and PIE's decisions at dequeue), limits count
	// segments and every length is a segment's, so every random stream
	// and every figure is what the same segments one by one would give.
	// A super-packet stays one buffer through the tree where its segments
	// share a fate and a release time; the disciplines cut it
	// (packet.Pool.Cut, from Env.Pool) only where they differ.
	GranularitySegment Granularity = iota
	// GranularityGSO makes a super-packet one packet, as tc on the sending
	// host's own egress sees the skb that GSO made: one packet in a limit,
	// delayed, lost, duplicated or marked whole, its length what the
	// kernel's qdisc_pkt_len_init counts (the headers and framing of every
	// segment, see Env.PktLen). tbf segments one longer than its max_size
	// (tbf_segment) and netem one it corrupts (netem_segment), as the
	// kernel does.
	GranularityGSO
)

// String returns the granularity's name as the command line takes it.
func (g Granularity) String() string {
	if g == GranularityGSO {
		return "gso"
	}
	return "segment"
}

// MarshalText implements encoding.TextMarshaler ("segment" or "gso").
func (g Granularity) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (g *Granularity) UnmarshalText(b []byte) error {
	v, err := ParseGranularity(string(b))
	if err == nil {
		*g = v
	}
	return err
}

// ParseGranularity reads "segment" or "gso".
func ParseGranularity(s string) (Granularity, error) {
	switch s {
	case "segment", "segments":
		return GranularitySegment, nil
	case "gso":
		return GranularityGSO, nil
	}
	return 0, fmt.Errorf("granularity %q is unknown: use segment (every wire segment is a packet, as on the link; the default) or gso (a GSO super-packet is one packet, as tc on the sending host's egress sees it)", s)
}

// units is how a discipline counts what it holds: the framing's header,
// which every segment carries, and whether a super-packet is one packet
// (GranularityGSO) or as many as its segments. A discipline's "unit" is
// what it takes as one packet.
type units struct {
	hdr int
	gso bool
}

func unitsOf(e *Env) units {
	return units{hdr: e.headerLen(), gso: e != nil && e.Granularity == GranularityGSO}
}

// one reports whether p is a single unit: a packet of one segment, or any
// packet under GranularityGSO. The disciplines take such a packet whole,
// without the per-unit bookkeeping the segments of a super-packet need.
func (u units) one(p *packet.Packet) bool { return u.gso || p.Segs <= 1 }

// count returns the units p stands for.
func (u units) count(p *packet.Packet) int {
	if u.gso {
		return 1
	}
	return p.Segments()
}

// size returns the length of unit i of p as the device counts it.
func (u units) size(p *packet.Packet, i int) int {
	if u.gso || p.Segs <= 1 {
		return u.whole(p)
	}
	return p.SegmentLen(i) + u.hdr
}

// whole returns the length of all of p as the device counts it (Env.PktLen).
func (u units) whole(p *packet.Packet) int {
	if p.Segs <= 1 {
		return p.Len() + u.hdr
	}
	return p.WireLen() + int(p.Segs)*u.hdr
}

// inRing returns the units r holds.
func (u units) inRing(r *ring) int {
	if u.gso {
		return r.Len()
	}
	return r.Segs()
}

// backlog returns the bytes r holds as the device counts them.
func (u units) backlog(r *ring) int { return r.Bytes() + u.hdr*r.Segs() }

// cut divides p after its first k units into two packets (one of which is
// p), as packet.Pool.Cut does with Env.Pool. The router, the only source
// of super-packets, validates them when they arrive, so a cut that fails
// is a bug.
func (e *Env) cut(p *packet.Packet, k int) (head, tail *packet.Packet) {
	if e == nil || e.Pool == nil {
		panic("qdisc: a super-packet must be cut, but the Env has no Pool")
	}
	head, tail, err := e.Pool.Cut(p, k)
	if err != nil {
		panic(fmt.Sprintf("qdisc: cutting a super-packet of %d segments after %d: %v", p.Segs, k, err))
	}
	return head, tail
}

// cutFront takes the first k units of r's head packet off r and returns
// them as one packet, leaving the rest at the head.
func (e *Env) cutFront(r *ring, k int) *packet.Packet {
	h := r.Pop()
	head, tail := e.cut(h, k)
	r.PushFront(tail)
	return head
}

// A gate is a parent's say, unit by unit, over what a child discipline
// hands it: tbf's tokens. Before each unit a child would hand over it asks
// admit, with the unit's length; a gate that admits it has charged it.
// The gate a parent passes stands for its own parents too.
type gate interface {
	admit(now clock.Time, size int) bool
}

// A moreGate is a gate that may want no more units in the run under way:
// htb's, which takes one packet from its leaf a dequeue, by dequeue and
// not by peek, as the kernel's htb_dequeue_tree does, so that the leaf
// decides on nothing more. A discipline that decides on each unit as it
// leaves (codel's control law, tbf's tokens, netem's slot) asks it before
// it decides on a unit that would follow others in a run, and ends the
// run there, the unit undecided, when it wants no more.
type moreGate interface {
	gate
	more() bool
}

// moreUnits reports whether g would consider another unit in the run
// under way.
func moreUnits(g gate) bool {
	m, ok := g.(moreGate)
	return !ok || m.more()
}

// runner is a discipline that hands out runs of units under a gate: every
// discipline of this package.
type runner interface {
	// dequeueRun is Dequeue under g (nil: a parent that takes whatever
	// is due, as the root's caller does): the run it returns is units
	// that g admitted one by one, consecutive units of one packet with
	// one fate, as many as the same units one by one would have left
	// in a row. It returns nil and now when g refused the first unit,
	// which the discipline then holds, decided, for its next dequeue
	// (as the kernel's qdisc_peek_dequeued holds a peeked skb), and nil
	// and its next time, as Dequeue, when nothing is due.
	dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time)
}

// unitEnqueuer is a discipline whose Enqueue also says how many units it
// refused.
type unitEnqueuer interface {
	// enqueueUnits is Enqueue, and the number of p's units that the
	// discipline dropped on arrival: what a parent counts as its own
	// drops, as the kernel's parents count each NET_XMIT_DROP of their
	// child (net_xmit_drop_count).
	enqueueUnits(now clock.Time, p *packet.Packet) (refused int, v Verdict)
}

// childQdisc is the child discipline of a classful one (netem, tbf), with
// the ways in and out of it that the disciplines of this package offer
// (unitEnqueuer, runner) looked up once, when it is attached, rather than
// for every packet. A child of another package is taken packet by packet
// (foreignChild).
type childQdisc struct {
	Qdisc              // nil: no child
	enq   unitEnqueuer // set when Qdisc is
	run   runner       // likewise
}

// childOf returns q (nil for none), whose units are u's, as a child.
func childOf(q Qdisc, u units) childQdisc {
	c := childQdisc{Qdisc: q}
	if q == nil {
		return c
	}
	enq, ok := q.(unitEnqueuer)
	run, ok2 := q.(runner)
	if !ok || !ok2 {
		f := &foreignChild{q: q, u: u}
		enq, run = f, f
	}
	c.enq, c.run = enq, run
	return c
}

// offer enqueues p into the child and returns how many of its units the
// child refused.
func (c *childQdisc) offer(now clock.Time, p *packet.Packet) int {
	n, _ := c.enq.enqueueUnits(now, p)
	return n
}

// pull dequeues from the child under g.
func (c *childQdisc) pull(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	return c.run.dequeueRun(now, g)
}

// foreignChild is a child discipline that is not of this package, taken
// packet by packet: a packet it drops is all of its units refused, and a
// gate admits the packet at its head whole.
type foreignChild struct {
	q Qdisc
	u units
}

func (f *foreignChild) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	n := f.u.count(p)
	v := f.q.Enqueue(now, p)
	if v == Dropped {
		return n, v
	}
	return 0, v
}

func (f *foreignChild) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	if g == nil {
		return f.q.Dequeue(now)
	}
	h, next := f.q.Peek(now)
	if h == nil {
		return nil, next
	}
	if !g.admit(now, f.u.whole(h)) {
		return nil, now
	}
	p, _ := f.q.Dequeue(now)
	return p, now
}

// admitted returns how many of p's units g admits in a row (all of them
// without a gate).
func admitted(g gate, now clock.Time, u units, p *packet.Packet) int {
	if u.one(p) {
		if g == nil || g.admit(now, u.whole(p)) {
			return 1
		}
		return 0
	}
	n := p.Segments()
	if g == nil {
		return n
	}
	for i := range n {
		if !g.admit(now, u.size(p, i)) {
			return i
		}
	}
	return n
}

// verdict is the Verdict of a packet of n units of which refused were
// dropped on arrival: Dropped when all were, Congested when some were (or
// the discipline was congested), Queued otherwise.
func verdict(n, refused int, congested bool) Verdict {
	switch {
	case refused >= n:
		return Dropped
	case refused > 0 || congested:
		return Congested
	}
	return Queued
}

// peekHold is the run a discipline decided on for Peek, which its next
// dequeue hands out first, as the kernel's qdisc_peek_dequeued holds a
// peeked skb.
type peekHold struct{ p *packet.Packet }

// serve hands out what is held under g, or the part of it g admits; ok is
// false when nothing is held.
func (h *peekHold) serve(now clock.Time, g gate, u units, env *Env) (p *packet.Packet, ok bool) {
	if h.p == nil {
		return nil, false
	}
	return h.hand(now, g, u, env), true
}

// hand is serve when something is held.
func (h *peekHold) hand(now clock.Time, g gate, u units, env *Env) (p *packet.Packet) {
	k := admitted(g, now, u, h.p)
	switch {
	case k == 0:
		return nil
	case k == u.count(h.p):
		p, h.p = h.p, nil
		return p
	}
	p, h.p = env.cut(h.p, k)
	return p
}

// units returns the units held; size their length.
func (h *peekHold) units(u units) int {
	if h.p == nil {
		return 0
	}
	return u.count(h.p)
}

func (h *peekHold) size(u units) int {
	if h.p == nil {
		return 0
	}
	return u.whole(h.p)
}

// dequeue is the dequeue of a discipline whose take returns what may
// leave and, when nothing may, when to try again (netem, tbf): what is
// held first, under g, else take's run; what leaves is counted in st.
func (h *peekHold) dequeue(now clock.Time, g gate, u units, env *Env, st *Stats, take func(clock.Time, gate) (*packet.Packet, clock.Time)) (*packet.Packet, clock.Time) {
	p, ok := h.serve(now, g, u, env)
	next := now
	if !ok {
		p, next = take(now, g)
	}
	if p == nil {
		return nil, next
	}
	u.sent(st, p)
	return p, now
}

// dequeueDecided is the dequeue of a discipline that decides at its
// head which units leave (codel, fq_codel, pie): what is held first, under
// g, else take's run; what leaves is counted in st. When nothing leaves it
// returns now if a unit waits decided for the next dequeue (held here, or
// in c because g refused it), else clock.Never: only an arrival gives it
// something to decide on.
func (h *peekHold) dequeueDecided(now clock.Time, g gate, u units, env *Env, st *Stats, c *cursor, take func(clock.Time, gate) *packet.Packet) (*packet.Packet, clock.Time) {
	p, ok := h.serve(now, g, u, env)
	if !ok {
		p = take(now, g)
	}
	if p == nil {
		if ok || c.held {
			return nil, now
		}
		return nil, clock.Never
	}
	u.sent(st, p)
	return p, now
}

// peekDecided is the Peek of such a discipline: take's run, decided (and
// its drops made) now, once, and held for the next dequeue.
func (h *peekHold) peekDecided(now clock.Time, take func(clock.Time, gate) *packet.Packet) (*packet.Packet, clock.Time) {
	if h.p == nil {
		h.p = take(now, nil)
	}
	if h.p == nil {
		return nil, clock.Never
	}
	return h.p, now
}

// peek is the Peek of a discipline whose take returns what may leave
// and, when nothing may, when to try again (netem, tbf, htb, prio): the
// run take decides on now, once, held for the next dequeue, as the
// kernel's qdisc_peek_dequeued holds a peeked skb.
func (h *peekHold) peek(now clock.Time, take func(clock.Time, gate) (*packet.Packet, clock.Time)) (*packet.Packet, clock.Time) {
	if h.p == nil {
		p, next := take(now, nil)
		if p == nil {
			return nil, next
		}
		h.p = p
	}
	return h.p, now
}

// flush drops what is held, for from, with ReasonFlushed.
func (h *peekHold) flush(now clock.Time, from Qdisc, env *Env, u units, st *Stats) {
	if p := h.p; p != nil {
		h.p = nil
		dropUnits(now, p, from, env, u, st, ReasonFlushed)
	}
}

// headQueue is the one FIFO of codel and pie, which decide at its head:
// the ring, the cursor of the run being taken off its head, and the run
// that Peek decided on (the kernel's qdisc_peek_dequeued).
type headQueue struct {
	u      units
	q      ring
	cur    cursor
	peeked peekHold
}

// Len returns the number of packets held, peeked ones included.
func (h *headQueue) Len() int {
	return h.u.inRing(&h.q) - h.cur.inFlight() + h.peeked.units(h.u)
}

// Backlog returns the bytes held, peeked ones included, as the device
// counts them.
func (h *headQueue) Backlog() int {
	return h.u.backlog(&h.q) - h.cur.inFlightLen() + h.peeked.size(h.u)
}

// flush drops every packet held, a peeked one included, for from, with
// ReasonFlushed.
func (h *headQueue) flush(now clock.Time, from Qdisc, env *Env, st *Stats) {
	h.peeked.flush(now, from, env, h.u, st)
	flushRing(now, &h.q, from, env, h.u, st)
	h.cur.reset()
}

// take takes units off the head packet, for from, while taken takes one
// more (the discipline deciding on it as it leaves: CoDel's control law,
// pie_process_dequeue) and g admits them, and returns them as one run.
func (h *headQueue) take(now clock.Time, g gate, env *Env, from Qdisc, taken func() bool) *packet.Packet {
	c := &h.cur
	if c.held && !c.resume(now, g) {
		return nil
	}
	for !c.full() && (c.run == 0 || moreUnits(g)) && taken() {
		if c.single() {
			if g == nil && c.marks == 0 {
				return c.popSingle(&h.q)
			}
			return c.handSingle(now, &h.q, g, env, from)
		}
		if !c.admit(now, g) {
			break
		}
	}
	return c.finish(now, &h.q, env, from)
}

// sent counts p, handed out, in st: its wire segments and their bytes, as
// the kernel's byte counters count a GSO skb's segments.
func (u units) sent(st *Stats, p *packet.Packet) {
	st.Packets += uint64(p.Segments())
	st.Bytes += uint64(u.whole(p))
}

// popAdmitted takes off r the units of its head packet h that g admits in a
// row, as one packet (h itself when g admits all of them), or returns nil
// when g admits none. The fifos take a packet of one unit off r
// themselves, in one step.
func popAdmitted(r *ring, h *packet.Packet, g gate, now clock.Time, u units, env *Env) *packet.Packet {
	switch k := admitted(g, now, u, h); {
	case k == 0:
		return nil
	case k == u.count(h):
		return r.Pop()
	default:
		return env.cutFront(r, k)
	}
}

// dropUnits counts the units of p as dropped by from for why in st and
// reports p to env's Observer.
func dropUnits(now clock.Time, p *packet.Packet, from Qdisc, env *Env, u units, st *Stats, why Reason) {
	n := uint64(u.count(p))
	st.Drops += n
	st.DropsByReason[why] += n
	env.Drop(now, p, from, why)
}
