package tcspec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"wanlab/qdisc"
)

// The readers in this file follow iproute2's get_rate64, get_size,
// get_time, get_time64, parse_percent and get_u32 & co: a strtod or strtoul
// prefix, then a unit compared case-insensitively. Where tc would feed an
// out-of-range double into an integer (undefined behaviour in C: negative
// sizes, rates beyond 2^64, NaN), they reject the value instead.

// matches reports whether word abbreviates keyword, as tc's matches(): word
// must be a non-empty prefix of keyword.
func matches(word, keyword string) bool {
	return word != "" && strings.HasPrefix(keyword, word)
}

// rateSuffixes is tc's table, searched in order with strcasecmp.
var rateSuffixes = []struct {
	name  string
	scale float64
}{
	{"bit", 1}, {"kibit", 1024}, {"kbit", 1000}, {"mibit", 1024 * 1024}, {"mbit", 1e6},
	{"gibit", 1024 * 1024 * 1024}, {"gbit", 1e9}, {"tibit", 1024 * 1024 * 1024 * 1024}, {"tbit", 1e12},
	{"bps", 8}, {"kibps", 8 * 1024}, {"kbps", 8000}, {"mibps", 8 * 1024 * 1024}, {"mbps", 8e6},
	{"gibps", 8 * 1024 * 1024 * 1024}, {"gbps", 8e9}, {"tibps", 8 * 1024 * 1024 * 1024 * 1024}, {"tbps", 8e12},
}

// iperfRateSuffixes are iperf's one-letter rate suffixes (iperf -b, in
// either case): bits per second, in steps of 1000.
var iperfRateSuffixes = []struct {
	name  string
	scale float64
}{{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}}

const rateHelp = "use a number with a unit: bit, kbit, mbit, gbit, tbit (×1000), kibit, mibit, gibit, tibit (×1024), or bytes per second: bps, kbps, mbps, gbps (so 10mbps is 80 Mbit/s)"

// iperfRateHelp is rateHelp for the readers that take iperf's suffixes too.
const iperfRateHelp = rateHelp + ", or iperf's k, m, g, t for bits (so 20M is 20 Mbit/s)"

// ParseRate reads a rate as a flag or a flow gives it and returns it in
// bits per second: a number with one of tc's units (tc(8), any case: bit,
// kbit, mbit, gbit, tbit in steps of 1000, kibit, mibit, gibit, tibit in
// steps of 1024, and in bytes per second bps, kbps, mbps, gbps, tbps and
// kibps … tibps, so 10mbps is 80 Mbit/s) or with one of iperf's letters
// (iperf -b, either case: k, m, g, t, bits per second in steps of 1000, so
// 20M is 20 Mbit/s). A bare number is bits per second; spaces around the
// rate are ignored. It refuses a negative, infinite or NaN rate; each
// caller sets its own bounds. A qdisc's rate takes tc's units alone, as
// tc does.
func ParseRate(s string) (float64, error) {
	return scanRate(strings.TrimSpace(s), true)
}

// scanRate reads a number (as strtod does) and a rate unit, tc's and,
// with iperf, iperf's letters, and returns bits per second, refusing a
// negative, infinite or NaN rate.
func scanRate(s string, iperf bool) (float64, error) {
	help := rateHelp
	if iperf {
		help = iperfRateHelp
	}
	f := scanFloat(s)
	if f.n == 0 {
		return 0, fmt.Errorf("bad rate %s: %s", Quote(s), help)
	}
	bits := f.v
	if unit := s[f.n:]; unit != "" {
		scale, ok := rateScale(unit, iperf)
		if !ok {
			return 0, fmt.Errorf("bad rate %s: unknown unit %s: %s", Quote(s), Quote(unit), help)
		}
		bits *= scale
	}
	if math.IsNaN(bits) || bits < 0 || math.IsInf(bits, 0) {
		return 0, fmt.Errorf("bad rate %s: out of range: %s", Quote(s), help)
	}
	return bits, nil
}

// rateScale returns the bits per second of one unit, tc's table searched
// first, as tc does, and then, with iperf, iperf's letters.
func rateScale(unit string, iperf bool) (float64, bool) {
	for _, u := range rateSuffixes {
		if strings.EqualFold(u.name, unit) {
			return u.scale, true
		}
	}
	if iperf {
		for _, u := range iperfRateSuffixes {
			if strings.EqualFold(u.name, unit) {
				return u.scale, true
			}
		}
	}
	return 0, false
}

// getRate64 reads a rate in tc's units and returns bytes per second,
// truncated as tc does.
func getRate64(s string) (qdisc.Rate, error) {
	bits, err := scanRate(s, false)
	if err != nil {
		return 0, err
	}
	bps := bits / 8
	if bps >= 1<<64 {
		return 0, fmt.Errorf("bad rate %s: out of range: %s", Quote(s), rateHelp)
	}
	return qdisc.Rate(bps), nil
}

