package tcspec

import (
	"math"
	"strconv"
	"strings"

	"wanlab/qdisc"
)

const redTakes = "limit SIZE, min SIZE, max SIZE, avpkt SIZE, burst PACKETS, probability P, bandwidth RATE, ecn, harddrop, nodrop, adaptive | adaptative"

// parseRED follows red_parse_opt: every keyword as a whole word, a keyword
// given again replacing its value, limit and avpkt required; tc's defaults
// for the rest are filled in (qdisc.REDConfig.WithDefaults), and what tc
// then computes (the averaging constant, the probability scale, the idle
// damping table) is checked as tc checks it. qevent blocks, which attach
// tc filters to red's drops and marks, are refused: wanlab has no tc
// filter blocks.
func parseRED(a *args, opt Options) (qdisc.Spec, error) {
	var c qdisc.REDConfig
	for a.more() {
		w := a.take()
		var err error
		switch w {
		case "limit":
			c.Limit, err = redSize(a, w)
		case "min":
			c.Min, err = redSize(a, w)
		case "max":
			c.Max, err = redSize(a, w)
		case "avpkt":
			c.Avpkt, err = redSize(a, w)
		case "burst":
			var n uint64
			n, err = a.uint(w, "PACKETS", 0, math.MaxUint32)
			c.Burst = int(n)
		case "probability":
			var v string
			if v, err = a.value(w, "P"); err == nil {
				c.Probability, err = strconv.ParseFloat(v, 64)
				if err != nil || !(c.Probability > 0 && c.Probability < 1) {
					err = a.fail(v, "%q: the probability is a fraction between 0 and 1 exclusive, e.g. probability 0.02", w+" "+v)
				}
			}
		case "bandwidth":
			var v string
			if v, err = a.value(w, "RATE"); err == nil {
				c.Bandwidth, err = getRateOrPercent(v, opt.LinkSpeed)
				if err == nil && uint64(c.Bandwidth) > math.MaxUint32 {
					err = a.fail(v, "%q: tc's red takes a bandwidth of at most %d bytes a second (32 bits); give the link's rate", w+" "+v, uint32(math.MaxUint32))
				} else if err != nil {
					err = a.bad(w, v, err)
				}
			}
		case "ecn":
			c.ECN = true
		case "harddrop":
			c.HardDrop = true
		case "nodrop":
			c.NoDrop = true
		case "adaptive", "adaptative":
			c.Adaptive = true
		case "qevent":
			err = a.fail(w, "red's qevent blocks hand drops and marks to tc filter blocks, which wanlab does not have; remove \"qevent ...\"")
		default:
			err = a.unknown(w, redTakes)
		}
		if err != nil {
			return nil, err
		}
	}
	if c.Limit == 0 || c.Avpkt == 0 {
		return nil, a.fail("", "red's \"limit\" and \"avpkt\" are required (tc: \"RED: Required parameter (limit, avpkt) is missing\"): add e.g. \"limit 400000 avpkt 1000\"")
	}
	return c.WithDefaults(), nil
}

// redSize reads the SIZE keyword w requires, in bytes.
func redSize(a *args, w string) (int, error) {
	n, err := a.size(w, "SIZE")
	return int(n), err
}

// formatRED prints red as parseRED reads it, every value explicit.
func formatRED(c qdisc.REDConfig) string {
	var b words
	b.add("red", "limit", strconv.Itoa(c.Limit), "min", strconv.Itoa(c.Min), "max", strconv.Itoa(c.Max), "avpkt", strconv.Itoa(c.Avpkt))
	b.count("burst", c.Burst)
	if c.Probability != 0 {
		b.add("probability", strconv.FormatFloat(c.Probability, 'g', -1, 64))
	}
	b.rate("bandwidth", c.Bandwidth)
	b.flag("ecn", c.ECN)
	b.flag("harddrop", c.HardDrop)
	b.flag("nodrop", c.NoDrop)
	b.flag("adaptive", c.Adaptive)
	return b.String()
}

// showRED prints red's options as iproute2's red_print_opt does without
// -d: the limit and the thresholds as sizes, then the flags in
// tc_red_print_flags' order. The kernel dumps the thresholds as given
// (qth_min >> Wlog of qth_min << Wlog) and its flags as set.
func showRED(c qdisc.REDConfig) string {
	c = c.WithDefaults()
	var b strings.Builder
	b.WriteString("limit " + showSize(uint32(c.Limit)) + " min " + showSize(uint32(c.Min)) + " max " + showSize(uint32(c.Max)) + " ")
	for _, f := range []struct {
		on   bool
		name string
	}{{c.ECN, "ecn"}, {c.HardDrop, "harddrop"}, {c.Adaptive, "adaptive"}, {c.NoDrop, "nodrop"}} {
		if f.on {
			b.WriteString(f.name + " ")
		}
	}
	return b.String()
}
