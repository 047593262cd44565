package qdisc

import (
	"math"
	"math/bits"
	"math/rand/v2"

	"wanlab/clock"
)

// PIE's fixed-point constants, as include/net/pie.h and pkt_sched.h define
// them. Times are psched ticks of 64 ns; probabilities are u64 fractions
// of pieMaxProb.
const (
	pieMaxProb        = math.MaxUint64 >> 8 // MAX_PROB: probability 1
	psTicksPerSec     = 1e9 >> 6            // PSCHED_TICKS_PER_SEC
	pieQueueThreshold = 16384               // bytes for a drain-rate sample
	pieScale          = 8                   // PIE_SCALE
	pieInvalid        = math.MaxUint64      // DTIME_INVALID, DQCOUNT_INVALID
	pieBurstTicks     = 150e6 >> 6          // 150 ms burst allowance
	pie250msTicks     = 250e6 >> 6          // threshold of the non-linear boost
	pieTwoPercent     = pieMaxProb / 50     // MAX_PROB / (100 / 2)
)

// psTicks is psched_get_time for a time in ns: floor(t / 64).
func psTicks(t int64) uint64 { return uint64(t >> 6) }

// pieVars is the kernel's struct pie_vars. Comparing two values tells
// whether a controller update changed anything.
type pieVars struct {
	qdelay    uint64 // ticks
	qdelayOld uint64 // ticks
	burstTime uint64 // ticks of burst allowance left
	dqTstamp  uint64 // ticks, or pieInvalid
	prob      uint64
	accuProb  uint64
	dqCount   uint64 // bytes, or pieInvalid
	avgDQRate uint32 // bytes per tick << pieScale
	backlog   uint32 // backlog at the last update (backlog_old)
}

// reset is pie_vars_init: a fresh burst allowance and measurement cycle.
// It leaves the probability and the delays alone, as the kernel does.
func (v *pieVars) reset() {
	v.burstTime = pieBurstTicks
	v.dqTstamp = pieInvalid
	v.accuProb = 0
	v.dqCount = pieInvalid
	v.avgDQRate = 0
}

// pieParams are the kernel's struct pie_params, in kernel units, with the
// device's psched_mtu that pie_drop_early reads.
type pieParams struct {
	target    uint64 // ticks
	alpha     uint64 // (alpha/16 per second) as a probability per tick
	beta      uint64
	estimator bool
	bytemode  bool
	mtu       uint32 // psched_mtu
}

// device sets what pie_drop_early takes from the device and bytemode.
func (pp *pieParams) device(env *Env, bytemode bool) {
	pp.mtu = uint32(env.PschedMTU())
	pp.bytemode = bytemode
}

// newPIEParams scales tc's alpha and beta (in 1/16) to probability per tick
// of delay error, as pie_calculate_probability does.
func newPIEParams(targetTicks uint64, alpha, beta int, estimator bool) pieParams {
	return pieParams{
		target:    targetTicks,
		alpha:     uint64(alpha) * (pieMaxProb / psTicksPerSec) >> 4,
		beta:      uint64(beta) * (pieMaxProb / psTicksPerSec) >> 4,
		estimator: estimator,
	}
}

// delta is the probability change of one update at probability p: alpha
// and beta are halved below 10% and quartered once more for each decade
// below 1% (down to 0.0001%), the step is capped at 2% from 10% up, and
// 2% is added above 250 ms. The arithmetic wraps as the kernel's u64/s64
// mix does.
func (pp *pieParams) delta(p, qdelay, qdelayOld uint64) int64 {
	a, b := pp.alpha, pp.beta
	if p < pieMaxProb/10 {
		a >>= 1
		b >>= 1
		for power := uint64(100); p < pieMaxProb/power && power <= 1000000; power *= 10 {
			a >>= 2
			b >>= 2
		}
	}
	d := int64(a*(qdelay-pp.target) + b*(qdelay-qdelayOld))
	if d > int64(pieTwoPercent) && p >= pieMaxProb/10 {
		d = int64(pieMaxProb / 100 * 2)
	}
	if qdelay > pie250msTicks {
		d += int64(pieTwoPercent)
	}
	return d
}

