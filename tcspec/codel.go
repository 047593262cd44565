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
	v, err := a.value(w, "N")
	if err != nil {
		return 0, err
	}
	n, err := getUint(v, 0, math.MaxUint32)
	if err != nil {
		return 0, a.bad(w, v, err)
	}
	return int(n), nil
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
		switch w {
		case "limit":
			c.Limit, err = count(a, w, fmt.Sprint(qdisc.DefaultCoDelLimit))
		case "target":
			c.Target, err = duration(a, w, formatDuration(qdisc.DefaultCoDelTarget))
		case "ce_threshold":
			err = ceThreshold(a, w, &c.CEThreshold)
		case "interval":
			c.Interval, err = duration(a, w, formatDuration(qdisc.DefaultCoDelInterval))
		case "ecn":
			c.ECN = true
		case "noecn":
			c.ECN = false
		case "invsqrt":
			err = invSqrt(a, w, &c.InvSqrt)
		default:
			err = a.unknown(w, codelTakes)
		}
		if err != nil {
			return nil, err
		}
	}
	return c.WithDefaults(), nil
}

func formatCoDel(c qdisc.CoDelConfig) string {
	var b words
	b.add("codel")
	if c.Limit != 0 {
		b.add("limit", fmt.Sprint(c.Limit))
	}
	if c.Target != 0 {
		b.add("target", formatDuration(c.Target))
	}
	if c.Interval != 0 {
		b.add("interval", formatDuration(c.Interval))
	}
	if c.CEThreshold != 0 {
		b.add("ce_threshold", formatDuration(c.CEThreshold))
	}
	if c.ECN {
		b.add("ecn")
	}
	if c.InvSqrt != qdisc.InvSqrtLinux {
		b.add("invsqrt", c.InvSqrt.String())
	}
	return b.String()
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
		case "target":
			c.Target, err = duration(a, w, formatDuration(qdisc.DefaultCoDelTarget))
		case "ce_threshold":
			err = ceThreshold(a, w, &c.CEThreshold)
		case "ce_threshold_selector":
			err = ceSelector(a, w)
		case "memory_limit":
			err = memoryLimit(a, w, &c.MemoryLimit)
		case "interval":
			c.Interval, err = duration(a, w, formatDuration(qdisc.DefaultCoDelInterval))
		case "ecn":
			c.ECN = true
		case "noecn":
			c.ECN = false
		case "invsqrt":
			err = invSqrt(a, w, &c.InvSqrt)
		case "mem_overhead":
			c.MemOverhead, err = count(a, w, fmt.Sprint(qdisc.DefaultFQCoDelMemOverhead))
		default:
			err = a.unknown(w, fqCoDelTakes)
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
	ints := []struct {
		kw string
		v  int
	}{{"limit", c.Limit}, {"flows", c.Flows}, {"quantum", c.Quantum}}
	for _, x := range ints {
		if x.v != 0 {
			b.add(x.kw, fmt.Sprint(x.v))
		}
	}
	if c.Target != 0 {
		b.add("target", formatDuration(c.Target))
	}
	if c.Interval != 0 {
		b.add("interval", formatDuration(c.Interval))
	}
	if c.CEThreshold != 0 {
		b.add("ce_threshold", formatDuration(c.CEThreshold))
	}
	if c.MemoryLimit != 0 {
		b.add("memory_limit", formatSize(c.MemoryLimit))
	}
	if c.DropBatch != 0 {
		b.add("drop_batch", fmt.Sprint(c.DropBatch))
	}
	if c.ECN {
		b.add("ecn")
	} else {
		b.add("noecn")
	}
	if c.InvSqrt != qdisc.InvSqrtLinux {
		b.add("invsqrt", c.InvSqrt.String())
	}
	if c.MemOverhead != 0 {
		b.add("mem_overhead", fmt.Sprint(c.MemOverhead))
	}
	return b.String()
}
