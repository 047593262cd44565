package tcspec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"wanlab/qdisc"
)

const dualpi2Takes = "limit PACKETS, memlimit BYTES, coupling_factor NUMBER, step_thresh TIME|PACKETS, min_qlen_step PACKETS, drop_on_overload | overflow, drop_enqueue | drop_dequeue, classic_protection PERCENTAGE, max_rtt TIME [typical_rtt TIME], target TIME, tupdate TIME, alpha ALPHA, beta BETA, l4s_ect | any_ect, split_gso | no_split_gso"

// dualpi2ABMax is q_dualpi2.c's ALPHA_BETA_MAX, the largest alpha or beta
// (in Hz) tc takes; the kernel takes at most (2^31-1)/256.
const dualpi2ABMax = 2<<23 - 1

// parseDualPI2 follows dualpi2_parse_opt: every keyword a whole word, a
// keyword given again replacing its value. tc sends no limit, memlimit,
// target, tupdate or step_thresh whose value is 0, leaving the kernel's
// default; tcspec refuses such a 0, as for the other AQMs. When max_rtt or
// typical_rtt is given, tc derives target, tupdate, alpha and beta from
// them and ignores those given (with a warning): they are dropped here
// too. The defaults of options left out are filled in.
func parseDualPI2(a *args, _ Options) (qdisc.Spec, error) {
	var c qdisc.DualPI2Config
	for a.more() {
		w := a.take()
		var err error
		switch w {
		case "limit":
			c.Limit, err = dualpi2Count(a, w, "10000")
		case "memlimit":
			c.MemLimit, err = dualpi2Count(a, w, "limit × 2 × MTU")
		case "target":
			c.Target, err = duration(a, w, "15ms")
		case "tupdate":
			c.TUpdate, err = duration(a, w, "16ms")
		case "alpha":
			c.Alpha, err = dualpi2Gain(a, w)
		case "beta":
			c.Beta, err = dualpi2Gain(a, w)
		case "coupling_factor":
			var v string
			if v, err = a.value(w, "2"); err == nil {
				var n int64
				n, err = getInt(v, 0, math.MinInt32, math.MaxInt32)
				switch {
				case err != nil || n < 0 || n > 255:
					err = a.fail(v, "%q: the coupling factor is a whole number from 1 to 255 (tc: Illegal \"coupling_factor\")", w+" "+v)
				case n == 0:
					err = a.fail(v, "%q: the kernel refuses a coupling factor of 0; give 1 to 255 (the default is 2)", w+" "+v)
				}
				c.CouplingFactor = int(n)
			}
		case "l4s_ect":
			c.AnyECT = false
		case "any_ect":
			c.AnyECT = true
		case "step_thresh":
			err = dualpi2Step(a, w, &c)
		case "min_qlen_step":
			var n uint64
			n, err = a.uint(w, "PACKETS", 10, math.MaxUint32)
			c.MinQlenStep = int(n)
		case "overflow":
			c.Overflow = true
		case "drop_on_overload":
			c.Overflow = false
		case "drop_enqueue":
			c.DropEnqueue = true
		case "drop_dequeue":
			c.DropEnqueue = false
		case "split_gso":
			c.NoSplitGSO = false
		case "no_split_gso":
			c.NoSplitGSO = true
		case "classic_protection":
			var v string
			if v, err = a.value(w, "10%"); err == nil {
				var p float64
				if p, err = parsePercent(v); err != nil {
					err = a.bad(w, v, err)
				} else {
					c.ClassicProtection, c.ClassicProtectionSet = int(math.RoundToEven(p*100)), true
				}
			}
		case "max_rtt":
			c.MaxRTT, err = aqmTime(a, w)
		case "typical_rtt":
			c.TypicalRTT, err = aqmTime(a, w)
		default:
			err = a.unknown(w, dualpi2Takes)
		}
		if err != nil {
			return nil, err
		}
	}
	if c.MaxRTT != 0 || c.TypicalRTT != 0 {
		if c.MaxRTT != 0 && c.TypicalRTT > c.MaxRTT {
			return nil, a.fail("typical_rtt", "typical_rtt %s is above max_rtt %s (tc: \"typical_rtt must be <= max_rtt!\"); give a typical_rtt at most max_rtt",
				formatDuration(c.TypicalRTT), formatDuration(c.MaxRTT))
		}
		c.Target, c.TUpdate, c.Alpha, c.Beta = 0, 0, 0, 0
		// What tc refuses in its derivation (beta overflowing, alpha or
		// beta rounding to 0) the constructor refuses with tc's reason.
		if _, err := qdisc.Build([]qdisc.Spec{c}, &qdisc.Env{}); err != nil {
			return nil, a.fail("max_rtt", "%s", strings.TrimPrefix(err.Error(), "dualpi2: "))
		}
	}
	return c.WithDefaults(), nil
}

