// Package link models one direction of a path: a tree of queue disciplines
// (as tc would attach them to a device), an optional trace-driven capacity
// in mahimahi's format, counters, delay records and a per-packet event hook.
//
// A Direction is a steppable state machine like the disciplines it holds:
// Enqueue offers a packet at a time, Dequeue returns the next packet that
// may leave at a time or says when one may. It does no I/O and reads no
// clock, so the simulator drives it on a virtual clock and the router on the
// real one.
//
// A Path strings Directions into one direction of a dumbbell: the sending
// host's access link, the shared bottleneck, the receiving host's access
// link, advanced in time order; Host names the dumbbell's hosts.
package link

import (
	"hash/fnv"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
)

// Config describes a direction.
type Config struct {
	// Name labels the direction in events and reports ("up", "down").
	Name string
	// Chain is the qdisc tree as tc would build it: Chain[0] is the root and
	// each next spec the child of the one before (see qdisc.Build). An
	// empty chain is a direct path: packets pass at once.
	Chain []qdisc.Spec
	// Trace, when not nil, limits the direction's capacity to the trace's
	// delivery opportunities: packets leave the qdisc tree only when an
	// opportunity has bytes for them. Without a chain, packets wait for
	// opportunities in an unbounded FIFO (mahimahi's default queue).
	Trace *Trace
	// Env is shared by the tree's disciplines (Pool for duplicates, Seed,
	// MTU, Framing, TxQueueLen, HZ); its Framing also decides how the
	// direction counts bytes (Counters.BytesIn and BytesOut: as the device
	// does, the Ethernet header included by default). Seed is best
	// DirectionSeed(run seed, Name). The direction sets Env.Observer to
	// itself and Env.Root to the root it builds; values given there are
	// ignored.
	Env qdisc.Env
	// Hook, when not nil, is told about every event.
	Hook Hook
	// PerFlow keeps counters per packet.Flow (see FlowCounters).
	PerFlow bool
	// KeepDelays keeps every delivered packet's delay so that delay
	// percentiles are exact; otherwise they come from a histogram within
	// 1%. Keeping delays costs 8 bytes per delivered packet (16 with
	// PerFlow), so it is bounded: once the direction holds
	// MaxKeptDelays delays, it moves them all into histograms and keeps
	// none from then on (Delay.Exact tells which a figure is).
	KeepDelays bool
	// MaxKeptDelays bounds the delays KeepDelays keeps, per flow and in
	// the direction's total together; 0 means DefaultMaxKeptDelays.
	MaxKeptDelays int
}

// DefaultMaxKeptDelays is the default bound on the exact delays a
// direction keeps: 8 Mi of them, 64 MiB. A simulation's figures are exact
// up to that many packets and within the histogram's 1% beyond.
const DefaultMaxKeptDelays = 1 << 23

// Direction is one direction of a path. It implements qdisc.Observer for
// the tree it holds. It is not safe for concurrent use.
type Direction struct {
	name string
	hook Hook
	ev   Event

	root qdisc.Qdisc // the tree as built, nil for a direct path
	q    qdisc.Qdisc // where packets enter: root, or a direct FIFO
	env  *qdisc.Env
	tap  *tap       // env.Root: counts what the tree injects, then enters q
	now  clock.Time // latest time seen, for SetChain

	trace   *Trace
	cur     cursor         // next delivery opportunity not yet used
	transit *packet.Packet // packet partly sent by the trace's opportunities
	left    int            // bytes of transit still to send
	// wait is when the tree said, at the latest opportunity that found
	// nothing ready, it might next have a packet (0 once anything arrives).
	wait clock.Time
	out  packet.Queue // packets fully sent by the trace, not yet dequeued

	account
}

// denseFlows bounds the flow numbers kept in slices; larger ones (and
// negative ones, for PerFlow) go to maps.
const denseFlows = 1 << 16

