package plot

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"wanlab/results"
	"wanlab/stats"
)

// checkDocs refuses a nil or invalid document, naming it by position.
func checkDocs(docs []*results.Document) error {
	if len(docs) == 0 {
		return fmt.Errorf("plot: no results document given: give at least one results file")
	}
	for i, d := range docs {
		if d == nil {
			return fmt.Errorf("plot: results document %d of %d is missing (nil)", i+1, len(docs))
		}
		if err := d.Validate(); err != nil {
			return fmt.Errorf("plot: results document %d of %d: %w", i+1, len(docs), err)
		}
	}
	return nil
}

// runLabels returns the names of the documents in legends and on axes:
// Options.Labels when given; otherwise each run's title, or, for a run
// without one, its test and start time (as Flent labels a data file).
// Names that would repeat get their position appended ("#2"), so that
// every run stays identifiable.
func runLabels(docs []*results.Document, o Options) ([]string, error) {
	if o.Labels != nil && len(o.Labels) != len(docs) {
		return nil, fmt.Errorf("plot: %d labels for %d results documents: give one label per document, in order", len(o.Labels), len(docs))
	}
	labels := make([]string, len(docs))
	for i, d := range docs {
		switch {
		case o.Labels != nil:
			labels[i] = o.Labels[i]
		case strings.TrimSpace(d.Run.Title) != "":
			labels[i] = strings.TrimSpace(d.Run.Title)
		default:
			labels[i] = d.Run.Test + " " + d.Run.Start.UTC().Format("2006-01-02 15:04:05")
		}
	}
	count := map[string]int{}
	for _, l := range labels {
		count[l]++
	}
	for i, l := range labels {
		if count[l] > 1 {
			labels[i] = fmt.Sprintf("%s #%d", l, i+1)
		}
	}
	return labels, nil
}

// runSubtitle describes one run for a graph's subtitle: its test, its path
// in tc syntax (the bottleneck's, and which hosts had access links of
// their own) and when it started.
func runSubtitle(d *results.Document) string {
	parts := []string{d.Run.Test}
	switch {
	case d.Run.Path.Up != "" && d.Run.Path.Up == d.Run.Path.Down:
		parts = append(parts, "both: "+d.Run.Path.Up)
	default:
		if d.Run.Path.Up != "" {
			parts = append(parts, "up: "+d.Run.Path.Up)
		}
		if d.Run.Path.Down != "" {
			parts = append(parts, "down: "+d.Run.Path.Down)
		}
	}
	if hosts := accessHosts(d.Run.Hosts); hosts != "" {
		parts = append(parts, "+ access links of "+hosts)
	}
	parts = append(parts, d.Run.Start.UTC().Format("2006-01-02 15:04:05 UTC"))
	if d.Run.Partial {
		parts = append(parts, "PARTIAL RUN")
	}
	return strings.Join(parts, "  ·  ")
}

// manyRunsTitle is the title of a graph that overlays several runs.
func manyRunsTitle(docs []*results.Document, what string) string {
	tests := map[string]bool{}
	for _, d := range docs {
		tests[d.Run.Test] = true
	}
	if len(tests) == 1 {
		return fmt.Sprintf("%s: %s, %d runs", docs[0].Run.Test, what, len(docs))
	}
	return fmt.Sprintf("%s, %d runs", what, len(docs))
}

// windowValues returns the values of the samples inside the series'
// window that are not lost probes: what its summary describes.
func windowValues(s *results.Series) []float64 {
	var vs []float64
	for _, p := range s.Samples {
		if p.T > s.Window[0] && p.T <= s.Window[1] && !p.Lost() {
			vs = append(vs, p.V)
		}
	}
	return vs
}

// points returns the series' samples as points, lost probes as NaN.
func points(s *results.Series) []xy {
	pts := make([]xy, len(s.Samples))
	for i, p := range s.Samples {
		pts[i] = xy{p.T, p.V}
	}
	return pts
}

// lostTimes returns the times of the series' lost probes.
func lostTimes(s *results.Series) []float64 {
	var ts []float64
	for _, p := range s.Samples {
		if p.Lost() {
			ts = append(ts, p.T)
		}
	}
	return ts
}

// hasValue reports whether the series has at least one sample that is not
// a lost probe.
func hasValue(s *results.Series) bool {
	return s != nil && slices.ContainsFunc(s.Samples, func(p results.Sample) bool { return !p.Lost() })
}

// displayUnit returns a unit as axes show it: SI's "Mbit/s" for Flent's
// "Mbits/s"; other units unchanged.
func displayUnit(u string) string {
	switch u {
	case "bits/s":
		return "bit/s"
	case "Kbits/s", "kbits/s":
		return "kbit/s"
	case "Mbits/s":
		return "Mbit/s"
	case "Gbits/s":
		return "Gbit/s"
	}
	return u
}

