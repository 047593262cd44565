package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"

	"wanlab/results"
)

// The interactive graphs: the page carries each run's series over time as
// JSON, once, and charts.js draws them with uPlot wherever a chart names
// them (the run's own graph, its case's graph of all its repetitions).
// Only throughput and latency are carried, the series Flent's all_scaled
// draws; the summary tables hold every series' figures.

// chartUnits are the units a chart draws, in the order of its axes, and
// chartAxes their axes' labels.
var (
	chartUnits = []string{"Mbits/s", "ms"}
	chartAxes  = map[string]string{"Mbits/s": "Throughput (Mbits/s)", "ms": "Latency (ms)"}
)

// seriesData is one run's series for the charts: the element's id and
// its JSON.
type seriesData struct {
	ID   string
	JSON template.JS
}

// chartJSON is what seriesData holds: the load's start and end, the
// distinct lists of sample times, and the series, each naming its times.
type chartJSON struct {
	Load   [2]float64    `json:"load"`
	Xs     []times       `json:"xs"`
	Series []chartSeries `json:"series"`
}

// times are a series' sample times, to the millisecond: finer than a
// reader can point at on a graph of a run, and as coarse as keeps a probe
// sent at 12.300673 s from taking ten characters. Times evenly spaced
// (the grid every series but the probes is on) are given as their first,
// their step and their number ({"x0":0,"dx":0.2,"n":201}), which
// charts.js spells out.
type times []float64

func (ts times) MarshalJSON() ([]byte, error) {
	if len(ts) > 2 {
		x0, dx := ts[0], toMs(ts[1]-ts[0])
		even := dx > 0
		for k := 2; k < len(ts) && even; k++ {
			even = ts[k] == toMs(x0+float64(k)*dx)
		}
		if even {
			return fmt.Appendf(nil, `{"x0":%s,"dx":%s,"n":%d}`, g(x0), g(dx), len(ts)), nil
		}
	}
	b := make([]byte, 0, 1+len(ts)*7)
	b = append(b, '[')
	for i, t := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, t, 'f', -1, 64)
	}
	return append(b, ']'), nil
}

// toMs rounds seconds to the millisecond.
func toMs(s float64) float64 { return math.Round(s*1e3) / 1e3 }

type chartSeries struct {
	Label string  `json:"label"`
	Unit  string  `json:"unit"`
	X     int     `json:"x"`
	Y     numbers `json:"y"`
}

// numbers marshal as a JSON array of figures to four significant digits
// (what a reader reads off a graph; the tables beside it give every
// figure to the document's precision), NaN as null: a lost probe, where
// the line breaks.
type numbers []float64

func (ns numbers) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 1+len(ns)*7)
	b = append(b, '[')
	for i, v := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'g', 4, 64)
	}
	return append(b, ']'), nil
}

// runSeriesData returns the run's throughput and latency series for the
// charts, under the id; ok is false when it has none.
func runSeriesData(id string, d *results.Document) (seriesData, bool) {
	cj := chartJSON{Load: [2]float64{d.Run.LeadS, d.Run.LeadS + d.Run.DurationS}}
	for _, unit := range chartUnits {
		for i := range d.Series {
			s := &d.Series[i]
			if s.Unit != unit || len(s.Samples) == 0 {
				continue
			}
			xs, ys := make(times, len(s.Samples)), make(numbers, len(s.Samples))
			for k, p := range s.Samples {
				xs[k], ys[k] = toMs(p.T), p.V
			}
			x := slices.IndexFunc(cj.Xs, func(have times) bool { return slices.Equal(have, xs) })
			if x < 0 {
				x = len(cj.Xs)
				cj.Xs = append(cj.Xs, xs)
			}
			cj.Series = append(cj.Series, chartSeries{Label: s.Name, Unit: s.Unit, X: x, Y: ys})
		}
	}
	if len(cj.Series) == 0 {
		return seriesData{}, false
	}
	// json.Marshal escapes <, > and &, so the JSON cannot end the script
	// element it is carried in.
	b, err := json.Marshal(cj)
	if err != nil {
		panic("report: the series' JSON: " + err.Error()) // numbers and strings only
	}
	return seriesData{ID: id, JSON: template.JS(b)}, true
}

// chartSpec is what a chart draws: the series of the runs' data (all of
// them, or those named), each run's labelled when there are several.
type chartSpec struct {
	Data   []string `json:"data"`
	Series []string `json:"series,omitempty"`
	Labels []string `json:"labels,omitempty"`
}

func (c chartSpec) String() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic("report: a chart's spec: " + err.Error())
	}
	return string(b)
}
