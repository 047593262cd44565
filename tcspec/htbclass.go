package tcspec

import (
	"math"
	"strings"

	"wanlab/qdisc"
)

const htbClassTakes = "rate RATE, ceil RATE, burst SIZE, cburst SIZE, prio N, quantum N, mtu N, mpu N, overhead N, linklayer ethernet|atm"

// parseHTBClass reads the options of an htb class ("htb rate 1mbit ceil
// 10mbit") as htb_parse_class_opt does: prio, mtu, mpu, overhead,
// linklayer, quantum, burst (or buffer, maxburst), cburst (or cbuffer,
// cmaxburst), by prefix where tc takes one, then ceil and rate as whole
// words, each once; rate is required. A percentage rate needs
// opt.LinkSpeed. tc computes the default bursts; the class keeps 0 for
// them (qdisc.HTBClass says how they are derived).
func parseHTBClass(a *args, opt Options) (qdisc.HTBClass, error) {
	var c qdisc.HTBClass
	rate := func(w string, dst *qdisc.Rate) error {
		v, err := a.value(w, "RATE")
		if err != nil {
			return err
		}
		if *dst != 0 {
			return a.fail(w, "%q given twice (tc says \"Double %q spec\"): give it once", w, w)
		}
		r, err := getRateOrPercent(v, opt.LinkSpeed)
		if err != nil {
			return a.bad(w, v, err)
		}
		if r == 0 && w == "rate" {
			return a.fail(v, "%q: htb needs a rate above 0 (tc says \"rate\" is required)", w+" "+v)
		}
		*dst = r
		return nil
	}
	size := func(w string, dst *int) error {
		v, err := a.value(w, "SIZE")
		if err != nil {
			return err
		}
		n, err := getSizeAndCell(v)
		if err != nil {
			return a.bad(w, v, err)
		}
		*dst = int(n)
		return nil
	}
	number := func(w string, max uint64, dst *int) error {
		n, err := a.uint(w, "N", 10, max)
		if err != nil {
			return err
		}
		*dst = int(n)
		return nil
	}
	for a.more() {
		w := a.take()
		var err error
		switch {
		case matches(w, "prio"):
			err = number(w, math.MaxUint32, &c.Prio)
		case matches(w, "mtu"):
			err = number(w, math.MaxUint32, &c.MTU)
		case matches(w, "mpu"):
			err = number(w, math.MaxUint16, &c.MPU)
		case matches(w, "overhead"):
			err = number(w, math.MaxUint16, &c.Overhead)
		case matches(w, "linklayer"):
			err = linkLayer(a, w, &c.Link)
		case matches(w, "quantum"):
			err = number(w, math.MaxUint32, &c.Quantum)
			if err == nil && c.Quantum > math.MaxInt32 {
				err = a.fail(a.words[a.i-1], "%q: the kernel keeps a quantum in 31 bits; give at most %d bytes", w, math.MaxInt32)
			}
		case matches(w, "burst"), w == "buffer", w == "maxburst":
			err = size(w, &c.Burst)
		case matches(w, "cburst"), w == "cbuffer", w == "cmaxburst":
			err = size(w, &c.CBurst)
		case w == "ceil":
			err = rate(w, &c.Ceil)
		case w == "rate":
			err = rate(w, &c.Rate)
		default:
			err = a.unknown(w, htbClassTakes)
		}
		if err != nil {
			return c, err
		}
	}
	if c.Rate == 0 {
		return c, a.fail("", "\"rate\" is required: give e.g. htb rate 1mbit")
	}
	return c, nil
}

// getRateOrPercent reads an absolute rate, or a percentage of a link of
// linkSpeed bit/s.
func getRateOrPercent(v string, linkSpeed uint64) (qdisc.Rate, error) {
	if containsByte(v, '%') {
		return getPercentRate64(v, linkSpeed)
	}
	return getRate64(v)
}

// formatHTBClass prints a class's options as parseHTBClass reads them,
// "htb rate 1Mbit ceil 10Mbit ...": each option that is not zero (zero
// leaves tc's default).
func formatHTBClass(c qdisc.HTBClass) string {
	b := words{w: []string{"htb"}}
	b.add("rate", formatRate(c.Rate))
	b.rate("ceil", c.Ceil)
	b.size("burst", c.Burst)
	b.size("cburst", c.CBurst)
	b.count("prio", c.Prio)
	b.count("quantum", c.Quantum)
	b.count("mtu", c.MTU)
	b.count("mpu", c.MPU)
	b.count("overhead", c.Overhead)
	if c.Link == qdisc.LinkATM {
		b.add("linklayer", "atm")
	}
	return b.String()
}

// ParseHTBClass reads an htb class's options as a tc class line gives
// them after its kind ("rate 1mbit ceil 10mbit burst 15k"; a leading
// "htb" is skipped), as FormatHTBClass prints them.
func ParseHTBClass(s string, opt Options) (qdisc.HTBClass, error) {
	w := strings.Fields(s)
	if len(w) > 0 && w[0] == "htb" {
		w = w[1:]
	}
	return parseHTBClass(&args{kind: "htb class", words: w}, opt)
}

// FormatHTBClass prints an htb class's options, "htb rate 1Mbit ceil
// 10Mbit ...", each that is not zero (zero leaves tc's default), as
// ParseHTBClass and tc class lines read them.
func FormatHTBClass(c qdisc.HTBClass) string { return formatHTBClass(c) }
