package qdisc

import (
	"fmt"

	"wanlab/clock"
	"wanlab/packet"
)

// Limits of fq_codel's options, as the kernel enforces them.
const (
	// MaxFQCoDelFlows is the largest flows value fq_codel_change accepts.
	MaxFQCoDelFlows = 65536
	// MinFQCoDelQuantum is the smallest quantum: smaller ones are raised.
	MinFQCoDelQuantum = 256
	// MaxFQCoDelQuantum is FQ_CODEL_QUANTUM_MAX: larger ones are rejected.
	MaxFQCoDelQuantum = 1 << 20
	// MaxFQCoDelMemoryLimit is the cap the kernel silently applies to
	// memory_limit.
	MaxFQCoDelMemoryLimit = 1 << 31
)

// DefaultFQCoDelMemOverhead is the default of FQCoDelConfig.MemOverhead:
// what skb->truesize adds to the length (Env.PktLen) of a full-size packet
// read from a TUN device on x86-64, the one case measured; wanlab uses it
// for every framing. tun_get_user allocates 64 bytes of headroom
// (NET_SKB_PAD) plus the packet linearly; for 1500 bytes __alloc_skb rounds
// 1600 + 320 (struct skb_shared_info) up to a 2 KiB kmalloc, so truesize
// is 1728 + 256 (struct sk_buff, cache-aligned) + 320 = 2304, and 2304 -
// 1500 = 804. Smaller packets land in smaller slabs and add between about
// 670 and 860 bytes; the full-size figure is used because memory_limit
// binds under bulk traffic.
const DefaultFQCoDelMemOverhead = 804

// FQCoDel is Linux's fq_codel (sch_fq_codel.c): packets are hashed into
// flow queues, each managed by its own CoDel instance, and served by
// deficit round robin in which flows that have just become active (new
// flows) go before the others (old flows). When the packet or memory limit
// is exceeded, packets are dropped from the head of the flow with the
// largest backlog, in a batch.
type FQCoDel struct {
	cfg    FQCoDelConfig
	env    *Env
	seed   uint64
	params codelParams
	cstats codelStats

	fqSched
	cvars    []codelVars // each flow's CoDel
	backlogs []uint32    // bytes per flow, apart so the fattest-flow scan stays in cache
	serving  int32       // the flow CoDel is serving, for codelPop
	// c walks the units of the head packet of flow curFlow, the only flow
	// whose units can be taken but not handed out (see cursor).
	c       cursor
	curFlow int32

	memOverhead int
	u           units
	memUsage    int // truesize of the packets in the flow queues
	qlen        int // packets in the flow queues
	backlog     int // bytes in the flow queues, as the device counts them

	// peeked is the run Peek decided on, and a unit c holds is decided
	// too. They still count in Len (and so against limit) but no longer
	// in a flow or in memory, as in the kernel.
	peeked peekHold
	stats  Stats

	dropOverlimit  uint32
	dropOvermemory uint32
}

var _ Qdisc = (*FQCoDel)(nil)

// NewFQCoDel returns an fq_codel discipline. Zero fields take tc's
// defaults: limit 10240 packets, 1024 flows, target 5ms, interval 100ms,
// quantum env.PschedMTU(), memory_limit 32 MiB, drop_batch 64, no
// ce_threshold, and MemOverhead DefaultFQCoDelMemOverhead.
//
// ECN is taken as given: tc's default is "ecn", so a caller that wants
// fq_codel as tc sets it up must set ECN (a false ECN means noecn).
//
// A quantum below 256 is raised to 256 and a memory_limit above 2^31 is
// lowered to 2^31, as the kernel does; flows above 65536 and a quantum above
// 1 MiB are errors. The flow hash is keyed by PositionSeed(env.Seed, 0), as
// the root of a tree.
func NewFQCoDel(cfg FQCoDelConfig, env *Env) (*FQCoDel, error) {
	return newFQCoDel(cfg, env, rootSeed(env))
}

// newFQCoDel is NewFQCoDel with the seed of the discipline's position,
// which keys its flow hash.
func newFQCoDel(cfg FQCoDelConfig, env *Env, seed uint64) (*FQCoDel, error) {
	if err := env.Check(); err != nil {
		return nil, fmt.Errorf("fq_codel: %w", err)
	}
	if err := fillFQCoDelConfig(&cfg, env); err != nil {
		return nil, err
	}
	q := &FQCoDel{
		env:      env,
		fqSched:  newFQSched(cfg.Flows),
		cvars:    make([]codelVars, cfg.Flows),
		backlogs: make([]uint32, cfg.Flows),
		u:        unitsOf(env),
		seed:     seed,
		curFlow:  -1,
	}
	q.apply(cfg)
	return q, nil
}

