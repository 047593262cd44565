package qdisc

import (
	"fmt"
	"math"
	"math/bits"

	"wanlab/clock"
	"wanlab/packet"
)

// Netem is Linux's network emulator qdisc (sch_netem.c, as of 6.18): delay
// with jitter from a distribution table, loss (random or Markov models,
// optionally ECN-marking instead), duplication, corruption, reordering,
// rate with per-packet and per-cell overheads, and slotting, in front of an
// optional child qdisc. Rate and slot byte budgets count packets as the
// device does (Env.PktLen: with the Ethernet header by default).
//
// Stats: Drops counts the packets netem discarded (DropsByReason: loss,
// limit) plus those its child refused when netem handed them over (as the
// kernel counts them); Marks counts ECN marks made instead of a loss, which
// the kernel counts as drops and wanlab keeps apart; Requeues counts the
// packets sent ahead by reorder.
type Netem struct {
	cfg   NetemConfig
	env   *Env
	child childQdisc

	limit     int
	gapThresh uint32 // the counter value from which reorder is drawn
	latency   int64
	rate      uint64
	slotOn    bool
	u         units

	rnd     netemRand
	delay   delayGen
	loss    lossModel
	dup     event
	corrupt event
	reorder event

	rlist   ring // reordered packets, newest first (the kernel's sch->q)
	tf      tfifo
	counter uint32
	order   uint64
	peeked  peekHold

	slotNext    clock.Time
	slotPackets int64
	slotBytes   int64
	slotDelay   delayGen

	seed    uint64 // the position's seed, from which each Change derives a new one
	changes uint64 // Change calls so far

	stats Stats
}

var _ Qdisc = (*Netem)(nil)

// NewNetem validates cfg as tc and the kernel would (see the errors for
// what each rule is), fills tc's defaults (limit 1000; gap 1 when reorder
// is set) and returns a netem whose packets, once due, go to child (nil
// for none). Duplicates re-enter env.Root (netem itself when Root is nil)
// and are cloned from env.Pool, which duplicate therefore needs.
//
// The random streams are seeded from cfg.Seed when cfg.SeedSet, otherwise
// from PositionSeed(env.Seed, 0), as the root of a tree (Build gives each
// position its own); see NetemConfig.Correlation for the two modes. Loss
// model fields are taken as they are: use StateLoss and GELoss for tc's
// defaults.
func NewNetem(cfg NetemConfig, env *Env, child Qdisc) (*Netem, error) {
	return newNetem(cfg, env, child, rootSeed(env))
}

// newNetem is NewNetem with the seed of the netem's position.
func newNetem(cfg NetemConfig, env *Env, child Qdisc, seed uint64) (*Netem, error) {
	if err := env.Check(); err != nil {
		return nil, fmt.Errorf("netem: %w", err)
	}
	if env == nil {
		env = &Env{}
	}
	cfg, err := checkNetem(cfg, env)
	if err != nil {
		return nil, err
	}
	n := &Netem{env: env, u: unitsOf(env), seed: seed}
	n.child = childOf(child, n.u)
	n.apply(cfg, seed)
	return n, nil
}

// apply takes cfg, validated and filled in, as the configuration, with
// fresh random streams from seed (cfg.Seed when it is set).
func (n *Netem) apply(cfg NetemConfig, seed uint64) {
	n.cfg = cfg
	n.limit = cfg.Limit
	n.latency = int64(cfg.Delay)
	n.rate = uint64(cfg.Rate)
	n.gapThresh = cfg.Gap - 1
	if cfg.OldGap {
		n.gapThresh = cfg.Gap
	}

	if cfg.SeedSet {
		seed = cfg.Seed
	}
	n.rnd.init(cfg.Correlation == CorrelationKernel, seed)
	// Draw order of the kernel's init_crandom calls: delay, loss, dup
	// (get_correlation), reorder, corrupt.
	n.delay.init(&n.rnd, n.latency, int32(cfg.Jitter), cfg.DelayCorr, cfg.Dist.Table)
	n.loss.init(&n.rnd, cfg.Loss)
	n.dup.init(&n.rnd, cfg.Duplicate, cfg.DuplicateCorr)
	n.reorder.init(&n.rnd, cfg.Reorder, cfg.ReorderCorr)
	n.corrupt.init(&n.rnd, cfg.Corrupt, cfg.CorruptCorr)

	n.slotOn, n.slotDelay = false, delayGen{}
	if s := cfg.Slot; s.Enabled() {
		n.slotOn = true
		n.slotPackets, n.slotBytes = budget(s.Packets), budget(s.Bytes)
		if s.Dist.Table != nil {
			n.slotDelay = delayGen{mu: int64(s.DistDelay), sigma: int32(s.DistJitter), table: s.Dist.Table}
		}
	}
}

