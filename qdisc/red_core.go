package qdisc

import (
	"fmt"
	"math"
	"math/bits"

	"wanlab/clock"
)

// RED's arithmetic, as Linux's include/net/red.h does it (Floyd and
// Jacobson's "divisionless" form, with the kernel's fixed point), and its
// parameters as iproute2's tc computes them from tc-red(8)'s options
// (tc/q_red.c, tc/tc_red.c) before the kernel sees them. sfq's and
// choke's RED modes use the same arithmetic.
//
// The average queue qavg is a fixed-point byte count with its point at
// Wlog bits: each arrival moves it by W = 2^-Wlog towards the backlog.
// Between the thresholds a packet is marked when
//
//	((qavg - qth_min) >> Wlog) · qcount >= qR
//
// where qcount counts the packets since the last mark and qR is a uniform
// draw in [0, 2^32 / (max_P / (qth_max - qth_min))): the gap between two
// marks is uniform in 1..1/pb packets, pb = max_P·(avg - min)/(max - min),
// so the marked fraction is about 2·pb (Floyd and Jacobson's "uniform"
// count rule).

// redStabSize is the size of the idle damping table (RED_STAB_SIZE).
const redStabSize = 256

// Adaptive RED's bounds on max_P, a fraction of 2^32 (red.h's
// RED_ONE_PERCENT, rounded to the closest, MAX_P_MIN and MAX_P_MAX).
const (
	redOnePercent = uint32((1<<32 + 50) / 100)
	redMaxPMin    = 1 * redOnePercent
	redMaxPMax    = 50 * redOnePercent
)

// DefaultREDProbability and DefaultREDBandwidth are tc's defaults for
// red's probability and bandwidth (q_red.c: 0.02 and "10Mbit", which tc
// announces on stderr: "RED: set bandwidth to 10Mbit").
const (
	DefaultREDProbability = 0.02
	DefaultREDBandwidth   = Rate(10_000_000 / 8)
)

// redTC is what tc sends the kernel for a red: tc_red_qopt's thresholds
// (bytes) and logarithms, the idle damping table and max_P.
type redTC struct {
	qthMin, qthMax   uint32
	wlog, plog, cell uint8 // Wlog, Plog, Scell_log
	stab             [redStabSize]uint8
	maxP             uint32
	burst            uint32 // the burst tc used, given or its default
	// largeBurst is tc's warning "RED: WARNING. Burst N seems to be too
	// large." (Wlog 10 or more).
	largeBurst bool
}

// redParamsFromTC computes, as iproute2's red_parse_opt does, the
// thresholds (max: limit/4, or 3·min if min is given; min: max/3), the
// burst ((2·min + max) / (3·avpkt) packets), Wlog (tc_red_eval_ewma),
// Plog (tc_red_eval_P), the idle damping table and its Scell_log
// (tc_red_eval_idle_damping) and max_P (probability · 2^32, truncated).
// limit, min, max and avpkt are bytes, burst packets (0: tc's default),
// bandwidth in bytes/s. The errors are tc's, with the fix.
func redParamsFromTC(limit, qmin, qmax, avpkt, burst uint32, prob float64, bandwidth Rate) (redTC, error) {
	var t redTC
	if limit == 0 || avpkt == 0 {
		return t, fmt.Errorf("red: limit and avpkt are required; give e.g. limit 400000 avpkt 1000 (bytes)")
	}
	if !(prob > 0 && prob < 1) {
		return t, fmt.Errorf("red: probability %g is outside (0, 1); give the largest marking probability, e.g. 0.02", prob)
	}
	if qmax == 0 {
		if qmin != 0 {
			qmax = qmin * 3
		} else {
			qmax = limit / 4
		}
	}
	if qmin == 0 {
		qmin = qmax / 3
	}
	if burst == 0 {
		burst = (2*qmin + qmax) / (3 * avpkt)
	}
	wlog, err := redEvalEWMA(qmin, burst, avpkt)
	if err != nil {
		return t, err
	}
	plog, ok := redEvalP(qmin, qmax, prob)
	if !ok {
		return t, fmt.Errorf("red: no probability scale for min %d, max %d and probability %g (tc's \"failed to calculate probability\"); give max above min", qmin, qmax, prob)
	}
	cell, stab, ok := redEvalIdleDamping(wlog, avpkt, bandwidth)
	if !ok {
		return t, fmt.Errorf("red: no idle damping table for avpkt %d at bandwidth %d bit/s (tc's \"failed to calculate idle damping table\"); give the link's bandwidth", avpkt, bandwidth.BitsPerSecond())
	}
	t = redTC{qthMin: qmin, qthMax: qmax, wlog: uint8(wlog), plog: uint8(plog), cell: uint8(cell), stab: stab,
		maxP: uint32(uint64(prob * (1 << 32))), burst: burst, largeBurst: wlog >= 10}
	return t, nil
}

