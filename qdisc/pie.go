package qdisc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

// pieSeedSalt is the second word of PIE's PCG state, the first being the
// discipline's seed.
const pieSeedSalt = 0x7069655f64726f70 // "pie_drop"

// PIE is the Proportional Integral controller Enhanced (RFC 8033) as Linux
// implements it (sch_pie.c, include/net/pie.h), with its integer
// arithmetic: the probability is a u64 fraction of 2^56-1, times are
// 64 ns psched ticks, alpha and beta are tc's 1/16 units.
//
// Enqueue drops with ReasonLimit when Limit packets are queued, and
// otherwise asks drop_early: never while burst allowance is left (150 ms
// of dequeuing after a reset), nor while the queue delay is below half the
// target and the probability below 20%, nor while less than two MTUs are
// queued; else it accumulates the (bytemode-scaled) probability and drops
// with ReasonPIE when the accumulation reaches 8.5, or by chance once it
// passes 0.85. With ECN, a packet chosen for an early drop is CE-marked
// instead while the probability is at most 10% and the packet is ECN
// capable.
//
// The queue delay is the sojourn time of the last dequeued packet (0 when
// it left an empty queue) or, with DQRateEstimator, backlog over the
// measured drain rate. The controller runs on the kernel's jiffy timer,
// first HZ/2 jiffies after the qdisc starts and then every tupdate jiffies
// (tupdate rounded up to whole jiffies of env.Hz()). wanlab has no timer:
// each Enqueue, Dequeue and Peek first applies the updates that fell due,
// with the state frozen since the last packet event, exactly as the timer
// would have; the qdisc "starts" at the first of these calls.
//
// Peek behaves as the kernel's qdisc_peek_dequeued: it takes the head and
// measures its delay; the next Dequeue returns it.
type PIE struct {
	cfg    PIEConfig
	env    *Env
	params pieParams
	vars   pieVars
	limit  int
	ecn    bool
	rng    *rand.PCG

	// headQueue holds the packets: its cursor a unit measured but not
	// handed out, its peeked run one already dequeued and measured by
	// Peek.
	headQueue

	// The update timer, in jiffies counted from the clock's start.
	jiffyClock
	tupdate int64 // jiffies
	nextJ   int64 // jiffy of the next update
	nextAt  clock.Time

	stats Stats
	x     pieCounters
}

// pieCounters are the kernel's struct pie_stats, which tc -s prints as
// pie's extended statistics.
type pieCounters struct {
	packetsIn uint32 // units admitted (queued or marked)
	dropped   uint32 // units dropped, at the limit or early
	maxq      uint32 // the longest queue an admitted unit found
}

var _ Qdisc = (*PIE)(nil)

// NewPIE returns a pie qdisc. Zero fields take tc's defaults (limit 1000,
// target 15ms, tupdate 15ms, alpha 2, beta 20); times are used in whole
// microseconds, as tc passes them. Its random stream comes from
// PositionSeed(env.Seed, 0), as the root of a tree.
func NewPIE(cfg PIEConfig, env *Env) (*PIE, error) {
	return newPIE(cfg, env, rootSeed(env))
}

// newPIE is NewPIE with the seed of the discipline's position.
func newPIE(cfg PIEConfig, env *Env, seed uint64) (*PIE, error) {
	q := &PIE{env: env, rng: rand.NewPCG(seed, pieSeedSalt)}
	if err := q.configure(cfg); err != nil {
		return nil, err
	}
	q.vars.reset()
	return q, nil
}

// configure validates cfg, fills in tc's defaults and applies it; the
// controller's state and the update timer carry on.
func (q *PIE) configure(cfg PIEConfig) error {
	cfg = cfg.WithDefaults()
	if err := validatePIE(cfg); err != nil {
		return err
	}
	env := q.env
	if err := env.Check(); err != nil {
		return fmt.Errorf("pie: %w", err)
	}
	hz := uint64(env.Hz())
	q.cfg = cfg
	q.limit = cfg.Limit
	q.u = unitsOf(env)
	q.ecn = cfg.ECN
	q.hz = hz
	q.params = newPIEParams(pieTargetTicks(cfg.Target), cfg.Alpha, cfg.Beta, cfg.DQRateEstimator)
	q.params.device(env, cfg.Bytemode)
	q.tupdate = usecsToJiffies(cfg.TUpdate, hz)
	return nil
}

// pieTargetTicks is the kernel's target in psched ticks, from the whole µs
// tc passes (PSCHED_NS2TICKS in pie_change and fq_pie_change).
func pieTargetTicks(target time.Duration) uint64 {
	return uint64(target/time.Microsecond) * 1000 >> 6
}

// usecsToJiffies is usecs_to_jiffies of d in whole µs at hz: rounded up.
func usecsToJiffies(d time.Duration, hz uint64) int64 {
	us := uint64(d / time.Microsecond)
	return int64((us*hz + 999999) / 1000000)
}

