package qdisc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

// dpi2SeedSalt is the second word of DualPI2's PCG state, the first being
// the discipline's seed.
const dpi2SeedSalt = 0x6475616c70693221 // "dualpi2!"

// DualPI2Config configures dualpi2 (tc-dualpi2(8), RFC 9332): the zero
// value of a field means tc's and the kernel's default (dualpi2_reset_default).
// Times are used in whole microseconds, as tc passes them.
type DualPI2Config struct {
	// Limit is the packets both queues hold together: default 10000.
	Limit int
	// MemLimit is the bytes of memory (skb truesize) both queues hold:
	// default Limit × 2 × psched_mtu, as get_memory_limit computes it.
	MemLimit int
	// Target is the PI2 controller's queue delay target: default 15ms.
	Target time.Duration
	// TUpdate is the controller's update interval: default 16ms.
	TUpdate time.Duration
	// Alpha and Beta are the controller's integral and proportional
	// gains in 1/256 Hz, as tc sends them: default 41 (0.16 Hz) and 819
	// (3.2 Hz).
	Alpha, Beta int
	// MaxRTT and TypicalRTT, when either is set, replace Target, TUpdate,
	// Alpha and Beta by what tc derives from them (see DualPI2Config's
	// WithDefaults): the typical RTT is the target, tupdate is the smaller
	// of it and a third of the maximum, alpha 0.1·tupdate/max_rtt² and
	// beta 0.3/max_rtt. One left out is the other divided or multiplied by
	// 6.
	MaxRTT, TypicalRTT time.Duration
	// StepThresh is the L queue's step marking threshold on a packet's
	// sojourn time: default 1ms. StepPackets, when not 0, makes the
	// threshold the L queue's length in packets instead.
	StepThresh  time.Duration
	StepPackets int
	// MinQlenStep is the L queue length from which a packet arriving at
	// it is subject to the step threshold: default 0 (always).
	MinQlenStep int
	// CouplingFactor is k, p_CL = k·p': default 2 (1 to 255).
	CouplingFactor int
	// ClassicProtection is the C queue's weight in percent in the
	// scheduler between the queues (the L queue has the rest): default 10.
	// A 0 means the default unless ClassicProtectionSet says it was
	// given, since 0 is a weight too; WithDefaults sets both.
	ClassicProtection    int
	ClassicProtectionSet bool
	// AnyECT puts every ECN-capable packet (ECT(0), ECT(1), CE) in the L
	// queue; by default (l4s_ect) only ECT(1) and CE go there.
	AnyECT bool
	// Overflow (tc's "overflow") keeps marking L4S packets when the
	// coupled probability would pass 100% and caps the base probability
	// at 1/k, letting the queue grow to its limit; by default
	// (drop_on_overload) they are then dropped at the classic rate.
	Overflow bool
	// DropEnqueue applies the PI2 drop or mark at enqueue; by default
	// (drop_dequeue) it is applied at dequeue.
	DropEnqueue bool
	// NoSplitGSO keeps a GSO super-packet whole under GranularityGSO; by
	// default (split_gso) it is split into its segments at enqueue. Under
	// GranularitySegment every segment is a packet either way.
	NoSplitGSO bool
}

// Kind returns "dualpi2".
func (DualPI2Config) Kind() string { return "dualpi2" }

// WithDefaults returns c with the kernel's defaults where fields are zero
// (MemLimit stays 0: it depends on the device, see DualPI2.MemLimit), and
// with Target, TUpdate, Alpha and Beta derived from MaxRTT and TypicalRTT
// when either is set, as tc derives them (both RTTs are then set). An
// invalid RTT pair is left for the constructor to refuse.
func (c DualPI2Config) WithDefaults() DualPI2Config {
	if c.MaxRTT != 0 || c.TypicalRTT != 0 {
		maxUS, typUS := durUS(c.MaxRTT), durUS(c.TypicalRTT)
		if target, tupdate, alpha, beta, err := dpi2FromRTT(maxUS, typUS); err == nil {
			if typUS == 0 {
				typUS = max(maxUS/dpi2RTTTypToMax, 1)
			} else if maxUS == 0 {
				maxUS = typUS * dpi2RTTTypToMax
			}
			c.MaxRTT, c.TypicalRTT = usDur(maxUS), usDur(typUS)
			c.Target, c.TUpdate = usDur(target), usDur(tupdate)
			c.Alpha, c.Beta = int(alpha), int(beta)
		}
	}
	orDefault(&c.Limit, dpi2DefaultLimit)
	orDefault(&c.Target, dpi2DefaultTarget)
	orDefault(&c.TUpdate, dpi2DefaultTUpdate)
	orDefault(&c.Alpha, dpi2DefaultAlpha)
	orDefault(&c.Beta, dpi2DefaultBeta)
	if c.StepPackets == 0 {
		orDefault(&c.StepThresh, dpi2DefaultStep)
	}
	orDefault(&c.CouplingFactor, dpi2DefaultCouple)
	if !c.ClassicProtectionSet {
		orDefault(&c.ClassicProtection, dpi2DefaultWC)
		c.ClassicProtectionSet = true
	}
	return c
}

