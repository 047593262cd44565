package qdisc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

// sfqSeedSalt is the second word of sfq's PCG state (its hash keys and
// RED's draws), the first being the discipline's seed.
const sfqSeedSalt = 0x7366715f6b657973 // "sfq_keys"

// Limits and defaults of sfq, as Linux 6.1's sch_sfq.c has them.
const (
	// SFQMaxDepth is SFQ_MAX_DEPTH, the most packets a flow may hold, and
	// the default depth.
	SFQMaxDepth = 127
	// DefaultSFQLimit is the limit sfq_init sets: SFQ_MAX_DEPTH packets.
	DefaultSFQLimit = SFQMaxDepth
	// DefaultSFQFlows is SFQ_DEFAULT_FLOWS.
	DefaultSFQFlows = 128
	// SFQMaxFlows is SFQ_MAX_FLOWS: the slot indices and the depth lists'
	// heads share 16 bits.
	SFQMaxFlows = 0x10000 - SFQMaxDepth - 1
	// DefaultSFQDivisor is SFQ_DEFAULT_HASH_DIVISOR, the buckets of the
	// hash table; SFQMaxDivisor the most sfq_change accepts.
	DefaultSFQDivisor = 1024
	SFQMaxDivisor     = 65536
	// SFQMaxQuantum is the largest quantum sfq_change accepts: a slot's
	// allotment is a short in units of 2^SFQ_ALLOT_SHIFT bytes, so the
	// scaled quantum must not pass SHRT_MAX.
	SFQMaxQuantum = math.MaxInt16 << sfqAllotShift
	// DefaultSFQAvpkt and DefaultSFQProbability are tc's defaults for the
	// RED mode's avpkt and probability (q_sfq.c).
	DefaultSFQAvpkt       = 1000
	DefaultSFQProbability = 0.02
)

// sfqAllotShift is SFQ_ALLOT_SHIFT: allotments count bytes in eighths, so
// that a short holds a 64 KiB packet's worth.
const sfqAllotShift = 3

// sfqAllot is SFQ_ALLOT_SIZE: a length in allotment units, rounded up.
func sfqAllot(n int) int32 { return int32((n + 1<<sfqAllotShift - 1) >> sfqAllotShift) }

// sfqEmpty is SFQ_EMPTY_SLOT, a hash bucket with no slot.
const sfqEmpty = 0xffff

// SFQConfig configures sfq (tc-sfq(8)). A zero field means the option was
// not given: the kernel keeps its default (limit 127 packets, quantum
// psched_mtu, divisor 1024, flows 128, depth 127, no perturbation) for an
// option tc sends as 0.
type SFQConfig struct {
	// Limit is the most packets sfq holds. Given, the kernel lowers it to
	// Depth·Flows and lowers Flows to it; left out it stays 127 and
	// lowers nothing.
	Limit int
	// Perturb is the period of the hash's re-keying, in seconds (0: the
	// key never changes).
	Perturb int
	// Quantum is the bytes a flow sends in its turn of the round robin.
	Quantum int
	// Divisor is the number of hash buckets, a power of two up to 65536;
	// Flows the number of flow slots (at most the divisor and
	// SFQMaxFlows); Depth the packets a flow may hold (at most 127).
	Divisor, Flows, Depth int
	// HeadDrop drops from a flow's head rather than its tail.
	HeadDrop bool
	// RedFlowLimit, in bytes, turns on the RED mode, a RED per flow on its
	// backlog: tc's "redflowlimit", from which tc derives the thresholds'
	// defaults (Max RedFlowLimit/4, Min Max/3); the kernel does not keep
	// it. Min and Max are bytes, Avpkt the average packet (default 1000),
	// Burst packets (default (2·Min + Max)/(3·Avpkt)), Probability the
	// marking probability at Max (default 0.02). ECN marks ECN-capable
	// packets instead of dropping them, HardDrop still drops them at Max.
	RedFlowLimit  int
	Min, Max      int
	Avpkt, Burst  int
	Probability   float64
	ECN, HardDrop bool
}

// Kind returns "sfq".
func (SFQConfig) Kind() string { return "sfq" }

// usesRED reports whether any option of the RED mode is given, which makes
// tc require redflowlimit.
func (c SFQConfig) usesRED() bool {
	return c.RedFlowLimit != 0 || c.Min != 0 || c.Max != 0 || c.Avpkt != 0 || c.Burst != 0 ||
		c.Probability != 0 || c.ECN || c.HardDrop
}

