package qdisc

import (
	"wanlab/clock"
	"wanlab/packet"
)

// markSet holds the reasons a unit was CE-marked for.
type markSet uint16

func (m markSet) with(why Reason) markSet { return m | 1<<why }

// apply sets CE on p and reports one mark per reason in m to env's
// Observer: a run's units were all marked for the same reasons.
func (m markSet) apply(now clock.Time, p *packet.Packet, from Qdisc, env *Env) {
	if m == 0 {
		return
	}
	packet.SetCE(p.Bytes())
	for why := Reason(0); why < reasonCount; why++ {
		if m&(1<<why) != 0 {
			env.Mark(now, p, from, why)
		}
	}
}

// cursor is how a discipline that decides at dequeue (codel, fq_codel,
// pie) walks the units of the packet at the head of a queue. A unit it
// takes leaves the queue's counts at once, as a dequeued packet would, but
// stays in its packet until a run of such units ends: the run's units,
// admitted one by one, are then cut off the head packet together (or the
// whole packet leaves, when the run is all of it). A unit decided but not
// handed out is held, first in line for the next dequeue, as the kernel
// holds a peeked skb; it is the taken unit after the run.
//
// A packet of one unit, the common case (every packet without GSO, and
// every packet under GranularityGSO), is a run of its own: once its
// discipline lets it go, the dequeue hands it out at once (single,
// handSingle), without a run's bookkeeping.
//
// Between dequeues the cursor holds at most that one unit (taken is 0 or
// 1, run is 0); during one, every taken unit is in the same queue's head
// packet.
type cursor struct {
	taken    int // units of the head packet taken off the queue
	takenLen int // their length
	// units is how many units the head packet holds while taken > 0,
	// counted when its first unit is taken and kept up to date as runs
	// are cut off it, so that the steps per unit need not look at the
	// packet again.
	units    int
	run      int // the first run of them, admitted into the run
	runLen   int // their length
	runMarks markSet
	marks    markSet // the marks of the unit taken last
	last     int     // and its length
	held     bool    // the unit taken last is decided and waits
	heldLen  int

	// out is a run that a drop right after it ended; outMarks its marks.
	out      *packet.Packet
	outMarks markSet
}

// pop takes the next unit of r's head packet (or of the next packet, when
// the head's units are all in the run, which then ends) and returns its
// enqueue time and length.
func (c *cursor) pop(r *ring, u units) (clock.Time, int, bool) {
	if c.taken > 0 && c.taken == c.units {
		// Only a run can have taken all of the head: it ends here.
		c.out, c.outMarks = r.Pop(), c.runMarks
		c.taken, c.takenLen, c.run, c.runLen, c.runMarks = 0, 0, 0, 0, 0
	}
	h := r.Front()
	if h == nil {
		return 0, 0, false
	}
	var size int
	switch {
	case c.taken > 0:
		size = u.size(h, c.taken)
	case u.one(h):
		c.units = 1
		size = u.whole(h)
	default:
		c.units = h.Segments()
		size = u.size(h, 0)
	}
	c.taken++
	c.takenLen += size
	c.marks, c.last = 0, size
	return h.Enqueued, size, true
}

// endRun cuts the run off r's head packet into c.out.
func (c *cursor) endRun(r *ring, env *Env) {
	if c.run == 0 {
		return
	}
	var p *packet.Packet
	if c.run == c.units {
		p = r.Pop()
	} else {
		p = env.cutFront(r, c.run)
		c.units -= c.run
	}
	c.out, c.outMarks = p, c.runMarks
	c.taken -= c.run
	c.takenLen -= c.runLen
	c.run, c.runLen, c.runMarks = 0, 0, 0
}

// drop discards the unit taken last, which follows the run: the run is cut
// off first (and ends), then the unit.
func (c *cursor) drop(now clock.Time, r *ring, u units, env *Env, from Qdisc, st *Stats, why Reason) {
	c.endRun(r, env)
	var p *packet.Packet
	if c.units == 1 {
		p = r.Pop()
	} else {
		p = env.cutFront(r, 1)
	}
	c.taken, c.takenLen = 0, 0
	dropUnits(now, p, from, env, u, st, why)
}