// apply takes cfg, validated and filled in, as the configuration.
func (q *FQCoDel) apply(cfg FQCoDelConfig) {
	q.cfg = cfg
	q.quantum = int32(cfg.Quantum)
	q.memOverhead = cfg.MemOverhead
	// The kernel clamps the MTU guard like the default quantum.
	mtu := min(max(q.env.PschedMTU(), MinFQCoDelQuantum), MaxFQCoDelQuantum)
	q.params = newCoDelParams(cfg.Target, cfg.Interval, cfg.CEThreshold, mtu, cfg.ECN, cfg.InvSqrt)
}

// checkChange reports whether Change would accept spec.
func (q *FQCoDel) checkChange(spec Spec) error {
	_, err := q.changedConfig(spec)
	return err
}

// changedConfig validates spec as a new configuration of q and returns it
// filled in. The kernel sets the number of flows only when it creates
// fq_codel (fq_codel_change refuses a new one), so flows must stay.
func (q *FQCoDel) changedConfig(spec Spec) (FQCoDelConfig, error) {
	c, err := specAs[FQCoDelConfig](q, spec)
	if err != nil {
		return c, err
	}
	if err := fillFQCoDelConfig(&c, q.env); err != nil {
		return c, err
	}
	if c.Flows != len(q.flows) {
		return c, fmt.Errorf("fq_codel: flows cannot change from %d to %d: the kernel sets them only when it creates fq_codel; keep flows %d, or set a path without this fq_codel first and then one with the new flows", len(q.flows), c.Flows, len(q.flows))
	}
	return c, nil
}

// Change applies spec as the kernel's fq_codel_change does: the flows and
// their CoDel state stay, the new quantum applies from each flow's next
// refill, the new CoDel parameters at once, and while the discipline holds
// more than the new limit or memory_limit it dequeues packets through its
// own scheduler (CoDel may drop on the way, ReasonCoDel) and drops them
// (ReasonLimit). The number of flows cannot change (see changedConfig). A new
// mem_overhead re-counts the memory of the packets held.
func (q *FQCoDel) Change(now clock.Time, spec Spec) error {
	c, err := q.changedConfig(spec)
	if err != nil {
		return err
	}
	q.apply(c)
	q.memUsage = q.backlog + q.qlen*q.memOverhead
	for q.Len() > q.cfg.Limit || q.memUsage > q.cfg.MemoryLimit {
		p := q.take(now, nil)
		if p == nil {
			break // only decided units are left
		}
		if excess := q.Len() + q.u.count(p) - q.cfg.Limit; q.peeked.p == nil && excess > 0 && excess < q.u.count(p) && q.memUsage <= q.cfg.MemoryLimit {
			// The units beyond the excess were decided with it: they
			// leave next, as peeked ones.
			p, q.peeked.p = q.env.cut(p, excess)
		}
		dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonLimit)
	}
	return nil
}

// Flush drops every packet held, peeked ones included, with ReasonFlushed,
// and leaves every flow empty and unlinked.
func (q *FQCoDel) Flush(now clock.Time) {
	q.peeked.flush(now, q, q.env, q.u, &q.stats)
	for i := range q.flows {
		flushRing(now, &q.flows[i].q, q, q.env, q.u, &q.stats)
		q.backlogs[i] = 0
	}
	q.unlinkAll()
	q.c.reset()
	q.qlen, q.backlog, q.memUsage = 0, 0, 0
}

