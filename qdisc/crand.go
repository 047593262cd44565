package qdisc

import "math"

// crand is the kernel's correlated random number source (get_crandom): each
// value is a fixed-point weighted average of a fresh uniform value and the
// previous result, X = ((2^32-(rho+1))*U + (rho+1)*X') >> 32.
//
// Averaging uniforms does not keep them uniform: the values crowd around
// 2^31, so a probability compared with them is realised too rarely below
// 50% and too often above it, and the lag-1 correlation of anything derived
// from the low bits (tabledist's modulo) nearly vanishes. netem's kernel
// mode keeps this on purpose; its correct mode does not use crand at all.
type crand struct {
	last uint32
	rho  uint32 // rint(c*(2^32-1)); 0 means no correlation
}

// next returns the next correlated value drawn with r.
func (c *crand) next(r *prandom) uint32 {
	if c.rho == 0 {
		return r.u32()
	}
	u := uint64(r.u32())
	rho := uint64(c.rho) + 1
	// Cannot overflow: the sum is at most (2^32-1)*2^32.
	x := uint32((u*(1<<32-rho) + uint64(c.last)*rho) >> 32)
	c.last = x
	return x
}

// kernelProb quantises a probability in [0,1] as tc sends it to the kernel:
// rint(p*(2^32-1)), rounding half to even as rint does by default.
func kernelProb(p float64) uint32 {
	return uint32(math.RoundToEven(p * math.MaxUint32))
}