// durUS is a duration in whole µs as tc's get_time gives it, clamped to
// the u32 range.
func durUS(d time.Duration) uint32 {
	return uint32(min(max(d/time.Microsecond, 0), math.MaxUint32))
}

func usDur(us uint32) time.Duration { return time.Duration(us) * time.Microsecond }

// validateDualPI2 refuses what tc or the kernel (dualpi2_policy) refuses,
// for c with its defaults.
func validateDualPI2(c DualPI2Config) error {
	const u32 = math.MaxUint32
	if c.MaxRTT != 0 || c.TypicalRTT != 0 {
		if c.MaxRTT < 0 || c.TypicalRTT < 0 || c.MaxRTT > u32*time.Microsecond || c.TypicalRTT > u32*time.Microsecond {
			return fmt.Errorf("dualpi2: max_rtt and typical_rtt must lie between 1us and %v", u32*time.Microsecond)
		}
		if _, _, _, _, err := dpi2FromRTT(durUS(c.MaxRTT), durUS(c.TypicalRTT)); err != nil {
			return fmt.Errorf("dualpi2: %w", err)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"limit", c.Limit}, {"memlimit", c.MemLimit}, {"step_thresh packets", c.StepPackets}, {"min_qlen_step", c.MinQlenStep}} {
		if f.v < 0 || int64(f.v) > u32 {
			return fmt.Errorf("dualpi2: %s %d out of range; tc takes 0 to %d", f.name, f.v, uint32(u32))
		}
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"target", c.Target}, {"tupdate", c.TUpdate}, {"step_thresh", c.StepThresh}} {
		if f.d < 0 || f.d > u32*time.Microsecond {
			return fmt.Errorf("dualpi2: %s %v out of range; give 1us to %v", f.name, f.d, u32*time.Microsecond)
		}
	}
	switch {
	case c.Target < time.Microsecond:
		return fmt.Errorf("dualpi2: target %v is below 1us: tc sends no target of 0 (the kernel keeps 15ms); give 1us or more", c.Target)
	case c.TUpdate < time.Microsecond:
		return fmt.Errorf("dualpi2: tupdate %v is below 1us, the kernel's minimum; give 1us or more", c.TUpdate)
	case c.StepPackets == 0 && c.StepThresh < time.Microsecond:
		return fmt.Errorf("dualpi2: step_thresh %v is below 1us: tc sends no step_thresh of 0 (the kernel keeps 1ms); give 1us or more, or a packet count", c.StepThresh)
	case c.Alpha < 1 || c.Alpha > dpi2ABMax:
		return fmt.Errorf("dualpi2: alpha %d/256 Hz out of range; the kernel takes 1 to %d (1/256 to about 8388608 Hz)", c.Alpha, dpi2ABMax)
	case c.Beta < 1 || c.Beta > dpi2ABMax:
		return fmt.Errorf("dualpi2: beta %d/256 Hz out of range; the kernel takes 1 to %d (1/256 to about 8388608 Hz)", c.Beta, dpi2ABMax)
	case c.CouplingFactor < 1 || c.CouplingFactor > 255:
		return fmt.Errorf("dualpi2: coupling_factor %d out of range; the kernel takes 1 to 255", c.CouplingFactor)
	case c.ClassicProtection < 0 || c.ClassicProtection > dpi2MaxWC:
		return fmt.Errorf("dualpi2: classic_protection %d%% out of range; give 0 to 100%%", c.ClassicProtection)
	case c.Limit < 1:
		return fmt.Errorf("dualpi2: limit %d is below 1 packet, the kernel's minimum", c.Limit)
	}
	return nil
}

