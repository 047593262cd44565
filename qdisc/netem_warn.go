package qdisc

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// warnDraws is how many kernel draws NetemWarnings simulates per check.
const warnDraws = 200000

// netemWarnings returns human-readable warnings about cfg where it behaves
// very differently in the kernel and in wanlab's default (correct) mode,
// or where it will surprise: a correlated probability the kernel's biased
// correlated RNG realises far from the configured value (more than 20%
// off, measured by running the kernel's crand with a fixed seed), a delay
// correlation (nearly a no-op in the kernel), jitter that reorders
// packets, a slot distribution that the kernel ignores, and a rate so slow
// that a full-size packet on env's device takes more than a day (such
// departures soon reach the end of wanlab's clock). It does not validate
// cfg: NewNetem does.
func netemWarnings(cfg NetemConfig, env *Env) []string {
	var w []string
	if cfg.Rate != 0 {
		mtu := env.PschedMTU()
		if tx := time.Duration(packetTime(&cfg, mtu)); tx > 24*time.Hour {
			w = append(w, fmt.Sprintf("rate %d bit/s: a full-size packet of %d bytes takes %v to send with the configured overheads; departures later than about 292 years from the start, where wanlab's nanosecond clock ends, are all held there", cfg.Rate.BitsPerSecond(), mtu, tx))
		}
	}
	kernel := cfg.Correlation == CorrelationKernel
	for _, e := range []struct {
		name, verb string
		p, c       float64
	}{
		{"loss", "loses", cfg.Loss.P, cfg.Loss.Corr},
		{"duplicate", "duplicates", cfg.Duplicate, cfg.DuplicateCorr},
		{"corrupt", "corrupts", cfg.Corrupt, cfg.CorruptCorr},
		{"reorder", "reorders", cfg.Reorder, cfg.ReorderCorr},
	} {
		if e.name == "loss" && cfg.Loss.Kind != LossRandom {
			continue
		}
		if e.p <= 0 || e.c <= 0 {
			continue
		}
		got := kernelRealised(e.p, e.c)
		if math.Abs(got-e.p) <= 0.2*e.p {
			continue
		}
		opt := fmt.Sprintf("%s %s %s", e.name, pct(e.p), pct(e.c))
		msg := fmt.Sprintf("%s: the kernel %s about %.3f%% (not %s) because its correlated RNG is biased; ", opt, e.verb, got*100, pct(e.p))
		if kernel {
			msg += fmt.Sprintf("'correlation kernel' reproduces that; remove it and wanlab %s %.1f%% with a lag-1 correlation of %s", e.verb, e.p*100, pct(e.c))
		} else {
			msg += fmt.Sprintf("wanlab's default correlation mode %s %.1f%%; add 'correlation kernel' to reproduce the kernel", e.verb, e.p*100)
		}
		w = append(w, msg)
	}

	if cfg.Jitter > 0 && cfg.DelayCorr > 0 {
		opt := fmt.Sprintf("delay %v %v %s", cfg.Delay, cfg.Jitter, pct(cfg.DelayCorr))
		r := kernelDelayCorr(cfg)
		msg := fmt.Sprintf("%s: in the kernel the delay correlation is nearly a no-op (lag-1 autocorrelation about %.3f, because tabledist keeps only the low bits of the correlated value); ", opt, r)
		if kernel {
			msg += fmt.Sprintf("'correlation kernel' reproduces that; remove it for a realised autocorrelation of %.2f", cfg.DelayCorr)
		} else {
			msg += fmt.Sprintf("wanlab's default correlation mode realises %.2f; add 'correlation kernel' to reproduce the kernel", cfg.DelayCorr)
		}
		w = append(w, msg)
	}

	if cfg.Jitter > 0 && cfg.Rate == 0 && !cfg.FIFOJitter {
		msg := fmt.Sprintf("delay %v %v: netem sends packets in time-to-send order, so jitter reorders packets that arrive less than %v apart", cfg.Delay, cfg.Jitter, 2*cfg.Jitter)
		if cfg.Dist.Name == "" || cfg.Dist.Name == "uniform" {
			if spacing := time.Millisecond; 2*cfg.Jitter > spacing {
				j2, d := float64(2*cfg.Jitter), float64(spacing)
				msg += fmt.Sprintf(" (at 1ms spacing %.1f%% of adjacent packets swap)", (j2-d)*(j2-d)/(2*j2*j2)*100)
			}
		}
		msg += "; add 'rate RATE' (which makes departures monotone) or wanlab's 'fifo_jitter' to keep the order"
		w = append(w, msg)
	}

	if s := cfg.Slot; (s.Dist.Name != "" || s.Dist.Table != nil) && s.DistJitter == 0 && s.Min == 0 && s.Max == 0 {
		w = append(w, "slot distribution with zero jitter: the kernel enables slotting only when min, max or the distribution jitter is non-zero, so this slot does nothing; give a jitter")
	}
	return w
}

// pct formats a probability as tc prints a percentage.
func pct(p float64) string { return strconv.FormatFloat(p*100, 'g', 4, 64) + "%" }

// kernelRealised is the fraction of kernel crand draws that P = p beats,
// with correlation c, over warnDraws draws from a fixed seed.
func kernelRealised(p, c float64) float64 {
	r := newPrandom(1)
	cr := crand{rho: kernelProb(c), last: seedLast()}
	P := kernelProb(p)
	hits := 0
	for range warnDraws {
		if P >= cr.next(&r) {
			hits++
		}
	}
	return float64(hits) / warnDraws
}

// kernelDelayCorr is the lag-1 autocorrelation of kernel tabledist delays
// for cfg's delay, jitter, correlation and distribution.
func kernelDelayCorr(cfg NetemConfig) float64 {
	table := cfg.Dist.Table
	if table == nil {
		if d, ok := BuiltinDistribution(cfg.Dist.Name); ok {
			table = d.Table
		}
	}
	sigma := int32(min(cfg.Jitter, maxJitter))
	r := newPrandom(1)
	cr := crand{rho: kernelProb(cfg.DelayCorr), last: seedLast()}
	var sx, sxx, sxy, prev float64
	var first float64
	for i := range warnDraws {
		x := float64(tabledist(int64(cfg.Delay), sigma, cr.next(&r), table))
		if i == 0 {
			first = x
		} else {
			sxy += x * prev
		}
		sx += x
		sxx += x * x
		prev = x
	}
	n := float64(warnDraws)
	m := sx / n
	v := sxx/n - m*m
	if v == 0 {
		return 0
	}
	// Lag-1 covariance over the n-1 adjacent pairs.
	cov := (sxy - m*(2*sx-first-prev) + (n-1)*m*m) / (n - 1)
	return cov / v
}

// seedLast stands in for the get_random_u32 that seeds crand's last value.
func seedLast() uint32 {
	r := newPrandom(2)
	return r.u32()
}
