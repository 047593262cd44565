package plot

import (
	"fmt"
	"math"
	"strings"

	gplot "gonum.org/v1/plot"

	"wanlab/results"
)

// flowMetric is one line per flow in a panel of a per-flow graph: the
// flow's series with this key, converted for drawing.
type flowMetric struct {
	// key is the series' key: the flow's series is named label::key.
	key string
	// end names the end of the flow the series was measured at, for the
	// legend ("sender", "receiver"); empty when there is one.
	end string
	// convert returns the points to draw and their unit, or false when the
	// series cannot be drawn (a unit it does not know); nil draws the
	// samples as they are.
	convert func(d *results.Document, s *results.Series) ([]xy, string, bool)
}

// flowPanel is one panel of a per-flow graph.
type flowPanel struct {
	axis    string
	metrics []flowMetric
}

// flowGraph draws the panels with a line per flow and metric over time,
// for the flows that have the series, titled with the run's label and
// what the graph shows. A flow keeps its style in every panel, so one
// legend, beside the top panel, serves them all. Panels with no line are
// left out; with none at all, the error says which series the graph
// needed (need) and which flows the run has.
func flowGraph(kind Kind, d *results.Document, label, what string, panels []flowPanel, need string, t theme) (*figure, error) {
	// First find every line, so that each (flow, end) gets one style for
	// all panels.
	type spec struct {
		key  lineKey
		name string
		pts  []xy
		unit string
	}
	specs := make([][]spec, len(panels))
	var keys []lineKey
	seen := map[lineKey]bool{}
	for pi, fp := range panels {
		for fi := range d.Flows {
			f := &d.Flows[fi]
			for mi, m := range fp.metrics {
				s := d.FindSeries(f.Label + "::" + m.key)
				if !hasValue(s) {
					continue
				}
				pts, unit := points(s), s.Unit
				if m.convert != nil {
					var ok bool
					if pts, unit, ok = m.convert(d, s); !ok {
						continue
					}
				}
				name := f.Label
				if m.end != "" {
					name += " (" + m.end + ")"
				}
				k := lineKey{group: fi, member: mi}
				specs[pi] = append(specs[pi], spec{k, name, pts, unit})
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
	}
	slots := map[lineKey]slot{}
	for i, s := range assignSlots(keys) {
		slots[keys[i]] = s
	}

	fig := &figure{theme: t, sharedX: true}
	marks := loadMarks([]*results.Document{d}, t)
	var legend []legendEntry
	listed := map[lineKey]bool{}
	for pi, fp := range panels {
		if len(specs[pi]) == 0 {
			continue
		}
		pn := t.newTimePanel(marks)
		units := map[string]string{}
		var vals []float64
		for _, sp := range specs[pi] {
			l := newLine(sp.pts, t.line(slots[sp.key], false))
			pn.draw(l)
			if !listed[sp.key] {
				listed[sp.key] = true
				legend = append(legend, legendEntry{label: sp.name, thumbs: []gplot.Thumbnailer{l}})
			}
			units[sp.name] = sp.unit
			vals = append(vals, l.values()...)
		}
		unit, err := oneUnit(strings.ToLower(fp.axis)+" panel", units)
		if err != nil {
			return nil, err
		}
		pn.p.Y.Label.Text = withUnit(fp.axis, unit)
		pn.p.Y.Min, pn.p.Y.Max = fullRange(vals, true)
		fig.panels = append(fig.panels, pn)
	}
	if len(fig.panels) == 0 {
		var flows []string
		for _, f := range d.Flows {
			flows = append(flows, f.Label)
		}
		list := strings.Join(flows, ", ")
		if list == "" {
			list = "none"
		}
		return nil, fmt.Errorf("plot: %s: run %q has no %s; its flows are: %s", kind, label, need, list)
	}
	fig.panels[0].legend = legend
	timeAxis(fig, marks, timeEnd([]*results.Document{d}))
	fig.title = label + ": " + what
	fig.subtitle = runSubtitle(d)
	return fig, nil
}

func tcpCwndRTT(docs []*results.Document, labels []string, o Options, t theme) (*figure, error) {
	return flowGraph(TCPCwndRTT, docs[0], labels[0], "TCP congestion window and RTT", []flowPanel{
		{"Congestion window", []flowMetric{{key: "tcp_cwnd", end: "sender"}, {key: "receiver_tcp_cwnd", end: "receiver"}}},
		{"RTT", []flowMetric{{key: "tcp_rtt", end: "sender"}, {key: "receiver_tcp_rtt", end: "receiver"}}},
	}, "TCP_INFO series: it needs a flow's LABEL::tcp_cwnd, LABEL::tcp_rtt, LABEL::receiver_tcp_cwnd or LABEL::receiver_tcp_rtt, which TCP flows have", t)
}

func routerFlows(docs []*results.Document, labels []string, o Options, t theme) (*figure, error) {
	return flowGraph(RouterFlows, docs[0], labels[0], "the router's view of each flow", []flowPanel{
		{"Delivered rate", []flowMetric{{key: "router_delivered_bytes", convert: deliveredRate}}},
		{"Queueing delay", []flowMetric{{key: "router_queue_delay"}}},
	}, "router per-flow series: it needs a flow's LABEL::router_delivered_bytes or LABEL::router_queue_delay, which wanlab run records at the router", t)
}

// deliveredRate turns router_delivered_bytes, the bytes the router
// delivered in the step that ends at each sample, into the rate over that
// step in Mbit/s: bytes × 8 / 10⁶ over the time since the previous sample
// (one step for the first). A series already in a rate unit is drawn as it
// is.
func deliveredRate(d *results.Document, s *results.Series) ([]xy, string, bool) {
	if s.IsRate() {
		return points(s), s.Unit, true
	}
	if s.Unit != "bytes" {
		return nil, "", false
	}
	pts := make([]xy, len(s.Samples))
	prev := -1.0
	for i, p := range s.Samples {
		dt := d.Run.StepS
		if prev >= 0 {
			dt = p.T - prev
		}
		prev = p.T
		v := p.V * 8 / 1e6 / dt
		if !(dt > 0) {
			v = math.NaN()
		}
		pts[i] = xy{p.T, v}
	}
	return pts, "Mbits/s", true
}