// WithDefaults returns c with tc's defaults for the RED mode filled in, as
// q_sfq.c computes them before it sends them (Max, Min, Avpkt, Burst,
// Probability), when RedFlowLimit is given; the kernel's defaults (limit,
// quantum, divisor, flows, depth) stay 0, since tc leaves them to the
// kernel.
func (c SFQConfig) WithDefaults() SFQConfig {
	if c.RedFlowLimit == 0 {
		return c
	}
	orDefault(&c.Avpkt, DefaultSFQAvpkt)
	orDefault(&c.Probability, DefaultSFQProbability)
	if c.Max == 0 {
		c.Max = int(uint32(c.RedFlowLimit) / 4)
	}
	if c.Min == 0 {
		c.Min = int(uint32(c.Max) / 3)
	}
	if c.Burst == 0 {
		// tc's unsigned arithmetic.
		c.Burst = int((2*uint32(c.Min) + uint32(c.Max)) / (3 * uint32(c.Avpkt)))
	}
	return c
}

// SFQDump is an sfq's configuration as the kernel holds it and sfq_dump
// reports it (what tc shows): the defaults and the clamping of sfq_change
// applied, and what tc computed for the RED mode.
type SFQDump struct {
	Limit, Quantum, Depth, Flows, Divisor int
	// Perturb is the re-keying period in seconds.
	Perturb  int
	HeadDrop bool
	// RED says the RED mode is on; Wlog is its averaging constant's
	// logarithm ("ewma"), Min and Max its thresholds in bytes, MaxP the
	// marking probability at Max as a fraction of 2^32.
	RED           bool
	Wlog          int
	Min, Max      int
	MaxP          uint32
	ECN, HardDrop bool
}

// sfqParams is what sfq runs with: the dump, and the RED mode's tc values.
type sfqParams struct {
	SFQDump
	red       redTC
	limitCut  bool // the limit given was lowered to depth·flows
	scaledQ   int32
	perturbNs time.Duration
}

// Dump returns c as the kernel would hold it on env's device, or the error
// tc or the kernel gives for it.
func (c SFQConfig) Dump(env *Env) (SFQDump, error) {
	_, p, err := sfqConfigure(c, env)
	return p.SFQDump, err
}

