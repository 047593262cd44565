package qdisc

import (
	"fmt"
	"math"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

// TBF is the token bucket filter (sch_tbf.c), a shaper in front of a child
// discipline (by default a bfifo of Limit bytes).
//
// Lengths are as the device counts them (Env.PktLen: on Ethernet the
// 14-byte header is part of every packet, so a 1500-byte IP packet costs
// 1514 bytes of credit). Tokens are nanoseconds of credit. The rate bucket
// holds at most buffer = l2t(rate, burst) and the optional peak bucket
// mtu_t = l2t(peakrate, mtu), where l2t applies overhead, mpu and ATM
// cell rounding (see rateCfg). Both start full. Dequeue looks at the
// child's head of length len: with el = min(now-t_c, buffer),
//
//	tok  = min(el+tokens, buffer) - l2t(rate, len)
//	ptok = min(el+ptokens, mtu_t) - l2t(peak, len)   (0 without peakrate)
//
// and sends it iff both are >= 0, setting tokens, ptokens = tok, ptok and
// t_c = now; otherwise it counts an overlimit and answers with
// now + max(-tok, -ptok). It never sends a later packet ahead of a blocked
// head. t_c moves only on a send, so credit accrues across throttles.
//
// A packet longer than max_size (burst, or min(burst, mtu) with a peakrate)
// could never earn its tokens and is dropped at Enqueue with
// ReasonOversize. Packets are what Env.Granularity makes them: under
// GranularitySegment tbf charges a super-packet segment by segment, each
// as a packet of its own, and hands on the segments its tokens let go at
// once (cutting the super-packet where they run out); under
// GranularityGSO it charges a super-packet whole, and one longer than
// max_size whose segments fit is segmented and each segment queued on its
// own, as the kernel's tbf_segment does.
//
// Peek behaves as the kernel's qdisc_peek_dequeued: a packet that Peek
// reports has already been charged and taken from the child; the next
// Dequeue returns it.
type TBF struct {
	cfg     TBFConfig
	env     *Env
	child   childQdisc
	rate    rateCfg
	peak    rateCfg
	hasPeak bool
	buffer  int64 // rate bucket depth, ns
	mtu     int64 // peak bucket depth, ns
	maxSize int
	u       units
	dflt    bool // child is the default bfifo, which is no chain position
	st      tbfState
	peeked  peekHold
	// During a dequeue: the gate of tbf's own parent, whether tbf's own
	// tokens refused a unit and how long it must wait for them.
	up      gate
	refused bool
	wait    int64
	// charged records that tbf charged a unit its parent then refused:
	// the unit its child asks about next, which it must not charge again.
	charged bool
	// refusedAt is when tbf last refused a unit of refusedLen bytes for
	// its own tokens; asked again at that time about that unit (a run
	// ended there, and its parent asks for more) it refuses again without
	// counting a second overlimit, as the kernel's one dequeue would.
	refusedAt  clock.Time
	refusedLen int
	stats      Stats
}

// tbfState is what a send changes.
type tbfState struct {
	tokens, ptokens int64
	tc              clock.Time
}

var _ Qdisc = (*TBF)(nil)

// NewTBF returns a tbf shaping into child, or into a new bfifo of cfg.Limit
// bytes if child is nil (tc's default inner qdisc). Rate and Burst are
// required; Limit is required for the default child and otherwise unused
// (the kernel passes it only to a fifo child). PeakRate needs MTU and must
// exceed Rate (the kernel refuses it otherwise); MTU without PeakRate is
// accepted and ignored, as by the kernel. A burst below the device MTU is
// accepted, as the kernel only warns: see Warnings.
func NewTBF(cfg TBFConfig, env *Env, child Qdisc) (*TBF, error) {
	if err := env.Check(); err != nil {
		return nil, fmt.Errorf("tbf: %w", err)
	}
	if err := validateTBF(cfg, child != nil); err != nil {
		return nil, err
	}
	q := &TBF{env: env, u: unitsOf(env)}
	q.child = childOf(child, q.u)
	if child == nil {
		f, err := defaultBfifo("tbf", cfg.Limit, env)
		if err != nil {
			return nil, err
		}
		q.child, q.dflt = childOf(f, q.u), true
	}
	tellParentPeeks(q.child.Qdisc, true) // tbf_dequeue peeks first
	q.apply(cfg)
	return q, nil
}

// apply takes cfg, validated, as the configuration, with both buckets
// full.
func (q *TBF) apply(cfg TBFConfig) {
	q.cfg = cfg
	q.rate = newRateCfg(cfg.Rate, cfg.Overhead, cfg.MPU, cfg.Link)
	q.buffer = q.rate.l2t(cfg.Burst)
	q.maxSize = cfg.Burst
	q.hasPeak, q.peak, q.mtu = false, rateCfg{}, 0
	if cfg.PeakRate != 0 {
		q.hasPeak = true
		q.peak = newRateCfg(cfg.PeakRate, cfg.Overhead, cfg.MPU, cfg.Link)
		q.mtu = q.peak.l2t(cfg.MTU)
		q.maxSize = min(q.maxSize, cfg.MTU)
	}
	q.st.tokens, q.st.ptokens = q.buffer, q.mtu
	q.charged, q.refusedLen = false, -1
}

// Change applies spec as the kernel's tbf_change does: the queue stays
// (the child keeps its packets, and a packet tbf already holds leaves as
// planned), both buckets are refilled to the new burst and mtu (t_c does
// not move), and the default bfifo child takes the new limit, keeping any
// packets beyond it (fifo_set_limit). The limit does not reach a child
// given in the chain, whose own configuration says its limit. Limit is
// required only while the child is the default one.
func (q *TBF) Change(_ clock.Time, spec Spec) error {
	c, err := specAs[TBFConfig](q, spec)
	if err != nil {
		return err
	}
	if err := validateTBF(c, !q.dflt); err != nil {
		return err
	}
	q.apply(c)
	if q.dflt {
		q.child.Qdisc.(*Fifo).limit = c.Limit
	}
	return nil
}

// Flush drops every packet held, the child's included, with ReasonFlushed.
func (q *TBF) Flush(now clock.Time) {
	q.peeked.flush(now, q, q.env, q.u, &q.stats)
	q.child.Flush(now)
	q.charged = false
}

// graft attaches child in place of the current child and returns the old
// one, which keeps its packets. A nil child means the default bfifo of
// Limit bytes, which tbf then makes (as tbf_change does when tc deletes
// its child and changes tbf); Limit must be set.
func (q *TBF) graft(child Qdisc) (Qdisc, error) {
	dflt := child == nil
	if dflt {
		if q.cfg.Limit == 0 {
			return nil, fmt.Errorf("tbf: limit is required for the default bfifo child; give limit BYTES or latency TIME")
		}
		f, err := defaultBfifo("tbf", q.cfg.Limit, q.env)
		if err != nil {
			return nil, err
		}
		child = f
	}
	old := q.child.Qdisc
	q.child, q.dflt = childOf(child, q.u), dflt
	tellParentPeeks(child, true)
	return old, nil
}

func validateTBF(cfg TBFConfig, hasChild bool) error {
	const u32 = math.MaxUint32
	switch {
	case cfg.Rate == 0:
		return fmt.Errorf("tbf: rate is required; give e.g. rate 10mbit")
	case cfg.Burst <= 0:
		return fmt.Errorf("tbf: burst is required and must be positive; give e.g. burst 32kb (at least one MTU)")
	case int64(cfg.Burst) > u32:
		return fmt.Errorf("tbf: burst %d exceeds tc's 32-bit limit; give at most %d bytes", cfg.Burst, uint32(u32))
	case cfg.Limit < 0 || int64(cfg.Limit) > u32:
		return fmt.Errorf("tbf: limit %d out of range; give 1 to %d bytes", cfg.Limit, uint32(u32))
	case cfg.Limit == 0 && !hasChild:
		return fmt.Errorf("tbf: limit is required for the default bfifo child; give limit BYTES or latency TIME")
	case cfg.PeakRate != 0 && cfg.MTU <= 0:
		return fmt.Errorf("tbf: peakrate %d bit/s needs mtu; give mtu BYTES (e.g. mtu 1514)", cfg.PeakRate.BitsPerSecond())
	case cfg.PeakRate != 0 && cfg.PeakRate <= cfg.Rate:
		return fmt.Errorf("tbf: peakrate %d bit/s must exceed rate %d bit/s; raise peakrate or drop it", cfg.PeakRate.BitsPerSecond(), cfg.Rate.BitsPerSecond())
	case cfg.MTU < 0 || int64(cfg.MTU) > u32:
		return fmt.Errorf("tbf: mtu %d out of range; give 1 to %d bytes", cfg.MTU, uint32(u32))
	case cfg.MPU < 0 || cfg.MPU > math.MaxUint16:
		return fmt.Errorf("tbf: mpu %d out of range; give 0 to %d bytes", cfg.MPU, math.MaxUint16)
	case cfg.Overhead < 0 || cfg.Overhead > math.MaxUint16:
		return fmt.Errorf("tbf: overhead %d out of range; tc takes 0 to %d bytes", cfg.Overhead, math.MaxUint16)
	case cfg.Link != LinkEthernet && cfg.Link != LinkATM:
		return fmt.Errorf("tbf: unknown link layer %d; use ethernet or atm", cfg.Link)
	}
	return nil
}

// tbfWarnings returns the kernel's configuration warnings for cfg on env's
// device: a max_size (burst, or the peakrate mtu) below psched_mtu means
// full-size packets are dropped, never sent. The kernel accepts such a
// configuration and only logs it.
func tbfWarnings(cfg TBFConfig, env *Env) []string {
	mtu := env.PschedMTU()
	var w []string
	if cfg.Burst < mtu {
		w = append(w, fmt.Sprintf("burst %d is lower than the device MTU (%d): packets longer than %d bytes are dropped; raise burst to at least %d", cfg.Burst, mtu, cfg.Burst, mtu))
	}
	if cfg.PeakRate != 0 && cfg.MTU < mtu {
		w = append(w, fmt.Sprintf("peakrate mtu %d is lower than the device MTU (%d): packets longer than %d bytes are dropped; raise mtu to at least %d", cfg.MTU, mtu, cfg.MTU, mtu))
	}
	return w
}

// TBFLatencyLimit is tc's conversion of "latency T" into a byte limit:
// rate*T + burst, or the smaller peakrate*T + mtu when a peakrate is set,
// in tc's floating point and truncated to whole bytes. T is taken in whole
// microseconds, as tc's get_time parses it.
func TBFLatencyLimit(rate Rate, burst int, peak Rate, mtu int, latency time.Duration) int {
	us := float64(latency / time.Microsecond)
	lim := float64(rate)*us/1e6 + float64(burst)
	if peak != 0 {
		if lim2 := float64(peak)*us/1e6 + float64(mtu); lim2 < lim {
			lim = lim2
		}
	}
	if lim >= math.MaxUint32 {
		return math.MaxUint32
	}
	return int(lim)
}

// credit returns the rate and peak tokens that a packet of n bytes would
// leave at time t from state s: negative when it must wait.
func (q *TBF) credit(s *tbfState, t clock.Time, n int) (tok, ptok int64) {
	el := int64(t - s.tc)
	if el < 0 || el > q.buffer {
		// el < 0 only before the first send, when both buckets are full.
		el = q.buffer
	}
	if q.hasPeak {
		ptok = min(el+s.ptokens, q.mtu) - q.peak.l2t(n)
	}
	tok = min(el+s.tokens, q.buffer) - q.rate.l2t(n)
	return tok, ptok
}

// Enqueue drops p if it can never be sent, and otherwise hands it to the
// child. Drops by the child (but not its Congested verdicts) also count in
// tbf's Stats.Drops, as tc -s shows them.
func (q *TBF) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := q.enqueueUnits(now, p)
	return v
}

