package tcspec

import (
	"fmt"
	"math"
	"time"

	"wanlab/qdisc"
)

// aqmTime reads a codel/fq_codel/pie time (get_time: µs, a bare number is
// µs).
func aqmTime(a *args, w string) (time.Duration, error) {
	v, err := a.value(w, "5ms")
	if err != nil {
		return 0, err
	}
	d, err := getTime(v)
	if err != nil {
		return 0, a.bad(w, v, err)
	}
	return d, nil
}

// aqmCount reads get_unsigned(..., 0): a u32 in C notation (0x.., 0..).
func aqmCount(a *args, w string) (int, error) {
	n, err := a.uint(w, "N", 0, math.MaxUint32)
	return int(n), err
}

// zeroIsDefault refuses a zero that tc would not send: tc passes an AQM
// option only when its value is not 0, so "limit 0" silently leaves the
// kernel's default (dflt) in place. w is the keyword, v the value read.
func zeroIsDefault(a *args, w, dflt string) error {
	v := a.words[a.i-1]
	return a.fail(v, "%q: tc sends no %s when it reads 0, so the kernel would keep its default (%s); give a positive %s, or leave %s out for the default", w+" "+v, w, dflt, w, w)
}

// count reads an AQM count that tc sends only when it is not 0.
func count(a *args, w, dflt string) (int, error) {
	n, err := aqmCount(a, w)
	if err == nil && n == 0 {
		err = zeroIsDefault(a, w, dflt)
	}
	return n, err
}

// duration reads an AQM time that tc sends only when it is not 0.
func duration(a *args, w, dflt string) (time.Duration, error) {
	d, err := aqmTime(a, w)
	if err == nil && d == 0 {
		err = zeroIsDefault(a, w, dflt)
	}
	return d, err
}

// ceThreshold reads ce_threshold. tc leaves it unset when it reads the
// value ~0U; a zero threshold (mark everything) cannot be told apart from
// wanlab's "disabled" and is refused.
func ceThreshold(a *args, w string, dst *time.Duration) error {
	d, err := aqmTime(a, w)
	if err != nil {
		return err
	}
	switch {
	case d == time.Duration(math.MaxUint32)*time.Microsecond:
		return nil
	case d == 0:
		return a.fail(w, "\"ce_threshold 0\" would mark every ECT packet, and wanlab reads 0 as disabled: give at least 1us, or leave ce_threshold out")
	}
	*dst = d
	return nil
}

// invSqrt reads the wanlab extension "invsqrt linux|exact".
func invSqrt(a *args, w string, dst *qdisc.InvSqrtMode) error {
	v, err := a.value(w, "exact")
	if err != nil {
		return err
	}
	switch v {
	case "linux":
		*dst = qdisc.InvSqrtLinux
	case "exact":
		*dst = qdisc.InvSqrtExact
	default:
		return a.fail(v, "%q: write \"invsqrt linux\" (the kernel's Newton step, default) or \"invsqrt exact\"", w+" "+v)
	}
	return nil
}

const codelTakes = "limit PACKETS, target TIME, interval TIME, ecn | noecn, ce_threshold TIME; wanlab extension: invsqrt linux|exact"

// parseCoDel follows codel_parse_opt: whole words only. tc sends no option
// whose value is 0, leaving the kernel's default; tcspec refuses a 0 rather
// than silently meaning the default. The defaults of options left out are
// filled in.
func parseCoDel(a *args, _ Options) (qdisc.Spec, error) {
	var c qdisc.CoDelConfig
	for a.more() {
		w := a.take()
		var err error
		if w == "limit" {
			c.Limit, err = count(a, w, fmt.Sprint(qdisc.DefaultCoDelLimit))
		} else {
			err = codelOption(a, w, codelTakes, &c.Target, &c.Interval, &c.CEThreshold, &c.ECN, &c.InvSqrt)
		}
		if err != nil {
			return nil, err
		}
	}
	return c.WithDefaults(), nil
}

// codelOption reads one of the options that codel and fq_codel both take,
// which codel_parse_opt and fq_codel_parse_opt read alike; any other word
// is no option of the qdisc, whose options takes lists.
func codelOption(a *args, w, takes string, target, interval, ce *time.Duration, ecn *bool, inv *qdisc.InvSqrtMode) error {
	var err error
	switch w {
	case "target":
		*target, err = duration(a, w, formatDuration(qdisc.DefaultCoDelTarget))
	case "ce_threshold":
		err = ceThreshold(a, w, ce)
	case "interval":
		*interval, err = duration(a, w, formatDuration(qdisc.DefaultCoDelInterval))
	case "ecn":
		*ecn = true
	case "noecn":
		*ecn = false
	case "invsqrt":
		err = invSqrt(a, w, inv)
	default:
		err = a.unknown(w, takes)
	}
	return err
}

