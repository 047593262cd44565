package qdisc

import (
	"fmt"
	"math"
	"time"

	"wanlab/clock"
)

// codelTime is Linux's codel_time_t: a u32 count of 1024 ns units. It wraps
// every 2^32 units (about 73 minutes), so it is only ever compared with the
// wrap-safe methods below, which hold for differences under 2^31 units.
// Working in these units (rather than in ns) is what makes wanlab's drop
// times match the kernel's to the microsecond.
type codelTime uint32

// codelShift is CODEL_SHIFT: one codelTime unit is 1<<10 ns.
const codelShift = 10

// codelMaxDropsPerDequeue is CODEL_MAX_DROPS_PER_DEQUEUE from the newest
// include/net/codel.h: the most packets one dequeue may drop before it
// gives up catching up with a schedule that fell far behind.
const codelMaxDropsPerDequeue = 256

// codelDisabledThreshold is CODEL_DISABLED_THRESHOLD (INT_MAX): the
// ce_threshold of a discipline configured without one.
const codelDisabledThreshold codelTime = math.MaxInt32

// maxTCMicros is the largest time tc can send: netlink carries codel and
// fq_codel times as u32 microseconds.
const maxTCMicros = math.MaxUint32

// codelNow converts a clock time to codel units, as codel_get_time does
// with ktime_get_ns.
func codelNow(t clock.Time) codelTime { return codelTime(uint64(t) >> codelShift) }

// codelFromDuration converts a configured time the way it reaches the
// kernel: tc sends whole microseconds and the kernel keeps (us*1000)>>10.
func codelFromDuration(d time.Duration) codelTime {
	us := uint64(d / time.Microsecond)
	return codelTime(us * 1000 >> codelShift)
}

// duration returns t (a difference of codel times) in ns.
func (t codelTime) duration() time.Duration { return time.Duration(uint64(t) << codelShift) }

func (t codelTime) after(u codelTime) bool   { return int32(t-u) > 0 }
func (t codelTime) afterEq(u codelTime) bool { return int32(t-u) >= 0 }
func (t codelTime) before(u codelTime) bool  { return u.after(t) }

// checkCoDelTime validates a configured codel or fq_codel time: it must be
// non-negative and fit the u32 of microseconds that tc sends.
func checkCoDelTime(kind, name string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s: %s %v is negative; give a positive time such as 5ms", kind, name, d)
	}
	if uint64(d/time.Microsecond) > maxTCMicros {
		return fmt.Errorf("%s: %s %v exceeds the largest time tc can pass (%v); give a smaller one", kind, name, d, time.Duration(maxTCMicros)*time.Microsecond)
	}
	return nil
}

// codelParams are the parameters one CoDel instance runs with (the
// kernel's struct codel_params), already in codel units.
type codelParams struct {
	target      codelTime
	interval    codelTime
	ceThreshold codelTime // codelDisabledThreshold when off
	mtu         uint32    // no drop while the remaining backlog is at most this
	ecn         bool      // mark ECT packets instead of dropping them
	exact       bool      // InvSqrtExact: interval/sqrt(count) computed exactly
}

// newCoDelParams converts configured times; zero target and interval have
// already been replaced by their defaults.
func newCoDelParams(target, interval, ceThreshold time.Duration, mtu int, ecn bool, mode InvSqrtMode) codelParams {
	p := codelParams{
		target:      codelFromDuration(target),
		interval:    codelFromDuration(interval),
		ceThreshold: codelDisabledThreshold,
		mtu:         uint32(mtu),
		ecn:         ecn,
		exact:       mode == InvSqrtExact,
	}
	if ceThreshold > 0 {
		p.ceThreshold = codelFromDuration(ceThreshold)
	}
	return p
}

// codelVars is the state of one CoDel queue (struct codel_vars).
type codelVars struct {
	count      uint32 // drops (or marks) since entering the dropping state, with memory
	lastcount  uint32 // count when the dropping state was last entered
	dropping   bool
	recInvSqrt uint16 // 1/sqrt(count) in Q0.16, 0xFFFF standing for 1
	// firstAboveTime is when the sojourn time will have been above target
	// for an interval (0: it is not above target).
	firstAboveTime codelTime
	dropNext       codelTime // when the next drop (or mark) is due
	ldelay         codelTime // sojourn time of the last packet examined
}

// codelStats are the counters CoDel keeps beside its state (struct
// codel_stats), shared by all the queues of one discipline.
type codelStats struct {
	maxPacket uint32 // largest packet examined
	ecnMark   uint32 // packets CE-marked by the control law instead of dropped
	ceMark    uint32 // packets CE-marked because ldelay exceeded ce_threshold
}

// codelSource is the queue a CoDel instance serves, and the discipline that
// accounts for it. It hands out units (the packets of Env.Granularity: a
// super-packet's segments one by one) and keeps track of the unit it last
// popped, which CoDel drops, marks or lets go.
type codelSource interface {
	// codelPop takes the next unit off the queue and updates the
	// discipline's packet, byte and memory counts; it returns the unit's
	// enqueue time and length as the device counts it, and false if the
	// queue is empty.
	codelPop() (enqueued clock.Time, size int, ok bool)
	// codelBacklog returns the bytes the whole discipline still holds, as
	// the device counts them, for the MTU guard (fq_codel passes its
	// total, not the flow's).
	codelBacklog() int
	// codelDrop discards the unit last popped as a CoDel drop.
	codelDrop(now clock.Time)
	// codelMark sets CE on the unit last popped for why and counts it,
	// if it is ECN-capable, and reports whether it was.
	codelMark(now clock.Time, why Reason) bool
}

