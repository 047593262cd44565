package plot

import (
	"fmt"
	"strings"

	"wanlab/results"
)

// flowSeriesHint ends the messages that list a run's series: they list
// its top-level series only, and a flow's own are many.
const flowSeriesHint = " (and its flows' series: wanlab show FILE --flow-series)"

// seriesOverTime draws one chosen series (Options.Series: a top-level
// series or a flow's LABEL::key) of every run over time, one line per
// run, in one panel: the TFRC loss event rate of several runs, a
// congestion window, the router's queueing delay of one flow. The y axis
// spans the full range of the values (from 0 when none is negative), not
// Flent's scaled 5th-95th percentiles, since a series chosen by name is
// often one whose extremes are the point (a loss rate that starts high).
func seriesOverTime(docs []*results.Document, labels []string, o Options, t theme) (*figure, error) {
	name := strings.TrimSpace(o.Series)
	if name == "" {
		return nil, fmt.Errorf("plot: %s needs --series NAME: a series the runs have, such as %q or a flow's %q; the first run has: %s%s",
			SeriesKind, "Ping (ms) ICMP", "TFRC upload::tfrc_p", docs[0].SeriesList(), flowSeriesHint)
	}
	keys := make([]lineKey, 0, len(docs))
	found := make([]*results.Series, len(docs))
	drawn := make([]bool, len(docs))
	for i, d := range docs {
		if s := d.FindSeries(name); hasValue(s) {
			found[i], drawn[i] = s, true
			keys = append(keys, lineKey{group: i})
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("plot: %s: %s: choose a series the runs have; the first run has: %s%s",
			SeriesKind, noneHave(docs, labels, fmt.Sprintf("samples of %q", name)), docs[0].SeriesList(), flowSeriesHint)
	}
	slots := assignSlots(keys)
	marks := loadMarks(docs, t)
	pn := t.newTimePanel(marks)
	units := map[string]string{}
	var vals []float64
	k := 0
	for i, s := range found {
		if s == nil {
			continue
		}
		l := newLine(points(s), t.line(slots[k], false))
		k++
		pn.add(labels[i], l)
		units[labels[i]] = s.Unit
		vals = append(vals, l.values()...)
	}
	unit, err := oneUnit(name, units)
	if err != nil {
		return nil, err
	}
	pn.p.Y.Label.Text = withUnit(name, unit)
	pn.p.Y.Min, pn.p.Y.Max = fullRange(vals, true)
	fig := &figure{theme: t, sharedX: true, panels: []*panel{pn}}
	timeAxis(fig, marks, timeEnd(docs))
	if len(docs) == 1 {
		fig.title = labels[0] + ": " + name
		fig.subtitle = runSubtitle(docs[0])
	} else {
		fig.title = manyRunsTitle(docs, name)
		fig.subtitle = fig.leftOut(labels, drawn, fmt.Sprintf("samples of %q", name))
	}
	return fig, nil
}