// dualpi2Count reads a u32 in decimal (get_u32(..., 10)) that tc sends
// only when it is not 0.
func dualpi2Count(a *args, w, dflt string) (int, error) {
	n, err := a.uint(w, "N", 10, math.MaxUint32)
	if err == nil && n == 0 {
		err = zeroIsDefault(a, w, dflt)
	}
	return int(n), err
}

// dualpi2Gain reads alpha or beta as parse_alpha_beta: a float (strtof)
// from 0 to ALPHA_BETA_MAX Hz, sent in 1/256 Hz truncated. The kernel
// refuses 0 (a value below 1/256 Hz, which tc only warns about) and
// anything above 2^31-1.
func dualpi2Gain(a *args, w string) (int, error) {
	v, err := a.value(w, "0.16")
	if err != nil {
		return 0, err
	}
	f, perr := strconv.ParseFloat(v, 32)
	if perr != nil && !strings.Contains(perr.Error(), "range") || math.IsNaN(f) || f < 0 || f > dualpi2ABMax {
		return 0, a.fail(v, "%q: %s is a rate in Hz from 1/256 to %d (tc: Illegal %q)", w+" "+v, w, dualpi2ABMax, w)
	}
	n := uint64(float32(f) * 256)
	switch {
	case n == 0:
		return 0, a.fail(v, "%q: %s is below 1/256 Hz and rounds to 0, which the kernel refuses; give at least 0.00390625", w+" "+v, w)
	case n > 1<<31-1:
		return 0, a.fail(v, "%q: the kernel takes %s up to %d/256 Hz (about 8388608); give a smaller value", w+" "+v, w, 1<<31-1)
	}
	return int(n), nil
}

// dualpi2Step reads step_thresh as tc does: a time (get_time) or else a
// packet count with a suffix p, pkt, pkts, packet or packets.
func dualpi2Step(a *args, w string, c *qdisc.DualPI2Config) error {
	v, err := a.value(w, "1ms")
	if err != nil {
		return err
	}
	if d, err := getTime(v); err == nil {
		if d == 0 {
			return zeroIsDefault(a, w, "1ms")
		}
		c.StepThresh, c.StepPackets = d, 0
		return nil
	}
	r := scanUint(v, 10)
	suffix := v[r.n:]
	switch {
	case r.n == 0 || r.neg || r.overflow || r.mag > math.MaxUint32 ||
		(suffix != "p" && suffix != "pkt" && suffix != "pkts" && suffix != "packet" && suffix != "packets"):
		return a.fail(v, "%q: give a time (1ms) or a packet count with p, pkt, pkts, packet or packets (10p) (tc: Illegal \"step_thresh\")", w+" "+v)
	case r.mag == 0:
		return zeroIsDefault(a, w, "1ms")
	}
	c.StepPackets, c.StepThresh = int(r.mag), 0
	return nil
}

