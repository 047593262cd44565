package plot

import (
	"fmt"
	"slices"
	"sort"

	"wanlab/results"
)

// cdfPoints returns the empirical distribution function of vals as the
// corners of its steps: at each value the fraction of values at or below
// it rises by 1/n.
func cdfPoints(vals []float64) []xy {
	sorted := append([]float64(nil), vals...)
	sort.Float64s(sorted)
	n := float64(len(sorted))
	pts := make([]xy, 0, 2*len(sorted))
	for i, v := range sorted {
		pts = append(pts, xy{v, float64(i) / n}, xy{v, float64(i+1) / n})
	}
	return pts
}

func pingCDF(docs []*results.Document, labels []string, o Options, t theme) (*figure, error) {
	many := len(docs) > 1
	type spec struct {
		vals  []float64
		label string
		unit  string
	}
	var specs []spec
	var keys []lineKey
	drawn := make([]bool, len(docs))
	for di, d := range docs {
		k := 0
		for si := range d.Series {
			s := &d.Series[si]
			if panel, agg := classify(s); panel != latencyPanel || agg {
				continue // the average of several probes is no latency a packet saw
			}
			vals := windowValues(s)
			if len(vals) == 0 {
				continue
			}
			label := s.Name
			if many {
				label += " · " + labels[di]
			}
			if s.Lost > 0 {
				label += fmt.Sprintf(" (%d lost)", s.Lost)
			}
			specs = append(specs, spec{vals, label, s.Unit})
			drawn[di] = true
			keys = append(keys, lineKey{group: di, member: k})
			k++
		}
	}
	pn := t.newPanel()
	units := map[string]string{}
	var xs []float64
	for i, slot := range assignSlots(keys) {
		sp := specs[i]
		pn.add(sp.label, newLine(cdfPoints(sp.vals), t.line(slot, false)))
		units[sp.label] = sp.unit
		xs = append(xs, sp.vals...)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("plot: %s: %s: it needs Ping (ms)… series; the first run has: %s",
			PingCDF, noneHave(docs, labels, "latency samples inside its load window"), docs[0].SeriesList())
	}
	unit, err := oneUnit("latency CDF", units)
	if err != nil {
		return nil, err
	}
	pn.p.X.Label.Text = withUnit("Latency", unit)
	pn.p.X.Min, pn.p.X.Max = fullRange(xs, false)
	if pn.p.X.Min < 0 && slices.Min(xs) >= 0 {
		pn.p.X.Min = 0 // no negative latencies for the padding's sake
	}
	pn.p.Y.Label.Text = "Cumulative probability"
	pn.p.Y.Min, pn.p.Y.Max = 0, 1
	fig := &figure{theme: t, panels: []*panel{pn}}
	if many {
		fig.title = manyRunsTitle(docs, "latency CDF")
		fig.subtitle = "samples inside each run's load window"
		if l := fig.leftOut(labels, drawn, "latency samples inside its load window"); l != "" {
			fig.subtitle += "  ·  " + l
		}
	} else {
		fig.title = labels[0] + ": latency CDF"
		fig.subtitle = runSubtitle(docs[0]) + "  ·  samples inside the load window"
	}
	return fig, nil
}