// dualPI2MemLimit is get_memory_limit: limit × 2 × psched_mtu, saturating
// at the u32 maximum.
func dualPI2MemLimit(limit, pschedMTU int) uint32 {
	return uint32(min(uint64(limit)*2*uint64(pschedMTU), math.MaxUint32))
}

// DualPI2 is the DualQ Coupled AQM with PI2 (RFC 9332) as Linux implements
// it (net/sched/sch_dualpi2.c, Linux 6.17): two FIFOs, the L queue for
// L4S packets (ECT(1) and CE, or every ECN-capable packet with AnyECT)
// and the C queue for the others, sharing one packet limit and one memory
// limit.
//
// A PI controller updates a base probability p' every tupdate from the
// larger of the two queues' head sojourn times (calculate_probability).
// The C queue drops (or, for an ECN-capable packet, marks) with
// probability p_C = p'², drawn as two independent rolls of p'; the L queue
// marks with the coupled probability p_CL = k·p' and, at dequeue, marks
// every packet that waited longer than the step threshold (or left more
// than StepPackets behind). When k·p' would exceed 1 (overload), the L
// queue drops at the classic rate and marks the rest (drop_on_overload),
// or only marks (overflow, where p' is capped at 1/k). No mark or drop is
// taken while less than two MTUs are queued.
//
// The queues are served by a weighted round robin whose credit, in bytes
// times percent, lets the C queue have ClassicProtection percent of the
// bytes when both are backlogged (dequeue_packet).
//
// The kernel's controller runs on an hrtimer every tupdate from the
// qdisc's creation; wanlab has no timer: each Enqueue, Dequeue and Peek
// first applies the updates that fell due since the last call, each with
// the queue delay at its own time (the queues do not change between
// calls), which is what the timer would have computed. The timer starts
// at the first of these calls.
//
// Randomness comes from the discipline's seed (the kernel's
// get_random_u32 is unseeded). Filters and skb->priority classification
// (the kernel's third class, L4S without AQM) are not emulated: ECN alone
// classifies. Memory is counted as Env.PktLen plus
// DefaultFQCoDelMemOverhead per packet, fq_codel's truesize estimate.
type DualPI2 struct {
	cfg  DualPI2Config
	env  *Env
	u    units
	rng  *rand.PCG
	lq   ring
	cq   ring
	step bitQueue // apply_step of each packet in lq
	held *packet.Packet

	// Parameters in the kernel's units.
	params        dpi2Params
	limit         int
	memLimit      uint32
	tupdate       clock.Time // ns, saturated at the u32 maximum
	stepThresh    uint64     // ns or packets
	stepInPackets bool
	minQlenStep   int
	k             uint64
	ecnMask       packet.ECN
	dropEarly     bool
	dropOverload  bool
	split         bool
	wc, wl        int32
	creditInit    int32
	mtu2          int // 2 × psched_mtu
	memOverhead   int

	// Controller state.
	prob      uint32
	lastDelay uint64
	credit    int32
	started   bool
	nextAt    clock.Time

	memUsed, maxMemUsed  uint32
	packetsInC, packetsL uint32
	maxq                 uint32
	ecnMarks, stepMarks  uint32
	stats                Stats
}

var _ Qdisc = (*DualPI2)(nil)

// NewDualPI2 returns a dualpi2 qdisc; its random stream comes from
// PositionSeed(env.Seed, 0), as the root of a tree.
func NewDualPI2(cfg DualPI2Config, env *Env) (*DualPI2, error) {
	return newDualPI2(cfg, env, rootSeed(env))
}

func newDualPI2(cfg DualPI2Config, env *Env, seed uint64) (*DualPI2, error) {
	q := &DualPI2{env: env, rng: rand.NewPCG(seed, dpi2SeedSalt), memOverhead: DefaultFQCoDelMemOverhead}
	if err := q.configure(cfg, true); err != nil {
		return nil, err
	}
	return q, nil
}

