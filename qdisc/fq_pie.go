package qdisc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

// fqPIESeedSalt is the second word of fq_pie's PCG state, the first being
// the discipline's seed.
const fqPIESeedSalt = 0x66715f7069655f64 // "fq_pie_d"

// Limits and defaults of fq_pie's options, as fq_pie_init, fq_pie_change
// (its netlink policy) and tc's q_fq_pie.c set them.
const (
	// MaxFQPIEFlows is the largest flows value fq_pie_change accepts.
	MaxFQPIEFlows = 65536
	// MaxFQPIEQuantum is the largest quantum the kernel's policy accepts
	// (fq_pie_q_range: 1 to 1 MiB); unlike fq_codel, it raises no small
	// quantum.
	MaxFQPIEQuantum = 1 << 20
	// MaxFQPIEECNProb is the largest ecn_prob tc accepts (it refuses 100
	// and more).
	MaxFQPIEECNProb = 99
	// MaxFQPIEWeight is tc's ALPHA_MAX and BETA_MAX.
	MaxFQPIEWeight = 32

	DefaultFQPIELimit   = 10240
	DefaultFQPIEFlows   = 1024
	DefaultFQPIEECNProb = 10

	// fqPIETimerBatch is how many flows one expiry of fq_pie's timer
	// updates (fq_pie_timer's "2048 flows per round").
	fqPIETimerBatch = 2048
)

// FQPIEConfig configures fq_pie (tc-fq_pie(8)). Zero fields take the
// kernel's defaults.
type FQPIEConfig struct {
	Limit           int           // packets; default 10240
	Flows           int           // default 1024; set when fq_pie is created
	Target          time.Duration // default 15ms
	TUpdate         time.Duration // default 15ms (rounded up to jiffies)
	Alpha           int           // in 1/16; default 2
	Beta            int           // in 1/16; default 20
	Quantum         int           // bytes; 0 = psched_mtu
	MemoryLimit     int           // bytes of truesize; default 32 MiB
	ECNProb         int           // percent; default 10
	ECN             bool          // default off
	Bytemode        bool          // default off
	DQRateEstimator bool          // default off
	// MemOverhead approximates skb truesize - len for the memory
	// accounting (wanlab extension, as FQCoDelConfig's); 0 means
	// DefaultFQCoDelMemOverhead.
	MemOverhead int
}

// Kind returns "fq_pie".
func (FQPIEConfig) Kind() string { return "fq_pie" }

// WithDefaults returns c with the default in each field left zero that
// tc -s shows: limit 10240, flows 1024, target 15ms, tupdate 15ms, alpha
// 2, beta 20, memory_limit 32 MiB, ecn_prob 10. Quantum, which the kernel
// derives from the device, and MemOverhead, wanlab's own, stay as they
// are.
func (c FQPIEConfig) WithDefaults() FQPIEConfig {
	orDefault(&c.Limit, DefaultFQPIELimit)
	orDefault(&c.Flows, DefaultFQPIEFlows)
	orDefault(&c.Target, DefaultPIETarget)
	orDefault(&c.TUpdate, DefaultPIETUpdate)
	orDefault(&c.Alpha, DefaultPIEAlpha)
	orDefault(&c.Beta, DefaultPIEBeta)
	orDefault(&c.MemoryLimit, DefaultMemoryLimit)
	orDefault(&c.ECNProb, DefaultFQPIEECNProb)
	return c
}

