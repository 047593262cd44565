package qdisc

import (
	"fmt"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

// CoDel is Linux's codel (sch_codel.c): one FIFO whose head is dropped, or
// CE-marked with ecn, when packets have waited longer than target for at
// least an interval, at a rate that rises with the square root of the drop
// count. Enqueue only tail-drops at the packet limit. CoDel decides per
// packet as Env.Granularity counts them: the segments of a super-packet
// one after the other.
type CoDel struct {
	cfg CoDelConfig
	env *Env
	// headQueue holds the packets; the next Dequeue returns the run that
	// Peek decided on without deciding again.
	headQueue
	params        codelParams
	vars          codelVars
	cstats        codelStats
	stats         Stats
	dropOverlimit uint32
}

var _ Qdisc = (*CoDel)(nil)

// NewCoDel returns a codel discipline. Zero fields take tc's defaults:
// limit 1000 packets, target 5ms, interval 100ms, ecn off, no
// ce_threshold; the MTU guard is env.PschedMTU().
func NewCoDel(cfg CoDelConfig, env *Env) (*CoDel, error) {
	q := &CoDel{env: env, headQueue: headQueue{u: unitsOf(env)}}
	if err := q.configure(cfg); err != nil {
		return nil, err
	}
	return q, nil
}

// configure validates cfg, fills in its defaults and applies it.
func (q *CoDel) configure(cfg CoDelConfig) error {
	if err := q.env.Check(); err != nil {
		return fmt.Errorf("codel: %w", err)
	}
	if cfg.Limit < 0 {
		return fmt.Errorf("codel: limit %d is negative; give a packet count >= 1 (tc's default is %d)", cfg.Limit, DefaultCoDelLimit)
	}
	cfg = cfg.WithDefaults()
	if err := checkCoDelTimes("codel", cfg.Target, cfg.Interval, cfg.CEThreshold); err != nil {
		return err
	}
	if cfg.InvSqrt != InvSqrtLinux && cfg.InvSqrt != InvSqrtExact {
		return fmt.Errorf("codel: unknown invsqrt mode %d; use linux or exact", cfg.InvSqrt)
	}
	q.cfg = cfg
	q.params = newCoDelParams(cfg.Target, cfg.Interval, cfg.CEThreshold, q.env.PschedMTU(), cfg.ECN, cfg.InvSqrt)
	return nil
}

// Change applies spec as the kernel's codel_change does: the new
// parameters take effect at once, CoDel's state (count, dropping, the next
// drop) carries on, and if the queue holds more than the new limit the
// excess is dropped from the head (ReasonLimit), without CoDel's decision.
func (q *CoDel) Change(now clock.Time, spec Spec) error {
	c, err := specAs[CoDelConfig](q, spec)
	if err != nil {
		return err
	}
	if err := q.configure(c); err != nil {
		return err
	}
	trimHead(now, &q.q, &q.cur, q.Len()-q.cfg.Limit, q, q.env, q.u, &q.stats)
	return nil
}

// Flush drops every packet held, a peeked one included, with
// ReasonFlushed.
func (q *CoDel) Flush(now clock.Time) { q.flush(now, q, q.env, &q.stats) }

// checkCoDelTimes validates target, interval and ce_threshold, the
// defaults filled in.
func checkCoDelTimes(kind string, target, interval, ceThreshold time.Duration) error {
	if err := checkCoDelTime(kind, "target", target); err != nil {
		return err
	}
	if err := checkCoDelTime(kind, "interval", interval); err != nil {
		return err
	}
	return checkCoDelTime(kind, "ce_threshold", ceThreshold)
}

// Enqueue stamps p and appends it, or tail-drops it (ReasonLimit) when the
// queue already holds limit packets.
func (q *CoDel) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := q.enqueueUnits(now, p)
	return v
}

func (q *CoDel) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	p.Enqueued = now
	room := q.cfg.Limit - q.Len()
	if q.u.count(p) <= room {
		q.q.Push(p)
		return 0, Queued
	}
	n, v := admitCount(now, p, &q.q, room, q, q.env, q.u, &q.stats)
	q.dropOverlimit += uint32(n)
	return n, v
}

// Dequeue returns the head packet that CoDel lets through at now, after
// dropping or marking as its control law says; nil and clock.Never when
// the queue is (or became) empty.
func (q *CoDel) Dequeue(now clock.Time) (*packet.Packet, clock.Time) { return q.dequeueRun(now, nil) }

func (q *CoDel) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	return q.peeked.dequeueDecided(now, g, q.u, q.env, &q.stats, &q.cur, q.take)
}

// take runs CoDel on units of the head packet while they may leave as one
// run, and returns the run.
func (q *CoDel) take(now clock.Time, g gate) *packet.Packet {
	return q.headQueue.take(now, g, q.env, q, func() bool { return q.vars.dequeue(now, q, &q.params, &q.cstats) })
}

// Peek returns the packet the next Dequeue will return. The CoDel decision
// (and any drops it makes) happens here, once.
func (q *CoDel) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	return q.peeked.peekDecided(now, q.take)
}

// Stats returns the tc -s counters.
func (q *CoDel) Stats() Stats {
	s := q.stats
	s.Qlen = q.Len()
	s.Backlog = q.Backlog()
	return s
}

// CoDelXStats are codel's extended statistics (struct tc_codel_xstats, as
// tc -s prints them under the qdisc line).
type CoDelXStats struct {
	MaxPacket     uint32        // largest packet examined
	Count         uint32        // CoDel's drop count
	LastCount     uint32        // count when the dropping state was last entered
	LDelay        time.Duration // sojourn time of the last packet examined
	DropNext      time.Duration // time from now to the next drop; 0 unless dropping
	DropOverlimit uint32        // tail drops at the packet limit
	ECNMark       uint32        // packets marked instead of dropped
	Dropping      bool          // in the dropping state
	CEMark        uint32        // packets marked for exceeding ce_threshold
}

// XStats returns the extended statistics at time now (DropNext is relative
// to it).
func (q *CoDel) XStats(now clock.Time) CoDelXStats {
	x := CoDelXStats{
		MaxPacket:     q.cstats.maxPacket,
		Count:         q.vars.count,
		LastCount:     q.vars.lastcount,
		LDelay:        q.vars.ldelay.duration(),
		DropOverlimit: q.dropOverlimit,
		ECNMark:       q.cstats.ecnMark,
		Dropping:      q.vars.dropping,
		CEMark:        q.cstats.ceMark,
	}
	if q.vars.dropping {
		x.DropNext = time.Duration(int64(int32(q.vars.dropNext-codelNow(now))) << codelShift)
	}
	return x
}

// Kind returns "codel".
func (q *CoDel) Kind() string { return "codel" }

// Child returns nil: codel is not classful.
func (q *CoDel) Child() Qdisc { return nil }

// Config returns the configuration with defaults filled in.
func (q *CoDel) Config() Spec { return q.cfg }

func (q *CoDel) codelPop() (clock.Time, int, bool) { return q.cur.pop(&q.q, q.u) }

func (q *CoDel) codelBacklog() int { return q.u.backlog(&q.q) - q.cur.takenLen }

func (q *CoDel) codelDrop(now clock.Time) {
	q.cur.drop(now, &q.q, q.u, q.env, q, &q.stats, ReasonCoDel)
}

func (q *CoDel) codelMark(now clock.Time, why Reason) bool {
	if packet.ECNOf(q.q.Front().Bytes()) == packet.NotECT {
		return false
	}
	q.cur.marks = q.cur.marks.with(why)
	q.stats.Marks++
	return true
}
