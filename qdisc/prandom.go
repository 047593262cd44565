package qdisc

// prandom is Linux's prandom_u32_state generator: L'Ecuyer's maximally
// equidistributed combined Tausworthe generator LFSR113 (period about
// 2^113), the stream netem draws from when it is given a seed. Its zero
// value is not a valid state; make one with newPrandom.
type prandom struct{ s1, s2, s3, s4 uint32 }

// newPrandom seeds a state as the kernel's prandom_seed_state does: the
// 64-bit seed is folded to 32 bits, every component starts from that value
// (raised past the component's minimum, below which its recurrence would
// degenerate), and there is no warm-up.
func newPrandom(seed uint64) prandom {
	i := uint32(seed>>32 ^ seed<<10 ^ seed)
	return prandom{
		s1: seedMin(i, 2),
		s2: seedMin(i, 8),
		s3: seedMin(i, 16),
		s4: seedMin(i, 128),
	}
}

func seedMin(x, m uint32) uint32 {
	if x < m {
		return x + m
	}
	return x
}

// u32 advances the four components and returns their exclusive or.
func (r *prandom) u32() uint32 {
	r.s1 = (r.s1&0xFFFFFFFE)<<18 ^ (r.s1<<6^r.s1)>>13
	r.s2 = (r.s2&0xFFFFFFF8)<<2 ^ (r.s2<<2^r.s2)>>27
	r.s3 = (r.s3&0xFFFFFFF0)<<7 ^ (r.s3<<13^r.s3)>>21
	r.s4 = (r.s4&0xFFFFFF80)<<13 ^ (r.s4<<3^r.s4)>>12
	return r.s1 ^ r.s2 ^ r.s3 ^ r.s4
}