// fillFQPIEConfig validates cfg as tc and the kernel would and fills in
// the defaults, the quantum from env.
func fillFQPIEConfig(cfg *FQPIEConfig, env *Env) error {
	const kind = "fq_pie"
	for _, f := range []struct {
		name string
		v    int
	}{{"limit", cfg.Limit}, {"flows", cfg.Flows}, {"quantum", cfg.Quantum}, {"memory_limit", cfg.MemoryLimit},
		{"ecn_prob", cfg.ECNProb}, {"alpha", cfg.Alpha}, {"beta", cfg.Beta}, {"memory overhead", cfg.MemOverhead}} {
		if f.v < 0 {
			return fmt.Errorf("%s: %s %d is negative; give a positive value or 0 for the default", kind, f.name, f.v)
		}
		if int64(f.v) > math.MaxUint32 {
			return fmt.Errorf("%s: %s %d does not fit the kernel's 32 bits; give at most %d", kind, f.name, f.v, uint32(math.MaxUint32))
		}
	}
	const maxUS = math.MaxUint32 * time.Microsecond
	switch {
	case cfg.Flows > MaxFQPIEFlows:
		return fmt.Errorf("%s: flows %d exceeds %d; the kernel takes 1 to %d flows", kind, cfg.Flows, MaxFQPIEFlows, MaxFQPIEFlows)
	case cfg.Quantum > MaxFQPIEQuantum:
		return fmt.Errorf("%s: quantum %d exceeds %d bytes (1 MiB), the kernel's limit; give a smaller quantum, such as the MTU", kind, cfg.Quantum, MaxFQPIEQuantum)
	case cfg.ECNProb > MaxFQPIEECNProb:
		return fmt.Errorf("%s: ecn_prob %d is not below 100; tc takes 0 to %d (percent)", kind, cfg.ECNProb, MaxFQPIEECNProb)
	case cfg.Alpha > MaxFQPIEWeight || cfg.Beta > MaxFQPIEWeight:
		return fmt.Errorf("%s: alpha %d or beta %d out of range; tc accepts 0 to %d (in 1/16)", kind, cfg.Alpha, cfg.Beta, MaxFQPIEWeight)
	case cfg.Target < 0 || cfg.Target > maxUS || (cfg.Target > 0 && cfg.Target < time.Microsecond):
		return fmt.Errorf("%s: target %v out of range; give 1us to %v", kind, cfg.Target, maxUS)
	case cfg.TUpdate < 0 || cfg.TUpdate > maxUS || (cfg.TUpdate > 0 && cfg.TUpdate < time.Microsecond):
		return fmt.Errorf("%s: tupdate %v out of range; give 1us to %v", kind, cfg.TUpdate, maxUS)
	}
	*cfg = cfg.WithDefaults()
	if cfg.Quantum == 0 {
		cfg.Quantum = min(env.PschedMTU(), MaxFQPIEQuantum)
	}
	orDefault(&cfg.MemOverhead, DefaultFQCoDelMemOverhead)
	return nil
}

// fqPIEFlow is one flow's PIE (the kernel's fq_pie_flow beside its queue
// in fqSched): the controller, the flow's backlog, which its PIE reads,
// and how many of the timer's updates it has had.
type fqPIEFlow struct {
	vars    pieVars
	backlog uint32 // bytes in the flow, as the device counts them
	updates int64  // timer rounds applied to vars
}

// FQPIE is Linux's fq_pie (sch_fq_pie.c): packets are hashed into flow
// queues served by deficit round robin with new flows first, as fq_codel
// does (the same hash and scheduler, fqSched), and each flow has its own
// PIE controller (include/net/pie.h) deciding at enqueue.
//
// Enqueue drops with ReasonLimit when Limit packets are held (the xstat
// overlimit); otherwise the flow's PIE (pie_drop_early, on the flow's
// backlog) may drop early (ReasonPIE) or, with ECN and while the flow's
// probability is at most ECNProb percent, CE-mark an ECN-capable packet
// instead. memory_limit drops nothing: Linux 6.1 counts an arrival past it
// (memory in use above the limit plus the packet's truesize, in the
// kernel's u32 arithmetic) in the xstat overmemory, and goes on. Dequeue
// drops nothing either; it measures each packet's delay for its flow's
// PIE (pie_process_dequeue).
//
// One timer updates every flow's probability (pie_calculate_probability):
// half a second after the discipline starts, then every tupdate rounded up
// to jiffies; with more than 2048 flows each expiry updates 2048 of them
// and the next batch follows one jiffy later (fq_pie_timer). wanlab keeps
// no timer: a flow's state changes only when its packets come and go, so
// each flow catches up on the updates due to it, on its frozen state, the
// moment a packet of it arrives or leaves, exactly as the timer would have
// run them. The discipline therefore never needs waking: Dequeue returns
// clock.Never when it is empty.
type FQPIE struct {
	cfg    FQPIEConfig
	env    *Env
	seed   uint64
	params pieParams
	rng    *rand.PCG
	timer  fqPIETimer

	fqSched
	pflows []fqPIEFlow // each flow's PIE

	limit       int
	ecn         bool
	ecnProb     uint64 // the probability up to which ECN marks: ecn_prob % of MAX_PROB
	memLimit    uint32
	memOverhead int
	u           units
	memUsage    int // truesize of the packets in the flow queues
	qlen        int // packets in the flow queues
	backlog     int // bytes in the flow queues, as the device counts them

	// c walks the units of the head packet of flow curFlow; peeked is the
	// run Peek took (see FQCoDel).
	c       cursor
	curFlow int32
	peeked  peekHold
	stats   Stats

	packetsIn, overlimit, overmemory, dropped, ecnMark uint32
}