// sfqConfigure validates c as tc's q_sfq.c and the kernel's sfq_change do
// and returns c with tc's defaults and what the kernel makes of it.
func sfqConfigure(c SFQConfig, env *Env) (SFQConfig, sfqParams, error) {
	var p sfqParams
	if err := env.Check(); err != nil {
		return c, p, fmt.Errorf("sfq: %w", err)
	}
	const u32 = math.MaxUint32
	for _, f := range []struct {
		name string
		v    int
	}{{"limit", c.Limit}, {"quantum", c.Quantum}, {"divisor", c.Divisor}, {"flows", c.Flows}, {"depth", c.Depth},
		{"redflowlimit", c.RedFlowLimit}, {"min", c.Min}, {"max", c.Max}, {"avpkt", c.Avpkt}, {"burst", c.Burst}} {
		if f.v < 0 || int64(f.v) > u32 {
			return c, p, fmt.Errorf("sfq: %s %d out of range; tc takes 0 to %d", f.name, f.v, uint32(u32))
		}
	}
	hz := env.Hz()
	switch {
	case c.Limit == 1:
		return c, p, fmt.Errorf("sfq: limit 1 is refused (tc: \"Illegal \\\"limit\\\", must be > 1\"); give a limit of 2 packets or more")
	case c.Perturb < 0 || c.Perturb > math.MaxInt32/hz:
		return c, p, fmt.Errorf("sfq: perturb %d out of range; the kernel takes 0 (never) to %d seconds at HZ %d", c.Perturb, math.MaxInt32/hz, hz)
	case c.Divisor != 0 && (c.Divisor&(c.Divisor-1) != 0 || c.Divisor > SFQMaxDivisor):
		return c, p, fmt.Errorf("sfq: divisor %d is not a power of two up to %d, which the kernel refuses (Invalid argument); give e.g. divisor 1024", c.Divisor, SFQMaxDivisor)
	case c.Quantum > SFQMaxQuantum:
		return c, p, fmt.Errorf("sfq: quantum %d exceeds %d bytes, the most a slot's 16-bit allotment holds (the kernel refuses it); give a smaller quantum, such as the MTU", c.Quantum, SFQMaxQuantum)
	case c.usesRED() && c.RedFlowLimit == 0:
		return c, p, fmt.Errorf("sfq: the RED options need redflowlimit (tc: \"Required parameter (redflowlimit) is missing\"); add e.g. redflowlimit 100000 (bytes)")
	case c.usesRED() && !(c.Probability == 0 || c.Probability > 0 && c.Probability < 1):
		return c, p, fmt.Errorf("sfq: probability %g is outside (0, 1); give the marking probability at max, e.g. 0.02", c.Probability)
	}
	c = c.WithDefaults()

	// sfq_init's defaults, then sfq_change's arithmetic.
	d := &p.SFQDump
	d.Limit, d.Depth, d.Flows, d.Divisor = DefaultSFQLimit, SFQMaxDepth, DefaultSFQFlows, DefaultSFQDivisor
	d.Quantum = env.PschedMTU()
	if c.Quantum != 0 {
		d.Quantum = c.Quantum
	}
	d.Perturb = c.Perturb
	if c.Flows != 0 {
		d.Flows = min(c.Flows, SFQMaxFlows)
	}
	if c.Divisor != 0 {
		d.Divisor = c.Divisor
		d.Flows = min(d.Flows, d.Divisor)
	}
	if c.Depth != 0 {
		d.Depth = min(c.Depth, SFQMaxDepth)
	}
	d.HeadDrop = c.HeadDrop
	if c.Limit != 0 {
		d.Limit = min(c.Limit, d.Depth*d.Flows)
		p.limitCut = d.Limit < c.Limit
		d.Flows = min(d.Flows, d.Limit)
	}
	if d.Limit == 1 {
		return c, p, fmt.Errorf("sfq: limit %d with depth %d and flows %d leaves a limit of 1 packet, which the kernel refuses (Invalid argument); give more depth or flows", c.Limit, d.Depth, d.Flows)
	}
	p.scaledQ = sfqAllot(d.Quantum)
	p.perturbNs = time.Duration(c.Perturb) * time.Second
	if c.RedFlowLimit != 0 {
		t, err := sfqRED(c)
		if err != nil {
			return c, p, err
		}
		p.red = t
		d.RED = t.qthMin != 0 // the kernel takes the RED mode on only with a min
		d.Wlog, d.Min, d.Max, d.MaxP = int(t.wlog), int(t.qthMin), int(t.qthMax), t.maxP
		d.ECN, d.HardDrop = c.ECN, c.HardDrop
	}
	return c, p, nil
}

// sfqRED computes, as q_sfq.c does, the RED mode's values from c (its
// defaults filled in): tc's checks of the thresholds, Wlog
// (tc_red_eval_ewma), Plog (tc_red_eval_P) and max_P; tc computes no idle
// damping table for sfq (its RED never sees an idle period). Then the
// kernel's red_check_params.
func sfqRED(c SFQConfig) (redTC, error) {
	var t redTC
	qmin, qmax, avpkt := uint32(c.Min), uint32(c.Max), uint32(c.Avpkt)
	switch {
	case qmax > uint32(c.RedFlowLimit):
		return t, fmt.Errorf("sfq: max %d is larger than redflowlimit %d (tc: \"\\\"max\\\" is larger than \\\"limit\\\"\"); give max at most redflowlimit", qmax, c.RedFlowLimit)
	case qmin >= qmax:
		return t, fmt.Errorf("sfq: min %d is not smaller than max %d (tc: \"\\\"min\\\" is not smaller than \\\"max\\\"\"); give min below max", qmin, qmax)
	}
	wlog, err := redEvalEWMA(qmin, uint32(c.Burst), avpkt)
	if err != nil {
		return t, sfqFromRED(err)
	}
	plog, ok := redEvalP(qmin, qmax, c.Probability)
	if !ok {
		return t, fmt.Errorf("sfq: no probability scale for min %d, max %d and probability %g (tc's \"SFQ: failed to calculate probability.\"); give a larger probability", qmin, qmax, c.Probability)
	}
	t = redTC{qthMin: qmin, qthMax: qmax, wlog: uint8(wlog), plog: uint8(plog),
		maxP: uint32(uint64(c.Probability * (1 << 32))), burst: uint32(c.Burst), largeBurst: wlog >= 10}
	if err := redCheck(t); err != nil {
		return t, sfqFromRED(err)
	}
	return t, nil
}