// redEvalEWMA is tc_red_eval_ewma: the smallest Wlog in 1..31 for which a
// burst of burst packets of avpkt bytes arriving at an empty queue leaves
// the average below min: burst + 1 - min/avpkt <= (1 - (1-W)^burst)/W.
func redEvalEWMA(qmin, burst, avpkt uint32) (int, error) {
	a := float64(burst) + 1 - float64(qmin)/float64(avpkt)
	if a < 1 {
		return 0, fmt.Errorf("red: burst %d is too small for min %d bytes at avpkt %d (tc_red_eval_ewma); give burst %d or more", burst, qmin, avpkt, 1+qmin/avpkt)
	}
	w := 0.5
	for wlog := 1; wlog < 32; wlog++ {
		if a <= (1-math.Pow(1-w, float64(burst)))/w {
			return wlog, nil
		}
		w /= 2
	}
	return 0, fmt.Errorf("red: no averaging constant fits burst %d at min %d bytes and avpkt %d (tc's \"failed to calculate EWMA constant\"); give a smaller burst", burst, qmin, avpkt)
}

// redEvalP is tc_red_eval_P: Plog, the number of doublings that bring
// prob/(max - min) above 1, at most 31. tc computes max - min in unsigned
// arithmetic and takes it as an int, so max below min fails.
func redEvalP(qmin, qmax uint32, prob float64) (int, bool) {
	d := int32(qmax - qmin)
	if d <= 0 {
		return 0, false
	}
	prob /= float64(d)
	i := 0
	for ; i < 32; i++ {
		if prob > 1 {
			break
		}
		prob *= 2
	}
	if i >= 32 {
		return 0, false
	}
	return i, true
}

// redEvalIdleDamping is tc_red_eval_idle_damping: the table by which the
// kernel decays the average over an idle period, Stab[t >> Scell_log] =
// -log(1-W) · t / xmit_time capped at 31, with xmit_time avpkt's
// transmission time at bandwidth in tc's ticks (tc_calc_xmittime).
//
// tc computes it in ticks of 64 ns (15.625 a µs); the kernel looks the
// table up with the idle time in µs (red_calc_qavg_from_idle_time). So an
// idle period decays the average as if it had been 15.625 times shorter:
// wanlab keeps the mismatch, as Linux behaves.
//
// The C converts each entry from double to u8, which for a value beyond
// the u8 range is undefined; on x86-64 the compiler's 32-bit truncation
// leaves the value's low byte (and 0 for an infinite one, when avpkt takes
// less than a µs at bandwidth). cToU8 gives those bytes.
func redEvalIdleDamping(wlog int, avpkt uint32, bandwidth Rate) (cell int, stab [redStabSize]uint8, ok bool) {
	ticks, fits := tcXmitTicks(bandwidth, int(avpkt))
	if !fits || ticks >= 1<<32 {
		return 0, stab, false
	}
	xmit := float64(uint32(ticks))
	lw := -math.Log(1-1/float64(uint64(1)<<wlog)) / xmit
	maxtime := 31 / lw
	for cell = 0; cell < 32; cell++ {
		if maxtime/float64(uint64(1)<<cell) < 512 {
			break
		}
	}
	if cell >= 32 {
		return 0, stab, false
	}
	for i := 1; i < 255; i++ {
		// (i << Scell_log) is a C int: it wraps past 2^31.
		v := cToU8(float64(int32(uint32(i)<<cell)) * lw)
		stab[i] = min(v, 31)
	}
	stab[255] = 31
	return cell, stab, true
}