// configure validates cfg, fills in the defaults and applies it as
// dualpi2_change does; fresh (at init) or a changed classic_protection
// resets the scheduler's credit.
func (q *DualPI2) configure(cfg DualPI2Config, fresh bool) error {
	cfg = cfg.WithDefaults()
	if err := validateDualPI2(cfg); err != nil {
		return err
	}
	if err := q.env.Check(); err != nil {
		return fmt.Errorf("dualpi2: %w", err)
	}
	mtu := q.env.PschedMTU()
	memLimit := uint32(cfg.MemLimit)
	if cfg.MemLimit == 0 {
		memLimit = dualPI2MemLimit(cfg.Limit, mtu)
	}
	wcChanged := fresh || cfg.ClassicProtection != q.cfg.ClassicProtection
	q.cfg = cfg
	q.u = unitsOf(q.env)
	q.limit = cfg.Limit
	q.memLimit = memLimit
	q.params.target = uint64(durUS(cfg.Target)) * 1000
	q.params.alpha = dpi2ScaleAlphaBeta(uint32(cfg.Alpha))
	q.params.beta = dpi2ScaleAlphaBeta(uint32(cfg.Beta))
	q.k = uint64(cfg.CouplingFactor)
	q.dropOverload = !cfg.Overflow
	q.params.capProb = dpi2MaxProb
	if !q.dropOverload {
		q.params.capProb = dpi2MaxProb / uint32(q.k)
	}
	q.tupdate = clock.Time(dpi2NsFromUs(durUS(cfg.TUpdate)))
	if cfg.StepPackets != 0 {
		q.stepInPackets, q.stepThresh = true, uint64(cfg.StepPackets)
	} else {
		q.stepInPackets, q.stepThresh = false, uint64(dpi2NsFromUs(durUS(cfg.StepThresh)))
	}
	q.minQlenStep = cfg.MinQlenStep
	q.ecnMask = packet.ECT1 // TC_DUALPI2_ECN_MASK_L4S_ECT
	if cfg.AnyECT {
		q.ecnMask = packet.CE // TC_DUALPI2_ECN_MASK_ANY_ECT: both bits
	}
	q.dropEarly = cfg.DropEnqueue
	q.split = !cfg.NoSplitGSO || !q.u.gso
	q.mtu2 = 2 * mtu
	if wcChanged {
		// dualpi2_calculate_c_protection
		q.wc = int32(cfg.ClassicProtection)
		q.wl = dpi2MaxWC - q.wc
		q.creditInit = int32(mtu) * (q.wc - q.wl)
		q.credit = q.creditInit
	}
	return nil
}

// Change applies spec as dualpi2_change does: the probability, the
// controller's timer and the queues carry on (a new tupdate applies from
// the update already due), the scheduler's credit is reset when
// classic_protection changes, and packets beyond a lower limit or memory
// limit are dropped (ReasonLimit) from the head of the C queue. Where the
// C queue runs out first, the kernel would dereference a missing packet;
// wanlab goes on with the L queue's head.
func (q *DualPI2) Change(now clock.Time, spec Spec) error {
	c, err := specAs[DualPI2Config](q, spec)
	if err != nil {
		return err
	}
	if err := (&DualPI2{env: q.env}).configure(c, true); err != nil {
		return err
	}
	q.tick(now)
	q.configure(c, false)
	for q.Len() > q.limit || q.memUsed > q.memLimit {
		var p *packet.Packet
		switch {
		case q.held != nil:
			p, q.held = q.held, nil
		case q.cq.Len() > 0:
			p = q.cq.Pop()
		default:
			p = q.lq.Pop()
			q.step.pop()
		}
		q.memUsed -= q.truesize(p)
		dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonLimit)
	}
	return nil
}

// Flush drops every packet held, with ReasonFlushed, and resets the
// controller and the scheduler as dualpi2_reset does.
func (q *DualPI2) Flush(now clock.Time) {
	if p := q.held; p != nil {
		q.held = nil
		dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonFlushed)
	}
	flushRing(now, &q.cq, q, q.env, q.u, &q.stats)
	flushRing(now, &q.lq, q, q.env, q.u, &q.stats)
	q.step.reset()
	q.prob = 0
	q.packetsInC, q.packetsL, q.maxq, q.ecnMarks, q.stepMarks = 0, 0, 0, 0, 0
	q.memUsed, q.maxMemUsed = 0, 0
	q.credit = q.creditInit
}

