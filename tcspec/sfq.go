package tcspec

import (
	"math"
	"strconv"
	"strings"

	"wanlab/qdisc"
)

const sfqTakes = "limit PACKETS, perturb SECS, quantum BYTES, divisor NUMBER, flows NUMBER, depth NUMBER, headdrop, redflowlimit BYTES, min BYTES, max BYTES, avpkt BYTES, burst PACKETS, probability P, ecn, harddrop"

// parseSFQ follows sfq_parse_opt: every keyword as a whole word, a keyword
// given again replacing its value; quantum and avpkt are sizes (get_size),
// perturb a signed count of seconds (get_integer), the counts and the RED
// mode's byte thresholds plain numbers in C's bases (get_u32, so "min 8k"
// is refused as tc refuses it). tc sends a 0 for an option left out, and
// the kernel (or tc itself, for the RED mode) keeps the default for it: a
// 0 given would silently mean the default and is refused, as tc refuses a
// limit below 2 and fails on an avpkt or probability of 0 (perturb 0,
// never, is the default itself). The RED mode's
// defaults are filled in, and what tc and the kernel refuse (a max above
// redflowlimit, min not below max, a burst that fits no averaging
// constant, a divisor that is not a power of two, a quantum beyond the
// slots' 16-bit allotment, a limit that depth and flows lower to 1) is
// refused here, naming the fix.
func parseSFQ(a *args, _ Options) (qdisc.Spec, error) {
	var c qdisc.SFQConfig
	for a.more() {
		w := a.take()
		var err error
		switch w {
		case "quantum":
			var n uint32
			if n, err = a.size(w, "BYTES"); err == nil && n == 0 {
				err = sfqZero(a, w, "psched_mtu: 1514 on Ethernet, 1500 on TUN")
			}
			c.Quantum = int(n)
		case "perturb":
			var v string
			if v, err = a.value(w, "SECS"); err == nil {
				var n int64
				n, err = getInt(v, 0, math.MinInt32, math.MaxInt32)
				if err != nil {
					err = a.bad(w, v, err)
				}
				c.Perturb = int(n)
			}
		case "limit":
			c.Limit, err = sfqU32(a, w, "PACKETS")
			if err == nil && c.Limit < 2 {
				err = a.fail(a.words[a.i-1], "%q: sfq's limit must be 2 packets or more (tc: \"Illegal \\\"limit\\\", must be > 1\")", w+" "+a.words[a.i-1])
			}
		case "divisor":
			c.Divisor, err = sfqCount(a, w, "NUMBER", "1024")
		case "flows":
			c.Flows, err = sfqCount(a, w, "NUMBER", "128")
		case "depth":
			c.Depth, err = sfqCount(a, w, "NUMBER", "127")
		case "headdrop":
			c.HeadDrop = true
		case "redflowlimit":
			if c.RedFlowLimit, err = sfqU32(a, w, "BYTES"); err == nil && c.RedFlowLimit == 0 {
				err = a.fail(a.words[a.i-1], "%q: tc takes a redflowlimit of 0 as none given and then refuses the RED options (\"Required parameter (redflowlimit) is missing\"); give the flows' byte limit, e.g. redflowlimit 100000", w+" 0")
			}
		case "min":
			c.Min, err = sfqCount(a, w, "BYTES", "max/3")
		case "max":
			c.Max, err = sfqCount(a, w, "BYTES", "redflowlimit/4")
		case "burst":
			c.Burst, err = sfqCount(a, w, "PACKETS", "(2·min + max)/(3·avpkt)")
		case "avpkt":
			var n uint32
			if n, err = a.size(w, "BYTES"); err == nil && n == 0 {
				err = a.fail(a.words[a.i-1], "%q: the average packet size must not be 0 (tc cannot compute the RED mode's constants with it); give e.g. avpkt 1000", w+" "+a.words[a.i-1])
			}
			c.Avpkt = int(n)
		case "probability":
			var v string
			if v, err = a.value(w, "P"); err == nil {
				// sscanf's "%lg": the number at the front, whatever follows.
				f := scanFloat(v)
				c.Probability = f.v
				if f.n == 0 || !(c.Probability > 0 && c.Probability < 1) {
					err = a.fail(v, "%q: the probability is a fraction between 0 and 1 exclusive, e.g. probability 0.02", w+" "+v)
				}
			}
		case "ecn":
			c.ECN = true
		case "harddrop":
			c.HardDrop = true
		default:
			err = a.unknown(w, sfqTakes)
		}
		if err != nil {
			return nil, err
		}
	}
	c = c.WithDefaults()
	if _, err := c.Dump(&qdisc.Env{}); err != nil {
		return nil, a.fail("", "%s", strings.TrimPrefix(err.Error(), "sfq: "))
	}
	return c, nil
}

