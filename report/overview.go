package report

import (
	"wanlab/plot"
	"wanlab/results"
)

// overview is the part of a several-run page that compares the runs: one
// row per run, then graphs that overlay them.
type overview struct {
	Rows   []overviewRow
	Graphs []graph
}

// overviewRow is one run in the table across runs.
type overviewRow struct {
	ID, Heading, Test string
	Partial           bool
	Upload, Download  mainFigures
	Ping              mainFigures
	State             fidelityState
}

// mainFigures are the mean and median of the series that stands for a
// direction's load (results.Document.LoadSeries), or for a run's latency
// (LatencySeries).
type mainFigures struct {
	// Series is the series' name; empty when the run has none.
	Series       string
	Unit         string
	Mean, Median string
}

// maxOverlaid is the most runs the overview overlays in one CDF: beyond
// it the lines cannot be told apart, and the box plot remains.
const maxOverlaid = 8

func buildOverview(runs []Run, views []*runView) *overview {
	ov := &overview{}
	docs := make([]*results.Document, len(runs))
	for i, r := range runs {
		d := r.Doc
		docs[i] = d
		ov.Rows = append(ov.Rows, overviewRow{
			ID: views[i].ID, Heading: views[i].Heading, Test: d.Run.Test, Partial: d.Run.Partial,
			Upload:   mainOf(d.LoadSeries("up")),
			Download: mainOf(d.LoadSeries("down")),
			Ping:     mainOf(d.LatencySeries()),
			State:    views[i].Fidelity.State,
		})
	}
	ov.Graphs = append(ov.Graphs, draw(plot.Box, docs, manyRuns, singleHeight, plot.Options{}))
	if len(docs) <= maxOverlaid {
		ov.Graphs = append(ov.Graphs, draw(plot.PingCDF, docs, manyRuns, singleHeight, plot.Options{}))
	}
	return ov
}

func mainOf(s *results.Series) mainFigures {
	if s == nil {
		return mainFigures{}
	}
	return mainFigures{Series: s.Name, Unit: s.Unit, Mean: figure(s.Summary.Mean), Median: figure(s.Summary.Median)}
}
