package plot

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"wanlab/tcspec"
)

// A swept variable's values are numbers when they are quantities of one
// kind written in tc's units: times (10ms, 1.5s), rates (1mbit, 10mbps,
// iperf's 20M), sizes (1500b, 32kb) or plain numbers (1000, 0.5). Such a
// variable gets a numeric axis, its values placed in proportion; any other
// (transports, queue disciplines, a delay that is "direct" for one case)
// is categorical.

// quantityKind is the kind of quantity a variable's values are.
type quantityKind int

const (
	notQuantity quantityKind = iota
	plainNumber
	timeQuantity
	rateQuantity
	sizeQuantity
)

// readQuantity reads one value: its kind and its value in the kind's base
// unit (seconds, bit/s, bytes). A rate's unit is tc's or iperf's (so a
// bare letter, 20M, is a rate, as wanlab run --udp-rate reads it); a size
// is one of the units tc reads only as sizes (b, kb, mb, gb).
func readQuantity(s string) (quantityKind, float64) {
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
		return plainNumber, v
	}
	if d, err := tcspec.ParseTime(s); err == nil {
		return timeQuantity, d.Seconds()
	}
	if bits, err := tcspec.ParseRate(s); err == nil {
		return rateQuantity, bits
	}
	if n, err := tcspec.ParseSize(s); err == nil {
		return sizeQuantity, float64(n)
	}
	return notQuantity, 0
}

// axisUnit is a unit an axis shows a kind of quantity in: values of at
// least min base units are shown divided by scale.
type axisUnit struct {
	name       string
	min, scale float64
}

// axisUnits lists each kind's units, largest first.
var axisUnits = map[quantityKind][]axisUnit{
	timeQuantity: {{"s", 1, 1}, {"ms", 1e-3, 1e-3}, {"µs", 0, 1e-6}},
	rateQuantity: {{"Gbit/s", 1e9, 1e9}, {"Mbit/s", 1e6, 1e6}, {"kbit/s", 1e3, 1e3}, {"bit/s", 0, 1}},
	sizeQuantity: {{"GiB", 1 << 30, 1 << 30}, {"MiB", 1 << 20, 1 << 20}, {"KiB", 1 << 10, 1 << 10}, {"bytes", 0, 1}},
}

// numericValues reads a variable's values as numbers on one axis: in the
// unit that suits the largest of them (10ms … 100ms in ms, 500kbit …
// 10mbit in Mbit/s) and that unit's name ("" for plain numbers). ok is
// false when a value is not a quantity or the values are of different
// kinds: the variable is categorical.
func numericValues(vals []string) (xs []float64, unit string, ok bool) {
	if len(vals) == 0 {
		return nil, "", false
	}
	kind := notQuantity
	base := make([]float64, len(vals))
	for i, v := range vals {
		k, x := readQuantity(v)
		if k == notQuantity || (kind != notQuantity && k != kind) {
			return nil, "", false
		}
		kind, base[i] = k, x
	}
	scale := 1.0
	if units := axisUnits[kind]; units != nil {
		largest := 0.0
		for _, x := range base {
			largest = max(largest, math.Abs(x))
		}
		for _, u := range units {
			if largest >= u.min {
				unit, scale = u.name, u.scale
				break
			}
		}
	}
	xs = make([]float64, len(base))
	for i, x := range base {
		// Rounded to 12 significant digits, so that 10ms is 10 ms and not
		// 10.000000000000002.
		xs[i], _ = strconv.ParseFloat(strconv.FormatFloat(x/scale, 'g', 12, 64), 64)
	}
	return xs, unit, true
}

// boundedBelow returns what a quantity in unit is when it cannot be
// below zero ("a rate", "a time", "a size", "a count"), or "" for a unit of
// a quantity that may be anything (and for no unit): the units of
// Flent's and wanlab's series and those of the axes above.
func boundedBelow(unit string) string {
	u := displayUnit(unit)
	switch {
	case strings.HasSuffix(u, "/s"):
		return "a rate"
	case slices.Contains([]string{"s", "ms", "us", "µs", "ns"}, u):
		return "a time"
	case slices.Contains([]string{"bytes", "bits", "kbits", "Kbits", "Mbits", "Gbits", "KiB", "MiB", "GiB"}, u):
		return "a size"
	case u == "packets":
		return "a count"
	case u == "%":
		return "a share"
	}
	return ""
}
