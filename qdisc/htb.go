package qdisc

import (
	"fmt"
	"math/bits"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

// HTB is the hierarchical token bucket (sch_htb.c): a tree of classes,
// each with a token bucket at its rate and one at its ceil, whose leaves
// hold the packets in a chain of disciplines of their own.
//
// A packet goes to the class its filters choose (a filter that names an
// inner class goes on with that class's filters), else to the default
// class, else to the direct queue, which leaves first and unshaped, up to
// DirectQLen packets. A class is in one of three modes: it may send (its
// tokens, ns of credit at its rate, are not negative), it may borrow
// (over its rate, under its ceil) or it may not send (over its ceil).
// Leaves are levels 0; an inner class's level is its parent's less one,
// 7 for a root class. Dequeue looks at level 0 first, then up: at each
// level, at each priority from 0, the classes of that level that may send
// themselves, and through each one's feed the descendants that borrow
// from it, by deficit round robin with each leaf's quantum, one deficit
// per level. What leaves is charged to the leaf and every ancestor: all
// their ceils, and the rates of those at the level it was sent from and
// above (lends); those below borrowed. A class whose mode will change by
// itself is queued for it; Dequeue returns the earliest such time (or a
// leaf's own) when nothing may leave.
//
// Times are ns, as the kernel keeps them: each class's buffer and
// cbuffer are what tc hands the kernel for burst and cburst (HTBBuffer);
// the debt is bounded at 60 s (mbuffer), as in the kernel.
//
// Under GranularitySegment htb takes a super-packet's segments one by
// one, as the kernel would take them as packets: each dequeue hands out
// one segment, so that another class may send between two.
//
// Peek behaves as the kernel's qdisc_peek_dequeued: the packet Peek
// reports has been charged and taken from its leaf; the next Dequeue
// returns it.
type HTB struct {
	cfg        HTBConfig // as given
	env        *Env
	u          units
	seed       uint64
	handle     ClassID
	defcls     ClassID
	r2q        int
	directQLen int

	classes []*htbClass // in creation order
	byID    map[ClassID]*htbClass
	filters classifier

	direct     ring
	directPkts uint64

	levels  [htbMaxDepth]htbLevel
	rowMask [htbMaxDepth]uint8
	active  int        // leaves with packets (prioActivity set)
	now     clock.Time // the time of the dequeue under way (q->now)

	one      oneUnit    // the gate a leaf hands its packet through
	leafNext clock.Time // during a dequeue: the earliest time a leaf that had nothing ready named
	peeked   peekHold
	stats    Stats
}

// htbClass is one class (struct htb_class).
type htbClass struct {
	cfg      HTBClass // effective: tc's defaults filled in
	id       ClassID
	parent   *htbClass
	children int
	level    int

	rate, ceil               rateCfg
	buffer, cbuffer, mbuffer int64
	quantum, prio            int
	tokens, ctokens          int64
	tc                       clock.Time // checkpoint

	leaf    subtree             // a leaf's chain; nil Qdisc for an inner class
	deficit [htbMaxDepth]int    // a leaf's DRR deficit, per level it is served at
	clprio  [htbNumPrio]htbPrio // an inner class's feeds
	filters classifier          // filters attached to the class

	prioActivity uint8 // priorities the class is active for
	mode         htbMode
	pqKey        clock.Time // when it changes mode, while queued for it

	bytes, packets, drops, overlimits, lends, borrows uint64
}

var _ Qdisc = (*HTB)(nil)

// htbMBuffer bounds a class's debt (its mbuffer): 60 s.
const htbMBuffer = int64(60 * time.Second)

// oneUnit is the gate htb hands a leaf: the leaf's first unit passes, no
// more, so that each dequeue takes one packet and charges it.
type oneUnit struct{ used bool }

func (g *oneUnit) admit(clock.Time, int) bool {
	if g.used {
		return false
	}
	g.used = true
	return true
}

// more implements moreGate: the leaf is to decide on no unit after the
// first.
func (g *oneUnit) more() bool { return !g.used }

// NewHTB returns the htb tree cfg describes on env's device, its leaves'
// disciplines built from their chains (positions drawing from seeds of
// their own: see subtreeSeed).
func NewHTB(cfg HTBConfig, env *Env) (*HTB, error) { return newHTB(cfg, env, rootSeed(env)) }

func newHTB(cfg HTBConfig, env *Env, seed uint64) (*HTB, error) {
	if err := env.Check(); err != nil {
		return nil, fmt.Errorf("htb: %w", err)
	}
	t, err := checkHTB(&cfg)
	if err != nil {
		return nil, err
	}
	q := &HTB{env: env, u: unitsOf(env), seed: seed, handle: cfg.handle(), r2q: cfg.r2q()}
	q.setOptions(cfg)
	q.byID = make(map[ClassID]*htbClass, len(cfg.Classes))
	for i := range cfg.Classes {
		var parent *htbClass
		if p := t.parent[i]; p >= 0 {
			parent = q.classes[p]
		}
		cl, err := q.newClass(&cfg.Classes[i], parent, t.children[i] > 0, 0)
		if err != nil {
			return nil, err
		}
		q.classes = append(q.classes, cl)
		q.byID[cl.id] = cl
	}
	q.levelClasses()
	q.setFilters(cfg.Filters)
	q.sizeLists()
	return q, nil
}

// setOptions takes the qdisc's own options from cfg.
func (q *HTB) setOptions(cfg HTBConfig) {
	q.cfg = cfg
	q.defcls = MakeClassID(q.handle.Major(), cfg.Default)
	q.directQLen = cfg.DirectQLen
	if q.directQLen == 0 {
		q.directQLen = q.env.QueueLen()
	}
}

// newClass makes the class c under parent, with its leaf chain unless it
// has children, made at now (its checkpoint).
func (q *HTB) newClass(c *HTBClass, parent *htbClass, inner bool, now clock.Time) (*htbClass, error) {
	cl := &htbClass{id: c.ID, parent: parent, mode: htbCanSend, mbuffer: htbMBuffer, tc: now}
	q.setClass(cl, c)
	cl.tokens, cl.ctokens = cl.buffer, cl.cbuffer
	if parent != nil {
		parent.children++
	}
	if !inner {
		leaf, err := newSubtree(c.Leaf, q.env, subtreeSeed(q.seed, c.ID), q.u)
		if err != nil {
			return nil, fmt.Errorf("htb: class %v: %w", c.ID, err)
		}
		cl.leaf = leaf
		tellParentPeeks(leaf.Qdisc, true) // htb dequeues only a leaf with packets
	}
	return cl, nil
}

// setClass takes c, checked, as cl's configuration (htb_change_class):
// its rates, bursts, and, while it is a leaf (every class is one when it
// is made), its quantum and prio; the tokens stay as they are.
func (q *HTB) setClass(cl *htbClass, c *HTBClass) {
	d := c.withDefaults()
	cl.rate = newRateCfg(d.Rate, d.Overhead, d.MPU, d.Link)
	cl.ceil = newRateCfg(d.Ceil, d.Overhead, d.MPU, d.Link)
	b, _ := HTBBuffer(d.Rate, d.Burst)
	cb, _ := HTBBuffer(d.Ceil, d.CBurst)
	cl.buffer, cl.cbuffer = int64(b), int64(cb)
	if cl.level == 0 {
		cl.quantum, _ = htbQuantum(c, q.r2q)
		cl.prio = min(c.Prio, htbNumPrio-1)
	}
	d.Leaf = nil
	cl.cfg = d
}

// levelClasses gives every class its level: 0 for a leaf, its parent's
// less one for an inner class, 7 for an inner root class.
func (q *HTB) levelClasses() {
	for _, cl := range q.classes {
		switch {
		case cl.children == 0:
			cl.level = 0
		case cl.parent == nil:
			cl.level = htbMaxDepth - 1
		default:
			cl.level = cl.parent.level - 1
		}
	}
}

// setFilters lays out fs, checked, per attachment point.
func (q *HTB) setFilters(fs []Filter) {
	q.cfg.Filters = fs
	var top []*Filter
	per := map[*htbClass][]*Filter{}
	for i := range fs {
		f := &fs[i]
		if f.Parent == 0 || f.Parent == q.handle {
			top = append(top, f)
			continue
		}
		cl := q.byID[f.Parent]
		per[cl] = append(per[cl], f)
	}
	q.filters = newClassifier(top)
	for _, cl := range q.classes {
		cl.filters = newClassifier(per[cl])
	}
}

// sizeLists gives every row, feed and wait queue room for all the classes
// that could join it, so that scheduling never allocates.
func (q *HTB) sizeLists() {
	n := len(q.classes)
	grow := func(p *htbPrio, n int) {
		if cap(p.list) < n {
			p.list = append(make([]*htbClass, 0, n), p.list...)
		}
	}
	for l := range q.levels {
		lv := &q.levels[l]
		if cap(lv.wait) < n {
			lv.wait = append(make([]*htbClass, 0, n), lv.wait...)
		}
		for p := range lv.hprio {
			grow(&lv.hprio[p], n)
		}
	}
	for _, cl := range q.classes {
		for p := range cl.clprio {
			grow(&cl.clprio[p], cl.children)
		}
	}
}

// classify returns the leaf class p goes to (htb_classify), or direct
// for the direct queue; neither means a drop (a chain of filters that
// loops).
func (q *HTB) classify(b []byte) (cl *htbClass, direct bool) {
	c := &q.filters
	for hops := 0; ; {
		id, ok := c.classify(b)
		if !ok {
			break
		}
		if id == q.handle {
			return nil, true
		}
		k := q.byID[id]
		if k == nil {
			break
		}
		if k.level == 0 {
			return k, false
		}
		if hops++; hops > htbMaxDepth {
			return nil, false
		}
		c = &k.filters
	}
	if k := q.byID[q.defcls]; k != nil && k.level == 0 {
		return k, false
	}
	return nil, true
}

// Enqueue classifies p and queues it in its leaf, or the direct queue.
func (q *HTB) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := q.enqueueUnits(now, p)
	return v
}