// getPercentRate64 reads "N%" of a link of linkSpeed bit/s, as tc's
// get_percent_rate64 does with the device's speed: it keeps the leading run
// of digits, dots and percent signs (ignoring the rest, as tc's sscanf
// does), prints perc·speed with six decimals and reads that back in bit/s.
func getPercentRate64(s string, linkSpeed uint64) (qdisc.Rate, error) {
	if linkSpeed == 0 {
		return 0, fmt.Errorf("rate %q is a percentage of the link speed, which is unknown here: set the link speed, or give an absolute rate such as 10mbit", s)
	}
	run := 0
	for run < len(s) && (isDigit(s[run]) || s[run] == '.' || s[run] == '%') {
		run++
	}
	if run == 0 {
		return 0, fmt.Errorf("bad rate %q: write a percentage such as 50%%", s)
	}
	perc, err := parsePercent(s[:run])
	if err != nil {
		return 0, fmt.Errorf("bad rate %q: a percentage must lie between 0%% and 100%%", s)
	}
	bits := strconv.FormatFloat(perc*float64(linkSpeed), 'f', 6, 64)
	return getRate64(bits)
}

const sizeHelp = "use bytes or a unit: b, k or kb (×1024), m or mb (×1024²), g or gb (×1024³), kbit, mbit, gbit"

// ParseSize reads a size as tc writes one (tc(8): a number of bytes, or
// with a unit in any case: b, k or kb (×1024), m or mb (×1024²), g or gb
// (×1024³), kbit, mbit, gbit (binary multiples of bits, so kbit is 128
// bytes)) and returns bytes; spaces around it are ignored. It refuses a
// size below 0 or of 4 GiB and more, as tc does.
func ParseSize(s string) (uint32, error) {
	return getSize(strings.TrimSpace(s))
}

// getSize reads a size in bytes (binary multiples; kbit = 128 bytes).
func getSize(s string) (uint32, error) {
	f := scanFloat(s)
	if f.n == 0 {
		return 0, fmt.Errorf("bad size %q: %s", s, sizeHelp)
	}
	sz := f.v
	switch unit := strings.ToLower(s[f.n:]); unit {
	case "":
	case "kb", "k":
		sz *= 1024
	case "gb", "g":
		sz *= 1024 * 1024 * 1024
	case "gbit":
		sz *= 1024 * 1024 * 1024 / 8
	case "mb", "m":
		sz *= 1024 * 1024
	case "mbit":
		sz *= 1024 * 1024 / 8
	case "kbit":
		sz *= 1024 / 8
	case "b":
	default:
		return 0, fmt.Errorf("bad size %q: unknown unit %q: %s", s, s[f.n:], sizeHelp)
	}
	if math.IsNaN(sz) || sz < 0 || sz >= 1<<32 {
		return 0, fmt.Errorf("bad size %q: must lie between 0 and 4Gb", s)
	}
	return uint32(sz), nil
}

// getSizeAndCell reads tbf's legacy "SIZE/CELL" (CELL a power of two,
// which only shaped tc's rate table and has no effect here).
func getSizeAndCell(s string) (uint32, error) {
	size, cell, slash := strings.Cut(s, "/")
	n, err := getSize(size)
	if err != nil || !slash {
		return n, err
	}
	c, err := getInt(cell, 0, math.MinInt32, math.MaxInt32)
	if err != nil || c <= 0 || c&(c-1) != 0 {
		return 0, fmt.Errorf("bad cell size %q in %q: the part after / must be a power of two such as 8", cell, s)
	}
	return n, nil
}

// timeUnit is one suffix of get_time/get_time64 and its scale in ns.
type timeUnit struct {
	names []string
	ns    float64
}

var timeUnits = []timeUnit{
	{[]string{"s", "sec", "secs"}, 1e9},
	{[]string{"ms", "msec", "msecs"}, 1e6},
	{[]string{"us", "usec", "usecs"}, 1e3},
	{[]string{"ns", "nsec", "nsecs"}, 1},
}

// scanTime reads a number and a time unit; bare reports a missing unit.
// withNS allows ns units (get_time64).
func scanTime(s string, withNS bool) (v float64, scale float64, bare bool, ok bool) {
	f := scanFloat(s)
	if f.n == 0 {
		return 0, 0, false, false
	}
	unit := s[f.n:]
	if unit == "" {
		return f.v, 0, true, true
	}
	for _, u := range timeUnits {
		if u.ns == 1 && !withNS {
			continue
		}
		for _, name := range u.names {
			if strings.EqualFold(name, unit) {
				return f.v, u.ns, false, true
			}
		}
	}
	return 0, 0, false, false
}

