package qdisc

import (
	"math"
	"math/bits"
)

// maxCredit bounds every token amount (ns), so that sums of two never
// overflow int64 even for absurd configurations (a 4 GiB burst at 1 B/s).
const maxCredit = math.MaxInt64 / 4

// rateCfg is the kernel's psched_ratecfg: a rate with the per-packet
// adjustments of tc's "overhead", "mpu" and "linklayer".
//
// The kernel turns a length into time as (len*mult)>>shift, a reciprocal
// that rounds down by up to a few ns per packet for rates that do not
// divide 1e9; wanlab computes floor(len*1e9/rate) exactly. For rates that
// divide 1e9 bytes/s (1mbit = 125000 B/s is 8000 ns/B) both are identical.
type rateCfg struct {
	bps       uint64 // bytes per second; never 0
	nsPerByte uint64 // 1e9/bps when that is an integer, else 0
	overhead  int
	mpu       int
	atm       bool
}

func newRateCfg(r Rate, overhead, mpu int, link LinkLayer) rateCfg {
	t := rateCfg{bps: uint64(r), overhead: overhead, mpu: mpu, atm: link == LinkATM}
	if 1e9%t.bps == 0 {
		t.nsPerByte = 1e9 / t.bps
	}
	return t
}

// wireLen is psched_l2t_ns's length adjustment: len+overhead, raised to
// mpu, then (ATM) rounded up to whole 48-byte cell payloads of 53 bytes.
func (r *rateCfg) wireLen(n int) uint64 {
	n += r.overhead
	if n < r.mpu {
		n = r.mpu
	}
	if r.atm {
		n = (n + 47) / 48 * 53
	}
	return uint64(n)
}

// l2t returns the credit in ns that a packet of n bytes costs.
func (r *rateCfg) l2t(n int) int64 {
	w := r.wireLen(n)
	if r.nsPerByte != 0 {
		hi, lo := bits.Mul64(w, r.nsPerByte)
		if hi != 0 || lo > maxCredit {
			return maxCredit
		}
		return int64(lo)
	}
	hi, lo := bits.Mul64(w, 1e9)
	if hi >= r.bps {
		return maxCredit
	}
	q, _ := bits.Div64(hi, lo, r.bps)
	if q > maxCredit {
		return maxCredit
	}
	return int64(q)
}