func (q *HTB) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	cl, direct := q.classify(p.Bytes())
	n := q.u.count(p)
	switch {
	case direct:
		room := q.directQLen - q.u.inRing(&q.direct)
		refused, v := admitCount(now, p, &q.direct, room, q, q.env, q.u, &q.stats)
		q.directPkts += uint64(n - refused)
		return refused, v
	case cl == nil:
		dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonClassify)
		return n, Dropped
	}
	refused, v := cl.leaf.enq.enqueueUnits(now, p)
	if refused > 0 {
		q.stats.Drops += uint64(refused)
		cl.drops += uint64(refused)
	}
	if refused < n {
		q.activate(cl)
	}
	return refused, v
}

// Dequeue returns the next packet htb lets go at now: the direct queue's
// head, else one from the first leaf the levels, priorities and DRR lead
// to; else nil and when the next class changes mode (or a leaf that had
// nothing ready named), clock.Never if htb holds nothing.
func (q *HTB) Dequeue(now clock.Time) (*packet.Packet, clock.Time) { return q.dequeueRun(now, nil) }

func (q *HTB) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	return q.peeked.dequeue(now, g, q.u, q.env, &q.stats, q.take)
}

// Peek returns the packet Dequeue(now) would return. As the kernel's
// qdisc_peek_dequeued, it charges it and takes it from its leaf; the
// next Dequeue hands it over.
func (q *HTB) Peek(now clock.Time) (*packet.Packet, clock.Time) { return q.peeked.peek(now, q.take) }

