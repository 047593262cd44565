package tfrc

import (
	"math"
	"time"
)

// Throughput returns the TCP throughput equation of RFC 5348 §3.1, in bytes
// per second, for packets of s bytes, a round-trip time rtt and a loss event
// rate p, with b = 1 (the RFC's recommendation since it assumes no delayed
// acknowledgements on the data) and t_RTO = 4·R:
//
//	X = s / (R·sqrt(2·b·p/3) + t_RTO·(3·sqrt(3·b·p/8))·p·(1 + 32·p²))
//
// It returns +Inf for p <= 0 or rtt <= 0, where the equation sets no limit.
func Throughput(s float64, rtt time.Duration, p float64) float64 {
	if p <= 0 || rtt <= 0 {
		return math.Inf(1)
	}
	r := rtt.Seconds()
	return s / (r * equationF(p))
}

// equationF is the denominator of the equation divided by R (t_RTO = 4R):
// X = s / (R·f(p)).
func equationF(p float64) float64 {
	const b = 1
	return math.Sqrt(2*b*p/3) + 4*(3*math.Sqrt(3*b*p/8))*p*(1+32*p*p)
}

// LossEventRateFor inverts the equation: it returns the loss event rate p
// for which Throughput(s, rtt, p) equals x, as the receiver needs when it
// synthesises the first loss interval (RFC 5348 §6.3.1, which asks for a
// value within 5 %; this one is exact to float64 precision). p is clamped
// to [1e-10, 1]: a rate so low that even p = 1 allows more gives 1, a rate
// so high that p = 1e-10 allows less gives 1e-10. x <= 0 gives 1, and a
// non-positive s or rtt gives 0 (no loss can be derived without them).
func LossEventRateFor(s float64, rtt time.Duration, x float64) float64 {
	if s <= 0 || rtt <= 0 {
		return 0
	}
	if x <= 0 {
		return 1
	}
	// f(p) is strictly increasing, so solve f(p) = s/(R·x) by bisection
	// on log p, where the function is smooth and the bracket is fixed.
	target := s / (rtt.Seconds() * x)
	lo, hi := math.Log(1e-10), 0.0
	if equationF(1) <= target {
		return 1
	}
	if equationF(1e-10) >= target {
		return 1e-10
	}
	for range 100 {
		mid := (lo + hi) / 2
		if equationF(math.Exp(mid)) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp((lo + hi) / 2)
}