// admit decides what becomes of the unit taken last, which its discipline
// lets go with c.marks: it joins the run if it can and g admits it;
// otherwise it is held and admit reports false (the run, if any, is
// complete).
func (c *cursor) admit(now clock.Time, g gate) bool {
	if c.out != nil || (c.run > 0 && c.marks != c.runMarks) || (g != nil && !g.admit(now, c.last)) {
		c.held, c.heldLen = true, c.last
		return false
	}
	if c.run == 0 {
		c.runMarks = c.marks
	}
	c.run++
	c.runLen += c.last
	return true
}

// single reports whether the unit taken last, which its discipline lets
// go, is a whole packet (r's head) with no run before it: then the run can
// only be that packet, which handSingle (or, without a gate or marks,
// popSingle) hands out in place of admit and finish.
func (c *cursor) single() bool { return c.units == 1 && c.run == 0 && c.out == nil }

// popSingle takes the single unit's packet off r, unmarked and without a
// gate.
func (c *cursor) popSingle(r *ring) *packet.Packet {
	c.taken, c.takenLen = 0, 0
	return r.Pop()
}

// handSingle ends the dequeue with the single unit, as admit and finish
// would: its packet leaves r, its marks applied, when g admits it, and is
// held otherwise.
func (c *cursor) handSingle(now clock.Time, r *ring, g gate, env *Env, from Qdisc) *packet.Packet {
	if g != nil && !g.admit(now, c.last) {
		c.held, c.heldLen = true, c.last
		return nil
	}
	p := c.popSingle(r)
	if c.marks != 0 {
		c.marks.apply(now, p, from, env)
	}
	return p
}

// resume starts a dequeue with the held unit (c.held): under g it becomes
// the run's first unit (true), or stays held (false).
func (c *cursor) resume(now clock.Time, g gate) bool {
	if g != nil && !g.admit(now, c.heldLen) {
		return false
	}
	c.held = false
	c.run, c.runLen, c.runMarks = 1, c.heldLen, c.marks
	return true
}

// full reports whether the run holds every unit of the queue's head
// packet, so that the next unit would begin another packet.
func (c *cursor) full() bool { return c.run > 0 && c.run == c.units }

// finish ends the dequeue: it cuts the run off r's head (unless a drop
// already did) and returns it, its marks applied, or nil.
func (c *cursor) finish(now clock.Time, r *ring, env *Env, from Qdisc) *packet.Packet {
	if c.out == nil {
		c.endRun(r, env)
	}
	p := c.out
	if p != nil && c.outMarks != 0 {
		c.outMarks.apply(now, p, from, env)
	}
	c.out, c.outMarks = nil, 0
	return p
}

// heldUnits returns how many units are held (0 or 1) and their length:
// they count in the discipline's length and backlog, as a peeked skb does.
func (c *cursor) heldUnits() (int, int) {
	if c.held {
		return 1, c.heldLen
	}
	return 0, 0
}

// inFlight returns how many units c has taken off its queue, the held one
// apart: the units of a dequeue under way, which count in no length or
// backlog until they are handed out or held. Between dequeues it is 0.
func (c *cursor) inFlight() int {
	if c.held {
		return c.taken - 1
	}
	return c.taken
}

// inFlightLen returns the length of the units in flight.
func (c *cursor) inFlightLen() int {
	if c.held {
		return c.takenLen - c.heldLen
	}
	return c.takenLen
}

// reset forgets the held unit, whose packet r's head was, after r was
// flushed.
func (c *cursor) reset() { *c = cursor{} }

// isolateHeld cuts the held unit off r's head packet, so that what
// follows it can be dropped from the head of r; it returns the held unit's
// packet, taken off r, for the caller to put back with r.PushFront.
func (c *cursor) isolateHeld(r *ring, env *Env) *packet.Packet {
	var p *packet.Packet
	if c.units == 1 {
		p = r.Pop()
	} else {
		p = env.cutFront(r, 1)
	}
	c.units = 1 // p alone, once it is back at the head
	return p
}