// update is pie_calculate_probability with the queue's backlog in bytes.
//
// The probability saturates only when the u64 wraps, not at pieMaxProb:
// under a sustained delay above target the kernel lets it grow past 1 (up
// to 256 times MAX_PROB) and then resets it to MAX_PROB.
func (pp *pieParams) update(v *pieVars, backlog uint32) {
	var qdelay, qdelayOld uint64
	if pp.estimator {
		qdelayOld = v.qdelay
		v.qdelayOld = v.qdelay
		if v.avgDQRate > 0 {
			qdelay = uint64(backlog << pieScale / v.avgDQRate)
		}
	} else {
		qdelay, qdelayOld = v.qdelay, v.qdelayOld
	}
	// A zero delay with a backlog means a tiny queue: no decay this time.
	updateProb := qdelay != 0 || backlog == 0
	d := pp.delta(v.prob, qdelay, qdelayOld)
	old := v.prob
	v.prob += uint64(d)
	if d > 0 {
		if v.prob < old {
			v.prob = pieMaxProb
			updateProb = false
		}
	} else if v.prob > old {
		v.prob = 0
	}
	if qdelay == 0 && qdelayOld == 0 && updateProb {
		v.prob -= v.prob / 64
	}
	v.qdelay = qdelay
	v.backlog = backlog
	if v.qdelay < pp.target/2 && v.qdelayOld < pp.target/2 && v.prob == 0 &&
		(!pp.estimator || v.avgDQRate > 0) {
		v.reset()
	}
	if !pp.estimator {
		v.qdelayOld = qdelay
	}
}

// advance applies n updates with the queue frozen (no packet arrived or
// left in between), as the kernel's timer would have. It stops as soon as
// an update changes nothing, and it applies runs of identical linear steps
// at once, so a long stall costs a bounded number of operations. It
// returns how many single updates it computed.
func (pp *pieParams) advance(v *pieVars, backlog uint32, n int64) (work int) {
	for n > 0 {
		before := *v
		pp.update(v, backlog)
		work++
		n--
		if *v == before {
			return work
		}
		if n > 0 {
			n -= pp.linearRun(v, backlog, n)
		}
	}
	return work
}

// pieRegion returns the range [lo, hi) of probabilities that share one
// scaling of alpha and beta; top is the region from 10% up (hi is then the
// u64 wrap).
func pieRegion(p uint64) (lo, hi uint64, top bool) {
	if p >= pieMaxProb/10 {
		return pieMaxProb / 10, 0, true
	}
	hi = pieMaxProb / 10
	for power := uint64(100); power <= 1000000; power *= 10 {
		lo = pieMaxProb / power
		if p >= lo {
			return lo, hi, false
		}
		hi = lo
	}
	return 0, hi, false
}

// linearRun applies at once up to n further updates while each of them
// would just add the same delta to the probability: the delays and backlog
// are frozen and equal to last time's, no decay applies, and the
// probability stays in one scaling region without wrapping, clamping or
// reaching 0. It returns how many updates it applied (possibly 0).
func (pp *pieParams) linearRun(v *pieVars, backlog uint32, n int64) int64 {
	qdelay := v.qdelay
	if pp.estimator {
		qdelay = 0
		if v.avgDQRate > 0 {
			qdelay = uint64(backlog << pieScale / v.avgDQRate)
		}
		if qdelay != v.qdelay {
			return 0
		}
	} else if v.qdelayOld != qdelay {
		return 0
	}
	if v.backlog != backlog || (qdelay == 0 && backlog == 0) {
		return 0
	}
	d := pp.delta(v.prob, qdelay, qdelay)
	lo, hi, top := pieRegion(v.prob)
	var k uint64
	switch {
	case d > 0 && top:
		step := uint64(d)
		if v.prob == pieMaxProb {
			// From MAX_PROB the probability climbs to the u64 wrap and
			// falls back to MAX_PROB: whole cycles change nothing.
			cycle := (math.MaxUint64-pieMaxProb)/step + 1
			if whole := uint64(n) / cycle * cycle; whole > 0 {
				v.qdelayOld = qdelay
				return int64(whole)
			}
		}
		k = (math.MaxUint64 - v.prob) / step
	case d > 0:
		k = (hi-1-v.prob)/uint64(d) + 1
	case d < 0:
		step := uint64(-d)
		if v.prob == 0 {
			return 0
		}
		k = (v.prob - 1) / step
		if lo > 0 {
			k = min(k, (v.prob-lo)/step+1)
		}
	default:
		return 0
	}
	k = min(k, uint64(n))
	if k > 0 {
		v.prob += k * uint64(d)
		// Every update sets qdelay_old to this (frozen) delay.
		v.qdelayOld = qdelay
	}
	return int64(k)
}

