package plot

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"wanlab/results"
)

// timelinePanel is the panel of AllScaled a top-level series belongs in.
type timelinePanel int

const (
	noPanel timelinePanel = iota
	downloadPanel
	uploadPanel
	latencyPanel
)

// timelinePanels are AllScaled's panels, top to bottom in Flent's order
// (its all_scaled stacks download_scaled, upload_scaled and ping_scaled),
// with the words of their y axes.
var timelinePanels = []struct {
	panel timelinePanel
	axis  string
}{
	{downloadPanel, "Download"},
	{uploadPanel, "Upload"},
	{latencyPanel, "Latency"},
}

// classify returns the AllScaled panel of a top-level series and whether
// it is the panel's aggregate, Flent's computed average ("TCP upload avg",
// "Ping (ms) avg"). Sums ("TCP upload sum", "TCP totals") are left out:
// they are on another scale than the flows; so are fairness indices. The
// custom test's sums over the user's flows ("Custom upload") are its
// aggregates. Series names are Flent's (and those of wanlab's own tests,
// in Flent's style), the contract of every view.
func classify(s *results.Series) (panel timelinePanel, aggregate bool) {
	n := s.Name
	switch {
	case strings.HasPrefix(n, "Ping (ms)"):
		panel = latencyPanel
	case hasAnyPrefix(n, "TCP download", "UDP download", "TFRC download", "QUIC download", "L4S scalable UDP download", "Custom download"):
		panel = downloadPanel
	case hasAnyPrefix(n, "TCP upload", "UDP upload", "TFRC upload", "QUIC upload", "L4S scalable UDP upload", "Custom upload"):
		panel = uploadPanel
	default:
		return noPanel, false
	}
	if panel != latencyPanel && !s.IsRate() {
		return noPanel, false
	}
	switch {
	case strings.HasSuffix(n, " avg"), n == "Custom upload", n == "Custom download":
		return panel, true
	case strings.HasSuffix(n, " sum"), strings.HasSuffix(n, " fairness"):
		return noPanel, false
	}
	return panel, false
}