// sfqFromRED names sfq in an error of RED's shared arithmetic.
func sfqFromRED(err error) error {
	return fmt.Errorf("sfq: %s", strings.TrimPrefix(err.Error(), "red: "))
}

// sfqWarnings returns tc's warning for a burst that needs an averaging
// constant of 2^-10 or smaller ("SFQ: WARNING. Burst N seems to be too
// large."), and says when the kernel lowers the limit given to
// depth·flows.
func sfqWarnings(c SFQConfig, env *Env) []string {
	_, p, err := sfqConfigure(c, env)
	if err != nil {
		return nil
	}
	var w []string
	if p.limitCut {
		w = append(w, fmt.Sprintf("limit %d is more than depth %d × flows %d: the kernel lowers it to %d packets", c.Limit, p.Depth, p.Flows, p.Limit))
	}
	if p.red.largeBurst {
		w = append(w, fmt.Sprintf("burst %d seems to be too large (averaging constant 2^-%d): the flows' averages follow their queues very slowly", p.red.burst, p.red.wlog))
	}
	return w
}

// SFQStats are the RED mode's counters (struct tc_sfqred_stats), which tc
// -s prints among sfq's options.
type SFQStats struct {
	ProbDrop, ForcedDrop         uint64 // dropped between the thresholds, at or above max
	ProbMark, ForcedMark         uint64 // the arriving packet marked
	ProbMarkHead, ForcedMarkHead uint64 // headdrop: the flow's head marked instead
}

// SFQ is Stochastic Fairness Queueing as Linux's sch_sfq.c has it: each
// packet's flow (a keyed hash of its addresses, protocol and ports,
// skb_get_hash_perturb) picks one of Divisor buckets, each bucket holding
// at most one of Flows slots, a FIFO of at most Depth packets; the slots
// with packets are served round robin, each sending while its allotment
// (Quantum bytes a turn, counted in eighths of a byte, SFQ_ALLOT_SHIFT)
// lasts. Past Limit packets the last packet of the longest slot is dropped
// (its first with HeadDrop), the slot that reached that depth last when
// several have it, as sfq_drop does. With Perturb the hash is re-keyed
// every Perturb seconds and the packets held are re-sorted into the new
// slots in their order (sfq_rehash), so that no flow is reordered.
//
// In the RED mode every flow has RED's average of its backlog (red.h's
// arithmetic, red_core.go, without idle periods: sfq never starts one),
// which each packet arriving at a flow with packets moves and is judged by:
// early or forced drops and, with ECN, marks (with HeadDrop, of the flow's
// first packet when it can be marked).
//
// Packets are what Env.Granularity makes them: under GranularitySegment
// the segments of a super-packet arrive one after the other, each a
// packet of its flow. Peek takes the next packet by the round robin and
// holds it, as the kernel's qdisc_peek_dequeued does; it still counts
// against the limit.
//
// There is no timer: the re-keyings that fell due run at the next
// Enqueue, Dequeue or Peek, with the queue as it was; the first of these
// calls starts the period, as sfq_init arms the timer.
type SFQ struct {
	cfg SFQConfig
	p   sfqParams
	env *Env
	u   units
	rng *rand.PCG
	key uint64 // the hash's key, q->perturbation

	divMask uint32
	redOn   bool
	redP    redParams

	ht    []uint16  // bucket -> slot, or sfqEmpty
	slots []sfqSlot // q->slots
	// dep are the heads of the lists of slots by length (dep[0]: the
	// free slots), linked through each slot's dep; an index below
	// len(slots) is a slot, len(slots)+d is the head of list d.
	dep      [SFQMaxDepth + 1]sfqLink
	curDepth int   // the longest slot's length
	tail     int32 // the slot served last in the round (-1: none active)

	qlen    int // packets in the slots
	backlog int // their bytes, as the device counts them
	peeked  peekHold
	scratch ring // sfq_rehash's list

	started     bool
	nextPerturb clock.Time

	stats Stats
	x     SFQStats
}

var _ Qdisc = (*SFQ)(nil)

// sfqLink is struct sfq_head.
type sfqLink struct{ next, prev int32 }