var _ Qdisc = (*FQPIE)(nil)

// NewFQPIE returns an fq_pie discipline. Zero fields take the kernel's
// defaults (limit 10240, flows 1024, target 15ms, tupdate 15ms, alpha 2,
// beta 20, quantum env.PschedMTU(), memory_limit 32 MiB, ecn_prob 10, ecn,
// bytemode and the estimator off). Its flow hash and its random stream
// come from PositionSeed(env.Seed, 0), as the root of a tree.
func NewFQPIE(cfg FQPIEConfig, env *Env) (*FQPIE, error) {
	return newFQPIE(cfg, env, rootSeed(env))
}

// newFQPIE is NewFQPIE with the seed of the discipline's position, which
// keys its flow hash and its drop draws.
func newFQPIE(cfg FQPIEConfig, env *Env, seed uint64) (*FQPIE, error) {
	if err := env.Check(); err != nil {
		return nil, fmt.Errorf("fq_pie: %w", err)
	}
	if err := fillFQPIEConfig(&cfg, env); err != nil {
		return nil, err
	}
	q := &FQPIE{
		env:     env,
		seed:    seed,
		rng:     rand.NewPCG(seed, fqPIESeedSalt),
		fqSched: newFQSched(cfg.Flows),
		pflows:  make([]fqPIEFlow, cfg.Flows),
		u:       unitsOf(env),
		curFlow: -1,
	}
	for i := range q.pflows {
		q.pflows[i].vars.reset()
	}
	q.timer.init(cfg.Flows, uint64(env.Hz()))
	q.apply(cfg)
	return q, nil
}

// apply takes cfg, validated and filled in, as the configuration.
func (q *FQPIE) apply(cfg FQPIEConfig) {
	q.cfg = cfg
	q.limit = cfg.Limit
	q.quantum = int32(cfg.Quantum)
	q.memLimit = uint32(cfg.MemoryLimit)
	q.memOverhead = cfg.MemOverhead
	q.ecn = cfg.ECN
	q.ecnProb = pieMaxProb / 100 * uint64(cfg.ECNProb)
	q.params = newPIEParams(pieTargetTicks(cfg.Target), cfg.Alpha, cfg.Beta, cfg.DQRateEstimator)
	q.params.device(q.env, cfg.Bytemode)
	q.timer.tupdate = usecsToJiffies(cfg.TUpdate, q.timer.hz)
}

// changedConfig validates spec as a new configuration of q and returns it
// filled in. fq_pie_change refuses a new number of flows.
func (q *FQPIE) changedConfig(spec Spec) (FQPIEConfig, error) {
	c, err := specAs[FQPIEConfig](q, spec)
	if err != nil {
		return c, err
	}
	if err := fillFQPIEConfig(&c, q.env); err != nil {
		return c, err
	}
	if c.Flows != len(q.flows) {
		return c, fmt.Errorf("fq_pie: flows cannot change from %d to %d: the kernel sets them only when it creates fq_pie (\"Number of flows cannot be changed\"); keep flows %d, or replace the qdisc", len(q.flows), c.Flows, len(q.flows))
	}
	return c, nil
}

// checkChange reports whether Change would accept spec.
func (q *FQPIE) checkChange(spec Spec) error {
	_, err := q.changedConfig(spec)
	return err
}

// Change applies spec as fq_pie_change does: the flows keep their
// packets and their PIE state; the updates due so far run with the old
// parameters; the timer already armed keeps its expiry and the new tupdate
// applies from the end of the round under way; a new quantum applies from
// each flow's next refill; while more than the new limit is held, packets
// leave through the scheduler and are dropped (ReasonLimit). The number of
// flows cannot change.
func (q *FQPIE) Change(now clock.Time, spec Spec) error {
	c, err := q.changedConfig(spec)
	if err != nil {
		return err
	}
	q.timer.tick(now)
	for i := range q.pflows {
		q.sync(int32(i))
	}
	oldTUpdate := q.timer.tupdate
	q.apply(c)
	q.timer.retime(now, oldTUpdate)
	for q.Len() > q.limit {
		p := q.take(now, nil)
		if p == nil {
			break // only decided units are left
		}
		if excess := q.Len() + q.u.count(p) - q.limit; q.peeked.p == nil && excess > 0 && excess < q.u.count(p) {
			// The units beyond the excess were decided with it: they
			// leave next, as peeked ones.
			p, q.peeked.p = q.env.cut(p, excess)
		}
		dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonLimit)
	}
	return nil
}

