package qdisc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

// redSeedSalt is the second word of RED's PCG state, the first being the
// discipline's seed.
const redSeedSalt = 0x7265645f6d61726b // "red_mark"

// redAdaptPeriod is how often the kernel runs adaptive RED's controller:
// its timer's HZ/2 jiffies, half a second at any even HZ.
const redAdaptPeriod = 500 * time.Millisecond

// REDConfig configures red (tc-red(8)). Sizes are bytes as the device
// counts them (Env.PktLen).
type REDConfig struct {
	// Limit is the default bfifo child's limit: required, as tc requires
	// it.
	Limit int
	// Min and Max are the thresholds of the average queue: default Max
	// Limit/4 (three times Min when Min is given), Min Max/3, as tc
	// computes them (Sally Floyd's recommendations).
	Min, Max int
	// Avpkt is the average packet size, which sizes the averaging
	// constant and the idle damping: required.
	Avpkt int
	// Burst is how many packets of Avpkt bytes an empty queue takes
	// before the average reaches Min: default (2·Min + Max)/(3·Avpkt).
	Burst int
	// Probability is the marking probability at Max (max_P): default
	// 0.02.
	Probability float64
	// Bandwidth is the link's rate, which the idle damping assumes:
	// default 10 Mbit/s, tc's.
	Bandwidth Rate
	// ECN marks ECN-capable packets instead of dropping them; HardDrop
	// still drops them above Max; NoDrop (with ECN) queues the packets it
	// cannot mark instead of dropping them; Adaptive adjusts Probability
	// every half second to keep the average between Min + 0.4·(Max-Min)
	// and Min + 0.6·(Max-Min) (Floyd, Gummadi and Shenker's Adaptive RED).
	ECN, HardDrop, NoDrop, Adaptive bool
}

// Kind returns "red".
func (REDConfig) Kind() string { return "red" }

// WithDefaults returns c with tc's defaults in Min, Max, Burst,
// Probability and Bandwidth where they are zero (Limit and Avpkt have
// none: they are required).
func (c REDConfig) WithDefaults() REDConfig {
	if c.Max == 0 {
		if c.Min != 0 {
			c.Max = 3 * c.Min
		} else {
			c.Max = c.Limit / 4
		}
	}
	if c.Min == 0 {
		c.Min = c.Max / 3
	}
	if c.Burst == 0 && c.Avpkt > 0 {
		c.Burst = (2*c.Min + c.Max) / (3 * c.Avpkt)
	}
	orDefault(&c.Probability, DefaultREDProbability)
	orDefault(&c.Bandwidth, DefaultREDBandwidth)
	return c
}

// redConfigure validates c (with its defaults) as tc and the kernel would
// and returns what tc sends the kernel.
func redConfigure(c REDConfig) (REDConfig, redTC, error) {
	const u32 = math.MaxUint32
	for _, f := range []struct {
		name string
		v    int
	}{{"limit", c.Limit}, {"min", c.Min}, {"max", c.Max}, {"avpkt", c.Avpkt}, {"burst", c.Burst}} {
		if f.v < 0 || int64(f.v) > u32 {
			return c, redTC{}, fmt.Errorf("red: %s %d out of range; tc takes 0 to %d", f.name, f.v, uint32(u32))
		}
	}
	if c.Min != 0 && c.Max != 0 && c.Max < c.Min {
		return c, redTC{}, fmt.Errorf("red: max %d is below min %d bytes (tc fails with \"failed to calculate EWMA constant\"); give max above min", c.Max, c.Min)
	}
	if c.NoDrop && !c.ECN {
		return c, redTC{}, fmt.Errorf("red: nodrop needs ecn (the kernel refuses it alone: only marking can replace a drop); add ecn or remove nodrop")
	}
	c = c.WithDefaults()
	t, err := redParamsFromTC(uint32(c.Limit), uint32(c.Min), uint32(c.Max), uint32(c.Avpkt), uint32(c.Burst), c.Probability, c.Bandwidth)
	if err != nil {
		return c, t, err
	}
	if err := redCheck(t); err != nil {
		return c, t, err
	}
	return c, t, nil
}