// sfqSlot is struct sfq_slot: a flow's FIFO, its place in the round
// (next), its bucket, its allotment (in eighths of a byte), its backlog and
// its RED state.
type sfqSlot struct {
	q       ring
	qlen    int32
	next    int32
	dep     sfqLink
	hash    uint32
	allot   int32
	backlog uint32
	vars    redVars
}

// NewSFQ returns an sfq. Its hash key and RED draws come from
// PositionSeed(env.Seed, 0), as the root of a tree.
func NewSFQ(cfg SFQConfig, env *Env) (*SFQ, error) {
	return newSFQ(cfg, env, rootSeed(env))
}

func newSFQ(cfg SFQConfig, env *Env, seed uint64) (*SFQ, error) {
	c, p, err := sfqConfigure(cfg, env)
	if err != nil {
		return nil, err
	}
	q := &SFQ{cfg: c, p: p, env: env, u: unitsOf(env), rng: rand.NewPCG(seed, sfqSeedSalt), tail: -1}
	q.key = q.rng.Uint64()
	q.divMask = uint32(p.Divisor - 1)
	q.redOn = p.RED
	if q.redOn {
		q.redP.set(p.red)
	}
	q.ht = make([]uint16, p.Divisor)
	for i := range q.ht {
		q.ht[i] = sfqEmpty
	}
	q.slots = make([]sfqSlot, p.Flows)
	base := int32(len(q.slots))
	for d := range q.dep {
		q.dep[d] = sfqLink{base + int32(d), base + int32(d)}
	}
	// sfq_init links the slots into the free list in index order, each
	// at its head: the last slot is the first handed out.
	for i := range q.slots {
		q.slots[i].vars.reset()
		q.link(int32(i))
	}
	return q, nil
}

// head returns the sfqLink that index v stands for (sfq_dep_head).
func (q *SFQ) head(v int32) *sfqLink {
	if n := int32(len(q.slots)); v >= n {
		return &q.dep[v-n]
	}
	return &q.slots[v].dep
}

// link puts slot x at the head of the list of its length (sfq_link).
func (q *SFQ) link(x int32) {
	s := &q.slots[x]
	d := s.qlen
	n := q.dep[d].next
	s.dep = sfqLink{next: n, prev: int32(len(q.slots)) + d}
	q.dep[d].next = x
	q.head(n).prev = x
}

// unlink takes slot x off its list and returns its neighbours.
func (q *SFQ) unlink(x int32) (n, p int32) {
	s := &q.slots[x]
	n, p = s.dep.next, s.dep.prev
	q.head(p).next = n
	q.head(n).prev = p
	return n, p
}

// dec and inc move slot x to the list of its new length, keeping the
// longest length (sfq_dec, sfq_inc).
func (q *SFQ) dec(x int32) {
	n, p := q.unlink(x)
	d := q.slots[x].qlen
	q.slots[x].qlen--
	if n == p && q.curDepth == int(d) {
		q.curDepth--
	}
	q.link(x)
}

func (q *SFQ) inc(x int32) {
	q.unlink(x)
	q.slots[x].qlen++
	if d := int(q.slots[x].qlen); q.curDepth < d {
		q.curDepth = d
	}
	q.link(x)
}

// bucket is sfq_hash: the keyed flow hash masked to the divisor.
func (q *SFQ) bucket(p *packet.Packet) uint32 { return p.KeyedHash(q.key) & q.divMask }

// draw is the kernel's get_random_u32, for RED.
func (q *SFQ) draw() uint32 { return uint32(q.rng.Uint64() >> 32) }

// tick runs the re-keyings due by now: every Perturb seconds a new key,
// and the packets held re-sorted under it (sfq_perturbation). While sfq
// holds nothing, the keys of the periods that passed come to one draw.
func (q *SFQ) tick(now clock.Time) {
	if q.p.perturbNs == 0 || (q.started && now < q.nextPerturb) {
		return
	}
	if !q.started {
		q.started, q.nextPerturb = true, now.Add(q.p.perturbNs)
		return
	}
	for now >= q.nextPerturb {
		q.key = q.rng.Uint64()
		if q.tail < 0 {
			skip := int64(now-q.nextPerturb)/int64(q.p.perturbNs) + 1
			q.nextPerturb = q.nextPerturb.Add(time.Duration(skip) * q.p.perturbNs)
			return
		}
		q.rehash(q.nextPerturb)
		q.nextPerturb = q.nextPerturb.Add(q.p.perturbNs)
	}
}