// dropEarly is pie_drop_early on v for a packet of size bytes arriving at
// a queue (pie's, or fq_pie's flow) of backlog bytes; rng is the
// discipline's random stream, drawn only past the accumulated 0.85.
func (pp *pieParams) dropEarly(v *pieVars, backlog, size uint32, rng *rand.PCG) bool {
	if v.burstTime > 0 {
		return false
	}
	if v.qdelay < pp.target/2 && v.prob < pieMaxProb/5 {
		return false
	}
	if backlog < 2*pp.mtu {
		return false
	}
	local := v.prob
	if pp.bytemode && size <= pp.mtu {
		local = uint64(size) * (v.prob / uint64(pp.mtu))
	}
	if local == 0 {
		v.accuProb = 0
	} else {
		v.accuProb += local
	}
	if v.accuProb < pieMaxProb/100*85 {
		return false
	}
	if v.accuProb >= pieMaxProb/2*17 {
		return true
	}
	if rng.Uint64()>>8 < local {
		v.accuProb = 0
		return true
	}
	return false
}

// processDequeue is pie_process_dequeue on v: a unit enqueued at enq, of
// size bytes, has just left, backlog bytes remain (of pie's queue, or of
// fq_pie's flow), nowT is the time in ticks.
func (pp *pieParams) processDequeue(v *pieVars, enq clock.Time, size int, nowT uint64, backlog uint32) {
	var dtime uint32
	if !pp.estimator {
		v.qdelay = nowT - psTicks(int64(enq))
		if v.dqTstamp != pieInvalid {
			dtime = uint32(nowT - v.dqTstamp)
		}
		v.dqTstamp = nowT
		if backlog == 0 {
			v.qdelay = 0
		}
		if dtime == 0 {
			return
		}
	} else {
		if backlog >= pieQueueThreshold && v.dqCount == pieInvalid {
			v.dqTstamp = nowT
			v.dqCount = 0
		}
		if v.dqCount == pieInvalid {
			return
		}
		v.dqCount += uint64(size)
		if v.dqCount < pieQueueThreshold {
			return
		}
		count := uint32(v.dqCount << pieScale)
		if dtime = uint32(nowT - v.dqTstamp); dtime == 0 {
			return
		}
		count /= dtime
		if v.avgDQRate == 0 {
			v.avgDQRate = count
		} else {
			v.avgDQRate = v.avgDQRate - v.avgDQRate>>3 + count>>3
		}
		if backlog < pieQueueThreshold {
			v.dqCount = pieInvalid
		} else {
			v.dqCount = 0
			v.dqTstamp = nowT
		}
	}
	if v.burstTime > uint64(dtime) {
		v.burstTime -= uint64(dtime)
	} else {
		v.burstTime = 0
	}
}

// jiffyClock is the kernel's jiffies for a discipline's timer (pie's and
// fq_pie's adapt_timer): jiffy 0 begins when the discipline starts, which
// in wanlab is its first packet event; jiffy j begins at start + j/HZ s,
// on whole ns rounded up.
type jiffyClock struct {
	started bool
	start   clock.Time
	hz      uint64
}

// begin starts the clock at now.
func (jc *jiffyClock) begin(now clock.Time) { jc.started, jc.start = true, now }

// firstUpdate is the jiffy of the first timer expiry: pie_init and
// fq_pie_init arm the timer HZ/2 jiffies (half a second) ahead.
func (jc *jiffyClock) firstUpdate() int64 { return int64(jc.hz / 2) }

// at returns when jiffy j begins, or clock.Never past the clock's range.
func (jc *jiffyClock) at(j int64) clock.Time {
	hi, lo := bits.Mul64(uint64(j), 1e9)
	if hi >= jc.hz {
		return clock.Never
	}
	ns, rem := bits.Div64(hi, lo, jc.hz)
	if rem != 0 {
		ns++
	}
	if ns > uint64(clock.Never-jc.start) {
		return clock.Never
	}
	return jc.start + clock.Time(ns)
}

// jiffies returns the jiffy under way at now: the last one begun.
func (jc *jiffyClock) jiffies(now clock.Time) int64 {
	hi, lo := bits.Mul64(uint64(now-jc.start), jc.hz)
	j, _ := bits.Div64(hi, lo, 1e9)
	return int64(j)
}