// take is htb_dequeue under g: a unit charged to its classes, which
// htb holds (as qdisc_peek_dequeued would) when g refuses it.
func (q *HTB) take(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	if h := q.direct.Front(); h != nil {
		if p := popAdmitted(&q.direct, h, g, now, q.u, q.env); p != nil {
			return p, now
		}
		return nil, now
	}
	if q.active == 0 {
		return nil, clock.Never
	}
	q.now = now
	next := now.Add(5 * time.Second) // the kernel's watchdog at most this far
	q.leafNext = clock.Never
	for level := range htbMaxDepth {
		event := q.doEvents(level)
		if event == 0 {
			event = now.Add(time.Second)
		}
		next = min(next, event)
		for m := q.rowMask[level]; m != 0; m &= m - 1 {
			if p := q.dequeueTree(bits.TrailingZeros8(m), level); p != nil {
				if g != nil && !g.admit(now, q.u.whole(p)) {
					q.peeked.p = p
					return nil, now
				}
				return p, now
			}
		}
	}
	if q.active == 0 {
		// The leaves it visited had lost their packets.
		return nil, clock.Never
	}
	return nil, min(next, q.leafNext)
}

// dequeueTree takes a unit from the leaf the DRR leads to at prio and
// level, and charges it (htb_dequeue_tree); nil when none of the leaves
// there has one ready.
func (q *HTB) dequeueTree(prio, level int) *packet.Packet {
	hp := &q.levels[level].hprio[prio]
	start := q.lookupLeaf(hp, prio)
	cl := start
	var p *packet.Packet
	for {
		if cl == nil {
			return nil
		}
		if cl.leaf.Len() == 0 {
			// The leaf dropped what it had, or lost it to a change:
			// it has nothing to send after all.
			q.deactivate(cl)
			if q.rowMask[level]&(1<<prio) == 0 {
				return nil
			}
			next := q.lookupLeaf(hp, prio)
			if cl == start {
				start = next
			}
			cl = next
			continue
		}
		var lnext clock.Time
		q.one.used = false
		if p, lnext = cl.leaf.pull(q.now, &q.one); p != nil {
			break
		}
		// A leaf that holds packets but has none ready (netem, tbf):
		// the kernel warns it is not work-conserving and moves on.
		q.leafNext = min(q.leafNext, lnext)
		q.feedOf(cl, prio, level).next()
		if cl = q.lookupLeaf(hp, prio); cl == start {
			return nil
		}
	}
	n, segs := q.u.whole(p), p.Segments()
	cl.bytes += uint64(n)
	cl.packets += uint64(segs)
	if cl.deficit[level] -= n; cl.deficit[level] < 0 {
		cl.deficit[level] += cl.quantum
		q.feedOf(cl, prio, level).next()
	}
	if cl.leaf.Len() == 0 {
		q.deactivate(cl)
	}
	q.charge(cl, level, n, segs)
	return p
}