// Enqueue files p in its flow's slot, each of its packets as
// Env.Granularity counts them one after the other.
func (q *SFQ) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := q.enqueueUnits(now, p)
	return v
}

// enqueueUnits reports as refused every packet sfq dropped in taking p,
// p's own or another flow's: the kernel's parents count each of them as a
// drop of their own (a NET_XMIT_DROP or NET_XMIT_CN of sfq's, or
// qdisc_tree_reduce_backlog's count when sfq made room in another flow).
func (q *SFQ) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	q.tick(now)
	p.Enqueued = now
	before := q.stats.Drops
	if q.u.one(p) {
		v := q.enqueueOne(now, p)
		return int(q.stats.Drops - before), v
	}
	n := p.Segments()
	own, congested, rest := 0, false, p
	for i := range n {
		unit := rest
		if i < n-1 {
			unit, rest = q.env.cut(rest, 1)
		}
		switch q.enqueueOne(now, unit) {
		case Dropped:
			own++
		case Congested:
			congested = true
		}
	}
	dropped := int(q.stats.Drops - before)
	return dropped, verdict(n, own, congested || dropped > own)
}

// enqueueOne is sfq_enqueue for one packet: Dropped when p itself was
// dropped, Congested when another packet of its flow was, Queued
// otherwise (a packet of another flow may have made room for it).
func (q *SFQ) enqueueOne(now clock.Time, p *packet.Packet) Verdict {
	h := q.bucket(p)
	x := int32(q.ht[h])
	if x == sfqEmpty {
		x = q.dep[0].next // a free slot
		if x >= int32(len(q.slots)) {
			dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonLimit)
			return Dropped
		}
		q.ht[h] = uint16(x)
		s := &q.slots[x]
		s.hash, s.backlog = h, 0
		s.vars.reset()
	} else {
		s := &q.slots[x]
		if q.redOn {
			if dropped, v := q.redJudge(now, s, p); dropped {
				return v
			}
		}
		if int(s.qlen) >= q.p.Depth {
			return q.congestionDrop(now, s, p, ReasonLimit)
		}
	}
	s := &q.slots[x]
	size := q.u.whole(p)
	s.q.Push(p)
	s.backlog += uint32(size)
	q.backlog += size
	q.inc(x)
	if s.qlen == 1 {
		// A new flow joins the round at its end, after the slot served
		// last, with a full allotment.
		if q.tail < 0 {
			s.next = x
		} else {
			s.next = q.slots[q.tail].next
			q.slots[q.tail].next = x
		}
		q.tail = x
		s.allot = q.p.scaledQ
	}
	q.qlen++
	if q.Len() <= q.p.Limit {
		return Queued
	}
	before := s.qlen
	switch dropped := q.drop(now); {
	case dropped == p:
		return Dropped
	case before != s.qlen:
		return Congested
	}
	return Queued
}

// redJudge is sfq_enqueue's RED step for p arriving at slot s, which holds
// packets: the flow's average moves with its backlog and red_action
// judges it. A mark goes to the flow's first packet with HeadDrop (if it
// can be marked), else to p (if it can be); what cannot be marked is
// dropped as at the depth limit. It reports whether p's enqueue ended
// there, and its verdict.
func (q *SFQ) redJudge(now clock.Time, s *sfqSlot, p *packet.Packet) (bool, Verdict) {
	s.vars.qavg = q.redP.calcQavg(&s.vars, now, s.backlog)
	var markOK bool
	var mark, markHead, drop *uint64
	switch q.redP.action(&s.vars, s.vars.qavg, q.draw) {
	case redDontMark:
		return false, Queued
	case redProbMark:
		markOK, mark, markHead, drop = q.p.ECN, &q.x.ProbMark, &q.x.ProbMarkHead, &q.x.ProbDrop
	default: // redHardMark
		markOK, mark, markHead, drop = q.p.ECN && !q.p.HardDrop, &q.x.ForcedMark, &q.x.ForcedMarkHead, &q.x.ForcedDrop
	}
	q.stats.Overlimits++
	if markOK {
		if h := s.q.Front(); q.p.HeadDrop && q.markCE(now, h) {
			*markHead++
			return false, Queued
		}
		if q.markCE(now, p) {
			*mark++
			return false, Queued
		}
	}
	*drop++
	return true, q.congestionDrop(now, s, p, ReasonRED)
}