// newtonStep is codel_Newton_step: one Newton iteration of 1/sqrt(count)
// in fixed point. Starting from a stale value it is only approximate (0.5
// at count 2), and the kernel's drop times carry that error.
func (v *codelVars) newtonStep() {
	invsqrt := uint32(v.recInvSqrt) << 16 // Q0.32
	invsqrt2 := uint32(uint64(invsqrt) * uint64(invsqrt) >> 32)
	val := uint64(3<<32) - uint64(v.count)*uint64(invsqrt2)
	val >>= 2 // keeps the next product within 64 bits
	val = val * uint64(invsqrt) >> (32 - 2 + 1)
	v.recInvSqrt = uint16(val >> 16)
}

// updateInvSqrt refreshes recInvSqrt after count changed, by the mode's
// method. In exact mode the Q0.16 value is kept for inspection only; the
// control law computes interval/sqrt(count) itself.
func (v *codelVars) updateInvSqrt(p *codelParams) {
	if !p.exact {
		v.newtonStep()
		return
	}
	r := 65536 / math.Sqrt(float64(v.count))
	if r > 0xFFFF {
		r = 0xFFFF
	}
	v.recInvSqrt = uint16(r)
}

// controlLaw is codel_control_law: t + interval/sqrt(count), truncated to
// codel units. Linux multiplies by the Q0.16 reciprocal (reciprocal_scale);
// exact mode divides by the true square root.
func (p *codelParams) controlLaw(t codelTime, v *codelVars) codelTime {
	if p.exact {
		if v.count == 0 {
			return t + p.interval
		}
		return t + codelTime(float64(p.interval)/math.Sqrt(float64(v.count)))
	}
	return t + codelTime(uint64(p.interval)*uint64(uint32(v.recInvSqrt)<<16)>>32)
}

// shouldDrop is codel_should_drop for a unit enqueued at enq, of size
// bytes, already removed from the queue (ok false: the queue was empty);
// backlog is what the discipline still holds.
func (v *codelVars) shouldDrop(ok bool, enq clock.Time, size int, now codelTime, backlog int, prm *codelParams, st *codelStats) bool {
	if !ok {
		v.firstAboveTime = 0
		return false
	}
	v.ldelay = now - codelNow(enq)
	if n := uint32(size); n > st.maxPacket {
		st.maxPacket = n
	}
	if v.ldelay.before(prm.target) || backlog <= int(prm.mtu) {
		// Below target (or too little queued to matter): stay below for
		// at least an interval before dropping again.
		v.firstAboveTime = 0
		return false
	}
	if v.firstAboveTime == 0 {
		v.firstAboveTime = now + prm.interval
		return false
	}
	return now.after(v.firstAboveTime)
}

// dequeue is codel_dequeue: it takes units from src until one may leave,
// dropping (or, with ecn, marking) as the control law says, and reports
// whether one may: the one src popped last. It reports false when the
// queue ran empty.
func (v *codelVars) dequeue(now clock.Time, src codelSource, prm *codelParams, st *codelStats) bool {
	enq, size, ok := src.codelPop()
	if !ok {
		v.dropping = false
		return false
	}
	t := codelNow(now)
	drop := v.shouldDrop(ok, enq, size, t, src.codelBacklog(), prm, st)
	switch {
	case v.dropping && !drop:
		v.dropping = false
	case v.dropping:
		// Drop as many packets as the schedule says are due: a large
		// backlog can make the next drop due at once.
		for n := 0; v.dropping && t.afterEq(v.dropNext); n++ {
			if n == codelMaxDropsPerDequeue {
				// The schedule fell too far behind (a long wait or a
				// deep queue): restart it from now.
				v.dropNext = prm.controlLaw(t, v)
				break
			}
			v.count++
			v.updateInvSqrt(prm)
			if prm.ecn && src.codelMark(now, ReasonCoDel) {
				st.ecnMark++
				v.dropNext = prm.controlLaw(v.dropNext, v)
				break
			}
			src.codelDrop(now)
			enq, size, ok = src.codelPop()
			if !v.shouldDrop(ok, enq, size, t, src.codelBacklog(), prm, st) {
				v.dropping = false
			} else {
				// From the schedule, not from now, so that dequeue
				// quantisation does not accumulate.
				v.dropNext = prm.controlLaw(v.dropNext, v)
			}
		}
	case drop:
		if prm.ecn && src.codelMark(now, ReasonCoDel) {
			st.ecnMark++
		} else {
			src.codelDrop(now)
			enq, size, ok = src.codelPop()
			v.shouldDrop(ok, enq, size, t, src.codelBacklog(), prm, st)
		}
		v.dropping = true
		// If the queue went above target soon after it last went below,
		// the drop rate that controlled it then is a good start now.
		delta := v.count - v.lastcount
		if delta > 1 && (t - v.dropNext).before(16*prm.interval) {
			v.count = delta
			v.updateInvSqrt(prm)
		} else {
			v.count = 1
			v.recInvSqrt = 0xFFFF
		}
		v.lastcount = v.count
		v.dropNext = prm.controlLaw(t, v)
	}
	// ce_threshold marks on sojourn alone, whatever the state machine did.
	if ok && v.ldelay.after(prm.ceThreshold) && src.codelMark(now, ReasonCEThreshold) {
		st.ceMark++
	}
	return ok
}