// withUnit returns an axis label: what, then the unit in parentheses,
// unless what already has it (Flent's "Ping (ms) ICMP").
func withUnit(what, unit string) string {
	u := displayUnit(unit)
	if u == "" || strings.Contains(what, "("+u+")") || strings.Contains(what, "("+unit+")") {
		return what
	}
	return what + " (" + u + ")"
}

// oneUnit returns the unit shared by a panel's series, or an error naming
// the two that differ: one axis cannot show two units.
func oneUnit(what string, units map[string]string) (string, error) {
	var unit, first string
	names := make([]string, 0, len(units))
	for n := range units {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch {
		case unit == "":
			unit, first = units[n], n
		case units[n] != unit:
			return "", fmt.Errorf("plot: %s: %q is in %s and %q in %s; one axis shows one unit: plot them separately",
				what, first, unit, n, units[n])
		}
	}
	return unit, nil
}

// scaledRange returns the y range Flent's "scaled" plots give vals: from
// the 5th to the 95th percentile, so that a few outliers do not flatten
// the rest, widened by 1% of the span at each end; from 0 when fromZero
// (a rate, whose axis should not exaggerate its swings).
func scaledRange(vals []float64, fromZero bool) (lo, hi float64) {
	sorted := finiteSorted(vals)
	if len(sorted) == 0 {
		return 0, 1
	}
	lo, hi = stats.Percentile(sorted, 5), stats.Percentile(sorted, 95)
	if fromZero {
		lo = min(0, lo)
	}
	return pad(lo, hi, 0.01, fromZero)
}

// fullRange returns a y range that shows every value, with 4% of the span
// added at each end; from 0 when fromZero.
func fullRange(vals []float64, fromZero bool) (lo, hi float64) {
	sorted := finiteSorted(vals)
	if len(sorted) == 0 {
		return 0, 1
	}
	lo, hi = sorted[0], sorted[len(sorted)-1]
	if fromZero {
		lo = min(0, lo)
	}
	return pad(lo, hi, 0.04, fromZero)
}

// pad widens [lo, hi] by frac of its span at each end, keeping a zero
// bottom at zero when zeroFloor; a range of one value becomes one around
// it.
func pad(lo, hi, frac float64, zeroFloor bool) (float64, float64) {
	if hi == lo {
		d := math.Max(math.Abs(lo)*0.1, 1)
		if zeroFloor && lo == 0 {
			return 0, d
		}
		return lo - d, hi + d
	}
	span := hi - lo
	if !(zeroFloor && lo == 0) {
		lo -= span * frac
	}
	return lo, hi + span*frac
}

// finiteSorted returns the finite values of vals, sorted.
func finiteSorted(vals []float64) []float64 {
	out := make([]float64, 0, len(vals))
	for _, v := range vals {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, v)
		}
	}
	sort.Float64s(out)
	return out
}

// accessHosts names the hosts that had an access link with qdiscs, in
// either direction, as the router names them (c1, s2), a run of three or
// more consecutive hosts of a side shortened ("s1..s4"); "" for none.
func accessHosts(hosts []results.RunHost) string {
	type host struct {
		side byte
		n    int
	}
	var with []host
	for _, h := range hosts {
		if !hasQdiscs(h.AccessUp) && !hasQdiscs(h.AccessDown) {
			continue
		}
		name := h.Name
		switch name {
		case "client":
			name = "c1"
		case "server":
			name = "s1"
		}
		if len(name) < 2 {
			return "some hosts"
		}
		n, err := strconv.Atoi(name[1:])
		if err != nil {
			return "some hosts"
		}
		with = append(with, host{name[0], n})
	}
	var parts []string
	for i := 0; i < len(with); {
		j := i
		for j+1 < len(with) && with[j+1].side == with[i].side && with[j+1].n == with[j].n+1 {
			j++
		}
		first := fmt.Sprintf("%c%d", with[i].side, with[i].n)
		switch {
		case j-i >= 2:
			parts = append(parts, fmt.Sprintf("%s..%c%d", first, with[j].side, with[j].n))
		case j > i:
			parts = append(parts, first, fmt.Sprintf("%c%d", with[j].side, with[j].n))
		default:
			parts = append(parts, first)
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// hasQdiscs reports whether a host's access link (results.RunHost's
// AccessUp, AccessDown) had qdiscs: not none, nor "direct".
func hasQdiscs(chain string) bool { return chain != "" && chain != "direct" }