// Change applies spec as the kernel's netem_change does: every queued
// packet keeps its time to send (and the child its packets); the new
// delay, jitter, loss, rate and the rest apply to packets that arrive from
// now on. A new rate serialises new packets after the latest one still
// queued, as before. The reorder counter restarts, the loss models start
// in their first state and the random streams are seeded afresh: from the
// configuration's seed when it has one (as the kernel reseeds its prandom
// state on every change), otherwise from the next stream derived from the
// netem's position seed, so that a run stays reproducible. A slot starts
// now with full budgets. A limit below the queue length drops nothing;
// arrivals are refused until the queue is below it.
func (n *Netem) Change(now clock.Time, spec Spec) error {
	c, err := specAs[NetemConfig](n, spec)
	if err != nil {
		return err
	}
	if c, err = checkNetem(c, n.env); err != nil {
		return err
	}
	n.changes++
	n.apply(c, DeriveSeed(n.seed, n.changes))
	n.counter = 0
	if n.slotOn {
		n.slotNext = now
	} else {
		n.slotNext = 0
	}
	return nil
}

// Flush drops every packet held, the child's included, with ReasonFlushed.
func (n *Netem) Flush(now clock.Time) {
	if p := n.peeked.p; p != nil {
		n.peeked.p = nil
		n.drop(now, p, ReasonFlushed)
	}
	for p := n.rlist.Pop(); p != nil; p = n.rlist.Pop() {
		n.drop(now, p, ReasonFlushed)
	}
	for p := n.tf.peek(); p != nil; p = n.tf.peek() {
		n.drop(now, n.tf.pop(), ReasonFlushed)
	}
	if n.child.Qdisc != nil {
		n.child.Flush(now)
	}
}

// graft attaches child (nil for none) in place of the current child and
// returns the old one, which keeps its packets.
func (n *Netem) graft(child Qdisc) Qdisc {
	old := n.child.Qdisc
	n.child = childOf(child, n.u)
	return old
}

// budget turns a slot budget into the kernel's: 0 means INT_MAX.
func budget(v int) int64 {
	if v == 0 {
		return math.MaxInt32
	}
	return int64(v)
}

// Kind returns "netem".
func (n *Netem) Kind() string { return "netem" }

// Child returns the attached child qdisc, or nil.
func (n *Netem) Child() Qdisc { return n.child.Qdisc }

// Config returns the configuration with tc's defaults filled in.
func (n *Netem) Config() Spec { return n.cfg }

// Len counts every packet inside netem, its child's included, as the
// kernel's sch->q.qlen, which is what limit is compared with.
func (n *Netem) Len() int {
	l := n.u.inRing(&n.rlist) + n.tf.units(n.u) + n.peeked.units(n.u)
	if n.child.Qdisc != nil {
		l += n.child.Len()
	}
	return l
}

// Backlog is the number of bytes held, the child's included, as the
// device counts them.
func (n *Netem) Backlog() int {
	b := n.u.backlog(&n.rlist) + n.tf.Bytes() + n.u.hdr*n.tf.Segs() + n.peeked.size(n.u)
	if n.child.Qdisc != nil {
		b += n.child.Backlog()
	}
	return b
}

// Stats returns the counters; see Netem for their meaning.
func (n *Netem) Stats() Stats {
	s := n.stats
	s.Qlen, s.Backlog = n.Len(), n.Backlog()
	return s
}

