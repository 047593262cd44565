package report

import (
	"strings"

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
// direction's load, or for a run's latency.
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
			Upload:   mainOf(loadSeries(d, "upload")),
			Download: mainOf(loadSeries(d, "download")),
			Ping:     mainOf(pingSeries(d)),
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

// loadSeries returns the series that stands for a run's load in one
// direction ("upload" or "download"), by Flent's names: the sum Flent
// computes over several flows ("TCP upload sum"), or else the one load
// series of that direction ("TCP upload", "UDP upload"); nil when the run
// has none, or several and no sum.
func loadSeries(d *results.Document, dir string) *results.Series {
	var only *results.Series
	n := 0
	for i := range d.Series {
		s := &d.Series[i]
		name := s.Name
		if !s.IsRate() || !(strings.HasPrefix(name, "TCP "+dir) || strings.HasPrefix(name, "UDP "+dir)) {
			continue
		}
		if strings.HasSuffix(name, " sum") {
			return s
		}
		if strings.HasSuffix(name, " avg") {
			continue
		}
		only = s
		n++
	}
	if n == 1 {
		return only
	}
	return nil
}

// pingSeries returns the series that stands for a run's latency: the ICMP
// ping every Flent test has, or else the average Flent computes over the
// probes, or else the first probe.
func pingSeries(d *results.Document) *results.Series {
	for _, want := range []string{"Ping (ms) ICMP", "Ping (ms) avg"} {
		for i := range d.Series {
			if d.Series[i].Name == want {
				return &d.Series[i]
			}
		}
	}
	for i := range d.Series {
		if strings.HasPrefix(d.Series[i].Name, "Ping (ms)") {
			return &d.Series[i]
		}
	}
	return nil
}