// truesize is wanlab's estimate of p's skb->truesize.
func (q *DualPI2) truesize(p *packet.Packet) uint32 {
	return uint32(q.u.whole(p) + q.memOverhead)
}

// tick runs the controller updates due by now.
func (q *DualPI2) tick(now clock.Time) {
	if q.started && now < q.nextAt {
		return
	}
	q.catchUp(now)
}

// catchUp is tick when the discipline starts or an update is due. Each
// due update sees the queues as they are now (nothing arrived or left
// since the last call) but the delay of its own time. Runs of updates
// whose outcome is known in advance (an empty discipline decaying to 0, a
// frozen queue holding the probability at its ceiling) are applied at
// once, with the kernel's arithmetic.
func (q *DualPI2) catchUp(now clock.Time) {
	if !q.started {
		q.started, q.nextAt = true, now+q.tupdate
		return
	}
	for q.nextAt <= now {
		t := q.nextAt
		d := q.delayAt(t)
		q.prob, q.lastDelay = q.params.update(q.prob, d, q.lastDelay), d
		q.nextAt = t + q.tupdate
		if q.nextAt > now {
			return
		}
		n := uint64((now-q.nextAt)/q.tupdate) + 1 // updates still due
		last := q.nextAt + clock.Time(n-1)*q.tupdate
		empty := q.lq.Len() == 0 && q.cq.Len() == 0
		if step, ok := q.params.idleStep(); empty && q.lastDelay == 0 && ok {
			// Each update subtracts step, and one that would pass 0
			// gives 0.
			switch {
			case step == 0:
			case n > uint64(q.prob/step):
				q.prob = 0
			default:
				q.prob -= uint32(n) * step
			}
			q.nextAt = last + q.tupdate
		} else if !empty && q.prob == q.params.capProb && q.delayAt(q.nextAt) >= q.params.target &&
			q.params.stepBelowWrap(q.delayAt(last), uint64(q.tupdate)) {
			// The delay grows by tupdate an update: every step is
			// positive and below 2^32, so the probability stays at its
			// ceiling.
			q.lastDelay = q.delayAt(last)
			q.nextAt = last + q.tupdate
		}
	}
}

// delayAt is get_queue_delays' max(qdelay_l, qdelay_c) at time t: the
// sojourn of each queue's head, 0 for an empty queue.
func (q *DualPI2) delayAt(t clock.Time) uint64 {
	var d clock.Time
	if h := q.cq.Front(); h != nil {
		d = t - h.Enqueued
	}
	if h := q.lq.Front(); h != nil {
		d = max(d, t-h.Enqueued)
	}
	return uint64(max(d, 0))
}

// roll is dualpi2_roll: true with probability (p+1)/2^32.
func (q *DualPI2) roll(p uint32) bool { return uint32(q.rng.Uint64()>>32) <= p }

// Enqueue classifies p by its ECN field and queues it, or drops it at the
// limits (ReasonLimit) or, with DropEnqueue, by the PI2 probability
// (ReasonDualPI2). A GSO super-packet is split into its segments first
// (split_gso; always under GranularitySegment), each enqueued on its own.
func (q *DualPI2) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := q.enqueueUnits(now, p)
	return v
}

// enqueueUnits is Enqueue, and how many of p's units it dropped.
func (q *DualPI2) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	q.tick(now)
	ect := packet.ECNOf(p.Bytes())
	toL := ect&q.ecnMask != 0
	if p.Segs <= 1 || !q.split {
		if q.enqueueOne(now, p, toL, ect) {
			return 0, Queued
		}
		return q.u.count(p), Dropped
	}
	n, refused := p.Segments(), 0
	for p != nil {
		seg := p
		if p.Segs > 1 {
			seg, p = q.env.cut(p, 1)
		} else {
			p = nil
		}
		if !q.enqueueOne(now, seg, toL, ect) {
			refused++
		}
	}
	return refused, verdict(n, refused, false)
}