// Enqueue runs netem_enqueue's pipeline on p, in the kernel's order:
// duplicate decision, loss decision (or ECN mark), corruption decision,
// limit check, the duplicate's trip through the root (before the original,
// and clean: it is copied before the bit flip), then either the reorder
// path (sent next, ahead of everything) or the delay path (tabledist,
// rate, tfifo).
//
// Under GranularitySegment each segment of a super-packet runs the
// pipeline in turn, drawing from the random streams as it would alone.
// Consecutive segments with one fate (the same time to send; or lost, or
// over the limit) stay one packet; a segment that is marked, corrupted,
// duplicated or reordered leaves the super-packet as a packet of its own.
func (n *Netem) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := n.enqueueUnits(now, p)
	return v
}

// netemFate is what netem's pipeline made of a unit that needs no packet of
// its own.
type netemFate uint8

const (
	netemDelay netemFate = iota // into the tfifo at a time to send
	netemLoss                   // dropped by the loss model
	netemLimit                  // dropped at the limit
)

// netemRun is consecutive units at the head of the rest of a packet that
// share a fate and are not placed yet.
type netemRun struct {
	units int
	fate  netemFate
	tts   clock.Time
	order uint64
}

func (n *Netem) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	total := n.u.count(p)
	if n.drawsNothing() && n.Len()+total <= n.limit {
		// Every unit would take the delay path at the same time to send:
		// the pipeline's result for them all, the random streams
		// untouched.
		n.counter += uint32(total)
		p.TimeToSend, p.Order = addSat(now, n.latency), n.order
		n.order += uint64(total)
		n.tf.push(p)
		return 0, Queued
	}
	ect := n.cfg.ECN && packet.ECNOf(p.Bytes()) != packet.NotECT
	dup := p.Dup
	// Every unit is as long as the first but the last; cuts change p.
	size := n.u.whole(p)
	lastSize := size
	if total > 1 {
		size, lastSize = n.u.size(p, 0), n.u.size(p, total-1)
	}
	segLen, lastSegLen := p.SegmentLen(0), p.SegmentLen(total-1)
	if n.u.gso {
		lastSegLen = segLen // the kernel corrupts the first segment
	}
	qlen := n.Len() // what the limit sees, with the run's units
	rest := p       // the units not placed yet
	var run netemRun
	refused := 0
	for i := range total {
		if i == total-1 {
			size, segLen = lastSize, lastSegLen
		}
		count := 1
		if n.dup.enable && !dup && n.dup.fire(&n.rnd) {
			count++
		}
		mark := false
		if n.loss.lost(&n.rnd) {
			if ect {
				mark = true
			} else {
				count--
			}
		}
		corruptAt, corruptBit := -1, uint(0)
		if n.corrupt.enable && n.corrupt.fire(&n.rnd) && segLen > 0 {
			corruptAt = int(n.rnd.unseeded32() % uint32(segLen))
			corruptBit = uint(n.rnd.unseeded32() % 8)
		}
		var next netemRun
		switch {
		case count == 0:
			next = netemRun{fate: netemLoss}
		case count > 1 || mark || corruptAt >= 0:
			// A unit of its own: the run before it is placed first.
			refused += n.place(now, &rest, &run)
			var seg *packet.Packet
			seg, rest = n.first(rest)
			refused += n.enqueueOwn(now, seg, count, mark, corruptAt, corruptBit)
			qlen = n.Len()
			continue
		case qlen >= n.limit:
			next = netemRun{fate: netemLimit}
		case n.cfg.Gap != 0 && n.counter >= n.gapThresh && n.reorder.fire(&n.rnd):
			refused += n.place(now, &rest, &run)
			var seg *packet.Packet
			seg, rest = n.first(rest)
			n.counter = 0
			n.reorderNow(now, seg)
			qlen++
			continue
		default:
			n.counter++
			var pend *netemRun
			if run.units > 0 && run.fate == netemDelay {
				pend = &run
			}
			next = netemRun{fate: netemDelay, tts: n.timeToSend(now, size, pend), order: n.order}
			n.order++
			qlen++
		}
		if run.units > 0 && (run.fate != next.fate || run.tts != next.tts) {
			refused += n.place(now, &rest, &run)
		}
		if run.units == 0 {
			run = next
		}
		run.units++
	}
	refused += n.place(now, &rest, &run)
	return refused, verdict(total, refused, false)
}

