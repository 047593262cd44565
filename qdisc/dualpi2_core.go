package qdisc

import (
	"fmt"
	"math"
	"time"
)

// DualPI2's fixed point, as sch_dualpi2.c defines it: probabilities are
// u32 fractions of dpi2MaxProb; alpha and beta travel over netlink in
// 1/256 Hz and are held internally as probability per 64 ns of delay
// error (dualpi2_scale_alpha_beta).
const (
	dpi2MaxProb        = math.MaxUint32 // MAX_PROB
	dpi2ABShift        = 8              // ALPHA_BETA_SHIFT: netlink units of 1/256 Hz
	dpi2ABGranularity  = 6              // ALPHA_BETA_GRANULARITY: internal units of 64 ns
	dpi2ABScaling      = dpi2ABShift - dpi2ABGranularity
	dpi2ABMax          = 1<<31 - 1 // the kernel's netlink range for alpha and beta
	dpi2TCABMax        = 2<<23 - 1 // tc's ALPHA_BETA_MAX, in Hz (parse_alpha_beta)
	dpi2MaxWC          = 100       // MAX_WC: the weights are percentages
	dpi2RTTTypToMax    = 6         // tc's RTT_TYP_TO_MAX
	dpi2DefaultAlpha   = 41        // ~0.16 Hz, dualpi2_reset_default
	dpi2DefaultBeta    = 819       // ~3.2 Hz
	dpi2DefaultWC      = 10        // classic_protection 10%
	dpi2DefaultCouple  = 2         // coupling_factor
	dpi2DefaultLimit   = 10000     // packets
	dpi2DefaultTarget  = 15 * time.Millisecond
	dpi2DefaultTUpdate = 16 * time.Millisecond
	dpi2DefaultStep    = time.Millisecond
)

// dpi2ScaleAlphaBeta is dualpi2_scale_alpha_beta: a gain in 1/256 Hz to
// probability (of dpi2MaxProb) per 64 ns of delay.
func dpi2ScaleAlphaBeta(v uint32) uint32 {
	return uint32(uint64(v) * dpi2MaxProb >> dpi2ABScaling / 1e9)
}

// dpi2UnscaleAlphaBeta is dualpi2_unscale_alpha_beta, what the kernel
// dumps: the scaled gain back in 1/256 Hz, rounded down (41 comes back as
// 40, 819 as 818).
func dpi2UnscaleAlphaBeta(v uint32) uint32 {
	return uint32(uint64(v) * 1e9 << dpi2ABScaling / dpi2MaxProb)
}

// dpi2NsFromUs is convert_us_to_nsec: µs to ns, saturating at the u32
// maximum (4.29 s), as the kernel holds tupdate and the step threshold.
func dpi2NsFromUs(us uint32) uint32 {
	return uint32(min(uint64(us)*1000, math.MaxUint32))
}

// dpi2FromRTT is what q_dualpi2.c's dualpi2_parse_opt derives from max_rtt
// and typical_rtt (µs; either may be 0, not both): the target, tupdate
// (µs) and alpha and beta (1/256 Hz), with tc's float and double
// arithmetic and its errors.
func dpi2FromRTT(maxRTT, typRTT uint32) (target, tupdate, alpha, beta uint32, err error) {
	switch {
	case typRTT == 0:
		typRTT = max(maxRTT/dpi2RTTTypToMax, 1)
	case maxRTT == 0:
		maxRTT = typRTT * dpi2RTTTypToMax // a u32 product, as tc's
	case typRTT > maxRTT:
		return 0, 0, 0, 0, fmt.Errorf("typical_rtt %v is above max_rtt %v (tc: \"typical_rtt must be <= max_rtt!\"); give a typical_rtt at most max_rtt",
			time.Duration(typRTT)*time.Microsecond, time.Duration(maxRTT)*time.Microsecond)
	}
	target = typRTT
	// tc compares and divides in double, 3.0f promoted; the u32
	// assignment truncates.
	third := float64(maxRTT) / 3
	if float64(typRTT) < third {
		tupdate = typRTT
	} else {
		tupdate = uint32(third)
	}
	tupdate = max(tupdate, 1)
	// 0.1f and 0.3f are floats promoted to double.
	alphaF := float64(tupdate) / float64(maxRTT) / float64(maxRTT) * 1e6 * float64(float32(0.1))
	betaF := float64(float32(0.3)) / float64(maxRTT) * 1e6
	if betaF > dpi2TCABMax {
		return 0, 0, 0, 0, fmt.Errorf("max_rtt %v is too low and causes beta to overflow (tc refuses it); give a longer max_rtt",
			time.Duration(maxRTT)*time.Microsecond)
	}
	if alphaF < 1.0/(1<<dpi2ABShift) || betaF < 1.0/(1<<dpi2ABShift) {
		return 0, 0, 0, 0, fmt.Errorf("max_rtt %v rounds alpha %f and/or beta %f down to 0 (tc refuses it); give a shorter max_rtt",
			time.Duration(maxRTT)*time.Microsecond, alphaF, betaF)
	}
	return target, tupdate, uint32(alphaF * (1 << dpi2ABShift)), uint32(betaF * (1 << dpi2ABShift)), nil
}

