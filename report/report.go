package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"wanlab/compare"
	"wanlab/results"
)

// Run is one run of a report: a results document and where it came from.
type Run struct {
	// Source names where the document was read from (a file name), shown
	// under the run's heading; it may be empty.
	Source string
	// Doc is the run's results document; it must pass Validate.
	Doc *results.Document
}

// Options say how to make a report. The zero value makes the usual one.
type Options struct {
	// Title is the page's title; empty means one made from the runs.
	Title string
	// Compare, when not nil, is a comparison of the report's runs, as
	// side A, with other runs, side B (compare.Compare): the page shows
	// it near its top as a section "Comparison with B", B named by its
	// label (Compare.B.Label).
	Compare *compare.Result
}

// Write makes the report of the runs and writes it to w as one HTML page.
// The whole page is built before anything is written, so an error leaves
// w untouched. A graph that cannot be drawn from a document (a series it
// needs is missing) is not an error: the page says in its place why it
// is not there.
func Write(w io.Writer, runs []Run, o Options) error {
	if len(runs) == 0 {
		return errors.New("report: no runs given: give at least one results document")
	}
	for i, r := range runs {
		if r.Doc == nil {
			return fmt.Errorf("report: run %d of %d has no document", i+1, len(runs))
		}
		if err := r.Doc.Validate(); err != nil {
			return fmt.Errorf("report: run %d of %d (%s): %w", i+1, len(runs), orDash(r.Source), err)
		}
	}
	p := buildPage(runs, o)
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// page is what the template shows.
type page struct {
	Title string
	// Overview is the table and graphs across runs; nil for one run.
	Overview *overview
	// Comparison is the section that compares the runs with others; nil
	// without Options.Compare.
	Comparison *comparisonView
	Runs       []*runView
}

// runView is one run's part of the page.
type runView struct {
	// ID is the run's anchor ("run-2"); its sections' anchors add a
	// suffix ("run-2-setup").
	ID      string
	Number  int
	Heading string
	Source  string

	Partial       bool
	PartialReason string

	Setup      setupView
	Series     []seriesRow
	Flows      []flowRow
	FlowSeries []flowSeriesRow
	// Fairness is each direction's fairness among its load flows
	// (results.Document.FlowFairness).
	Fairness []fairnessRow
	// Hosts says the flows spread over several hosts of a side (the
	// servers of rtt_fair): the flows table gives each flow's hosts, and
	// HostShares and HostFairness each host's share and the hosts'
	// fairness (results.Document.FairnessOverHosts).
	Hosts        bool
	HostSide     string
	HostShares   []hostShareRow
	HostFairness []fairnessRow
	Graphs       []graph
	// Data is the run's series for the interactive graphs; nil when it
	// has none to draw.
	Data     *seriesData
	Fidelity fidelityView
}

// setupView is a run's provenance, formatted.
type setupView struct {
	Test, Title, Start, Lengths string
	PathUp, PathDown            string
	Framing                     string
	Seed                        uint64
	Kernel, Version             string
	Options                     []keyValue
	Sysctls                     []hostSysctls
	// Command is the recorded command line, shell-quoted; empty when the
	// document has none.
	Command string
}

type keyValue struct{ Key, Value string }

type hostSysctls struct {
	Host    string
	Sysctls []keyValue
}

// seriesRow is one series' summary, formatted as figures with units.
type seriesRow struct {
	Name, Unit, Window                                        string
	N, Lost                                                   int
	Total, Min, Median, P90, P99, Max, Mean, StdDev, Variance string
}

// flowRow describes one flow; Share is its share of its direction's load
// ("75.0 %"), "-" for a flow without one.
type flowRow struct {
	ID                                               int
	Label, Direction, Protocol, TOS, CongCtrl, Share string
	// Hosts are the hosts it ran between ("c1 → s2").
	Hosts string
}

// hostShareRow is one host's part of a direction's load, formatted.
type hostShareRow struct {
	Direction, Host, Mean, Share, Flows string
}

// fairnessRow is one direction's fairness: its name ("upload"), Jain's
// index formatted and the number of flows it is over.
type fairnessRow struct {
	Direction, Jain string
	Flows           int
}

// flowSeriesRow is a flow's own series, summarised briefly as
// WriteSummary does.
type flowSeriesRow struct {
	Name, Unit        string
	N, Lost           int
	Mean, Median, P99 string
}

func buildPage(runs []Run, o Options) *page {
	p := &page{Title: o.Title, Comparison: buildComparison(o.Compare)}
	for i, r := range runs {
		v := buildRun(fmt.Sprintf("run-%d", i+1), i+1, r)
		v.Graphs = runGraphs(r.Doc, v.chart())
		p.Runs = append(p.Runs, v)
	}
	if p.Title == "" {
		if len(runs) == 1 {
			p.Title = "wanlab report: " + p.Runs[0].Heading
		} else {
			p.Title = fmt.Sprintf("wanlab report: %d runs", len(runs))
		}
	}
	if len(runs) > 1 {
		p.Overview = buildOverview(runs, p.Runs)
	}
	return p
}

// buildRun makes a run's part of the page, its anchor id and its
// number among the page's runs.
func buildRun(id string, n int, r Run) *runView {
	d := r.Doc
	v := &runView{
		ID:            id,
		Number:        n,
		Heading:       runHeading(d),
		Source:        r.Source,
		Partial:       d.Run.Partial,
		PartialReason: d.Run.PartialReason,
		Setup:         buildSetup(&d.Run),
	}
	for i := range d.Series {
		v.Series = append(v.Series, buildSeriesRow(&d.Series[i]))
	}
	fair := d.FlowFairness()
	for _, f := range fair {
		v.Fairness = append(v.Fairness, fairnessRow{
			Direction: map[string]string{"up": "upload", "down": "download"}[f.Direction],
			Jain:      fmt.Sprintf("%.4f", f.Jain), Flows: len(f.Flows),
		})
	}
	side, _ := d.HostsSide()
	v.Hosts, v.HostSide = side != "", side
	for _, hf := range d.FairnessOverHosts() {
		word := map[string]string{"up": "upload", "down": "download"}[hf.Direction]
		v.HostFairness = append(v.HostFairness, fairnessRow{Direction: word, Jain: fmt.Sprintf("%.4f", hf.Jain), Flows: len(hf.Hosts)})
		for _, h := range hf.Hosts {
			ids := make([]string, len(h.Flows))
			for i, id := range h.Flows {
				ids[i] = fmt.Sprint(id)
			}
			v.HostShares = append(v.HostShares, hostShareRow{Direction: word, Host: h.Host,
				Mean: figure(h.Mean) + " " + h.Unit, Share: fmt.Sprintf("%.1f %%", 100*h.Share), Flows: strings.Join(ids, ", ")})
		}
	}
	for _, f := range d.Flows {
		share := "-"
		if x, ok := results.FlowShareOf(fair, f.ID); ok {
			share = fmt.Sprintf("%.1f %%", 100*x)
		}
		hosts := "-"
		if f.Client != "" || f.Server != "" {
			hosts = f.ClientHost() + " → " + f.ServerHost()
		}
		v.Flows = append(v.Flows, flowRow{
			ID: f.ID, Label: f.Label, Direction: f.Direction, Protocol: f.Protocol,
			TOS: fmt.Sprintf("0x%02x", f.TOS), CongCtrl: orDash(f.CongestionControl), Share: share, Hosts: hosts,
		})
		for j := range f.Series {
			s := &f.Series[j]
			v.FlowSeries = append(v.FlowSeries, flowSeriesRow{
				Name: s.Name, Unit: s.Unit, N: s.Summary.N, Lost: s.Lost,
				Mean: figure(s.Summary.Mean), Median: figure(s.Summary.Median), P99: figure(s.Summary.P99),
			})
		}
	}
	if data, ok := runSeriesData(id+"-series", d); ok {
		v.Data = &data
	}
	v.Fidelity = buildFidelity(d)
	return v
}

// chart returns the spec of the run's interactive graph of all its
// series, or "" when it has none.
func (v *runView) chart() string {
	if v.Data == nil {
		return ""
	}
	return chartSpec{Data: []string{v.Data.ID}}.String()
}

// runHeading names a run: its title, or its test and start time.
func runHeading(d *results.Document) string {
	if t := strings.TrimSpace(d.Run.Title); t != "" {
		return t
	}
	return d.Run.Test + " " + d.Run.Start.UTC().Format("2006-01-02 15:04:05")
}

func buildSetup(r *results.Run) setupView {
	s := setupView{
		Test:     r.Test,
		Title:    r.Title,
		Start:    r.Start.UTC().Format("2006-01-02 15:04:05.000 UTC"),
		Lengths:  fmt.Sprintf("%s s of load after %s s of lead, then %s s of tail; a sample every %s s", g(r.DurationS), g(r.LeadS), g(r.TailS), g(r.StepS)),
		PathUp:   r.Path.Up,
		PathDown: r.Path.Down,
		Framing:  r.Framing,
		Seed:     r.Seed,
		Kernel:   r.Kernel(),
		Version:  r.WanlabVersion,
		Options:  sortedPairs(r.Options),
	}
	hosts := make([]string, 0, len(r.Sysctls))
	for h := range r.Sysctls {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		s.Sysctls = append(s.Sysctls, hostSysctls{Host: h, Sysctls: sortedPairs(r.Sysctls[h])})
	}
	if len(r.Argv) > 0 {
		s.Command = results.ShellJoin(r.Argv)
	}
	return s
}

func buildSeriesRow(s *results.Series) seriesRow {
	sm := &s.Summary
	row := seriesRow{
		Name: s.Name, Unit: s.Unit, N: sm.N, Lost: s.Lost,
		Window: fmt.Sprintf("%s–%s s", g(s.Window[0]), g(s.Window[1])),
		Min:    figure(sm.Min), Median: figure(sm.Median), P90: figure(sm.P90), P99: figure(sm.P99),
		Max: figure(sm.Max), Mean: figure(sm.Mean), StdDev: figure(sm.StdDev), Variance: figure(sm.Variance),
	}
	if s.IsRate() && !math.IsNaN(sm.Total) {
		row.Total = figure(sm.Total) + " " + s.TotalUnit()
	}
	return row
}

func sortedPairs(m map[string]string) []keyValue {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]keyValue, len(keys))
	for i, k := range keys {
		out[i] = keyValue{k, m[k]}
	}
	return out
}

// figure formats a statistic for a table: three decimals, as many as a
// reader compares (Flent prints six), no decimals for large counts, and a
// dash for a figure that does not exist (NaN).
func figure(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'f', -1, 64)
	case math.Abs(v) >= 1e5:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// g formats a length or time in seconds as briefly as it was given.
func g(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// duration formats nanoseconds as a time.Duration does, rounded to a
// precision that still shows microseconds of lateness.
func duration(ns float64) string {
	d := time.Duration(math.Round(ns))
	switch {
	case d >= time.Second:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}