// cToU8 is a C conversion of v to unsigned char as gcc compiles it on
// x86-64 (cvttsd2si to 32 bits, then the low byte): NaN, infinities and
// values outside the int32 range give 0x80000000, whose low byte is 0.
func cToU8(v float64) uint8 {
	if math.IsNaN(v) || v >= 1<<31 || v < -(1<<31) {
		return 0
	}
	return uint8(int32(v))
}

// redParams are the kernel's struct red_parms.
type redParams struct {
	qthMin, qthMax uint32 // Wlog-scaled
	scellMax       uint32
	maxP           uint32 // max_P, a fraction of 2^32
	maxPDelta      uint32 // max_P / qth_delta, at least 1: qR's divisor
	qthDelta       uint32 // max - min, bytes (at least 1)
	targetMin      uint32 // adaptive RED's target band, bytes
	targetMax      uint32
	scellLog, wlog uint8
	plog           uint8
	stab           [redStabSize]uint8
}

// redCheck is the kernel's red_check_params: the scaled thresholds fit 32
// bits, Scell_log is below 32, max is not below min, and every table entry
// is below 32. tc's values always pass for a sane configuration; the error
// says which failed.
func redCheck(t redTC) error {
	switch {
	case bits.Len32(t.qthMin)+int(t.wlog) >= 32:
		return fmt.Errorf("red: min %d bytes with averaging constant Wlog %d overflows the kernel's 32-bit average (it refuses it); give a smaller min or a smaller burst", t.qthMin, t.wlog)
	case bits.Len32(t.qthMax)+int(t.wlog) >= 32:
		return fmt.Errorf("red: max %d bytes with averaging constant Wlog %d overflows the kernel's 32-bit average (it refuses it); give a smaller max or a smaller burst", t.qthMax, t.wlog)
	case t.cell >= 32:
		return fmt.Errorf("red: Scell_log %d is 32 or more, which the kernel refuses", t.cell)
	case t.qthMax < t.qthMin:
		return fmt.Errorf("red: max %d is below min %d bytes; give max above min", t.qthMax, t.qthMin)
	}
	for i, s := range t.stab {
		if s >= 32 {
			return fmt.Errorf("red: idle damping entry %d is %d, 32 or more, which the kernel refuses", i, s)
		}
	}
	return nil
}

// set is red_set_parms: the thresholds scaled by Wlog, max_P (from Plog
// when tc sent none), qR's divisor, adaptive RED's target band (min + 0.4
// and 0.6 of max - min, in fifths rounded down) and the idle bound.
func (p *redParams) set(t redTC) {
	delta := int32(t.qthMax - t.qthMin)
	if delta <= 0 {
		delta = 1
	}
	p.qthMin, p.qthMax = t.qthMin<<t.wlog, t.qthMax<<t.wlog
	p.wlog, p.plog = t.wlog, t.plog
	p.qthDelta = uint32(delta)
	maxP := t.maxP
	if maxP == 0 {
		maxP = redMaxP(t.plog) * uint32(delta)
	}
	p.maxP = maxP
	p.maxPDelta = max(maxP/uint32(delta), 1)
	delta /= 5
	p.targetMin = t.qthMin + 2*uint32(delta)
	p.targetMax = t.qthMin + 3*uint32(delta)
	p.scellLog = t.cell
	p.scellMax = 255 << t.cell
	p.stab = t.stab
}