// redWarnings returns tc's warning for c: a burst that needs an averaging
// constant of 2^-10 or smaller ("RED: WARNING. Burst N seems to be too
// large."), and that the bandwidth is tc's default when none is given.
func redWarnings(c REDConfig, _ *Env) []string {
	var w []string
	if c.Bandwidth == 0 {
		w = append(w, "bandwidth not given: tc assumes 10Mbit for the idle damping; give the link's rate (bandwidth RATE)")
	}
	if c.Adaptive && !tcArmsAdaptiveTimer {
		w = append(w, "adaptive changes nothing, as on Linux 6.1 configured by tc: the kernel arms the adaptation timer from a flags field tc leaves empty; probability stays as given")
	}
	_, t, err := redConfigure(c)
	if err == nil && t.largeBurst {
		w = append(w, fmt.Sprintf("burst %d seems to be too large (averaging constant 2^-%d): the average follows the queue very slowly", t.burst, t.wlog))
	}
	return w
}

// REDStats are red's own counters, tc -s's "marked early pdrop other"
// split as the kernel counts them (struct red_stats).
type REDStats struct {
	ProbDrop, ProbMark     uint64 // between the thresholds, by the count rule
	ForcedDrop, ForcedMark uint64 // at or above Max
	PDrop                  uint64 // refused by the child (its limit)
}

// RED is Random Early Detection (sch_red.c, include/net/red.h) in front
// of a child discipline, by default a bfifo of Limit bytes. Each arrival
// updates the average queue from the child's backlog (or decays it after
// an idle period) and is passed, marked or dropped by red_action's count
// rule (red_core.go); what passes goes to the child, whose refusals count
// as pdrop. Dequeue and Peek are the child's.
//
// Packets are what Env.Granularity makes them: under GranularitySegment
// each wire segment of a super-packet arrives on its own, as on a link,
// and is decided with the backlog the ones before it left.
//
// The idle period starts when a dequeue finds nothing to send, as
// red_dequeue's does. The kernel's tbf peeks at its child before it
// dequeues, and htb dequeues only a leaf that holds packets: neither ever
// calls the dequeue of an empty red, so a red below them never starts an
// idle period (its average then decays one arrival at a time). A parent
// says which it is (tellParentPeeks).
//
// Adaptive RED's half-second timer is not armed, as in Linux 6.1 when tc
// configured the qdisc (tcArmsAdaptiveTimer); were it armed, it would run
// from the qdisc's first packet event and from each Change, each event
// first running the updates that fell due, with the average as it was.
type RED struct {
	cfg   REDConfig
	env   *Env
	tc    redTC
	p     redParams
	v     redVars
	child childQdisc
	dflt  bool // the child is the default bfifo
	u     units
	// parentPeeks: the parent peeks before it dequeues, so an empty red
	// is never dequeued (tellParentPeeks).
	parentPeeks bool
	rng         *rand.PCG

	started   bool
	nextAdapt clock.Time

	stats Stats
	x     REDStats
}

var _ Qdisc = (*RED)(nil)

// NewRED returns a red in front of child, or of a new bfifo of cfg.Limit
// bytes if child is nil. Its random stream comes from
// PositionSeed(env.Seed, 0), as the root of a tree.
func NewRED(cfg REDConfig, env *Env, child Qdisc) (*RED, error) {
	return newRED(cfg, env, child, rootSeed(env))
}

func newRED(cfg REDConfig, env *Env, child Qdisc, seed uint64) (*RED, error) {
	if err := env.Check(); err != nil {
		return nil, fmt.Errorf("red: %w", err)
	}
	c, t, err := redConfigure(cfg)
	if err != nil {
		return nil, err
	}
	q := &RED{env: env, u: unitsOf(env), rng: rand.NewPCG(seed, redSeedSalt)}
	if child == nil {
		f, err := defaultBfifo("red", c.Limit, env)
		if err != nil {
			return nil, err
		}
		child, q.dflt = f, true
	}
	q.child = childOf(child, q.u)
	q.apply(c, t)
	// The kernel's red_init starts an idle period when the child is
	// empty; with an average of 0 its length does not matter.
	q.v.idle = q.child.Len() == 0
	return q, nil
}

// apply takes c and t, validated: red_set_parms and red_set_vars.
func (q *RED) apply(c REDConfig, t redTC) {
	q.cfg, q.tc = c, t
	q.p.set(t)
	q.v.reset()
}