// ParseTime reads a time written as tc writes one, a number and one of its
// units (ns, us, ms, s and their long forms, in any case), for wanlab's own
// syntax (sim's flows): unlike tc's, a bare number is refused, since
// whether it means µs or ns depends on the tc option. The result is
// rounded to the nearest nanosecond and may not be negative.
func ParseTime(s string) (time.Duration, error) {
	v, scale, bare, ok := scanTime(s, true)
	switch {
	case !ok && scanFloat(s).n == 0:
		return 0, fmt.Errorf("not a time; give a number and a unit, e.g. 500ms")
	case !ok:
		return 0, fmt.Errorf("unknown unit %s; use ns, us, ms or s", Quote(s[scanFloat(s).n:]))
	case bare:
		return 0, fmt.Errorf("no unit; write the number with ms or s, e.g. 500ms")
	}
	ns := v * scale
	if !(ns >= 0) || ns > math.MaxInt64/2 {
		return 0, fmt.Errorf("must be a non-negative time")
	}
	return time.Duration(math.Round(ns)), nil
}

// getTime reads a time as tc's get_time: a bare number is µs, the result is
// truncated to whole µs and must fit a u32.
func getTime(s string) (time.Duration, error) {
	v, scale, bare, ok := scanTime(s, false)
	if !ok {
		return 0, fmt.Errorf("bad time %q: use a number with a unit: us, ms, s", s)
	}
	us := v
	if !bare {
		us = v * (scale / 1e3)
	}
	if math.IsNaN(us) || us < 0 || us >= 1<<32 {
		return 0, fmt.Errorf("bad time %q: must lie between 0 and 4294s", s)
	}
	return time.Duration(uint32(us)) * time.Microsecond, nil
}

// getTime64 reads a time as tc's get_time64: ns, truncated, a bare number
// being ns.
func getTime64(s string) (time.Duration, error) {
	v, scale, bare, ok := scanTime(s, true)
	if !ok {
		return 0, fmt.Errorf("bad time %q: use a number with a unit: ns, us, ms, s", s)
	}
	if bare {
		scale = 1
	}
	ns := v * scale
	if math.IsNaN(ns) || ns <= -(1<<63) || ns >= 1<<63 {
		return 0, fmt.Errorf("bad time %q: out of range", s)
	}
	return time.Duration(int64(ns)), nil
}

// bareNumber reports whether s is a non-zero number without a unit.
func bareNumber(s string) bool {
	v, _, bare, ok := scanTime(s, true)
	return ok && bare && v != 0
}

// parsePercent reads tc's percentages: strtod/100 in [0,1], followed by "%"
// or nothing ("loss 1" is 1%).
func parsePercent(s string) (float64, error) {
	f := scanFloat(s)
	v := f.v / 100
	if f.nan || v > 1 || v < 0 {
		return 0, fmt.Errorf("bad percentage %q: use a number from 0 to 100, optionally followed by %%", s)
	}
	if rest := s[f.n:]; rest != "" && rest != "%" {
		return 0, fmt.Errorf("bad percentage %q: use a number from 0 to 100, optionally followed by %%", s)
	}
	if v == 0 {
		v = 0 // no negative zero
	}
	return v, nil
}

// prob32 is how tc hands a probability to the kernel: rint(p·(2³²−1)).
func prob32(p float64) uint32 {
	return uint32(math.RoundToEven(p * math.MaxUint32))
}

// getUint reads an unsigned integer (get_u32, get_u16, get_u8, get_u64,
// get_unsigned) in the given base, no larger than max. tc's strtoul would
// wrap a negative number; wanlab refuses it.
func getUint(s string, base int, max uint64) (uint64, error) {
	r := scanUint(s, base)
	if r.n == 0 || r.n != len(s) {
		return 0, fmt.Errorf("bad number %q: use a whole number", s)
	}
	if r.overflow || r.mag > max {
		return 0, fmt.Errorf("bad number %q: must be at most %d", s, max)
	}
	if r.neg && r.mag != 0 {
		return 0, fmt.Errorf("bad number %q: must not be negative", s)
	}
	return r.mag, nil
}

// getInt reads a signed integer (get_s32, get_integer) in [min, max].
func getInt(s string, base int, min, max int64) (int64, error) {
	r := scanUint(s, base)
	if r.n == 0 || r.n != len(s) {
		return 0, fmt.Errorf("bad number %q: use a whole number", s)
	}
	if r.overflow || r.mag > 1<<63 {
		return 0, fmt.Errorf("bad number %q: must lie between %d and %d", s, min, max)
	}
	v := int64(r.mag)
	if r.neg {
		v = -v // -(1<<63) wraps to itself, which is what we want
	} else if r.mag == 1<<63 {
		return 0, fmt.Errorf("bad number %q: must lie between %d and %d", s, min, max)
	}
	if v < min || v > max {
		return 0, fmt.Errorf("bad number %q: must lie between %d and %d", s, min, max)
	}
	return v, nil
}