// formatDualPI2 prints c so that parseDualPI2 reads it back: the RTTs in
// place of what tc derives from them.
func formatDualPI2(c qdisc.DualPI2Config) string {
	var b words
	b.add("dualpi2")
	b.count("limit", c.Limit)
	b.count("memlimit", c.MemLimit)
	if c.MaxRTT != 0 || c.TypicalRTT != 0 {
		b.time("max_rtt", c.MaxRTT)
		b.time("typical_rtt", c.TypicalRTT)
	} else {
		b.time("target", c.Target)
		b.time("tupdate", c.TUpdate)
		if c.Alpha != 0 {
			b.add("alpha", strconv.FormatFloat(float64(c.Alpha)/256, 'f', -1, 64))
		}
		if c.Beta != 0 {
			b.add("beta", strconv.FormatFloat(float64(c.Beta)/256, 'f', -1, 64))
		}
	}
	if c.StepPackets != 0 {
		b.add("step_thresh", strconv.Itoa(c.StepPackets)+"p")
	} else {
		b.time("step_thresh", c.StepThresh)
	}
	b.count("min_qlen_step", c.MinQlenStep)
	b.count("coupling_factor", c.CouplingFactor)
	if c.ClassicProtectionSet {
		b.add("classic_protection", strconv.Itoa(c.ClassicProtection)+"%")
	}
	b.flag("any_ect", c.AnyECT)
	b.flag("overflow", c.Overflow)
	b.flag("drop_enqueue", c.DropEnqueue)
	b.flag("no_split_gso", c.NoSplitGSO)
	return b.String()
}

// showDualPI2 prints c as dualpi2_print_opt prints the kernel's dump
// (dualpi2_dump puts every attribute): times back in µs from the kernel's
// ns (tupdate and the step threshold saturate at 2^32-1 ns), alpha and
// beta as the kernel's rounded-down round trip through its internal units,
// printed as a float divided by 256 with %f.
func showDualPI2(c qdisc.DualPI2Config, env *qdisc.Env) string {
	c = c.WithDefaults()
	var b strings.Builder
	mem := uint32(c.MemLimit)
	if c.MemLimit == 0 {
		mem = qdisc.DualPI2MemLimit(c.Limit, env)
	}
	nsUs := func(d time.Duration) uint32 {
		return uint32(min(uint64(durationUs(d))*1000, math.MaxUint32) / 1000)
	}
	gain := func(v int) string {
		return strconv.FormatFloat(float64(float32(qdisc.DualPI2DumpedGain(v))/256), 'f', 6, 64)
	}
	fmt.Fprintf(&b, "limit %dp memlimit %dB target %s tupdate %s alpha %s beta %s ",
		uint32(c.Limit), mem, showTime(durationUs(c.Target)), showTime(nsUs(c.TUpdate)), gain(c.Alpha), gain(c.Beta))
	if c.StepPackets != 0 {
		fmt.Fprintf(&b, "step_thresh %dp ", uint32(c.StepPackets))
	} else {
		fmt.Fprintf(&b, "step_thresh %s ", showTime(nsUs(c.StepThresh)))
	}
	fmt.Fprintf(&b, "min_qlen_step %dp coupling_factor %d ", uint32(c.MinQlenStep), uint8(c.CouplingFactor))
	if c.Overflow {
		b.WriteString("overflow ")
	} else {
		b.WriteString("drop_on_overload ")
	}
	if c.DropEnqueue {
		b.WriteString("drop_enqueue ")
	} else {
		b.WriteString("drop_dequeue ")
	}
	fmt.Fprintf(&b, "classic_protection %d%% ", uint8(c.ClassicProtection))
	if c.AnyECT {
		b.WriteString("any_ect ")
	} else {
		b.WriteString("l4s_ect ")
	}
	if c.NoSplitGSO {
		b.WriteString("no_split_gso ")
	} else {
		b.WriteString("split_gso ")
	}
	return b.String()
}