// drawsNothing reports whether netem's pipeline draws nothing from its
// random streams and gives every packet the same delay: no duplication,
// loss, corruption or reordering, no jitter, rate or slots.
func (n *Netem) drawsNothing() bool {
	return !n.dup.enable && n.loss.kind == LossNone && !n.corrupt.enable && n.cfg.Gap == 0 &&
		n.cfg.Jitter == 0 && n.rate == 0 && !n.cfg.FIFOJitter
}

// first splits the first unit off rest: it returns it and what follows
// (nil if nothing does).
func (n *Netem) first(rest *packet.Packet) (*packet.Packet, *packet.Packet) {
	if n.u.count(rest) == 1 {
		return rest, nil
	}
	return n.env.cut(rest, 1)
}

// place carries out the fate of the run at the head of *rest, leaving
// *rest the units after it, and returns how many units it dropped.
func (n *Netem) place(now clock.Time, rest **packet.Packet, run *netemRun) int {
	if run.units == 0 {
		return 0
	}
	p := *rest
	if run.units < n.u.count(p) {
		p, *rest = n.env.cut(p, run.units)
	} else {
		*rest = nil
	}
	r := *run
	*run = netemRun{}
	switch r.fate {
	case netemLoss:
		n.drop(now, p, ReasonLoss)
		return r.units
	case netemLimit:
		n.drop(now, p, ReasonLimit)
		return r.units
	}
	p.TimeToSend, p.Order = r.tts, r.order
	n.tf.push(p)
	return 0
}

// enqueueOwn runs the rest of the pipeline, from the limit check on, on
// seg, a unit that needs a packet of its own: marked, corrupted or
// duplicated. It returns how many units it dropped.
func (n *Netem) enqueueOwn(now clock.Time, seg *packet.Packet, count int, mark bool, corruptAt int, corruptBit uint) int {
	if mark {
		packet.SetCE(seg.Bytes())
		n.stats.Marks++
		n.env.Mark(now, seg, n, ReasonLoss)
	}
	if n.Len() >= n.limit {
		// The kernel clones the duplicate before this check and frees it
		// here unseen; cloning only past it is the same without the waste.
		k := n.u.count(seg)
		n.drop(now, seg, ReasonLimit)
		return k
	}
	if count > 1 {
		d := n.env.Pool.Clone(seg)
		d.Dup = true
		root := n.env.Root
		if root == nil {
			root = n
		}
		root.Enqueue(now, d)
	}
	var segs *packet.Packet
	if corruptAt >= 0 {
		if seg.Segs > 1 {
			// netem_segment: a GSO packet taken whole is segmented, its
			// first segment corrupted, the others enqueued after it.
			seg, segs = n.env.cut(seg, 1)
		}
		if packet.FinishChecksum(seg) == nil && corruptAt < seg.Len() {
			seg.Bytes()[corruptAt] ^= 1 << corruptBit
			seg.Corrupted = true
		}
	}
	if n.cfg.Gap == 0 || n.counter < n.gapThresh || !n.reorder.fire(&n.rnd) {
		n.counter++
		seg.TimeToSend = n.timeToSend(now, n.u.whole(seg), nil)
		seg.Order = n.order
		n.order++
		n.tf.push(seg)
	} else {
		n.counter = 0
		n.reorderNow(now, seg)
	}
	refused := 0
	for segs != nil {
		var s *packet.Packet
		s, segs = n.first(segs)
		if k, _ := n.enqueueUnits(now, s); k > 0 {
			refused++
		}
	}
	return refused
}