// enqueueOne is dualpi2_enqueue_skb for one packet (a segment, or a
// super-packet kept whole); it reports whether p was queued.
func (q *DualPI2) enqueueOne(now clock.Time, p *packet.Packet, toL bool, ect packet.ECN) bool {
	ts := q.truesize(p)
	if q.Len() >= q.limit || uint64(q.memUsed)+uint64(ts) > uint64(q.memLimit) {
		q.stats.Overlimits++
		dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonLimit)
		return false
	}
	if q.dropEarly && q.mustDrop(now, p, toL, ect) {
		dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonDualPI2)
		return false
	}
	p.Enqueued = now
	q.memUsed += ts
	q.maxMemUsed = max(q.maxMemUsed, q.memUsed)
	q.maxq = max(q.maxq, uint32(q.Len()))
	if toL {
		q.step.push(q.lq.Len() >= q.minQlenStep)
		q.lq.Push(p)
		q.packetsL++
		return true
	}
	q.cq.Push(p)
	q.packetsInC++
	return true
}

// mustDrop is must_drop: whether the PI2 probability drops p, which it
// may mark instead (ReasonDualPI2). Nothing is dropped or marked while
// less than two MTUs are queued.
func (q *DualPI2) mustDrop(now clock.Time, p *packet.Packet, inL bool, ect packet.ECN) bool {
	if q.Backlog() < q.mtu2 {
		return false
	}
	prob := q.prob
	local := uint64(prob) * q.k
	overload := local > dpi2MaxProb
	if !inL {
		// dualpi2_classic_marking: p'² as two rolls of p'.
		if q.roll(prob) && q.roll(prob) {
			if overload || ect == packet.NotECT {
				return true
			}
			q.mark(now, p, ReasonDualPI2)
		}
		return false
	}
	// dualpi2_scalable_marking
	if overload {
		if q.dropOverload && q.roll(prob) && q.roll(prob) {
			return true
		}
		q.mark(now, p, ReasonDualPI2)
		return false
	}
	if q.roll(uint32(local)) {
		if ect == packet.NotECT {
			return true
		}
		q.mark(now, p, ReasonDualPI2)
	}
	return false
}

// mark is dualpi2_mark: CE on an ECN-capable packet (an already-CE one
// counts again), reported for why.
func (q *DualPI2) mark(now clock.Time, p *packet.Packet, why Reason) bool {
	if !packet.SetCE(p.Bytes()) {
		return false
	}
	q.ecnMarks++
	q.stats.Marks++
	q.env.Mark(now, p, q, why)
	return true
}

// Dequeue returns the next packet the scheduler picks that the AQM lets
// through; packets it drops on the way are reported (ReasonDualPI2 for
// the PI2 probability, ReasonDualPI2Step for a Not-ECT packet in the L
// queue over the step threshold).
func (q *DualPI2) Dequeue(now clock.Time) (*packet.Packet, clock.Time) { return q.dequeueRun(now, nil) }

// dequeueRun is Dequeue under a parent's gate: the packet decided on is
// handed out if g admits it, and held for the next dequeue otherwise. Every
// packet queued is one unit (super-packets are split at enqueue, or whole
// under GranularityGSO), so a run is one packet.
func (q *DualPI2) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	q.tick(now)
	p := q.held
	if p == nil {
		if p = q.dequeue(now); p == nil {
			return nil, clock.Never
		}
	}
	if g != nil && !g.admit(now, q.u.whole(p)) {
		q.held = p
		return nil, now
	}
	q.held = nil
	q.u.sent(&q.stats, p)
	return p, now
}

// Peek returns the packet Dequeue would return, deciding on it now, as
// the kernel's qdisc_peek_dequeued does.
func (q *DualPI2) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	q.tick(now)
	if q.held == nil {
		q.held = q.dequeue(now)
	}
	if q.held == nil {
		return nil, clock.Never
	}
	return q.held, now
}

// dequeue is dualpi2_qdisc_dequeue: dequeue_packet's choice of queue by
// the WRR credit, then the PI2 drop or mark (drop_dequeue) and the L
// queue's step AQM; the credit moves only for a packet that leaves.
func (q *DualPI2) dequeue(now clock.Time) *packet.Packet {
	for {
		lLen, cLen := q.lq.Len(), q.cq.Len()
		var p *packet.Packet
		var change int32
		fromL, applyStep := false, false
		switch {
		case lLen > 0 && (cLen == 0 || q.credit <= 0):
			p, fromL = q.lq.Pop(), true
			applyStep = q.step.pop()
			if cLen > 0 {
				change = q.wc
			}
		case cLen > 0:
			p = q.cq.Pop()
			if lLen > 0 {
				change = -q.wl
			}
		default:
			q.credit = q.creditInit
			return nil
		}
		change *= int32(q.u.whole(p))
		q.memUsed -= q.truesize(p)
		ect := packet.ECNOf(p.Bytes())
		if !q.dropEarly && q.mustDrop(now, p, fromL, ect) {
			dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonDualPI2)
			continue
		}
		if fromL && q.stepAQM(now, p, applyStep, ect) {
			dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonDualPI2Step)
			continue
		}
		q.credit += change
		return p
	}
}