func (q *TBF) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	n := q.u.count(p)
	first := q.u.whole(p) // the length of p's first unit
	if n > 1 {
		first = q.u.size(p, 0)
	}
	if first <= q.maxSize {
		// The last unit is no longer than the first.
		refused := q.child.offer(now, p)
		q.stats.Drops += uint64(refused)
		return refused, verdict(n, refused, false)
	}
	if q.u.gso && p.Segs > 1 && p.SegmentLen(0)+q.u.hdr <= q.maxSize {
		return q.segment(now, p)
	}
	last := q.u.size(p, n-1)
	if n == 1 || last > q.maxSize {
		dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonOversize)
		return n, Dropped
	}
	// Every segment but the last is too long.
	drop, rest := q.env.cut(p, n-1)
	dropUnits(now, drop, q, q.env, q.u, &q.stats, ReasonOversize)
	refused := q.child.offer(now, rest)
	q.stats.Drops += uint64(refused)
	return n - 1 + refused, verdict(n, n-1+refused, false)
}

// segment is tbf_segment: a GSO packet longer than max_size is cut into
// its segments, each handed to the child on its own.
func (q *TBF) segment(now clock.Time, p *packet.Packet) (int, Verdict) {
	refused, segs := 0, p.Segments()
	for p != nil {
		seg := p
		if p.Segs > 1 {
			seg, p = q.env.cut(p, 1)
		} else {
			p = nil
		}
		if q.child.offer(now, seg) > 0 {
			refused++
		}
	}
	q.stats.Drops += uint64(refused)
	return refused, verdict(segs, refused, false)
}