// reorderNow sends p next, ahead of everything queued.
func (n *Netem) reorderNow(now clock.Time, p *packet.Packet) {
	p.TimeToSend = now
	p.Reordered = true
	n.rlist.PushFront(p)
	n.stats.Requeues++
}

func (n *Netem) drop(now clock.Time, p *packet.Packet, why Reason) Verdict {
	dropUnits(now, p, n, n.env, n.u, &n.stats, why)
	return Dropped
}

// timeToSend is the delay path: d from tabledist, then with a rate the
// packet serialises after the latest packet still inside netem,
// tts = max(now+d, last) + tx; with FIFOJitter (and no rate) tts = max(now+d,
// last).
//
// Times saturate at horizon instead of wrapping around the end of int64
// nanoseconds (as the kernel's s64 arithmetic would, sending such a packet
// at once): a packet of a 1-byte-per-second rate with a 2 GB overhead
// takes 68 years, and a few of them in a row are held until the horizon.
func (n *Netem) timeToSend(now clock.Time, length int, pend *netemRun) clock.Time {
	d := n.delay.next(&n.rnd)
	if n.rate != 0 {
		if last, ok := n.lastTTS(pend); ok {
			d = max(0, d-int64(last-now))
			now = last
		}
		if tx := packetTime(&n.cfg, length); d > 0 && tx > uint64(math.MaxInt64-d) {
			d = math.MaxInt64
		} else {
			d += int64(tx)
		}
	} else if n.cfg.FIFOJitter {
		if last, ok := n.lastTTS(pend); ok && addSat(now, d) < last {
			return last
		}
	}
	return addSat(now, d)
}

// horizon is the latest time a packet can be due: int64 nanoseconds end
// about 292 years after the epoch of the clock, and clock.Never itself
// means "nothing will ever be due".
const horizon = clock.Never - 1

// addSat returns t+d, or horizon if that is later.
func addSat(t clock.Time, d int64) clock.Time {
	if d > 0 && t > horizon-clock.Time(d) {
		return horizon
	}
	return t + clock.Time(d)
}

// lastTTS is the latest time to send among the packets in the reorder list
// and the tfifo (not those already handed to the child), and pend, a run of
// units bound for the tfifo but not yet in it (nil if there is none).
func (n *Netem) lastTTS(pend *netemRun) (clock.Time, bool) {
	var t clock.Time
	ok := false
	if pend != nil {
		t, ok = pend.tts, true
	}
	if p := n.rlist.Back(); p != nil && (!ok || p.TimeToSend > t) {
		t, ok = p.TimeToSend, true
	}
	if p := n.tf.last(); p != nil && (!ok || p.TimeToSend > t) {
		t, ok = p.TimeToSend, true
	}
	return t, ok
}

// packetTime is packet_time_ns for cfg, whose Rate is not 0: the
// serialisation time of length bytes (the packet as the device counts it)
// plus the packet overhead, rounded up to whole cells of CellSize bytes
// that each cost CellOverhead more, at most math.MaxInt64 ns. Lengths that
// a negative overhead would take below zero count as zero (the kernel's
// unsigned arithmetic would wrap them to an enormous delay).
func packetTime(cfg *NetemConfig, length int) uint64 {
	l := int64(length) + int64(cfg.PacketOverhead)
	if cs := int64(cfg.CellSize); cs != 0 && l > 0 {
		cells := (l + cs - 1) / cs
		l = cells * (cs + int64(cfg.CellOverhead))
	}
	if l <= 0 {
		return 0
	}
	rate := uint64(cfg.Rate)
	hi, lo := bits.Mul64(uint64(l), 1e9)
	if hi >= rate {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, rate)
	return min(q, math.MaxInt64)
}

// Dequeue returns the next packet that may leave at now: a reordered one
// first, else the tfifo's head once due and once its slot is open (or, with
// a child, whatever the child releases after every due packet has moved
// into it, in time-to-send order). Otherwise it returns nil and the
// earliest time anything could leave: the tfifo head's time (or the slot's
// opening, if later), or the child's own next time if that is sooner.
func (n *Netem) Dequeue(now clock.Time) (*packet.Packet, clock.Time) { return n.dequeueRun(now, nil) }