// Flush drops every packet held, peeked ones included, with ReasonFlushed,
// and leaves every flow empty and unlinked with its PIE re-initialised as
// fq_pie_reset does (pie_vars_init: the probability and the delays stay).
// The kernel leaves each flow's backlog and the memory in use as they
// were; wanlab zeroes them, which only its xstats could show.
func (q *FQPIE) Flush(now clock.Time) {
	q.timer.tick(now)
	q.peeked.flush(now, q, q.env, q.u, &q.stats)
	for i := range q.flows {
		q.sync(int32(i))
		flushRing(now, &q.flows[i].q, q, q.env, q.u, &q.stats)
		q.pflows[i].backlog = 0
		q.pflows[i].vars.reset()
	}
	q.unlinkAll()
	q.c.reset()
	q.qlen, q.backlog, q.memUsage = 0, 0, 0
}

// sync applies to flow idx the timer's updates due to it and not yet
// applied, on its state as it has stood since its last packet event.
func (q *FQPIE) sync(idx int32) {
	f := &q.pflows[idx]
	if due := q.timer.due[idx/fqPIETimerBatch]; f.updates != due {
		q.params.advance(&f.vars, f.backlog, due-f.updates)
		f.updates = due
	}
}

// Enqueue admits, marks or drops p: each of its packets as Env.Granularity
// counts them, one after the other, in p's flow.
func (q *FQPIE) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := q.enqueueUnits(now, p)
	return v
}

func (q *FQPIE) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	q.timer.tick(now)
	idx := flowSlot(p, q.seed, len(q.flows))
	q.sync(idx)
	p.Enqueued = now
	ect := q.ecn && packet.ECNOf(p.Bytes()) != packet.NotECT
	r := &q.flows[idx].q
	if q.u.one(p) {
		fate := q.decide(idx, q.u.whole(p), ect)
		if fate > pieMark {
			q.refuse(now, p, fate)
			return 1, Dropped
		}
		if fate == pieMark {
			markSet(0).with(ReasonPIE).apply(now, p, q, q.env)
		}
		r.Push(p)
		return 0, Queued
	}
	// Units decided to stay count at once for the next unit's decision;
	// consecutive units of one fate go their way together.
	n := q.u.count(p)
	rest, run, refused := p, 0, 0
	var runFate pieFate
	place := func(part *packet.Packet) {
		switch runFate {
		case pieQueue, pieMark:
			if runFate == pieMark {
				markSet(0).with(ReasonPIE).apply(now, part, q, q.env)
			}
			r.Push(part)
		default:
			refused += q.u.count(part)
			q.refuse(now, part, runFate)
		}
	}
	// rest holds the units from the cut on: unit i of p is unit i-cut of
	// rest (a cut may shorten p itself).
	cut := 0
	for i := range n {
		fate := q.decide(idx, q.u.size(rest, i-cut), ect)
		if run > 0 && fate != runFate {
			var head *packet.Packet
			head, rest = q.env.cut(rest, run)
			cut += run
			place(head)
			run = 0
		}
		runFate = fate
		run++
	}
	place(rest)
	return refused, verdict(n, refused, false)
}

// decide is fq_pie_qdisc_enqueue's decision on a unit of size bytes for
// flow idx, with its side effects on the flow's PIE and the counters; a
// unit that stays is counted in the flow at once.
func (q *FQPIE) decide(idx int32, size int, ect bool) pieFate {
	f := &q.pflows[idx]
	truesize := uint32(size + q.memOverhead)
	if q.Len() >= q.limit {
		q.overlimit++
		q.dropped++
		f.vars.accuProb = 0
		return pieDropLimit
	}
	// The kernel compares in u32: memory_limit plus truesize wraps for a
	// limit near 4 GiB.
	if uint32(q.memUsage) > q.memLimit+truesize {
		q.overmemory++
	}
	fate := pieQueue
	if q.params.dropEarly(&f.vars, f.backlog, uint32(size), q.rng) {
		if !ect || f.vars.prob > q.ecnProb {
			q.dropped++
			f.vars.accuProb = 0
			return pieDropEarly
		}
		q.ecnMark++
		q.stats.Marks++
		fate = pieMark
	}
	q.packetsIn++
	q.memUsage += int(truesize)
	q.backlog += size
	q.qlen++
	if q.activate(idx) {
		f.backlog = 0
	}
	f.backlog += uint32(size)
	return fate
}