// stepAQM is do_step_aqm: an L packet subject to the step threshold
// whose sojourn (or the L queue it leaves behind) exceeds it is marked, or
// dropped (true) if it is not ECN-capable.
func (q *DualPI2) stepAQM(now clock.Time, p *packet.Packet, applyStep bool, ect packet.ECN) bool {
	var d uint64
	if q.stepInPackets {
		d = uint64(q.lq.Len())
	} else {
		d = uint64(now - p.Enqueued)
	}
	if !applyStep || d <= q.stepThresh {
		return false
	}
	if ect == packet.NotECT {
		return true
	}
	if q.mark(now, p, ReasonDualPI2Step) {
		q.stepMarks++
	}
	return false
}

// Len returns the packets held: both queues and a peeked packet.
func (q *DualPI2) Len() int {
	n := q.lq.Len() + q.cq.Len()
	if q.held != nil {
		n++
	}
	return n
}

// Backlog returns the bytes held, as the device counts them.
func (q *DualPI2) Backlog() int {
	b := q.u.backlog(&q.lq) + q.u.backlog(&q.cq)
	if q.held != nil {
		b += q.u.whole(q.held)
	}
	return b
}

// Stats returns the counters: drops by ReasonLimit (also counted as
// Overlimits), ReasonDualPI2 and ReasonDualPI2Step, and ECN marks (a
// packet marked by both the coupled probability and the step counts
// twice, as the kernel's ecn_mark does).
func (q *DualPI2) Stats() Stats {
	s := q.stats
	s.Qlen, s.Backlog = q.Len(), q.Backlog()
	return s
}

// Kind returns "dualpi2".
func (q *DualPI2) Kind() string { return "dualpi2" }

// Child returns nil: dualpi2's two queues are its own.
func (q *DualPI2) Child() Qdisc { return nil }

// Config returns the configuration with the defaults filled in.
func (q *DualPI2) Config() Spec { return q.cfg }

// MemLimit returns the memory limit in force: MemLimit, or the default
// the device's psched_mtu gives.
func (q *DualPI2) MemLimit() uint32 { return q.memLimit }

// Prob returns the base probability p' as a fraction.
func (q *DualPI2) Prob() float64 { return float64(q.prob) / dpi2MaxProb }

// DualPI2XStats are the extended statistics the kernel dumps
// (struct tc_dualpi2_xstats).
type DualPI2XStats struct {
	Prob           uint32 // p' in 1/(2^32-1)
	DelayC, DelayL uint32 // head sojourn of each queue, µs
	PacketsInC     uint32 // packets enqueued to the C queue
	PacketsInL     uint32 // and to the L queue
	MaxQ           uint32 // the longest the queues were at an enqueue
	ECNMark        uint32 // CE marks, the step's included
	StepMarks      uint32 // CE marks by the step threshold
	Credit         int32  // the WRR credit: > 0 serves the C queue
	MemoryUsed     uint32
	MaxMemoryUsed  uint32
	MemoryLimit    uint32
}

// XStats returns the extended statistics at now, as dualpi2_dump_stats.
func (q *DualPI2) XStats(now clock.Time) DualPI2XStats {
	q.tick(now)
	us := func(r *ring) uint32 {
		if h := r.Front(); h != nil {
			return uint32(min(uint64(now-h.Enqueued)/1000, math.MaxUint32))
		}
		return 0
	}
	return DualPI2XStats{
		Prob: q.prob, DelayC: us(&q.cq), DelayL: us(&q.lq),
		PacketsInC: q.packetsInC, PacketsInL: q.packetsL, MaxQ: q.maxq,
		ECNMark: q.ecnMarks, StepMarks: q.stepMarks, Credit: q.credit,
		MemoryUsed: q.memUsed, MaxMemoryUsed: q.maxMemUsed, MemoryLimit: q.memLimit,
	}
}
