package qdisc

import (
	"fmt"
	"math"
	"time"
)

// maxJitter is the kernel's cap on jitter (INT_MAX ns): tabledist takes
// sigma as an s32.
const maxJitter = time.Duration(math.MaxInt32)

// checkNetem validates cfg as tc's netem_parse_opt and the kernel's
// netem_change would, resolves the distributions and fills the defaults.
func checkNetem(cfg NetemConfig, env *Env) (NetemConfig, error) {
	fail := func(format string, a ...any) (NetemConfig, error) {
		return cfg, fmt.Errorf("netem: "+format, a...)
	}
	switch {
	case cfg.Limit < 0:
		return fail("limit %d is negative; give a packet count (tc's default is %d)", cfg.Limit, DefaultNetemLimit)
	case cfg.Limit == 0:
		cfg.Limit = DefaultNetemLimit
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{
		{"delay", cfg.Delay}, {"jitter", cfg.Jitter},
		{"slot min", cfg.Slot.Min}, {"slot max", cfg.Slot.Max},
		{"slot distribution delay", cfg.Slot.DistDelay}, {"slot distribution jitter", cfg.Slot.DistJitter},
	} {
		if t.d < 0 {
			return fail("negative %s %v; the kernel rejects negative times, give a time >= 0", t.name, t.d)
		}
		if t.d > MaxNetemDelay {
			return fail("%s %v exceeds 2^62 ns (about 146 years), the longest time wanlab's nanosecond clock can add to another; give a shorter one", t.name, t.d)
		}
	}
	if cfg.Jitter > maxJitter {
		return fail("jitter %v exceeds the kernel's limit of %v (tabledist's sigma is a signed 32-bit number of ns); give at most %dns", cfg.Jitter, maxJitter, int64(maxJitter))
	}
	if cfg.Slot.DistJitter > maxJitter {
		return fail("slot distribution jitter %v exceeds the kernel's limit of %v; give at most %dns", cfg.Slot.DistJitter, maxJitter, int64(maxJitter))
	}
	if cfg.Slot.Min > cfg.Slot.Max && cfg.Slot.Dist.Name == "" && cfg.Slot.Dist.Table == nil {
		return fail("slot min %v is greater than slot max %v; give slot MIN [MAX] with MIN <= MAX", cfg.Slot.Min, cfg.Slot.Max)
	}
	if cfg.Slot.Packets < 0 || cfg.Slot.Bytes < 0 {
		return fail("negative slot budget (packets %d, bytes %d); give 0 for no limit or a positive budget", cfg.Slot.Packets, cfg.Slot.Bytes)
	}

	for _, p := range []struct {
		name string
		v    float64
	}{
		{"delay correlation", cfg.DelayCorr},
		{"loss", cfg.Loss.P}, {"loss correlation", cfg.Loss.Corr},
		{"loss state p13", cfg.Loss.P13}, {"loss state p31", cfg.Loss.P31}, {"loss state p32", cfg.Loss.P32},
		{"loss state p23", cfg.Loss.P23}, {"loss state p14", cfg.Loss.P14},
		{"loss gemodel p", cfg.Loss.GEP}, {"loss gemodel r", cfg.Loss.GER},
		{"loss gemodel 1-h", cfg.Loss.OneMinusH}, {"loss gemodel 1-k", cfg.Loss.OneMinusK},
		{"corrupt", cfg.Corrupt}, {"corrupt correlation", cfg.CorruptCorr},
		{"duplicate", cfg.Duplicate}, {"duplicate correlation", cfg.DuplicateCorr},
		{"reorder", cfg.Reorder}, {"reorder correlation", cfg.ReorderCorr},
	} {
		if !(p.v >= 0 && p.v <= 1) {
			return fail("%s %v is outside [0, 1]; give a percentage between 0%% and 100%%", p.name, p.v)
		}
	}

	l := cfg.Loss
	switch l.Kind {
	case LossNone:
		if l != (Loss{}) {
			return fail("loss parameters are set but Loss.Kind is LossNone; set Kind to LossRandom, LossState or LossGEModel")
		}
	case LossState:
		// The chances of leaving a state must not exceed 1: the kernel
		// compares one draw with their sum (in 32 bits, which a sum over
		// 100% overflows), so more would make the model mean something
		// else than its numbers.
		if s := l.P13 + l.P14; s > 1 {
			return fail("loss state: p13 %s and p14 %s are the chances of leaving state 1 (packets received in a gap) and sum to %s; give p13 + p14 <= 100%%", pct(l.P13), pct(l.P14), pct(s))
		}
		if s := l.P31 + l.P32; s > 1 {
			return fail("loss state: p31 %s and p32 %s are the chances of leaving state 3 (packets lost in a burst) and sum to %s; give p31 + p32 <= 100%%", pct(l.P31), pct(l.P32), pct(s))
		}
	case LossRandom, LossGEModel:
	default:
		return fail("unknown loss model %d; use LossRandom, LossState or LossGEModel", l.Kind)
	}
	if cfg.ECN && (l.Kind == LossNone || (l.Kind == LossRandom && l.P == 0)) {
		return fail("ecn requested without loss model; add a loss (e.g. loss 1%% ecn): ecn marks the packets the loss model would drop")
	}

	if cfg.Reorder > 0 {
		if cfg.Delay == 0 {
			return fail("reordering not possible without specifying some delay; add delay TIME (reordered packets skip the delay the others get)")
		}
		if cfg.Gap == 0 {
			cfg.Gap = 1
		}
	} else if cfg.Gap > 0 {
		return fail("gap specified without reorder probability; use reorder 100%% gap %d to send every %dth packet immediately", cfg.Gap, cfg.Gap)
	}

	if cfg.Dist.Name != "" || cfg.Dist.Table != nil {
		if cfg.Delay == 0 || cfg.Jitter == 0 {
			return fail("distribution specified but no latency and jitter values; give delay TIME JITTER before distribution %s", cfg.Dist.Name)
		}
	}
	d, err := resolveDist(cfg.Dist, "distribution")
	if err != nil {
		return cfg, err
	}
	cfg.Dist = d
	if cfg.Slot.Dist.Name != "" || cfg.Slot.Dist.Table != nil {
		if cfg.Slot.Dist.Name == "uniform" {
			return fail("slot distribution needs a table; use normal, pareto, paretonormal or a table file, or slot MIN MAX for uniform slots")
		}
		sd, err := resolveDist(cfg.Slot.Dist, "slot distribution")
		if err != nil {
			return cfg, err
		}
		cfg.Slot.Dist = sd
	}

	if cfg.Duplicate > 0 && env.Pool == nil {
		return fail("duplicate needs Env.Pool to clone packets from; set it")
	}
	if cfg.Correlation != CorrelationCorrect && cfg.Correlation != CorrelationKernel {
		return fail("unknown correlation mode %d; use CorrelationCorrect or CorrelationKernel", cfg.Correlation)
	}
	return cfg, nil
}

// resolveDist fills a builtin table in, or checks a given one.
func resolveDist(d Distribution, what string) (Distribution, error) {
	if d.Table == nil {
		if d.Name == "" {
			return d, nil
		}
		b, ok := BuiltinDistribution(d.Name)
		if !ok {
			return d, fmt.Errorf("netem: %s %q has no table: load %s.dist (tc looks in /usr/lib/tc) with ParseDistTable and set Table, or use uniform, normal, pareto or paretonormal", what, d.Name, d.Name)
		}
		return b, nil
	}
	if len(d.Table) == 0 || len(d.Table) > MaxDistTable {
		return d, fmt.Errorf("netem: %s %q has %d entries; the kernel accepts 1 to %d", what, d.Name, len(d.Table), MaxDistTable)
	}
	return d, nil
}