// New builds a direction from cfg: its qdisc tree from cfg.Chain with
// qdisc.Build, or a direct path if the chain is empty.
func New(cfg Config) (*Direction, error) {
	d := &Direction{
		name:  cfg.Name,
		hook:  cfg.Hook,
		trace: cfg.Trace,
		env:   new(qdisc.Env),
	}
	d.account.init(cfg.PerFlow, cfg.KeepDelays, cfg.MaxKeptDelays)
	*d.env = cfg.Env
	d.env.Observer, d.env.Root = d, nil
	if d.trace != nil {
		d.cur = d.trace.seek(0)
	}
	var root qdisc.Qdisc
	if len(cfg.Chain) > 0 {
		var err error
		if root, err = qdisc.Build(cfg.Chain, d.env); err != nil {
			return nil, d.errorf(err)
		}
	}
	d.setRoot(root)
	return d, nil
}

// setRoot makes root (nil for a direct path) the tree packets enter, and
// the tap that counts what the tree injects (netem's duplicates) its
// Env.Root.
func (d *Direction) setRoot(root qdisc.Qdisc) {
	d.root = root
	d.q = root
	if root == nil {
		d.q = &direct{env: d.env}
	}
	if d.tap == nil {
		d.tap = &tap{d: d}
	}
	d.tap.Qdisc = d.q
	d.env.Root = d.tap
}

// DirectionSeed is the seed of the direction named name ("up", "down") in
// a run whose seed is seed: Config.Env.Seed for that direction. The
// simulator and the lab both derive their directions' seeds with it, so
// that one run seed means the same streams in both. Each name gives an
// unrelated stream (qdisc.DeriveSeed of seed and the FNV-1a hash of the
// name).
func DirectionSeed(seed uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return qdisc.DeriveSeed(seed, h.Sum64())
}

// Name returns the direction's name.
func (d *Direction) Name() string { return d.name }

// Root returns the root of the qdisc tree, or nil for a direct path.
func (d *Direction) Root() qdisc.Qdisc { return d.root }

// Trace returns the direction's trace, or nil.
func (d *Direction) Trace() *Trace { return d.trace }

// Len returns the number of packets inside the direction: in its trees, on
// the trace's wire, and due but not yet dequeued.
func (d *Direction) Len() int {
	n := d.q.Len() + d.out.Len()
	if d.transit != nil {
		n++
	}
	return n
}

// Enqueue offers p at time now: it stamps p.Arrival, counts it and hands it
// to the tree, which keeps it or reports it dropped. The direction owns p
// from now on.
func (d *Direction) Enqueue(now clock.Time, p *packet.Packet) {
	d.now = now
	p.Arrival = now
	d.sent(p, d.env.PktLen(p))
	if d.hook != nil {
		d.emit(now, Enqueue, qdisc.ReasonNone, nil, p)
	}
	if d.trace != nil {
		// Opportunities before now passed while p was not there yet.
		d.advance(now, false)
		d.wait = 0
	}
	d.q.Enqueue(now, p)
}

// Dequeue returns the next packet that may leave at now, or nil and the
// time at which one may (clock.Never if none will without new arrivals).
// Call it until it returns nil to release everything that is due. The
// caller owns the packet returned. The packet's delay is counted as now -
// Arrival.
func (d *Direction) Dequeue(now clock.Time) (*packet.Packet, clock.Time) {
	return d.DequeueLate(now, now)
}

// DequeueLate is Dequeue for a caller that asks at now but should have
// asked at due (not after now, not before the time of its last call): the
// tree decides at due, as it would have had the caller come on time, and
// the packet's delay is counted to now, when it leaves, since a caller
// that comes late (the real-time router) delays it by its own lateness
// too, which is what the receiver sees.
func (d *Direction) DequeueLate(due, now clock.Time) (*packet.Packet, clock.Time) {
	d.now = due
	if d.trace == nil {
		p, next := d.q.Dequeue(due)
		if p == nil {
			return nil, next
		}
		d.deliver(now, p)
		return p, due
	}
	d.advance(due, true)
	if p := d.out.Pop(); p != nil {
		d.deliver(now, p)
		return p, due
	}
	switch {
	case d.transit != nil:
		return nil, d.cur.t
	case d.wait == clock.Never || d.Len() == 0:
		return nil, clock.Never
	case d.wait > d.cur.t:
		return nil, d.trace.Next(d.wait)
	}
	return nil, d.cur.t
}