// Change applies spec as the kernel's pie_change does: the new parameters
// apply from now on (a new tupdate from the update after the one already
// due), the drop probability, the delay estimates and the burst allowance
// carry on, and packets beyond a lower limit are dropped from the head
// (ReasonLimit).
func (q *PIE) Change(now clock.Time, spec Spec) error {
	c, err := specAs[PIEConfig](q, spec)
	if err != nil {
		return err
	}
	if err := (&PIE{env: q.env}).configure(c); err != nil {
		return err
	}
	q.tick(now) // the updates due so far ran with the old parameters
	q.configure(c)
	trimHead(now, &q.q, &q.cur, q.Len()-q.limit, q, q.env, q.u, &q.stats)
	return nil
}

// Flush drops every packet held, a peeked one included, with ReasonFlushed.
func (q *PIE) Flush(now clock.Time) { q.flush(now, q, q.env, &q.stats) }

func validatePIE(cfg PIEConfig) error {
	const maxUS = math.MaxUint32 * time.Microsecond
	switch {
	case cfg.Limit < 0 || int64(cfg.Limit) > math.MaxUint32:
		return fmt.Errorf("pie: limit %d out of range; give 1 to %d packets", cfg.Limit, uint32(math.MaxUint32))
	case cfg.Target < time.Microsecond || cfg.Target > maxUS:
		return fmt.Errorf("pie: target %v out of range; give 1us to %v", cfg.Target, maxUS)
	case cfg.TUpdate < time.Microsecond || cfg.TUpdate > maxUS:
		return fmt.Errorf("pie: tupdate %v out of range; give 1us to %v", cfg.TUpdate, maxUS)
	case cfg.Alpha < 0 || cfg.Alpha > 32:
		return fmt.Errorf("pie: alpha %d out of range; tc accepts 0 to 32 (in 1/16)", cfg.Alpha)
	case cfg.Beta < 0 || cfg.Beta > 32:
		return fmt.Errorf("pie: beta %d out of range; tc accepts 0 to 32 (in 1/16)", cfg.Beta)
	}
	return nil
}

// tick runs the controller updates due by now.
func (q *PIE) tick(now clock.Time) {
	if q.started && now < q.nextAt {
		return // the common case, kept small enough to inline
	}
	q.update(now)
}

// update is tick when the discipline starts or an update is due.
func (q *PIE) update(now clock.Time) {
	if !q.started {
		q.begin(now)
		q.nextJ = q.firstUpdate()
		q.nextAt = q.at(q.nextJ)
		return
	}
	n := (q.jiffies(now)-q.nextJ)/q.tupdate + 1
	q.nextJ += n * q.tupdate
	q.nextAt = q.at(q.nextJ)
	q.params.advance(&q.vars, uint32(q.Backlog()), n)
}

// Enqueue admits, marks or drops p: each of its packets as Env.Granularity
// counts them, one after the other.
func (q *PIE) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := q.enqueueUnits(now, p)
	return v
}

// pieFate is what PIE's enqueue does with one unit.
type pieFate uint8

const (
	pieQueue pieFate = iota
	pieMark
	pieDropLimit
	pieDropEarly
)

func (q *PIE) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	q.tick(now)
	p.Enqueued = now
	ect := q.ecn && packet.ECNOf(p.Bytes()) != packet.NotECT
	if q.u.one(p) {
		fate := q.decide(q.Len(), q.Backlog(), q.u.whole(p), ect)
		if fate == pieQueue {
			q.q.Push(p)
			return 0, Queued
		}
		refused := q.place(now, p, fate)
		return refused, verdict(1, refused, false)
	}
	n := q.u.count(p)
	// Units decided to stay count in the length and backlog the next
	// unit sees; consecutive units of one fate leave p together.
	qlen, backlog := q.Len(), q.Backlog()
	rest, run, refused := p, 0, 0
	// Unit i of p is unit i-cut of rest: a cut may shorten p itself.
	cut := 0
	var runFate pieFate
	for i := range n {
		size := q.u.size(rest, i-cut)
		fate := q.decide(qlen, backlog, size, ect)
		if fate <= pieMark {
			qlen++
			backlog += size
		}
		if run > 0 && fate != runFate {
			var head *packet.Packet
			head, rest = q.env.cut(rest, run)
			cut += run
			refused += q.place(now, head, runFate)
			run = 0
		}
		runFate = fate
		run++
	}
	refused += q.place(now, rest, runFate)
	return refused, verdict(n, refused, false)
}

// decide is pie_qdisc_enqueue's decision on a unit of size bytes arriving
// at a queue of qlen units and backlog bytes, with its side effects on the
// controller and the counters.
func (q *PIE) decide(qlen, backlog, size int, ect bool) pieFate {
	if qlen >= q.limit {
		q.stats.Overlimits++
		q.vars.accuProb = 0
		q.x.dropped++
		return pieDropLimit
	}
	fate := pieQueue
	if q.params.dropEarly(&q.vars, uint32(backlog), uint32(size), q.rng) {
		if !ect || q.vars.prob > pieMaxProb/10 {
			q.vars.accuProb = 0
			q.x.dropped++
			return pieDropEarly
		}
		q.stats.Marks++
		fate = pieMark
	}
	// As pie_qdisc_enqueue: the queue's length before this unit joins it.
	q.x.packetsIn++
	q.x.maxq = max(q.x.maxq, uint32(qlen))
	return fate
}

