package router

import "wanlab/qdisc"

// keepsWhole reports whether a chain may see GSO super-packets whole: only
// when nothing in it decides per packet in a way that could differ between
// the segments of one super-packet. That is an empty chain, netem with a
// constant delay (and at most a limit), and the plain fifos. Everything
// else (loss, duplication, corruption, reordering, jitter, slots, rates,
// tbf, the AQMs, pfifo_fast's bands) sees wire segments, as it would on a
// real link.
func keepsWhole(chain []qdisc.Spec) bool {
	for _, s := range chain {
		switch c := s.(type) {
		case qdisc.NetemConfig:
			if !constantDelay(c) {
				return false
			}
		case qdisc.FifoConfig:
		default:
			return false
		}
	}
	return true
}

func constantDelay(c qdisc.NetemConfig) bool {
	return c.Jitter == 0 && c.Loss.Kind == qdisc.LossNone && !c.ECN &&
		c.Corrupt == 0 && c.Duplicate == 0 && c.Reorder == 0 && c.Gap == 0 &&
		c.Rate == 0 && !c.Slot.Enabled()
}