// markCE is INET_ECN_set_ce on p: an ECN-capable packet (or one already
// CE) is marked and reported, and markCE reports true.
func (q *SFQ) markCE(now clock.Time, p *packet.Packet) bool {
	if packet.ECNOf(p.Bytes()) == packet.NotECT {
		return false
	}
	q.stats.Marks++
	markSet(0).with(ReasonRED).apply(now, p, q, q.env)
	return true
}

// congestionDrop is sfq_enqueue's congestion_drop for p arriving at slot
// s: p is dropped, or with HeadDrop the flow's first packet is and p takes
// its place at the tail (the lengths do not change).
func (q *SFQ) congestionDrop(now clock.Time, s *sfqSlot, p *packet.Packet, why Reason) Verdict {
	if !q.p.HeadDrop {
		dropUnits(now, p, q, q.env, q.u, &q.stats, why)
		return Dropped
	}
	if why == ReasonLimit {
		why = ReasonHeadDrop
	}
	h := s.q.Pop()
	delta := q.u.whole(p) - q.u.whole(h)
	s.backlog += uint32(delta)
	q.backlog += delta
	dropUnits(now, h, q, q.env, q.u, &q.stats, why)
	s.q.Push(p)
	return Congested
}

// drop is sfq_drop: one packet leaves the longest slot, from its tail (its
// head with HeadDrop), the slot that reached that length last; when every
// slot holds one packet, the slot next in the round goes. It returns the
// packet, reported with ReasonOverflow, or nil if sfq is empty.
func (q *SFQ) drop(now clock.Time) *packet.Packet {
	var x int32
	switch d := q.curDepth; {
	case d > 1:
		x = q.dep[d].next
	case d == 1:
		t := &q.slots[q.tail]
		x = t.next
		s := &q.slots[x]
		t.next = s.next
		q.ht[s.hash] = sfqEmpty
		if x == q.tail {
			q.tail = -1 // the only active slot: the round is empty
		}
	default:
		return nil
	}
	s := &q.slots[x]
	var p *packet.Packet
	if q.p.HeadDrop {
		p = s.q.Pop()
	} else {
		p = s.q.PopBack()
	}
	size := q.u.whole(p)
	s.backlog -= uint32(size)
	q.dec(x)
	q.qlen--
	q.backlog -= size
	dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonOverflow)
	return p
}

// take is sfq_dequeue: the slot after the one served last sends its first
// packet if its allotment is positive, else it gets a quantum more and the
// turn passes on. A slot that empties leaves the round.
func (q *SFQ) take() *packet.Packet {
	if q.tail < 0 {
		return nil
	}
	for {
		a := q.slots[q.tail].next
		s := &q.slots[a]
		if s.allot <= 0 {
			q.tail = a
			s.allot += q.p.scaledQ
			continue
		}
		p := s.q.Pop()
		q.dec(a)
		q.qlen--
		size := q.u.whole(p)
		q.backlog -= size
		s.backlog -= uint32(size)
		if s.qlen == 0 {
			q.ht[s.hash] = sfqEmpty
			if next := s.next; next != a {
				q.slots[q.tail].next = next
			} else {
				q.tail = -1
			}
			return p
		}
		s.allot -= sfqAllot(size)
		return p
	}
}

// rehash is sfq_rehash under a new key: every packet held leaves its slot,
// slot by slot in index order, and is filed again by its new bucket, the
// flows rejoining the round in that order with full allotments and their
// RED averages rebuilt. A packet that finds no free slot or a full one is
// dropped (ReasonLimit; the kernel counts these in its parents' drops
// only).
func (q *SFQ) rehash(now clock.Time) {
	for i := range q.slots {
		s := &q.slots[i]
		if s.qlen == 0 {
			continue
		}
		for s.qlen > 0 {
			q.scratch.Push(s.q.Pop())
			q.dec(int32(i))
		}
		s.backlog = 0
		s.vars.reset()
		q.ht[s.hash] = sfqEmpty
	}
	q.tail = -1
	for p := q.scratch.Pop(); p != nil; p = q.scratch.Pop() {
		size := q.u.whole(p)
		h := q.bucket(p)
		x := int32(q.ht[h])
		if x == sfqEmpty {
			x = q.dep[0].next
			if x >= int32(len(q.slots)) {
				q.rehashDrop(now, p, size)
				continue
			}
			q.ht[h] = uint16(x)
			q.slots[x].hash = h
		}
		s := &q.slots[x]
		if int(s.qlen) >= q.p.Depth {
			q.rehashDrop(now, p, size)
			continue
		}
		s.q.Push(p)
		if q.redOn {
			s.vars.qavg = q.redP.calcQavg(&s.vars, now, s.backlog)
		}
		s.backlog += uint32(size)
		q.inc(x)
		if s.qlen == 1 {
			if q.tail < 0 {
				s.next = x
			} else {
				s.next = q.slots[q.tail].next
				q.slots[q.tail].next = x
			}
			q.tail = x
			s.allot = q.p.scaledQ
		}
	}
}