// refuse drops p, units that decide refused, for fate.
func (q *FQPIE) refuse(now clock.Time, p *packet.Packet, fate pieFate) {
	why := ReasonPIE
	if fate == pieDropLimit {
		why = ReasonLimit
	}
	dropUnits(now, p, q, q.env, q.u, &q.stats, why)
}

// Dequeue returns the next packet by DRR over the new flows, then the old
// ones; nil and clock.Never when every flow is empty. The run it returns
// is units of one flow's head packet that DRR lets go one after the other.
func (q *FQPIE) Dequeue(now clock.Time) (*packet.Packet, clock.Time) { return q.dequeueRun(now, nil) }

func (q *FQPIE) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	q.timer.tick(now)
	return q.peeked.dequeueDecided(now, g, q.u, q.env, &q.stats, &q.c, q.take)
}

// Peek returns the packet the next Dequeue will return, taken off its
// flow (and measured by its PIE) now, as qdisc_peek_dequeued does.
func (q *FQPIE) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	q.timer.tick(now)
	return q.peeked.peekDecided(now, q.take)
}

// take is fq_pie_qdisc_dequeue, unit by unit, for as long as the units DRR
// lets go come one after the other from one flow's head packet and g
// admits them; it returns them as one run.
func (q *FQPIE) take(now clock.Time, g gate) *packet.Packet {
	c := &q.c
	if c.held && !c.resume(now, g) {
		return nil
	}
	for {
		if c.full() || (c.run > 0 && !moreUnits(g)) {
			break // the next dequeue goes on from here
		}
		idx := q.head()
		if idx < 0 || (c.run > 0 && idx != q.curFlow) {
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
			if g == nil {
				return c.popSingle(&q.flows[idx].q)
			}
			return c.handSingle(now, &q.flows[idx].q, g, q.env, q)
		}
		if !c.admit(now, g) {
			break
		}
	}
	if q.curFlow < 0 {
		return nil
	}
	return c.finish(now, &q.flows[q.curFlow].q, q.env, q)
}

// serve takes the next unit off flow idx, charging its deficit and
// running its PIE's pie_process_dequeue on the flow's remaining backlog,
// or takes the flow, empty, off its list; it reports whether it took one.
func (q *FQPIE) serve(now clock.Time, idx int32) bool {
	enq, size, ok := q.c.pop(&q.flows[idx].q, q.u)
	if !ok {
		q.retire(idx)
		return false
	}
	q.sync(idx)
	f := &q.pflows[idx]
	f.backlog -= uint32(size)
	q.flows[idx].deficit -= int32(size)
	q.qlen--
	q.backlog -= size
	q.memUsage -= size + q.memOverhead
	q.params.processDequeue(&f.vars, enq, size, psTicks(int64(now)), f.backlog)
	return true
}

// Len returns the number of packets held, peeked ones included.
func (q *FQPIE) Len() int {
	n, _ := q.c.heldUnits()
	return q.qlen + n + q.peeked.units(q.u)
}

// Backlog returns the bytes held, peeked ones included, as the device
// counts them.
func (q *FQPIE) Backlog() int {
	_, l := q.c.heldUnits()
	return q.backlog + l + q.peeked.size(q.u)
}

// Stats returns the tc -s counters: drops by ReasonLimit and ReasonPIE,
// and ECN marks. Overlimits stays 0, as the kernel's fq_pie counts its
// limit drops only in its xstats.
func (q *FQPIE) Stats() Stats {
	s := q.stats
	s.Qlen, s.Backlog = q.Len(), q.Backlog()
	return s
}

