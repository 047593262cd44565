package results

import (
	"math"
	"strings"

	"wanlab/stats"
)

// Fairness is how evenly the load flows of one direction shared it: Jain's
// fairness index (R. Jain, D. Chiu and W. Hawe, "A Quantitative Measure of
// Fairness and Discrimination for Resource Allocation in Shared Computer
// Systems", DEC-TR-301, 1984) of their mean goodputs, and each flow's
// share of their sum.
//
// Each flow's figure is the mean of its main series over that series'
// window (its span, for tests whose flows start and stop on a schedule of
// their own), as its summary has it: a flow that ran half the load is
// judged by what it got while it ran, not diluted by the time it did not.
// That differs from Flent's "TCP upload fairness" series, which is Jain's
// index of the flows present at each grid point.
type Fairness struct {
	// Direction is "up" (client to server) or "down".
	Direction string `json:"direction"`
	// Jain is (Σx)²/(n·Σx²) over the flows' means x: 1 when all got the
	// same, 1/n when one got everything.
	Jain float64 `json:"jain"`
	// Flows are the flows counted, in the document's order.
	Flows []FlowShare `json:"flows"`
}

// FlowShare is one flow's part of its direction's load.
type FlowShare struct {
	// ID and Label name the flow (Flow.ID, Flow.Label).
	ID    int    `json:"id"`
	Label string `json:"label"`
	// Mean is the mean of the flow's main series over its window, in
	// Unit (the series' unit, "Mbits/s").
	Mean float64 `json:"mean"`
	Unit string  `json:"unit"`
	// Share is Mean over the sum of the direction's flows' means; the
	// shares of a direction sum to 1.
	Share float64 `json:"share"`
}

// RunStats names the figures of a whole run, not of one of its series,
// that a view chooses by name beside Stats (a table's --stat): Jain's
// fairness index of the upload flows and of the download flows
// (FlowFairness), and of the hosts' sums of them, where the run has
// several hosts on a side (FairnessOverHosts).
var RunStats = []string{"jain_up", "jain_down", "jain_hosts_up", "jain_hosts_down"}

// RunStatDirection returns the direction ("up" or "down") whose load
// flows the run's figure name (one of RunStats) is over, and "" for a name
// that is none of them.
func RunStatDirection(name string) string {
	switch name {
	case "jain_up", "jain_hosts_up":
		return "up"
	case "jain_down", "jain_hosts_down":
		return "down"
	}
	return ""
}

// RunStatOverHosts reports whether the run's figure name (one of
// RunStats) is over hosts (FairnessOverHosts) rather than flows.
func RunStatOverHosts(name string) bool { return strings.HasPrefix(name, "jain_hosts_") }

// RunStatFairness returns the fairness of the flows (FlowFairness) that
// the run's figure name (one of RunStats) is over, nil when the run has
// none (fewer than two load flows that way, or for a figure over hosts
// fewer than two hosts), and false for a name that is none of them. For
// a figure over hosts, Jain is the hosts' index and Flows the flows of
// those hosts, each with its share of the direction.
func (d *Document) RunStatFairness(name string) (*Fairness, bool) {
	dir := RunStatDirection(name)
	if dir == "" {
		return nil, false
	}
	for _, f := range d.FlowFairness() {
		if f.Direction != dir {
			continue
		}
		if !RunStatOverHosts(name) {
			return &f, true
		}
		for _, h := range d.FairnessOverHosts() {
			if h.Direction == dir {
				f.Jain = h.Jain
				return &f, true
			}
		}
	}
	return nil, true
}

// RunStat returns the figure of the run that name (one of RunStats)
// names, NaN when the run has none (fewer than two load flows, or hosts,
// that way), and false for a name that is none of them. Its unit is
// RunStatUnit.
func (d *Document) RunStat(name string) (float64, bool) {
	f, ok := d.RunStatFairness(name)
	switch {
	case !ok:
		return 0, false
	case f == nil:
		return math.NaN(), true
	}
	return f.Jain, true
}

// RunStatUnit is the unit of the run's figures (RunStats): "Idx", the unit
// of Flent's fairness series.
const RunStatUnit = "Idx"

// FlowFairness returns the fairness of each direction whose load flows
// (the flows that go one way and whose label names a series, as
// MainSeries counts them) number two or more with a rate series that has
// samples in its window: "up" first, then "down". A direction whose flows
// all got nothing has no figure, as Flent's fairness has no value where
// every flow is at 0. It reads the summaries, so Summarize must have run;
// a document whose samples were dropped still has them.
//
// The flows are grouped by direction; a grouping by host, when flows have
// one, is the same computation over the hosts' sums.
func (d *Document) FlowFairness() []Fairness {
	var out []Fairness
	for _, dir := range []string{"up", "down"} {
		var shares []FlowShare
		for i := range d.Flows {
			f := &d.Flows[i]
			if f.Direction != dir {
				continue
			}
			s := d.series(f.Label)
			if s == nil || !s.IsRate() || s.Summary.N == 0 || math.IsNaN(s.Summary.Mean) {
				continue
			}
			shares = append(shares, FlowShare{ID: f.ID, Label: f.Label, Mean: s.Summary.Mean, Unit: s.Unit})
		}
		if fair, ok := fairnessOf(dir, shares); ok {
			out = append(out, fair)
		}
	}
	return out
}

// fairnessOf is the fairness of the allocations shares (their Mean set),
// with their Share filled in; false for fewer than two, for allocations in
// different units, which are not comparable, and for a sum of 0.
func fairnessOf(dir string, shares []FlowShare) (Fairness, bool) {
	means := make([]float64, len(shares))
	for i, s := range shares {
		if s.Unit != shares[0].Unit {
			return Fairness{}, false
		}
		means[i] = s.Mean
	}
	jain, parts, ok := jainOf(means)
	if !ok {
		return Fairness{}, false
	}
	for i := range shares {
		shares[i].Share = parts[i]
	}
	return Fairness{Direction: dir, Jain: jain, Flows: shares}, true
}

// jainOf returns Jain's index of the allocations xs and each one's share
// of their sum; false for fewer than two and for a sum of 0.
func jainOf(xs []float64) (float64, []float64, bool) {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	if len(xs) < 2 || !(sum > 0) {
		return 0, nil, false
	}
	shares := make([]float64, len(xs))
	for i, x := range xs {
		shares[i] = x / sum
	}
	return stats.Jain(xs), shares, true
}

// FlowShareOf returns the share of the flow with that id in its
// direction's load (FlowShare.Share) among fairness, and false when the
// flow has none.
func FlowShareOf(fairness []Fairness, id int) (float64, bool) {
	for _, f := range fairness {
		for _, s := range f.Flows {
			if s.ID == id {
				return s.Share, true
			}
		}
	}
	return 0, false
}

// MedianRTT returns the median of the flow's sender-side smoothed RTT
// (its tcp_rtt series: TCP_INFO's tcpi_rtt, as Flent records it) over its
// window, in ms, and false when the flow has no such samples (a UDP flow,
// a probe).
func (f *Flow) MedianRTT() (float64, bool) {
	name := f.Label + "::tcp_rtt"
	for i := range f.Series {
		s := &f.Series[i]
		if s.Name == name && s.Unit == "ms" && s.Summary.N > 0 && !math.IsNaN(s.Summary.Median) {
			return s.Summary.Median, true
		}
	}
	return 0, false
}