// Len returns the number of packets held: the direct queue's, the
// leaves' and a peeked one.
func (q *HTB) Len() int {
	n := q.u.inRing(&q.direct) + q.peeked.units(q.u)
	for _, cl := range q.classes {
		if cl.leaf.Qdisc != nil {
			n += cl.leaf.Len()
		}
	}
	return n
}

// Backlog returns the number of bytes held, as Len counts packets.
func (q *HTB) Backlog() int {
	n := q.u.backlog(&q.direct) + q.peeked.size(q.u)
	for _, cl := range q.classes {
		if cl.leaf.Qdisc != nil {
			n += cl.leaf.Backlog()
		}
	}
	return n
}

// Stats returns htb's counters as tc -s qdisc show prints them: Drops
// counts what the direct queue and the leaves refused (and filter loops
// dropped), Overlimits the times a class went over its ceil.
func (q *HTB) Stats() Stats {
	s := q.stats
	s.Qlen, s.Backlog = q.Len(), q.Backlog()
	return s
}

// Kind returns "htb".
func (q *HTB) Kind() string { return "htb" }

// Child returns nil: htb's children are its classes' leaves (Classes).
func (q *HTB) Child() Qdisc { return nil }

// DirectPackets returns the packets that went to the direct queue, tc's
// direct_packets_stat.
func (q *HTB) DirectPackets() uint64 { return q.directPkts }

// Config returns the tree as it is: the qdisc's options with their
// defaults, each class with tc's defaults filled in (Ceil, Burst, CBurst,
// MTU), its quantum and prio as the kernel holds them (a root class's
// Parent the qdisc's handle) and its leaf's chain (nil for the default
// pfifo), and the filters.
func (q *HTB) Config() Spec {
	c := q.cfg
	c.Handle, c.R2Q, c.DirectQLen = q.handle.Major(), q.r2q, q.directQLen
	c.Classes = make([]HTBClass, len(q.classes))
	for i, cl := range q.classes {
		c.Classes[i] = q.classConfig(cl)
	}
	c.Filters = append([]Filter(nil), q.cfg.Filters...)
	return c
}