// Change applies spec as the kernel's red_change does: a new default
// bfifo of the new limit takes the child's place, and the packets the old
// child held are dropped (ReasonFlushed: __red_change flushes and destroys
// the old child, even one given in the chain); the average and the count
// start again, an idle period starts, and adaptive RED's timer (were it
// armed) starts again from now.
func (q *RED) Change(now clock.Time, spec Spec) error {
	c, err := specAs[REDConfig](q, spec)
	if err != nil {
		return err
	}
	c, t, err := redConfigure(c)
	if err != nil {
		return err
	}
	f, err := defaultBfifo("red", c.Limit, q.env)
	if err != nil {
		return err
	}
	q.child.Flush(now)
	q.child, q.dflt = childOf(f, q.u), true
	q.apply(c, t)
	q.v.idle, q.v.idleStart = true, now
	q.started, q.nextAdapt = true, now.Add(redAdaptPeriod)
	return nil
}

// Flush drops every packet held, the child's included, with
// ReasonFlushed, and starts the average again (red_reset: red_restart).
func (q *RED) Flush(now clock.Time) {
	q.child.Flush(now)
	q.v.reset()
	q.v.idle = false
}

// graft attaches child in place of the current child and returns the old
// one, which keeps its packets; nil means a new default bfifo of Limit
// bytes.
func (q *RED) graft(child Qdisc) (Qdisc, error) {
	dflt := child == nil
	if dflt {
		f, err := defaultBfifo("red", q.cfg.Limit, q.env)
		if err != nil {
			return nil, err
		}
		child = f
	}
	old := q.child.Qdisc
	q.child, q.dflt = childOf(child, q.u), dflt
	return old, nil
}

// tcArmsAdaptiveTimer says whether a red configured through tc's syntax
// runs adaptive RED's half-second timer. It does not on Linux 6.1 with
// iproute2 5.8 or later: tc sends every flag in the TCA_RED_FLAGS
// bitfield and leaves tc_red_qopt's flags 0, and __red_change arms the
// timer from the latter (ctl->flags & TC_RED_ADAPTATIVE), while the
// other flags, and the "adaptive" that tc shows, come from the former.
// Measured in a Debian 6.1 guest: after 20 s of a 12 Mbit/s flood into
// 10 Mbit/s, far above the target band, tc still showed "probability
// 0.02", and the drops matched a red without "adaptive". wanlab does the
// same; red.h's algorithm (adapt) stays, for a kernel that arms it.
const tcArmsAdaptiveTimer = false

// tick starts the adaptive timer at the first event and runs the updates
// due by now, if the timer is armed (tcArmsAdaptiveTimer): otherwise, as
// always with tc's configuration, it does nothing.
func (q *RED) tick(now clock.Time) {
	if !tcArmsAdaptiveTimer || !q.cfg.Adaptive {
		return
	}
	if !q.started {
		q.started, q.nextAdapt = true, now.Add(redAdaptPeriod)
		return
	}
	for now >= q.nextAdapt {
		before := q.p.maxP
		q.p.adapt(&q.v, q.nextAdapt)
		q.nextAdapt = q.nextAdapt.Add(redAdaptPeriod)
		if q.p.maxP == before && !q.v.idle {
			// Nothing moves max_P until the next packet event: skip the
			// timer ahead (the average is frozen without one).
			skip := int64(now-q.nextAdapt)/int64(redAdaptPeriod) + 1
			if skip > 0 {
				q.nextAdapt = q.nextAdapt.Add(time.Duration(skip) * redAdaptPeriod)
			}
		}
	}
}

// draw is the kernel's get_random_u32.
func (q *RED) draw() uint32 { return uint32(q.rng.Uint64() >> 32) }

// Enqueue passes, marks or drops p, unit by unit, and hands what passes to
// the child.
func (q *RED) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := q.enqueueUnits(now, p)
	return v
}

func (q *RED) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	q.tick(now)
	p.Enqueued = now
	ect := packet.ECNOf(p.Bytes()) != packet.NotECT
	n := q.u.count(p)
	if n == 1 {
		refused := q.enqueueUnit(now, p, ect)
		return refused, verdict(1, refused, false)
	}
	// Each segment sees the backlog the ones before it left in the
	// child, as the kernel's red_enqueue of each segment would: they go
	// one by one.
	refused, rest := 0, p
	for i := 0; i < n; i++ {
		unit := rest
		if i < n-1 {
			unit, rest = q.env.cut(rest, 1)
		}
		refused += q.enqueueUnit(now, unit, ect)
	}
	return refused, verdict(n, refused, false)
}