// admit implements gate for the child: tbf charges the unit if its
// buckets allow it now, and asks its own parent. A parent that wants no
// more units (moreGate) has it refused uncharged.
func (q *TBF) admit(now clock.Time, size int) bool {
	if !q.charged && !q.more() {
		return false
	}
	if !q.charged {
		tok, ptok := q.credit(&q.st, now, size)
		if tok < 0 || ptok < 0 {
			if now != q.refusedAt || size != q.refusedLen {
				q.stats.Overlimits++
				q.refusedAt, q.refusedLen = now, size
			}
			q.refused, q.wait = true, max(-tok, -ptok)
			return false
		}
		q.st = tbfState{tokens: tok, ptokens: ptok, tc: now}
		q.refusedLen = -1
	}
	if q.up != nil && !q.up.admit(now, size) {
		q.charged = true
		return false
	}
	q.charged = false
	return true
}

// more implements moreGate for the child: tbf wants another unit while
// its own parent does.
func (q *TBF) more() bool { return q.up == nil || moreUnits(q.up) }

// Dequeue returns the units at the child's head that the buckets allow
// now, charged one by one; nil and when to try again otherwise.
func (q *TBF) Dequeue(now clock.Time) (*packet.Packet, clock.Time) { return q.dequeueRun(now, nil) }