// classConfig returns cl's configuration as Config reports it.
func (q *HTB) classConfig(cl *htbClass) HTBClass {
	c := cl.cfg
	c.Quantum, c.Prio = cl.quantum, cl.prio
	c.Parent = q.handle
	if cl.parent != nil {
		c.Parent = cl.parent.id
	}
	if cl.leaf.Qdisc != nil {
		c.Leaf = cl.leaf.config()
	}
	return c
}

// Flush drops every packet held (the direct queue's, the leaves', a
// peeked one) with ReasonFlushed and makes every class idle and able to
// send, as the kernel's htb_reset does; the tokens stay.
func (q *HTB) Flush(now clock.Time) {
	q.peeked.flush(now, q, q.env, q.u, &q.stats)
	flushRing(now, &q.direct, q, q.env, q.u, &q.stats)
	for _, cl := range q.classes {
		if cl.leaf.Qdisc != nil {
			cl.leaf.Flush(now)
		}
		cl.prioActivity, cl.mode = 0, htbCanSend
		for p := range cl.clprio {
			cl.clprio[p] = htbPrio{list: cl.clprio[p].list[:0]}
		}
	}
	for l := range q.levels {
		lv := &q.levels[l]
		lv.wait = lv.wait[:0]
		for p := range lv.hprio {
			lv.hprio[p] = htbPrio{list: lv.hprio[p].list[:0]}
		}
	}
	q.rowMask = [htbMaxDepth]uint8{}
	q.active = 0
}

// HTBClassInfo is one class of an htb tree as `tc -s -d class show`
// shows it: its configuration as the kernel holds it, its place in the
// tree, its counters and its buckets.
type HTBClassInfo struct {
	// Class is the class's configuration, as Config reports it.
	Class HTBClass
	// Level is the class's level: 0 for a leaf, 7 for an inner root
	// class, one less for each generation below.
	Level int
	// Leaf is the leaf's qdisc (the root of its chain), nil for an
	// inner class; DefaultLeaf says it is the kernel's default pfifo.
	Leaf        Qdisc
	DefaultLeaf bool
	// Buffer and CBuffer are the credit the kernel holds for the burst
	// and the cburst (HTBBuffer); tc prints them back as bytes.
	Buffer, CBuffer time.Duration
	// Stats are the class's counters as tc -s class show prints them:
	// Bytes and Packets sent (through the class, for an inner one),
	// Drops (its leaf's refusals), Overlimits (times it went over its
	// ceil), and its leaf's Qlen and Backlog.
	Stats Stats
	// Lends counts the packets it sent within its own rate; Borrows
	// those it sent on an ancestor's; Giants is always 0 (the kernel
	// stopped counting them with its rate tables, in 3.8).
	Lends, Borrows, Giants uint64
	// Tokens and CTokens are the credit left in its rate and ceil
	// buckets at its last charge, negative in debt; tc prints them in
	// psched ticks of 64 ns.
	Tokens, CTokens time.Duration
	// Mode is the class's mode: "can_send", "may_borrow" or
	// "cant_send".
	Mode string
}

// Classes returns the classes in the order they were created.
func (q *HTB) Classes() []HTBClassInfo {
	out := make([]HTBClassInfo, len(q.classes))
	for i, cl := range q.classes {
		ci := HTBClassInfo{
			Class: q.classConfig(cl), Level: cl.level,
			Buffer: time.Duration(cl.buffer), CBuffer: time.Duration(cl.cbuffer),
			Lends: cl.lends, Borrows: cl.borrows,
			Tokens: time.Duration(cl.tokens), CTokens: time.Duration(cl.ctokens),
			Mode:  cl.mode.String(),
			Stats: Stats{Bytes: cl.bytes, Packets: cl.packets, Drops: cl.drops, Overlimits: cl.overlimits},
		}
		if cl.leaf.Qdisc != nil {
			ci.Leaf, ci.DefaultLeaf = cl.leaf.Qdisc, cl.leaf.dflt
			ci.Stats.Qlen, ci.Stats.Backlog = cl.leaf.Len(), cl.leaf.Backlog()
		}
		out[i] = ci
	}
	return out
}
