package results

import (
	"math"
	"strconv"
	"strings"

	"wanlab/stats"
)

// AddComputed adds to the document, or replaces, the series Flent computes
// from the others for the run's test: rrul's and rrul_be's "TCP upload
// sum", "TCP upload avg" (and download), "TCP totals" and "Ping (ms) avg";
// tcp_nup's and tcp_ndown's sum, avg and Jain fairness. A test without
// computed series (or one Flent does not have) gets none. Then, for any
// test whose load flows spread over two or more hosts of a side, it adds
// wanlab's own series of the hosts' fairness (addHostFairness), which are
// not Flent's.
//
// As Flent does, each is computed on the grid (see Grid): at each grid
// point, over the source series that have a value there; a point where
// none has one gets no sample. Fairness is (Σx)²/(n·Σx²) and has no value
// where every source is 0. A computed series' window spans its sources'
// windows. The new series are summarised. The document must pass
// Validate; AddComputed returns its error otherwise.
func (d *Document) AddComputed() error {
	if err := d.Validate(); err != nil {
		return err
	}
	test := flentTests[d.Run.Test]
	n := d.GridLen()
	for ci := range test.computed {
		c := &test.computed[ci]
		names := make([]string, len(d.Series))
		for i := range d.Series {
			names[i] = d.Series[i].Name
		}
		srcNames := c.selectSeries(names)
		if len(srcNames) == 0 {
			continue
		}
		grids := make([][]float64, 0, len(srcNames))
		window := [2]float64{math.Inf(1), math.Inf(-1)}
		for _, name := range srcNames {
			s := d.series(name)
			grids = append(grids, Grid(s.Samples, d.Run.StepS, n))
			window[0] = min(window[0], s.Window[0])
			window[1] = max(window[1], s.Window[1])
		}
		out := Series{Name: c.name, Unit: c.unit, Window: window}
		vals := make([]float64, 0, len(grids))
		for k := 0; k < n; k++ {
			vals = vals[:0]
			for _, g := range grids {
				if !math.IsNaN(g[k]) {
					vals = append(vals, g[k])
				}
			}
			if len(vals) == 0 {
				continue
			}
			if v := c.reduce.apply(vals); !math.IsNaN(v) {
				out.Samples = append(out.Samples, Sample{T: GridTime(k, d.Run.StepS), V: v})
			}
		}
		out.Summarize(d.Run.StepS)
		if s := d.series(c.name); s != nil {
			*s = out
		} else {
			d.Series = append(d.Series, out)
		}
	}
	d.addHostFairness()
	return nil
}

// SeriesList lists the names of the document's top-level series, quoted
// and joined by commas ("none" when it has none), for messages that name
// what a choice could have been.
func (d *Document) SeriesList() string {
	if len(d.Series) == 0 {
		return "none"
	}
	names := make([]string, len(d.Series))
	for i, s := range d.Series {
		names[i] = strconv.Quote(s.Name)
	}
	return strings.Join(names, ", ")
}

// FindSeries returns the document's series of that name, among its
// top-level series, its flows' own series and the router's ("router
// up::delay", see RouterReport.RouterSeriesNames), or nil.
func (d *Document) FindSeries(name string) *Series {
	if s := d.series(name); s != nil {
		return s
	}
	for i := range d.Flows {
		for j := range d.Flows[i].Series {
			if d.Flows[i].Series[j].Name == name {
				return &d.Flows[i].Series[j]
			}
		}
	}
	return d.Router.series(name)
}

// series returns the document's top-level series of that name, or nil.
func (d *Document) series(name string) *Series {
	for i := range d.Series {
		if d.Series[i].Name == name {
			return &d.Series[i]
		}
	}
	return nil
}

// apply reduces the values present at one grid point (at least one).
func (r reduction) apply(vals []float64) float64 {
	switch r {
	case reduceSum:
		return sum(vals)
	case reduceAverage:
		return sum(vals) / float64(len(vals))
	case reduceFairness:
		// Flent's fairness has no value when every allocation is zero;
		// stats.Jain calls that perfectly fair.
		var sq float64
		for _, v := range vals {
			sq += v * v
		}
		if sq == 0 {
			return math.NaN()
		}
		return stats.Jain(vals)
	}
	panic("results: unknown reduction")
}

func sum(vals []float64) float64 {
	var s float64
	for _, v := range vals {
		s += v
	}
	return s
}