// panelOf is classify, and for a load flow whose name says no direction
// (tcp_2up_square's "TCP cubic 2", cubic_ledbat_1's "TCP ledbat") the
// panel of the direction the document records for the flow.
func panelOf(d *results.Document, s *results.Series) (panel timelinePanel, aggregate bool) {
	if panel, aggregate = classify(s); panel != noPanel || !s.IsRate() {
		return panel, aggregate
	}
	for _, f := range d.Flows {
		if f.Label != s.Name {
			continue
		}
		switch f.Direction {
		case "up":
			return uploadPanel, false
		case "down":
			return downloadPanel, false
		}
	}
	return noPanel, false
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// timelineLines returns the series of one run that AllScaled draws in a
// panel, each with whether it is drawn as an aggregate: with one run,
// every flow and the average; with several, the average alone when the
// run has several flows in the panel. perLine is the number of flows each
// line stands for: the average's, or 1.
func timelineLines(d *results.Document, panel timelinePanel, manyRuns bool) (ss []*results.Series, aggregate []bool, perLine int) {
	var flows []*results.Series
	var avg *results.Series
	for i := range d.Series {
		s := &d.Series[i]
		if !hasValue(s) {
			continue
		}
		switch c, agg := panelOf(d, s); {
		case c != panel:
		case agg:
			avg = s
		default:
			flows = append(flows, s)
		}
	}
	switch {
	case avg != nil && len(flows) == 1:
		avg = nil // the average of one flow is that flow
	case avg != nil && (manyRuns || len(flows) == 0):
		return []*results.Series{avg}, []bool{false}, max(len(flows), 1)
	}
	aggregate = make([]bool, len(flows))
	if avg != nil {
		flows = append(flows, avg)
		aggregate = append(aggregate, true)
	}
	return flows, aggregate, 1
}

// MixedError is a graph refused because it would draw series of different
// quantities on one axis: the per-flow average of a test with several
// flows (RRUL's "TCP download avg", a quarter of the link) beside a test's
// single flow (tcp_bidirectional's "TCP download", all of it). Tests are
// the tests of the runs involved, for a caller that can offer to choose
// among them.
type MixedError struct {
	Kind  Kind
	Panel string
	Tests []string
	msg   string
}

func (e *MixedError) Error() string { return e.msg }

// checkSameQuantity refuses a panel of several runs whose lines stand for
// different numbers of flows: perLine[i] is run i's (0 for none drawn).
func checkSameQuantity(docs []*results.Document, panel string, perLine []int, series []string) error {
	byFlows := map[int][]int{}
	var counts []int
	for i, n := range perLine {
		if n == 0 {
			continue
		}
		if _, ok := byFlows[n]; !ok {
			counts = append(counts, n)
		}
		byFlows[n] = append(byFlows[n], i)
	}
	if len(counts) < 2 {
		return nil
	}
	sort.Ints(counts)
	var tests, parts []string
	for _, n := range counts {
		ts := map[string]int{}
		var order []string
		for _, i := range byFlows[n] {
			if ts[docs[i].Run.Test] == 0 {
				order = append(order, docs[i].Run.Test)
			}
			ts[docs[i].Run.Test]++
		}
		for _, test := range order {
			if !slices.Contains(tests, test) {
				tests = append(tests, test)
			}
			what := fmt.Sprintf("%q, one flow", series[byFlows[n][0]])
			if n > 1 {
				what = fmt.Sprintf("%q, the average of %d flows", series[byFlows[n][0]], n)
			}
			parts = append(parts, fmt.Sprintf("%s's %s (%s)", test, what, plural(ts[test], "run")))
		}
	}
	return &MixedError{Kind: AllScaled, Panel: panel, Tests: tests, msg: fmt.Sprintf(
		"plot: %s: the %s panel would draw %s on one axis, which are not the same quantity (a flow among %d gets about 1/%d of what one alone gets): draw the runs of one test, or a series all of them have with --kind series --series NAME",
		AllScaled, panel, strings.Join(parts, " and "), counts[len(counts)-1], counts[len(counts)-1])}
}

func allScaled(docs []*results.Document, labels []string, o Options, t theme) (*figure, error) {
	many := len(docs) > 1
	fig := &figure{theme: t, sharedX: true}
	marks := loadMarks(docs, t)
	lostGlyph := draw.GlyphStyle{Color: markColor, Radius: t.pt(3), Shape: crossGlyph{width: t.pt(lineWidth)}}
	drawn := make([]bool, len(docs))
	for _, tp := range timelinePanels {
		type spec struct {
			s         *results.Series
			label     string
			aggregate bool
		}
		var specs []spec
		var keys []lineKey
		perLine := make([]int, len(docs))
		first := make([]string, len(docs))
		for di, d := range docs {
			ss, agg, n := timelineLines(d, tp.panel, many)
			if len(ss) > 0 {
				drawn[di] = true
				perLine[di], first[di] = n, ss[0].Name
			}
			for k, s := range ss {
				label := s.Name
				if many {
					label += " · " + labels[di]
				} else {
					label += rttNote(d, s)
				}
				specs = append(specs, spec{s, label, agg[k]})
				keys = append(keys, lineKey{group: di, member: k})
			}
		}
		if len(specs) == 0 {
			continue
		}
		if tp.panel != latencyPanel {
			// Latency is one quantity whatever the load; throughput per
			// flow is not, when the flows are more or fewer.
			if err := checkSameQuantity(docs, strings.ToLower(tp.axis), perLine, first); err != nil {
				return nil, err
			}
		}
		slots := assignSlots(keys)
		pn := t.newTimePanel(marks)
		units := map[string]string{}
		var vals []float64
		var lost []footMarks
		for i, sp := range specs {
			l := newLine(points(sp.s), t.line(slots[i], sp.aggregate))
			pn.add(sp.label, l)
			units[sp.label] = sp.s.Unit
			vals = append(vals, l.values()...)
			if ts := lostTimes(sp.s); tp.panel == latencyPanel && !sp.aggregate && len(ts) > 0 {
				g := lostGlyph
				g.Color = l.style.Color
				lost = append(lost, footMarks{xs: ts, glyph: g})
			}
		}
		unit, err := oneUnit(strings.ToLower(tp.axis)+" panel", units)
		if err != nil {
			return nil, err
		}
		for _, m := range lost {
			pn.p.Add(m)
		}
		if len(lost) > 0 {
			pn.legend = append(pn.legend, legendEntry{label: "lost probe", thumbs: []gplot.Thumbnailer{footMarks{glyph: lostGlyph}}})
		}
		pn.p.Y.Label.Text = withUnit(tp.axis, unit)
		pn.p.Y.Min, pn.p.Y.Max = scaledRange(vals, tp.panel != latencyPanel)
		fig.panels = append(fig.panels, pn)
	}
	if len(fig.panels) == 0 {
		return nil, fmt.Errorf("plot: %s: %s: it needs throughput series (TCP, UDP, TFRC, QUIC, L4S scalable UDP or Custom upload… or download…) or Ping (ms)… series with samples; the first run has: %s",
			AllScaled, noneHave(docs, labels, "series to draw"), docs[0].SeriesList())
	}
	timeAxis(fig, marks, timeEnd(docs))
	if many {
		fig.title = manyRunsTitle(docs, "throughput and latency")
		fig.subtitle = fig.leftOut(labels, drawn, "series to draw")
	} else {
		fig.title = labels[0]
		fig.subtitle = runSubtitle(docs[0])
	}
	return fig, nil
}

// noneHave says in an error that no run has what a graph needs:
// `run "X" has no WHAT`, or `none of the 3 runs has WHAT`.
func noneHave(docs []*results.Document, labels []string, what string) string {
	if len(docs) == 1 {
		return fmt.Sprintf("run %q has no %s", labels[0], what)
	}
	return fmt.Sprintf("none of the %d runs has %s", len(docs), what)
}

// leftOut records which runs a graph of several could not draw, for
// lack of what (e.g. `samples of "TFRC upload::tfrc_p"`), and returns what
// its subtitle says of them; "" when it drew them all.
func (fig *figure) leftOut(labels []string, drawn []bool, what string) string {
	fig.missing, fig.missingWhat = nil, what
	for i, ok := range drawn {
		if !ok {
			fig.missing = append(fig.missing, labels[i])
		}
	}
	if len(fig.missing) == 0 {
		return ""
	}
	return "nothing to draw for: " + strings.Join(fig.missing, ", ")
}

// timeEnd returns the end of a time axis that shows every run whole: the
// latest of their ends and of their samples.
func timeEnd(docs []*results.Document) float64 {
	end := 0.0
	for _, d := range docs {
		end = max(end, d.Run.TotalS())
		for _, s := range d.Series {
			if n := len(s.Samples); n > 0 {
				end = max(end, s.Samples[n-1].T)
			}
		}
		for _, f := range d.Flows {
			for _, s := range f.Series {
				if n := len(s.Samples); n > 0 {
					end = max(end, s.Samples[n-1].T)
				}
			}
		}
	}
	if end == 0 {
		end = 1
	}
	return end
}

// loadMarks returns the marks of each run's load period: a dashed grey
// line where the load starts and where it ends (once for runs that share
// them). A load that starts with the run or ends with it (Flent's ping
// test, which has no lead, tail or load) is not marked there.
func loadMarks(docs []*results.Document, t theme) []vmark {
	style := draw.LineStyle{Color: markColor, Width: t.pt(1), Dashes: []vg.Length{t.pt(4), t.pt(3)}}
	seen := map[float64]bool{}
	var marks []vmark
	for _, d := range docs {
		if d.Run.DurationS <= 0 {
			continue
		}
		for _, x := range []float64{d.Run.LeadS, d.Run.LeadS + d.Run.DurationS} {
			if !seen[x] && x > 0 && x < d.Run.TotalS() {
				seen[x] = true
				marks = append(marks, vmark{x: x, style: style})
			}
		}
	}
	return marks
}

// newTimePanel returns a panel over time with the load marks drawn first,
// behind the data.
func (t theme) newTimePanel(marks []vmark) *panel {
	pn := t.newPanel()
	for _, m := range marks {
		pn.p.Add(m)
	}
	return pn
}

// timeAxis gives every panel of fig the time axis from 0 to end seconds,
// labelled at the bottom, and lists the load marks once, in the top
// panel's legend.
func timeAxis(fig *figure, marks []vmark, end float64) {
	for i, pn := range fig.panels {
		pn.p.X.Min, pn.p.X.Max = 0, end
		pn.p.X.Label.Text = "Time (s)"
		if i == 0 && len(marks) > 0 {
			pn.legend = append(pn.legend, legendEntry{label: "load start, end", thumbs: []gplot.Thumbnailer{marks[0]}})
		}
	}
}

// rttNote is what the legend adds to a flow's line in a graph of one run:
// " (RTT 41 ms)", the median of the sender's smoothed RTT over the flow's
// window (results.Flow.MedianRTT), so that a flow's rate reads beside the
// RTT it had, which sets how fast its congestion control grows; where the
// flows spread over several hosts (rtt_fair's servers, each path its own
// RTT), also its path's base RTT, the least round trip of the probes
// between its hosts (results.Document.BaseRTT): " (RTT 41 ms, base 20
// ms)". "" for a series that is no flow's or a flow without either. The
// series keeps its name: only its label in the legend says more.
func rttNote(d *results.Document, s *results.Series) string {
	for i := range d.Flows {
		f := &d.Flows[i]
		if f.Label != s.Name {
			continue
		}
		var parts []string
		if ms, ok := f.MedianRTT(); ok {
			parts = append(parts, "RTT "+formatMs(ms)+" ms")
		}
		if side, _ := d.HostsSide(); side != "" && f.Direction != "both" {
			if ms, ok := d.BaseRTT(f); ok {
				parts = append(parts, "base "+formatMs(ms)+" ms")
			}
		}
		if len(parts) == 0 {
			return ""
		}
		return " (" + strings.Join(parts, ", ") + ")"
	}
	return ""
}

// formatMs writes a time in ms for a legend: whole ms from 20 ms on, one
// decimal from 10 ms (a 10.3 ms path is not an 11 ms one), two
// significant digits below (0.31, 4.2).
func formatMs(ms float64) string {
	switch {
	case ms >= 20:
		return strconv.FormatFloat(ms, 'f', 0, 64)
	case ms >= 10:
		return strconv.FormatFloat(ms, 'f', 1, 64)
	}
	return strconv.FormatFloat(ms, 'g', 2, 64)
}