func (n *Netem) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	return n.peeked.dequeue(now, g, n.u, n.env, &n.stats, n.take)
}

// Peek returns the packet Dequeue(now) would return, without removing it.
// Like the kernel's qdisc_peek_dequeued, it runs the dequeue (moving due
// packets into the child, using up slot budget) and holds the result for
// the next Dequeue.
func (n *Netem) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	return n.peeked.peek(now, n.take)
}

// take is netem_dequeue under g. The units of a packet due now leave (or
// move into the child) together, as far as the slot's budget and g let
// them.
func (n *Netem) take(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	for {
		if p := n.rlist.Front(); p != nil {
			if admitted(g, now, n.u, p) == 0 {
				return nil, now
			}
			return n.rlist.Pop(), now
		}
		h := n.tf.peek()
		if h == nil {
			break
		}
		tts := h.TimeToSend
		if n.slotOn && n.slotNext < tts {
			// The slot opened before h was due: wait for a fresh one.
			n.nextSlot(now)
		}
		if tts <= now && (!n.slotOn || n.slotNext <= now) {
			hg := g
			if n.child.Qdisc != nil {
				hg = nil // g applies to what the child lets go
			}
			k, held := n.due(now, h, hg)
			var p *packet.Packet
			if k > 0 {
				p = n.takeDue(h, k)
			}
			if held {
				n.peeked.p = n.takeDue(n.tf.peek(), 1)
			}
			if n.child.Qdisc == nil {
				return p, now
			}
			n.stats.Drops += uint64(n.child.offer(now, p))
			continue
		}
		wake := tts
		if n.slotOn {
			wake = max(tts, n.slotNext)
		}
		if n.child.Qdisc == nil {
			return nil, wake
		}
		p, cnext := n.child.pull(now, g)
		if p != nil || cnext == now {
			return p, now
		}
		return nil, clock.Min(wake, cnext)
	}
	if n.child.Qdisc == nil {
		return nil, clock.Never
	}
	return n.child.pull(now, g)
}

// due charges the slot for the units of h, the tfifo's head, due now, one
// by one, and asks g about each; it returns how many may go now: until g
// refuses one (held reports that the slot was charged for it already, so
// that it waits, decided, for the next dequeue) or the slot's budget runs
// out with the next slot in the future.
func (n *Netem) due(now clock.Time, h *packet.Packet, g gate) (k int, held bool) {
	k = n.u.count(h)
	if !n.slotOn && g == nil {
		return k, false
	}
	for i := range k {
		if i > 0 && !moreUnits(g) {
			return i, false
		}
		size := n.u.size(h, i)
		spent := false
		if n.slotOn {
			n.slotPackets--
			n.slotBytes -= int64(size)
			if n.slotPackets <= 0 || n.slotBytes <= 0 {
				n.nextSlot(now)
				spent = true
			}
		}
		if g != nil && !g.admit(now, size) {
			return i, n.slotOn
		}
		if spent && n.slotNext > now {
			return i + 1, false
		}
	}
	return k, false
}

// takeDue takes the first k units of h, the tfifo's head, off the tfifo.
func (n *Netem) takeDue(h *packet.Packet, k int) *packet.Packet {
	if k == n.u.count(h) {
		return n.tf.pop()
	}
	return n.tf.cutFront(k, n.env)
}

// nextSlot opens the next slot (get_slot_next): after a uniform length in
// [Min, Max) or one drawn from the slot distribution, with fresh budgets.
func (n *Netem) nextSlot(now clock.Time) {
	s := &n.cfg.Slot
	var d int64
	if s.Dist.Table == nil {
		span := uint64(s.Max - s.Min)
		hi, _ := bits.Mul64(span, uint64(n.rnd.unseeded32())<<32)
		d = int64(s.Min) + int64(hi)
	} else {
		d = n.slotDelay.next(&n.rnd)
	}
	n.slotNext = now + clock.Time(d)
	n.slotPackets, n.slotBytes = budget(s.Packets), budget(s.Bytes)
}