// place carries out fate on p, a run of units, and returns how many it
// dropped.
func (q *PIE) place(now clock.Time, p *packet.Packet, fate pieFate) int {
	switch fate {
	case pieDropLimit, pieDropEarly:
		why := ReasonLimit
		if fate == pieDropEarly {
			why = ReasonPIE
		}
		n := q.u.count(p)
		dropUnits(now, p, q, q.env, q.u, &q.stats, why)
		return n
	case pieMark:
		markSet(0).with(ReasonPIE).apply(now, p, q, q.env)
	}
	q.q.Push(p)
	return 0
}

// Dequeue returns the head packet, having measured its queue delay.
func (q *PIE) Dequeue(now clock.Time) (*packet.Packet, clock.Time) { return q.dequeueRun(now, nil) }

func (q *PIE) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	q.tick(now)
	return q.peeked.dequeueDecided(now, g, q.u, q.env, &q.stats, &q.cur, q.take)
}

// Peek returns the packet Dequeue would return; as the kernel's
// qdisc_peek_dequeued, it measures the packets' delay now.
func (q *PIE) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	q.tick(now)
	return q.peeked.peekDecided(now, q.take)
}

// take takes units off the head packet, running pie_process_dequeue on
// each, while g admits them, and returns them as one run.
func (q *PIE) take(now clock.Time, g gate) *packet.Packet {
	nowT := psTicks(int64(now))
	return q.headQueue.take(now, g, q.env, q, func() bool {
		enq, size, ok := q.cur.pop(&q.q, q.u)
		if ok {
			q.params.processDequeue(&q.vars, enq, size, nowT, uint32(q.u.backlog(&q.q)-q.cur.takenLen))
		}
		return ok
	})
}

// Stats returns the counters: drops by ReasonLimit (also counted as
// Overlimits, as pie's xstats "overlimit") and ReasonPIE, and ECN marks.
func (q *PIE) Stats() Stats {
	s := q.stats
	s.Qlen, s.Backlog = q.Len(), q.Backlog()
	return s
}

// PIEXStats are pie's extended statistics (struct tc_pie_xstats), as tc
// -s prints them under the qdisc line.
type PIEXStats struct {
	Prob      float64       // the drop probability, 0 to 1
	Delay     time.Duration // the queue delay the controller last used, in whole µs
	AvgDQRate uint32        // the estimated drain rate in bytes/s; with DQRateEstimator only
	Estimator bool          // whether the drain rate is estimated (dq_rate_estimator)
	PacketsIn uint32        // units admitted, queued or marked
	Overlimit uint32        // units dropped at the limit
	Dropped   uint32        // units dropped, at the limit or early
	MaxQ      uint32        // the longest queue an admitted unit found
	ECNMark   uint32        // units CE-marked instead of dropped
}

// XStats returns the extended statistics as pie_dump_stats fills them:
// the delay is the tick count's ns truncated to 32 bits and then divided
// to µs, the drain rate bytes per tick scaled back to bytes per second.
func (q *PIE) XStats() PIEXStats {
	x := PIEXStats{
		Prob:      float64(q.vars.prob<<8) / math.MaxUint64,
		Delay:     time.Duration(uint32(q.vars.qdelay<<6)/1000) * time.Microsecond,
		Estimator: q.params.estimator,
		PacketsIn: q.x.packetsIn,
		Overlimit: uint32(q.stats.Overlimits),
		Dropped:   q.x.dropped,
		MaxQ:      q.x.maxq,
		ECNMark:   uint32(q.stats.Marks),
	}
	if x.Estimator {
		x.AvgDQRate = uint32(uint64(q.vars.avgDQRate) * psTicksPerSec >> pieScale)
	}
	return x
}

// Kind returns "pie".
func (q *PIE) Kind() string { return "pie" }

// Child returns nil: pie is not classful.
func (q *PIE) Child() Qdisc { return nil }

// Config returns the configuration with tc's defaults filled in.
func (q *PIE) Config() Spec { return q.cfg }

// Prob returns the current drop probability as a fraction. It can exceed 1:
// the kernel clamps it only at the u64 wrap, 256 times MAX_PROB.
func (q *PIE) Prob() float64 { return float64(q.vars.prob) / pieMaxProb }

// QDelay returns the queue delay the controller last used or measured, as
// tc -s shows it.
func (q *PIE) QDelay() time.Duration { return time.Duration(q.vars.qdelay << 6) }

// TUpdate returns the effective update interval: tupdate rounded up to
// whole jiffies.
func (q *PIE) TUpdate() time.Duration {
	return time.Duration(q.tupdate) * time.Second / time.Duration(q.hz)
}
