package report

import (
	"encoding/json"
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
	Xs     []numbers     `json:"xs"`
	Series []chartSeries `json:"series"`
}

type chartSeries struct {
	Label string  `json:"label"`
	Unit  string  `json:"unit"`
	X     int     `json:"x"`
	Y     numbers `json:"y"`
}

// numbers marshal as a JSON array of figures to five significant digits
// (beyond what a hover reads, well short of float64's seventeen), NaN as
// null: a lost probe, where the line breaks.
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
		b = strconv.AppendFloat(b, v, 'g', 5, 64)
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
			xs, ys := make(numbers, len(s.Samples)), make(numbers, len(s.Samples))
			for k, p := range s.Samples {
				// Times to the microsecond: the grid's are multiples
				// of the step, which binary cannot hold exactly.
				xs[k], ys[k] = math.Round(p.T*1e6)/1e6, p.V
			}
			x := slices.IndexFunc(cj.Xs, func(have numbers) bool { return slices.Equal(have, xs) })
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