func (q *TBF) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	return q.peeked.dequeue(now, g, q.u, q.env, &q.stats, q.take)
}

// take pulls from the child what the buckets (and g) admit now.
func (q *TBF) take(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	q.up, q.refused = g, false
	p, next := q.child.pull(now, q)
	q.up = nil
	if p == nil && q.refused {
		return nil, now.Add(time.Duration(q.wait))
	}
	return p, next
}

// Peek returns the packet Dequeue(now) would return. As the kernel's
// qdisc_peek_dequeued, it charges the tokens and takes the packet from the
// child; the next Dequeue hands it over.
func (q *TBF) Peek(now clock.Time) (*packet.Packet, clock.Time) { return q.peeked.peek(now, q.take) }

// Len returns the number of packets held, the child's included.
func (q *TBF) Len() int { return q.child.Len() + q.peeked.units(q.u) }

// Backlog returns the number of bytes held, the child's included.
func (q *TBF) Backlog() int { return q.child.Backlog() + q.peeked.size(q.u) }

// Stats returns tbf's counters. Drops includes the packets its child
// refused, as tc -s shows them; DropsByReason counts only tbf's own drops
// (ReasonOversize), the child's reasons being in the child's Stats.
// Overlimits counts throttled dequeue attempts.
func (q *TBF) Stats() Stats {
	s := q.stats
	s.Qlen, s.Backlog = q.Len(), q.Backlog()
	return s
}

// Kind returns "tbf".
func (q *TBF) Kind() string { return "tbf" }

// Child returns the inner discipline (the default bfifo if none was given).
func (q *TBF) Child() Qdisc { return q.child.Qdisc }

// Config returns the configuration as given (tbf has no defaults).
func (q *TBF) Config() Spec { return q.cfg }

// MaxSize returns the longest packet tbf accepts: burst, or min(burst,
// mtu) with a peakrate.
func (q *TBF) MaxSize() int { return q.maxSize }

// Buffer returns the depth of the rate bucket, l2t(rate, burst).
func (q *TBF) Buffer() time.Duration { return time.Duration(q.buffer) }