func formatCoDel(c qdisc.CoDelConfig) string {
	var b words
	b.add("codel")
	b.count("limit", c.Limit)
	formatCoDelTimes(&b, c.Target, c.Interval, c.CEThreshold)
	b.flag("ecn", c.ECN)
	formatInvSqrt(&b, c.InvSqrt)
	return b.String()
}

// formatCoDelTimes writes the times codel and fq_codel share.
func formatCoDelTimes(b *words, target, interval, ce time.Duration) {
	b.time("target", target)
	b.time("interval", interval)
	b.time("ce_threshold", ce)
}

// formatInvSqrt writes wanlab's invsqrt unless it is Linux's.
func formatInvSqrt(b *words, m qdisc.InvSqrtMode) {
	if m != qdisc.InvSqrtLinux {
		b.add("invsqrt", m.String())
	}
}

const fqCoDelTakes = "limit PACKETS, flows N, target TIME, interval TIME, quantum BYTES, ecn | noecn, ce_threshold TIME, ce_threshold_selector VALUE/MASK, memory_limit SIZE, drop_batch N; wanlab extensions: invsqrt linux|exact, mem_overhead BYTES"

// parseFQCoDel follows fq_codel_parse_opt (whole words only). tc sends no
// option whose value is 0, leaving the kernel's default; tcspec refuses a
// 0 rather than silently meaning the default. Defaults are filled in as tc
// -s shows them, except quantum, which the kernel derives from the device
// (psched_mtu) and stays 0.
func parseFQCoDel(a *args, _ Options) (qdisc.Spec, error) {
	c := qdisc.FQCoDelConfig{ECN: true}
	for a.more() {
		w := a.take()
		var err error
		switch w {
		case "limit":
			c.Limit, err = count(a, w, fmt.Sprint(qdisc.DefaultFQCoDelLimit))
		case "flows":
			c.Flows, err = count(a, w, fmt.Sprint(qdisc.DefaultFQCoDelFlows))
		case "quantum":
			c.Quantum, err = count(a, w, "the device's MTU with its header, 1514 on Ethernet")
		case "drop_batch":
			c.DropBatch, err = count(a, w, fmt.Sprint(qdisc.DefaultDropBatch))
		case "ce_threshold_selector":
			err = ceSelector(a, w)
		case "memory_limit":
			err = memoryLimit(a, w, &c.MemoryLimit)
		case "mem_overhead":
			c.MemOverhead, err = count(a, w, fmt.Sprint(qdisc.DefaultFQCoDelMemOverhead))
		default:
			err = codelOption(a, w, fqCoDelTakes, &c.Target, &c.Interval, &c.CEThreshold, &c.ECN, &c.InvSqrt)
		}
		if err != nil {
			return nil, err
		}
	}
	return c.WithDefaults(), nil
}

// ceSelector reads "VALUE/MASK" as tc does (two u8 in C notation) and then
// refuses it: FQCoDelConfig has no place for it yet.
func ceSelector(a *args, w string) error {
	v, err := a.value(w, "0x1/0x3")
	if err != nil {
		return err
	}
	val, mask, ok := cut(v, '/')
	if !ok {
		return a.fail(v, "%q: missing mask: write VALUE/MASK, e.g. 0x1/0x3", w+" "+v)
	}
	if _, err := getUint(mask, 0, 0xff); err != nil {
		return a.bad(w+" mask", mask, err)
	}
	if _, err := getUint(val, 0, 0xff); err != nil {
		return a.bad(w, val, err)
	}
	return a.fail(w, "%q is not supported by wanlab yet: leave it out (ce_threshold then applies to all ECT traffic)", w+" "+v)
}

// memoryLimit reads get_size; tc leaves the value ~0U unset, and a zero
// limit (drop everything) is refused since wanlab reads 0 as the default.
func memoryLimit(a *args, w string, dst *int) error {
	v, err := a.value(w, "32Mb")
	if err != nil {
		return err
	}
	n, err := getSize(v)
	if err != nil {
		return a.bad(w, v, err)
	}
	switch n {
	case math.MaxUint32:
		return nil
	case 0:
		return a.fail(v, "%q would drop every packet, and wanlab reads 0 as the default (32Mb): give a positive limit", w+" "+v)
	}
	*dst = int(n)
	return nil
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func formatFQCoDel(c qdisc.FQCoDelConfig) string {
	var b words
	b.add("fq_codel")
	b.count("limit", c.Limit)
	b.count("flows", c.Flows)
	b.count("quantum", c.Quantum)
	formatCoDelTimes(&b, c.Target, c.Interval, c.CEThreshold)
	b.size("memory_limit", c.MemoryLimit)
	b.count("drop_batch", c.DropBatch)
	if c.ECN {
		b.add("ecn")
	} else {
		b.add("noecn")
	}
	formatInvSqrt(&b, c.InvSqrt)
	b.count("mem_overhead", c.MemOverhead)
	return b.String()
}
