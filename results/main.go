package results

import "strings"

// Every view that stands a run for one figure (a table's cell, a row of a
// report's overview, a box of a box plot) takes it from the series these
// methods choose, so that they agree on what a run's throughput and
// latency are.

// ICMPPing is the ICMP ping's series, which every Flent test and every
// test of wanlab's own has.
const ICMPPing = "Ping (ms) ICMP"

// totalSeries are the series that total a run's load both ways: Flent's
// rrul and rrul_be and the custom test's.
var totalSeries = []string{"TCP totals", "Custom totals"}

// sumSeries are the series that total a direction's load flows: Flent's
// (tcp_nup, rrul, rrul_be) and the custom test's, by direction.
var sumSeries = map[string][]string{
	"up":   {"TCP upload sum", "Custom upload"},
	"down": {"TCP download sum", "Custom download"},
}

// loadFlows returns the labels of the run's load flows, in the document's
// order: its flows that go one way ("up" or "down"; dir "" for both)
// and whose label names one of its series.
func (d *Document) loadFlows(dir string) []string {
	var out []string
	for _, f := range d.Flows {
		if (f.Direction == "up" || f.Direction == "down") && (dir == "" || f.Direction == dir) && d.series(f.Label) != nil {
			out = append(out, f.Label)
		}
	}
	return out
}

// LoadSeries returns the series that stands for the run's load in one
// direction, "up" or "down": the sum over the direction's load flows
// ("TCP upload sum", "Custom download"), or else its one load flow's
// series ("TCP upload", "UDP upload", "TFRC download", "QUIC upload");
// nil when no load went that way, or several flows and no sum.
func (d *Document) LoadSeries(dir string) *Series {
	flows := d.loadFlows(dir)
	if len(flows) == 0 {
		return nil
	}
	for _, name := range sumSeries[dir] {
		if s := d.series(name); s != nil {
			return s
		}
	}
	if len(flows) == 1 {
		return d.series(flows[0])
	}
	return nil
}

// MainSeries returns the series that stands for the run's throughput: its
// total both ways ("TCP totals" of rrul, "Custom totals" of custom: what
// the user's flows delivered), or else the LoadSeries of the one direction
// its load went ("TCP upload sum" of tcp_nup, "TCP upload", "TFRC
// upload", "QUIC download"). When there is none it returns nil and the
// series of the run's load flows: none for a run without load (ping),
// several for one whose load went both ways without a total
// (tcp_bidirectional), from which a view must choose.
func (d *Document) MainSeries() (*Series, []string) {
	for _, name := range totalSeries {
		if s := d.series(name); s != nil {
			return s, nil
		}
	}
	up, down := d.loadFlows("up"), d.loadFlows("down")
	switch {
	case len(up) > 0 && len(down) == 0:
		if s := d.LoadSeries("up"); s != nil {
			return s, nil
		}
	case len(down) > 0 && len(up) == 0:
		if s := d.LoadSeries("down"); s != nil {
			return s, nil
		}
	}
	return nil, d.loadFlows("")
}

// LatencySeries returns the series that stands for the run's latency: the
// ICMP ping, or else the first of its latency probes ("Ping (ms) UDP BE"),
// never a series computed over several probes ("Ping (ms) avg"): an
// average of probes is no latency a packet saw. It returns nil for a run
// without probes.
func (d *Document) LatencySeries() *Series {
	if s := d.series(ICMPPing); s != nil {
		return s
	}
	for i := range d.Series {
		if s := &d.Series[i]; strings.HasPrefix(s.Name, "Ping (ms)") && !isComputed(s.Name) {
			return s
		}
	}
	return nil
}