// fillFQCoDelConfig validates cfg and fills in the defaults.
func fillFQCoDelConfig(cfg *FQCoDelConfig, env *Env) error {
	const kind = "fq_codel"
	for _, f := range []struct {
		name string
		v    int
	}{{"limit", cfg.Limit}, {"flows", cfg.Flows}, {"quantum", cfg.Quantum}, {"memory_limit", cfg.MemoryLimit}, {"drop_batch", cfg.DropBatch}, {"memory overhead", cfg.MemOverhead}} {
		if f.v < 0 {
			return fmt.Errorf("%s: %s %d is negative; give a positive value or 0 for the default", kind, f.name, f.v)
		}
	}
	if cfg.Flows > MaxFQCoDelFlows {
		return fmt.Errorf("%s: flows %d exceeds %d; give at most %d flows", kind, cfg.Flows, MaxFQCoDelFlows, MaxFQCoDelFlows)
	}
	if cfg.Quantum > MaxFQCoDelQuantum {
		return fmt.Errorf("%s: quantum %d exceeds %d bytes (1 MiB); give a smaller quantum, such as the MTU", kind, cfg.Quantum, MaxFQCoDelQuantum)
	}
	if cfg.InvSqrt != InvSqrtLinux && cfg.InvSqrt != InvSqrtExact {
		return fmt.Errorf("%s: unknown invsqrt mode %d; use linux or exact", kind, cfg.InvSqrt)
	}
	*cfg = cfg.WithDefaults()
	if err := checkCoDelTimes(kind, cfg.Target, cfg.Interval, cfg.CEThreshold); err != nil {
		return err
	}
	if cfg.Quantum == 0 {
		cfg.Quantum = min(env.PschedMTU(), MaxFQCoDelQuantum)
	}
	cfg.Quantum = max(cfg.Quantum, MinFQCoDelQuantum)
	cfg.MemoryLimit = min(cfg.MemoryLimit, MaxFQCoDelMemoryLimit)
	orDefault(&cfg.MemOverhead, DefaultFQCoDelMemOverhead)
	return nil
}

// flowIndex is fq_codel_hash: the flow hash scaled onto the flow table by
// a multiply and shift (reciprocal_scale).
func (q *FQCoDel) flowIndex(p *packet.Packet) int32 { return flowSlot(p, q.seed, len(q.flows)) }

// flowSlot is the flow hash of p keyed by seed (packet.FlowHash, the
// emulator's skb_get_hash) scaled onto a table of n flows by a multiply and
// shift, as reciprocal_scale does in fq_codel_hash and fq_pie_hash.
func flowSlot(p *packet.Packet, seed uint64, n int) int32 {
	return int32(uint64(p.FlowHash(seed)) * uint64(n) >> 32)
}

// Enqueue stamps p and appends it to its flow, which becomes a new flow if
// it was on no list. Past limit or memory_limit it drops from the head of
// the fattest flow and returns Congested if that was p's own flow (p itself
// may have been among the drops), Queued otherwise. The segments of a
// super-packet arrive one after the other (GranularitySegment): the limits
// are checked after each.
func (q *FQCoDel) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := q.enqueueUnits(now, p)
	return v
}

func (q *FQCoDel) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	idx := q.flowIndex(p)
	f := &q.flows[idx]
	p.Enqueued = now
	if q.u.one(p) {
		over, memLimited := q.arrive(idx, q.u.whole(p))
		f.q.Push(p)
		if over && q.overflow(now, idx, memLimited) {
			return 0, Congested
		}
		return 0, Queued
	}
	n := p.Segments()
	congested := false
	rest, pend := p, 0
	for range n {
		size := q.u.size(rest, pend)
		pend++
		over, memLimited := q.arrive(idx, size)
		if !over {
			continue
		}
		// The units so far are in the flow; what follows is not yet.
		if pend == q.u.count(rest) {
			f.q.Push(rest)
			rest = nil
		} else {
			var head *packet.Packet
			head, rest = q.env.cut(rest, pend)
			f.q.Push(head)
		}
		pend = 0
		if q.overflow(now, idx, memLimited) {
			congested = true
		}
	}
	if rest != nil {
		f.q.Push(rest)
	}
	if congested {
		return 0, Congested
	}
	return 0, Queued
}

// arrive counts a unit of size bytes arriving in flow idx, which
// becomes a new flow if it was on no list, and reports whether the
// discipline is now over its limit or its memory_limit (memLimited).
func (q *FQCoDel) arrive(idx int32, size int) (over, memLimited bool) {
	q.backlogs[idx] += uint32(size)
	q.backlog += size
	q.qlen++
	q.activate(idx)
	q.memUsage += size + q.memOverhead
	memLimited = q.memUsage > q.cfg.MemoryLimit
	return memLimited || q.Len() > q.cfg.Limit, memLimited
}

// overflow drops from the fattest flow after a unit of flow idx put the
// discipline over a limit (memLimited: its memory_limit), counts the drops,
// and reports whether the fattest flow was idx.
func (q *FQCoDel) overflow(now clock.Time, idx int32, memLimited bool) bool {
	dropped, fat := q.dropFattest(now)
	q.dropOverlimit += uint32(dropped)
	if memLimited {
		q.dropOvermemory += uint32(dropped)
	}
	return fat == idx
}

