package qdisc

import "math"

// tcTicksPerUsec is iproute2's tick_in_usec on every kernel wanlab runs
// on: /proc/net/psched says 1000 ns per µs over 64 ns per tick, 15.625
// ticks a µs.
const tcTicksPerUsec = 15.625

// tcXmitTicks is iproute2 6.1's tc_calc_xmittime for size bytes at rate
// (bytes/s): the time in µs truncated to tc's unsigned int, then in ticks
// of 64 ns (tc_core_time2tick), before tc's own truncation to unsigned
// int, which its callers do or refuse. ok is false when the µs do not fit
// 32 bits or rate is 0.
func tcXmitTicks(rate Rate, size int) (ticks float64, ok bool) {
	if rate == 0 {
		return 0, false
	}
	us := 1e6 * (float64(size) / float64(rate))
	if us >= math.MaxUint32 {
		return 0, false
	}
	return float64(uint32(us)) * tcTicksPerUsec, true
}