// sfqCount reads a count that 0 would leave at its default (dflt): tc
// sends the 0 and the kernel (or tc, for the RED mode's values) takes it
// as not given, which tcspec refuses rather than silently meaning the
// default.
func sfqCount(a *args, w, what, dflt string) (int, error) {
	n, err := sfqU32(a, w, what)
	if err == nil && n == 0 {
		err = sfqZero(a, w, dflt)
	}
	return n, err
}

func sfqZero(a *args, w, dflt string) error {
	v := a.words[a.i-1]
	return a.fail(v, "%q: sfq takes a %s of 0 as none given and keeps its default (%s); give a positive %s, or leave %s out for the default", w+" "+v, w, dflt, w, w)
}

// sfqU32 reads the value keyword w requires as get_u32 does (any base C's
// strtoul takes).
func sfqU32(a *args, w, what string) (int, error) {
	n, err := a.uint(w, what, 0, math.MaxUint32)
	return int(n), err
}

// formatSFQ prints sfq as parseSFQ reads it: the options given, the RED
// mode's every value explicit.
func formatSFQ(c qdisc.SFQConfig) string {
	var b words
	b.add("sfq")
	b.count("limit", c.Limit)
	b.count("perturb", c.Perturb)
	b.count("quantum", c.Quantum)
	b.count("divisor", c.Divisor)
	b.count("flows", c.Flows)
	b.count("depth", c.Depth)
	b.flag("headdrop", c.HeadDrop)
	b.count("redflowlimit", c.RedFlowLimit)
	b.count("min", c.Min)
	b.count("max", c.Max)
	b.count("avpkt", c.Avpkt)
	b.count("burst", c.Burst)
	if c.Probability != 0 {
		b.add("probability", strconv.FormatFloat(c.Probability, 'g', -1, 64))
	}
	b.flag("ecn", c.ECN)
	b.flag("harddrop", c.HardDrop)
	return b.String()
}

// showSFQ prints sfq's options as iproute2's sfq_print_opt does without
// -d, from what the kernel's sfq_dump reports: the limit in packets, the
// quantum as a size, the depth, headdrop, the divisor (flows only with
// -d), the perturbation period, and in the RED mode Wlog ("ewma"), the
// thresholds as sizes, max_P as a fraction ("%lg") and the flags in
// tc_red_print_flags' order. The RED counters tc -s prints after them,
// on lines of their own, are left out with the extended statistics.
func showSFQ(c qdisc.SFQConfig, env *qdisc.Env) string {
	d, _ := c.Dump(env)
	var b strings.Builder
	b.WriteString("limit " + strconv.Itoa(d.Limit) + "p quantum " + showSize(uint32(d.Quantum)) + " depth " + strconv.Itoa(d.Depth) + " ")
	if d.HeadDrop {
		b.WriteString("headdrop ")
	}
	b.WriteString("divisor " + strconv.Itoa(d.Divisor) + " ")
	if d.Perturb != 0 {
		b.WriteString("perturb " + strconv.Itoa(d.Perturb) + "sec ")
	}
	if d.RED {
		b.WriteString("ewma " + strconv.Itoa(d.Wlog) + " min " + showSize(uint32(d.Min)) + " max " + showSize(uint32(d.Max)) +
			" probability " + cG(float64(d.MaxP)/(1<<32), 6) + " ")
		if d.ECN {
			b.WriteString("ecn ")
		}
		if d.HardDrop {
			b.WriteString("harddrop ")
		}
	}
	return b.String()
}