// advance uses the trace's delivery opportunities before now (or up to and
// including now), as mahimahi's LinkQueue::rationalize does: each
// opportunity has OpportunityBytes bytes; a packet is taken from the tree
// when the previous one is fully sent and leaves when its last byte is,
// so several small packets can share an opportunity and a large one spans
// several. Bytes of an opportunity that finds nothing ready are lost.
func (d *Direction) advance(now clock.Time, inclusive bool) {
	limit := now
	if inclusive {
		limit++
	}
	for d.cur.t < limit {
		t := d.cur.t
		budget := OpportunityBytes
		starved := false
		for budget > 0 {
			if d.transit == nil {
				p, next := d.q.Dequeue(t)
				if p == nil {
					starved, d.wait = true, next
					break
				}
				d.transit, d.left = p, p.Len()
			}
			n := min(budget, d.left)
			d.left -= n
			budget -= n
			if d.left == 0 {
				d.out.Push(d.transit)
				d.transit = nil
			}
		}
		c := d.trace.next(d.cur)
		if starved {
			// Nothing can use the opportunities before the tree's own
			// deadline, up to the next arrival (which comes through
			// Enqueue, and so after this call), so skip them instead of
			// visiting each.
			if s := d.trace.seek(min(d.wait, limit)); s.after(c) {
				c = s
			}
		}
		d.cur = c
	}
}

// deliver accounts for p leaving at now.
func (d *Direction) deliver(now clock.Time, p *packet.Packet) {
	d.delivered(p, d.env.PktLen(p), int64(now-p.Arrival))
	if d.hook != nil {
		d.emit(now, Dequeue, qdisc.ReasonNone, nil, p)
	}
}

// Drop implements qdisc.Observer: it counts p as dropped by from for why,
// reports it to the hook and frees it.
func (d *Direction) Drop(now clock.Time, p *packet.Packet, from qdisc.Qdisc, why qdisc.Reason) {
	d.dropped(p, why)
	if d.hook != nil {
		d.emit(now, Drop, why, from, p)
	}
	p.Free()
}

// Mark implements qdisc.Observer: it counts the CE mark and reports it to
// the hook; p stays in the tree.
func (d *Direction) Mark(now clock.Time, p *packet.Packet, from qdisc.Qdisc, why qdisc.Reason) {
	d.marked(p)
	if d.hook != nil {
		d.emit(now, Mark, why, from, p)
	}
}

func (d *Direction) emit(now clock.Time, k EventKind, why qdisc.Reason, from qdisc.Qdisc, p *packet.Packet) {
	d.ev = Event{Time: now, Kind: k, Reason: why, Qdisc: from, Packet: p}
	d.hook.Event(&d.ev)
	d.ev.Packet = nil
}

// Counters returns a snapshot of the direction's counters.
func (d *Direction) Counters() Counters { return d.total.snapshot() }

// FlowCounters returns a snapshot of the counters of every flow seen, by
// packet.Flow (router traffic without a flow number shares one entry), or
// nil unless Config.PerFlow is set.
func (d *Direction) FlowCounters() map[int32]Counters { return d.flowCounters() }

var _ qdisc.Observer = (*Direction)(nil)

// ReserveDelays prepares the exact delay records (Config.KeepDelays) for n
// more delivered packets in all, and, with PerFlow, perFlow[f] more in flow
// f, so that a long run does not repeatedly grow and copy them. It is only
// an optimisation; it does nothing without KeepDelays, and reserves no
// more than Config.MaxKeptDelays allows.
func (d *Direction) ReserveDelays(n int, perFlow map[int32]int) { d.reserve(n, perFlow) }