// enqueueUnit is red_enqueue for one unit: it returns 1 if the unit was
// dropped (by red or by the child), 0 if it was queued.
func (q *RED) enqueueUnit(now clock.Time, p *packet.Packet, ect bool) int {
	q.v.qavg = q.p.calcQavg(&q.v, now, uint32(q.child.Backlog()))
	q.v.idle = false
	switch q.p.action(&q.v, q.v.qavg, q.draw) {
	case redProbMark:
		q.stats.Overlimits++
		switch {
		case q.cfg.ECN && ect:
			q.x.ProbMark++
			q.mark(now, p)
		case q.cfg.ECN && q.cfg.NoDrop:
			// Not ECN-capable in nodrop mode: queued as it is.
		default:
			q.x.ProbDrop++
			dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonRED)
			return 1
		}
	case redHardMark:
		q.stats.Overlimits++
		switch {
		case q.cfg.ECN && !q.cfg.HardDrop && ect:
			q.x.ForcedMark++
			q.mark(now, p)
		case q.cfg.ECN && !q.cfg.HardDrop && q.cfg.NoDrop:
		default:
			q.x.ForcedDrop++
			dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonRED)
			return 1
		}
	}
	refused := q.child.offer(now, p)
	q.x.PDrop += uint64(refused)
	q.stats.Drops += uint64(refused)
	return refused
}

// mark sets CE on p (INET_ECN_set_ce: a packet already CE stays so and
// counts as marked) and reports it.
func (q *RED) mark(now clock.Time, p *packet.Packet) {
	q.stats.Marks++
	markSet(0).with(ReasonRED).apply(now, p, q, q.env)
}

// Dequeue returns what the child hands out now.
func (q *RED) Dequeue(now clock.Time) (*packet.Packet, clock.Time) { return q.dequeueRun(now, nil) }

func (q *RED) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	q.tick(now)
	p, next := q.child.pull(now, g)
	if p == nil {
		if next != now && !q.v.idle && !q.parentPeeks {
			q.v.idle, q.v.idleStart = true, now
		}
		return nil, next
	}
	q.u.sent(&q.stats, p)
	return p, now
}

// parentPeeker is a discipline that must know whether its parent, as
// the kernel has it, peeks at it before dequeuing: red, whose idle
// period starts only when its dequeue is called and finds nothing.
// Parents call tellParentPeeks as they attach a child.
type parentPeeker interface {
	setParentPeeks(peeks bool)
}

// tellParentPeeks tells child, if it cares, whether its parent peeks
// before it dequeues (tbf; htb dequeues only a leaf that holds packets,
// which comes to the same) or dequeues it directly (the root's device,
// netem, prio).
func tellParentPeeks(child Qdisc, peeks bool) {
	if c, ok := child.(parentPeeker); ok {
		c.setParentPeeks(peeks)
	}
}

func (q *RED) setParentPeeks(peeks bool) { q.parentPeeks = peeks }

// Peek returns the child's head, as red_peek does.
func (q *RED) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	q.tick(now)
	return q.child.Peek(now)
}

// Len returns the packets held (the child's).
func (q *RED) Len() int { return q.child.Len() }

// Backlog returns the bytes held (the child's).
func (q *RED) Backlog() int { return q.child.Backlog() }

// Stats returns the counters: Drops are red's early drops (ReasonRED)
// and the child's refusals (pdrop), as tc -s counts them; Overlimits
// counts every early or forced decision; Marks the ECN marks.
func (q *RED) Stats() Stats {
	s := q.stats
	s.Qlen, s.Backlog = q.Len(), q.Backlog()
	return s
}

// XStats returns red's own counters, tc -s's "marked early pdrop other"
// (other is always 0).
func (q *RED) XStats() REDStats { return q.x }

// Kind returns "red".
func (q *RED) Kind() string { return "red" }

// Child returns the inner discipline (the default bfifo if none was given).
func (q *RED) Child() Qdisc { return q.child.Qdisc }

// Config returns the configuration with tc's defaults filled in.
func (q *RED) Config() Spec { return q.cfg }

// Wlog, Plog and ScellLog are what tc -d shows as "ewma", "Plog" and
// "Scell_log"; MaxP is the marking probability at Max now (adaptive RED
// moves it), as tc -d's "probability".
func (q *RED) Wlog() int         { return int(q.tc.wlog) }
func (q *RED) Plog() int         { return int(q.tc.plog) }
func (q *RED) ScellLog() int     { return int(q.tc.cell) }
func (q *RED) MaxP() float64     { return float64(q.p.maxP) / (1 << 32) }
func (q *RED) AverageQueue() int { return int(q.v.qavg >> q.p.wlog) }