func (q *SFQ) rehashDrop(now clock.Time, p *packet.Packet, size int) {
	q.qlen--
	q.backlog -= size
	dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonLimit)
}

// Dequeue returns the next packet of the round robin.
func (q *SFQ) Dequeue(now clock.Time) (*packet.Packet, clock.Time) { return q.dequeueRun(now, nil) }

// dequeueRun is Dequeue under g: a packet g refuses is held, decided, for
// the next dequeue, as the kernel's parents peek (qdisc_peek_dequeued)
// before they dequeue.
func (q *SFQ) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	q.tick(now)
	p, ok := q.peeked.serve(now, g, q.u, q.env)
	switch {
	case ok && p == nil:
		return nil, now
	case !ok:
		if p = q.take(); p == nil {
			return nil, clock.Never
		}
		if g != nil && !g.admit(now, q.u.whole(p)) {
			q.peeked.p = p
			return nil, now
		}
	}
	q.u.sent(&q.stats, p)
	return p, now
}

// Peek returns the packet Dequeue would return, taken by the round robin
// now and held.
func (q *SFQ) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	q.tick(now)
	if q.peeked.p == nil {
		q.peeked.p = q.take()
	}
	if q.peeked.p == nil {
		return nil, clock.Never
	}
	return q.peeked.p, now
}

// Len returns the packets held, a peeked one included.
func (q *SFQ) Len() int { return q.qlen + q.peeked.units(q.u) }

// Backlog returns the bytes held, a peeked one included.
func (q *SFQ) Backlog() int { return q.backlog + q.peeked.size(q.u) }

// Stats returns the counters: drops at the depth limit and for want of a
// free slot (ReasonLimit, ReasonHeadDrop), past the limit (ReasonOverflow),
// by RED (ReasonRED, also counted as Overlimits) and ECN marks.
func (q *SFQ) Stats() Stats {
	s := q.stats
	s.Qlen, s.Backlog = q.Len(), q.Backlog()
	return s
}

// XStats returns the RED mode's counters.
func (q *SFQ) XStats() SFQStats { return q.x }

// Kind returns "sfq".
func (q *SFQ) Kind() string { return "sfq" }

// Child returns nil: sfq's classes are its flows, not child qdiscs.
func (q *SFQ) Child() Qdisc { return nil }

// Config returns the configuration as given, with tc's RED defaults.
func (q *SFQ) Config() Spec { return q.cfg }

// Dump returns the configuration as the kernel holds it.
func (q *SFQ) Dump() SFQDump { return q.p.SFQDump }

// checkChange reports whether Change would accept spec.
func (q *SFQ) checkChange(spec Spec) error {
	c, err := specAs[SFQConfig](q, spec)
	if err != nil {
		return err
	}
	if c.WithDefaults() != q.cfg {
		return fmt.Errorf("sfq: cannot change in place: the kernel's sfq has no change operation (tc qdisc change fails: \"Change operation not supported by specified qdisc\"); keep sfq's options as they are, or set a path without this sfq first and then one with the new options")
	}
	return nil
}

// Change accepts only the configuration sfq has, and changes nothing: the
// kernel's sfq cannot be changed (its Qdisc_ops have no change), so a
// tc qdisc change or replace of it fails. Another configuration is an
// error.
func (q *SFQ) Change(_ clock.Time, spec Spec) error { return q.checkChange(spec) }

// Flush drops every packet held, a peeked one included, with ReasonFlushed,
// taking them in the round robin's order as sfq_reset does.
func (q *SFQ) Flush(now clock.Time) {
	q.peeked.flush(now, q, q.env, q.u, &q.stats)
	for p := q.take(); p != nil; p = q.take() {
		dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonFlushed)
	}
}
