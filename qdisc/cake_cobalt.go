package qdisc

import (
	"wanlab/clock"
	"wanlab/packet"
)

// COBALT is cake's AQM (sch_cake.c): CoDel's control law, kept in one
// drop_next time that serves both as the first signal's delay and as the
// signalling schedule, beside BLUE, whose drop probability rises each time
// the flow overflows and falls each time it is found empty.

// cobaltParams are struct cobalt_params: times in ns, BLUE's steps as
// 0.32 fixed-point probabilities.
type cobaltParams struct {
	interval, target, mtuTime uint64
	pInc, pDec                uint32
}

// cobaltVars are struct cobalt_vars, one set per flow queue.
type cobaltVars struct {
	count      uint32
	recInvSqrt uint32 // 1/sqrt(count) in Q0.32
	dropNext   clock.Time
	blueTimer  clock.Time
	pDrop      uint32 // BLUE's probability, Q0.32
	dropping   bool
	ecnMarked  bool
	// blueSet says blueTimer has been set. The kernel's starts at 0 on
	// a clock that has run since boot, so that BLUE's first step is
	// never held back by it; wanlab's clock may start at 0.
	blueSet bool
}

// cobaltInvSqrtCacheLen is REC_INV_SQRT_CACHE: below this count the
// reciprocal square root comes from a table.
const cobaltInvSqrtCacheLen = 16

// cobaltInvSqrtCache is cobalt_cache_init's table: entry 0 is ~0 (as
// close to 1.0 as Q0.32 gets, which entry 1 also nearly is), and entry n
// is four Newton steps on from entry n-1, count n.
var cobaltInvSqrtCache = func() (c [cobaltInvSqrtCacheLen]uint32) {
	v := cobaltVars{recInvSqrt: ^uint32(0)}
	c[0] = v.recInvSqrt
	for v.count = 1; v.count < cobaltInvSqrtCacheLen; v.count++ {
		for range 4 {
			v.newtonStep()
		}
		c[v.count] = v.recInvSqrt
	}
	return c
}()

// newtonStep is cobalt_newton_step: invsqrt = invsqrt/2 * (3 - count *
// invsqrt^2) in Q0.32, the product shifted early to stay in 64 bits.
func (v *cobaltVars) newtonStep() {
	invsqrt := uint64(v.recInvSqrt)
	invsqrt2 := (invsqrt * invsqrt) >> 32
	val := (3 << 32) - uint64(v.count)*invsqrt2
	val >>= 2
	val = (val * invsqrt) >> (32 - 2 + 1)
	v.recInvSqrt = uint32(val)
}

// invSqrt is cobalt_invsqrt.
func (v *cobaltVars) invSqrt() {
	if v.count < cobaltInvSqrtCacheLen {
		v.recInvSqrt = cobaltInvSqrtCache[v.count]
	} else {
		v.newtonStep()
	}
}

// cobaltControl is cobalt_control: t + interval/sqrt(count), by
// reciprocal_scale, whose first argument is 32 bits: the kernel truncates
// an interval above 4.29 s (interplanetary's) to its low 32 bits there.
func cobaltControl(t clock.Time, interval uint64, recInvSqrt uint32) clock.Time {
	return t + clock.Time(uint64(uint32(interval))*uint64(recInvSqrt)>>32)
}

// queueFull is cobalt_queue_full, for a packet dropped by overflow: BLUE's
// probability rises (at most once a target), and CoDel starts dropping at
// once. It reports whether BLUE was at rest before.
func (v *cobaltVars) queueFull(p *cobaltParams, now clock.Time) bool {
	up := false
	if !v.blueSet || int64(now-v.blueTimer) > int64(p.target) {
		up = v.pDrop == 0
		v.pDrop += p.pInc
		if v.pDrop < p.pInc {
			v.pDrop = ^uint32(0)
		}
		v.blueTimer, v.blueSet = now, true
	}
	v.dropping = true
	v.dropNext = now
	if v.count == 0 {
		v.count = 1
	}
	return up
}

// queueEmpty is cobalt_queue_empty, for a flow found empty: BLUE's
// probability falls (at most once a target), CoDel stops dropping and its
// count decays by one if its schedule is due. It reports whether BLUE came
// to rest.
func (v *cobaltVars) queueEmpty(p *cobaltParams, now clock.Time) bool {
	down := false
	if v.pDrop != 0 && int64(now-v.blueTimer) > int64(p.target) {
		if v.pDrop < p.pDec {
			v.pDrop = 0
		} else {
			v.pDrop -= p.pDec
		}
		v.blueTimer = now
		down = v.pDrop == 0
	}
	v.dropping = false
	if v.count != 0 && now-v.dropNext >= 0 {
		v.count--
		v.invSqrt()
		v.dropNext = cobaltControl(v.dropNext, p.interval, v.recInvSqrt)
	}
	return down
}

// shouldDrop is cobalt_should_drop for p, just taken off its flow: CoDel
// signals (a CE mark where p is ECN-capable, else a drop) when the sojourn
// has stayed above target (and above the time 2 MTUs per bulk flow, and 4
// MTUs, take) for an interval, at intervals shrinking as 1/sqrt(count);
// BLUE drops with its probability, never marking. bulkFlows is the
// tin's bulk flows in ingress mode, 0 otherwise. It reports whether to
// drop p; v.ecnMarked says whether p was marked.
func (v *cobaltVars) shouldDrop(p *cobaltParams, now clock.Time, pk *packet.Packet, bulkFlows uint32, rnd *prandom) bool {
	sojourn := uint64(now - pk.Enqueued)
	schedule := now - v.dropNext
	overTarget := sojourn > p.target && sojourn > p.mtuTime*uint64(bulkFlows)*2 && sojourn > p.mtuTime*4
	nextDue := v.count != 0 && schedule >= 0
	drop := false
	v.ecnMarked = false

	if overTarget {
		if !v.dropping {
			v.dropping = true
			v.dropNext = cobaltControl(now, p.interval, v.recInvSqrt)
		}
		if v.count == 0 {
			v.count = 1
		}
	} else if v.dropping {
		v.dropping = false
	}

	if nextDue && v.dropping {
		v.ecnMarked = packet.SetCE(pk.Bytes())
		drop = !v.ecnMarked
		v.count++
		if v.count == 0 {
			v.count--
		}
		v.invSqrt()
		v.dropNext = cobaltControl(v.dropNext, p.interval, v.recInvSqrt)
		schedule = now - v.dropNext
	} else {
		for nextDue {
			v.count--
			v.invSqrt()
			v.dropNext = cobaltControl(v.dropNext, p.interval, v.recInvSqrt)
			schedule = now - v.dropNext
			nextDue = v.count != 0 && schedule >= 0
		}
	}

	if v.pDrop != 0 && rnd.u32() < v.pDrop {
		drop = true
	}

	// drop_next doubles as an activity timeout.
	if v.count == 0 {
		v.dropNext = now + clock.Time(p.interval)
	} else if schedule > 0 && !drop {
		v.dropNext = now
	}
	return drop
}