// redMaxP is red_maxp: 2^32 / 2^Plog - 1, the max_P that Plog stands for
// per byte of max - min.
func redMaxP(plog uint8) uint32 {
	if plog < 32 {
		return ^uint32(0) >> plog
	}
	return ^uint32(0)
}

// redVars are the kernel's struct red_vars: the count since the last mark
// (-1: none counted yet), the cached draw, the average (Wlog-scaled) and
// the start of the idle period, if the queue is idle.
type redVars struct {
	qcount    int
	qR        uint32
	qavg      uint64
	idle      bool
	idleStart clock.Time
}

// reset is red_set_vars (and red_restart without the idle period).
func (v *redVars) reset() { v.qavg, v.qcount = 0, -1 }

// redAction is red_action's verdict.
type redAction uint8

const (
	redDontMark redAction = iota
	redProbMark           // between the thresholds, by the count rule
	redHardMark           // at or above max
)

// calcQavg is red_calc_qavg for an arrival at now with backlog bytes in
// the child: the moving average, or after an idle period the average
// decayed by the time idle (in whole µs, at most Scell_max), by a shift
// from the table or, where the table says 0, linearly, by at most half.
// The caller ends the idle period.
func (p *redParams) calcQavg(v *redVars, now clock.Time, backlog uint32) uint64 {
	if !v.idle {
		// qavg·(1-W) + backlog·W in fixed point; the kernel's unsigned
		// long arithmetic wraps, and so does this.
		return v.qavg + uint64(backlog) - v.qavg>>p.wlog
	}
	return p.qavgFromIdle(v, now)
}

// qavgFromIdle is red_calc_qavg_from_idle_time.
func (p *redParams) qavgFromIdle(v *redVars, now clock.Time) uint64 {
	us := int64(now-v.idleStart) / 1000 // ktime_us_delta
	us = min(us, int64(p.scellMax))
	if us < 0 {
		us = 0
	}
	if shift := p.stab[(us>>p.scellLog)&(redStabSize-1)]; shift != 0 {
		return v.qavg >> shift
	}
	d := (v.qavg * uint64(us)) >> p.scellLog
	if d < v.qavg>>1 {
		return v.qavg - d
	}
	return v.qavg >> 1
}

// action is red_action for an average of qavg; draw returns a uniform
// 32-bit random number (the kernel's get_random_u32).
func (p *redParams) action(v *redVars, qavg uint64, draw func() uint32) redAction {
	switch {
	case qavg < uint64(p.qthMin):
		v.qcount = -1
		return redDontMark
	case qavg >= uint64(p.qthMax):
		v.qcount = -1
		return redHardMark
	}
	v.qcount++
	if v.qcount == 0 {
		v.qR = draw() / p.maxPDelta
		return redDontMark
	}
	if (qavg-uint64(p.qthMin))>>p.wlog*uint64(v.qcount) >= uint64(v.qR) {
		v.qcount = 0
		v.qR = draw() / p.maxPDelta // red_random: reciprocal_divide is exact
		return redProbMark
	}
	return redDontMark
}

// adapt is red_adaptative_algo, which the kernel runs every half second
// for an adaptive red: max_P grows by min(1 %, max_P/4) while the average
// is above the target band (up to 50 %), and shrinks to 0.9 of itself
// while it is below (down to 1 %).
func (p *redParams) adapt(v *redVars, now clock.Time) {
	qavg := v.qavg
	if v.idle {
		qavg = p.qavgFromIdle(v, now)
	}
	qavg >>= p.wlog
	if qavg > uint64(p.targetMax) && p.maxP <= redMaxPMax {
		p.maxP += min(redMaxPMin, p.maxP/4)
	} else if qavg < uint64(p.targetMin) && p.maxP >= redMaxPMin {
		p.maxP = p.maxP / 10 * 9
	}
	p.maxPDelta = max((p.maxP+p.qthDelta/2)/p.qthDelta, 1) // DIV_ROUND_CLOSEST
}