// FQPIEXStats are fq_pie's extended statistics (struct tc_fq_pie_xstats),
// as tc -s prints them under the qdisc line.
type FQPIEXStats struct {
	PacketsIn    uint32 // packets enqueued
	Overlimit    uint32 // packets dropped because limit was reached
	Overmemory   uint32 // arrivals while memory_limit was exceeded (none dropped for it)
	Dropped      uint32 // packets dropped at enqueue: limit and PIE
	ECNMark      uint32 // packets CE-marked instead of dropped
	NewFlowCount uint32 // times a flow became a new flow
	NewFlowsLen  uint32 // flows on the new list now
	OldFlowsLen  uint32 // flows on the old list now
	MemoryUsage  uint32 // truesize bytes held in the flow queues
}

// XStats returns the extended statistics.
func (q *FQPIE) XStats() FQPIEXStats {
	return FQPIEXStats{
		PacketsIn:    q.packetsIn,
		Overlimit:    q.overlimit,
		Overmemory:   q.overmemory,
		Dropped:      q.dropped,
		ECNMark:      q.ecnMark,
		NewFlowCount: q.newFlowCount,
		NewFlowsLen:  uint32(q.newFlows.n),
		OldFlowsLen:  uint32(q.oldFlows.n),
		MemoryUsage:  uint32(q.memUsage),
	}
}

// Kind returns "fq_pie".
func (q *FQPIE) Kind() string { return "fq_pie" }

// Child returns nil: fq_pie's classes are its flows, not child qdiscs.
func (q *FQPIE) Child() Qdisc { return nil }

// Config returns the configuration with the defaults filled in.
func (q *FQPIE) Config() Spec { return q.cfg }

// TUpdate returns the effective update interval: tupdate rounded up to
// whole jiffies.
func (q *FQPIE) TUpdate() time.Duration {
	return time.Duration(q.timer.tupdate) * time.Second / time.Duration(q.timer.hz)
}

// fqPIETimer is fq_pie's adapt_timer as a schedule. The flows fall in
// batches of 2048 (batch b is flows 2048b to 2048b+2047); a round updates
// batch 0 at its first jiffy, batch 1 one jiffy later and so on, and the
// next round starts tupdate jiffies after the round's last batch
// (fq_pie_timer re-arms itself at jiffies + 0 until the cursor wraps, then
// at jiffies + tupdate). Round r starts at jiffy base + (r-baseRound) *
// (batches-1+tupdate), from the round whose start was last fixed (the
// first, HZ/2 after the start, or the one under way when tupdate changed).
type fqPIETimer struct {
	jiffyClock
	batches   int64
	tupdate   int64 // jiffies
	baseRound int64
	base      int64   // jiffy at which round baseRound starts
	due       []int64 // per batch: the rounds that have updated it
	nextAt    clock.Time
}

func (t *fqPIETimer) init(flows int, hz uint64) {
	t.hz = hz
	t.batches = int64((flows + fqPIETimerBatch - 1) / fqPIETimerBatch)
	t.due = make([]int64, t.batches)
}

func (t *fqPIETimer) period() int64 { return t.batches - 1 + t.tupdate }

// tick brings due up to now.
func (t *fqPIETimer) tick(now clock.Time) {
	if t.started && now < t.nextAt {
		return
	}
	t.advance(now)
}

// advance is tick when the clock starts or an expiry is due.
func (t *fqPIETimer) advance(now clock.Time) {
	if !t.started {
		t.begin(now)
		t.base = t.firstUpdate()
		t.nextAt = t.at(t.base)
		return
	}
	j, p := t.jiffies(now), t.period()
	for b := range t.due {
		n := int64(0)
		if first := t.base + int64(b); j >= first {
			n = (j-first)/p + 1
		}
		t.due[b] = t.baseRound + n
	}
	next := t.base
	if off := j - t.base; off >= 0 {
		m, r := off/p, off%p
		if r < t.batches-1 {
			next += m*p + r + 1 // the next batch of this round
		} else {
			next += (m + 1) * p
		}
	}
	t.nextAt = t.at(next)
}

// retime makes t.tupdate, just changed from old, apply from the next
// round not yet fixed: the rounds whose last batch has run by now fixed
// the start of the round after them, with the old tupdate.
func (t *fqPIETimer) retime(now clock.Time, old int64) {
	if !t.started {
		return
	}
	newT := t.tupdate
	t.tupdate = old
	p := t.period()
	if off := t.jiffies(now) - t.base - (t.batches - 1); off >= 0 {
		done := off/p + 1 // rounds whose last batch has run
		t.baseRound += done
		t.base += done * p
	}
	t.tupdate = newT
	t.advance(now)
}