// dropFattest is fq_codel_drop: it finds the flow with the largest backlog
// and drops from its head until half that backlog is gone or drop_batch
// packets are, and at least one. It returns how many it dropped and the
// flow's index. A unit the cursor holds there is not in the queue (it is
// the peeked skb) and stays.
func (q *FQCoDel) dropFattest(now clock.Time) (int, int32) {
	var maxBacklog uint32
	var fat int32
	for i, b := range q.backlogs {
		if b > maxBacklog {
			maxBacklog, fat = b, int32(i)
		}
	}
	threshold := maxBacklog >> 1
	f := &q.flows[fat]
	var keep *packet.Packet
	if q.c.held && q.curFlow == fat {
		keep = q.c.isolateHeld(&f.q, q.env)
	}
	var bytes uint32
	n := 0
	for i := 0; i < f.q.Len() && n < q.cfg.DropBatch && (n == 0 || bytes < threshold); i++ {
		h := f.q.At(i)
		for j, k := 0, q.u.count(h); j < k && n < q.cfg.DropBatch && (n == 0 || bytes < threshold); j++ {
			bytes += uint32(q.u.size(h, j))
			n++
		}
	}
	dropFront(now, &f.q, n, q, q.env, q.u, &q.stats, ReasonOverflow)
	if keep != nil {
		f.q.PushFront(keep)
	}
	q.memUsage -= int(bytes) + n*q.memOverhead
	// The kernel also raises the flow's CoDel count, so that its control
	// law drops faster once it gets going.
	q.cvars[fat].count += uint32(n)
	q.backlogs[fat] -= bytes
	q.backlog -= int(bytes)
	q.qlen -= n
	return n, fat
}

// Dequeue returns the next packet by DRR over the new flows, then the old
// ones, each flow's head going through its CoDel; nil and clock.Never when
// every flow is empty. The run it returns is the units of one flow's head
// packet that DRR and CoDel let go one after the other.
func (q *FQCoDel) Dequeue(now clock.Time) (*packet.Packet, clock.Time) { return q.dequeueRun(now, nil) }

func (q *FQCoDel) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	return q.peeked.dequeueDecided(now, g, q.u, q.env, &q.stats, &q.c, q.take)
}

// Peek returns the packet the next Dequeue will return; the scheduling and
// CoDel decisions (and their drops) happen here, once.
func (q *FQCoDel) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	return q.peeked.peekDecided(now, q.take)
}

// take is __fq_codel_dequeue, unit by unit, for as long as the units DRR
// and CoDel let go come one after the other from one flow's head packet
// and g admits them; it returns them as one run.
func (q *FQCoDel) take(now clock.Time, g gate) *packet.Packet {
	c := &q.c
	if c.held && !c.resume(now, g) {
		return nil
	}
	for {
		if c.full() {
			break // the head packet is done: the next dequeue goes on
		}
		if c.run > 0 && !moreUnits(g) {
			break // g wants no more: the next dequeue goes on
		}
		idx := q.head()
		if idx < 0 {
			break
		}
		if c.run > 0 && idx != q.curFlow {
			// Another flow's turn: the next dequeue goes on from
			// here, the turn already taken.
			break
		}
		if c.run == 0 && c.out == nil {
			q.curFlow = idx
		}
		if !q.serve(now, idx) {
			continue
		}
		q.curFlow = idx
		if c.single() {
			if g == nil && c.marks == 0 {
				return c.popSingle(&q.flows[idx].q)
			}
			return c.handSingle(now, &q.flows[idx].q, g, q.env, q)
		}
		if !c.admit(now, g) || !q.bulk(now, idx, g) {
			break
		}
	}
	if q.curFlow < 0 {
		return nil
	}
	return c.finish(now, &q.flows[q.curFlow].q, q.env, q)
}

// bulk takes the rest of the units of flow idx's head packet into the run
// in one go where the unit by unit path is sure to: the flow is the only
// one on the lists, so that DRR comes back to it after every unit, and its
// CoDel just let a unit of that packet (so of the same sojourn time) go
// below target, not dropping and not marking, so that it lets the others
// go too. It does what that path would: the deficit, the lists, the
// counts, CoDel's figures. It reports whether the caller may go on (g
// refused no unit).
func (q *FQCoDel) bulk(now clock.Time, idx int32, g gate) bool {
	f := &q.flows[idx]
	v, c := &q.cvars[idx], &q.c
	if q.newFlows.n+q.oldFlows.n != 1 || v.dropping || c.runMarks != 0 ||
		!v.ldelay.before(q.params.target) || v.ldelay.after(q.params.ceThreshold) {
		return true
	}
	for !c.full() {
		if !moreUnits(g) {
			return false
		}
		if f.deficit <= 0 {
			f.deficit += q.quantum
			if f.list == fqNewList {
				q.oldFlows.pushBack(q.flows, q.newFlows.popFront(q.flows))
			}
		}
		_, size, _ := q.codelPop()
		if n := uint32(size); n > q.cstats.maxPacket {
			q.cstats.maxPacket = n
		}
		f.deficit -= int32(size)
		if !c.admit(now, g) {
			return false
		}
	}
	return true
}