// dpi2Params are the PI2 controller's parameters in the kernel's units.
type dpi2Params struct {
	target  uint64 // ns
	alpha   uint32 // scaled (dpi2ScaleAlphaBeta)
	beta    uint32
	capProb uint32 // dpi2MaxProb, or MAX_PROB / k without drop_on_overload
}

// dpi2Update is calculate_probability: the new base probability p' from
// the old one and the queue delay qdelay (ns, the larger of the two
// queues' head sojourn times) and last, the delay at the previous update.
//
// The arithmetic is the kernel's: a signed 64-bit delta, divided by 64
// (the internal gains are per 64 ns), added to the u32 probability with a
// wrap check that saturates at 0 or MAX_PROB. As in the kernel, the u32
// sum is truncated before the check, so a step of 2^32 or more (a delay
// jump of seconds) is taken modulo 2^32.
func (pp *dpi2Params) update(prob uint32, qdelay, last uint64) uint32 {
	delta := (int64(qdelay) - int64(pp.target)) * int64(pp.alpha)
	delta += (int64(qdelay) - int64(last)) * int64(pp.beta)
	var p uint32
	if delta > 0 {
		p = uint32(uint64(delta)/(1<<dpi2ABGranularity) + uint64(prob))
		if p < prob {
			p = dpi2MaxProb
		}
	} else {
		p = prob - uint32(uint64(-delta)/(1<<dpi2ABGranularity))
		if p > prob {
			p = 0
		}
	}
	return min(p, pp.capProb)
}

// idleStep returns what an update with no queue delay now or at the last
// update subtracts from the probability, when it is a plain subtraction
// (the kernel's s64 product did not wrap).
func (pp *dpi2Params) idleStep() (uint32, bool) {
	delta := -int64(pp.target) * int64(pp.alpha)
	if delta > 0 || (pp.target != 0 && delta/int64(pp.target) != -int64(pp.alpha)) {
		return 0, false
	}
	return uint32(uint64(-delta) / (1 << dpi2ABGranularity)), true
}

// stepBelowWrap reports whether an update at delay d whose previous
// update saw d - tupdate adds a positive step below 2^32 to the
// probability (without wrapping the kernel's s64 product), so that a
// probability at its ceiling stays there; d is the largest delay of a
// run of such updates.
func (pp *dpi2Params) stepBelowWrap(d, tupdate uint64) bool {
	if d < pp.target {
		return false
	}
	hi := float64(d-pp.target)*float64(pp.alpha) + float64(tupdate)*float64(pp.beta)
	return hi < (1<<32)*(1<<dpi2ABGranularity)*0.99 && hi > 0
}

// bitQueue is a FIFO of bits: the L queue's per-packet apply_step flags,
// which the kernel keeps in each skb's control block.
type bitQueue struct {
	w    []uint64
	head int // bit index of the front
	n    int
}

func (b *bitQueue) push(v bool) {
	if b.n == len(b.w)*64 {
		b.grow()
	}
	i := (b.head + b.n) & (len(b.w)*64 - 1)
	if v {
		b.w[i>>6] |= 1 << (i & 63)
	} else {
		b.w[i>>6] &^= 1 << (i & 63)
	}
	b.n++
}

func (b *bitQueue) pop() bool {
	if b.n == 0 {
		return false
	}
	i := b.head
	b.head = (b.head + 1) & (len(b.w)*64 - 1)
	b.n--
	return b.w[i>>6]&(1<<(i&63)) != 0
}

// grow doubles the capacity (a power of two of 64-bit words), keeping the
// order.
func (b *bitQueue) grow() {
	words := max(2*len(b.w), 1)
	nw := make([]uint64, words)
	for i := range b.n {
		j := (b.head + i) & (len(b.w)*64 - 1)
		if b.w[j>>6]&(1<<(j&63)) != 0 {
			nw[i>>6] |= 1 << (i & 63)
		}
	}
	b.w, b.head = nw, 0
}

func (b *bitQueue) reset() { b.head, b.n = 0, 0 }

// DualPI2MemLimit returns the memory limit the kernel sets for limit
// packets on env's device when memlimit is not given (get_memory_limit:
// limit × 2 × psched_mtu, saturating at the u32 maximum).
func DualPI2MemLimit(limit int, env *Env) uint32 { return dualPI2MemLimit(limit, env.PschedMTU()) }

// DualPI2DumpedGain returns the alpha or beta (in 1/256 Hz) that the
// kernel dumps for v given: v scaled to its internal units and back,
// rounded down on both ways (41 dumps as 40).
func DualPI2DumpedGain(v int) uint32 {
	return dpi2UnscaleAlphaBeta(dpi2ScaleAlphaBeta(uint32(v)))
}