// serve runs flow idx's CoDel, which takes units off its head until one
// may leave, and reports whether one may; it charges the flow's deficit
// for it. A flow that yields nothing leaves its list: an emptied new flow
// goes through the old list before it is unlinked, so that it cannot
// starve the old flows by turning new again and again.
func (q *FQCoDel) serve(now clock.Time, idx int32) bool {
	q.serving = idx
	if !q.cvars[idx].dequeue(now, q, &q.params, &q.cstats) {
		q.retire(idx)
		return false
	}
	q.flows[idx].deficit -= int32(q.c.last)
	return true
}

// Len returns the number of packets held, peeked ones included.
func (q *FQCoDel) Len() int {
	n, _ := q.c.heldUnits()
	return q.qlen + n + q.peeked.units(q.u)
}

// Backlog returns the bytes held, peeked ones included, as the device
// counts them.
func (q *FQCoDel) Backlog() int {
	_, l := q.c.heldUnits()
	return q.backlog + l + q.peeked.size(q.u)
}

// Stats returns the tc -s counters.
func (q *FQCoDel) Stats() Stats {
	s := q.stats
	s.Qlen = q.Len()
	s.Backlog = q.Backlog()
	return s
}

// FQCoDelXStats are fq_codel's extended statistics (struct
// tc_fq_codel_qd_stats), as tc -s prints them under the qdisc line.
type FQCoDelXStats struct {
	MaxPacket      uint32 // largest packet CoDel examined
	DropOverlimit  uint32 // packets dropped because limit or memory_limit was exceeded
	ECNMark        uint32 // packets CE-marked by CoDel instead of dropped
	NewFlowCount   uint32 // times a flow became a new flow
	NewFlowsLen    uint32 // flows on the new list now
	OldFlowsLen    uint32 // flows on the old list now
	CEMark         uint32 // packets CE-marked for exceeding ce_threshold
	MemoryUsage    uint32 // truesize bytes held in the flow queues
	DropOvermemory uint32 // drops made while memory_limit was exceeded
}

// XStats returns the extended statistics.
func (q *FQCoDel) XStats() FQCoDelXStats {
	return FQCoDelXStats{
		MaxPacket:      q.cstats.maxPacket,
		DropOverlimit:  q.dropOverlimit,
		ECNMark:        q.cstats.ecnMark,
		NewFlowCount:   q.newFlowCount,
		NewFlowsLen:    uint32(q.newFlows.n),
		OldFlowsLen:    uint32(q.oldFlows.n),
		CEMark:         q.cstats.ceMark,
		MemoryUsage:    uint32(q.memUsage),
		DropOvermemory: q.dropOvermemory,
	}
}

// Kind returns "fq_codel".
func (q *FQCoDel) Kind() string { return "fq_codel" }

// Child returns nil: fq_codel's classes are its flows, not child qdiscs.
func (q *FQCoDel) Child() Qdisc { return nil }

// Config returns the configuration with defaults filled in.
func (q *FQCoDel) Config() Spec { return q.cfg }

func (q *FQCoDel) codelPop() (clock.Time, int, bool) {
	enq, size, ok := q.c.pop(&q.flows[q.serving].q, q.u)
	if ok {
		q.backlogs[q.serving] -= uint32(size)
		q.memUsage -= size + q.memOverhead
		q.qlen--
		q.backlog -= size
	}
	return enq, size, ok
}

func (q *FQCoDel) codelBacklog() int { return q.backlog }

func (q *FQCoDel) codelDrop(now clock.Time) {
	q.c.drop(now, &q.flows[q.serving].q, q.u, q.env, q, &q.stats, ReasonCoDel)
}

func (q *FQCoDel) codelMark(now clock.Time, why Reason) bool {
	if packet.ECNOf(q.flows[q.serving].q.Front().Bytes()) == packet.NotECT {
		return false
	}
	q.c.marks = q.c.marks.with(why)
	q.stats.Marks++
	return true
}
