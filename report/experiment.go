package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"wanlab/experiment"
	"wanlab/plot"
	"wanlab/results"
	"wanlab/stats"
)

// Experiment is an experiment's results for a report by case: its cases
// and their runs, as ExperimentOf reads them, and its tables.
type Experiment struct {
	Name, Description string
	// Source names the results directory or summary file, shown under
	// the title; it may be empty.
	Source string
	// Variables name the cases' variables, in the experiment file's order.
	Variables []string
	Cases     []Case
	// Tables are the experiment's tables, each with its sweep graph.
	Tables []Table
	// TablesNote, when set, says why Tables is empty or short (what
	// experiment.Tables refused, and how to make the table by hand).
	TablesNote string
}

// Case is one case of an experiment: its variables' values, its path and
// its runs.
type Case struct {
	// Number is the case's number in the experiment (its results files
	// carry it).
	Number int
	Vars   map[string]string
	Path   results.Path
	Runs   []CaseRun
}

// CaseRun is one run of a case.
type CaseRun struct {
	// File is the run's results file, as the index names it.
	File       string
	Test       string
	Repetition int
	// Status is one of experiment's run statuses (experiment.StatusComplete
	// ...); Reason says why a run is not complete, when known.
	Status, Reason string
	// Doc is the run's document, for a complete or partial run; nil for
	// one not made. It must pass Validate.
	Doc *results.Document
}

// Table is one of an experiment's tables and, when not nil, its sweep
// graph.
type Table struct {
	Table *experiment.Table
	Sweep *plot.Sweep
}

// ExperimentOf reads an experiment's cases and runs from rs, in the
// index's order. rs should hold the documents' samples
// (experiment.OpenOptions.Samples) for the runs' graphs over time: a
// summary file has none, and its runs have only figures.
func ExperimentOf(rs *experiment.Runs) *Experiment {
	ix := rs.Index
	e := &Experiment{Name: ix.Name, Description: ix.Description, Source: rs.Path, Variables: ix.Variables}
	for _, ic := range ix.Cases {
		c := Case{Number: ic.Number, Vars: ic.Vars, Path: ic.Path}
		for _, r := range ic.Runs {
			cr := CaseRun{File: r.File, Test: r.Test, Repetition: r.Repetition, Status: r.Status, Reason: r.Error}
			if rr := rs.Run(r.File); rr != nil {
				cr.Status, cr.Reason, cr.Doc = rr.Status, rr.Reason, rr.Doc
			}
			c.Runs = append(c.Runs, cr)
		}
		e.Cases = append(e.Cases, c)
	}
	return e
}

// WriteExperiment makes the report of an experiment by case and writes
// it to w as one HTML page: the experiment's tables and sweep graphs, a
// table of its cases, then a section per case with its figures over the
// repetitions, its verdicts and a graph of its runs over time, and each
// run's details (as a report of runs gives them, but for the static
// graphs) folded under it. As Write, it builds the whole page first.
func WriteExperiment(w io.Writer, e *Experiment, o Options) error {
	if e == nil || len(e.Cases) == 0 {
		return errors.New("report: the experiment has no cases: give a results directory that `wanlab experiment run` made")
	}
	for _, c := range e.Cases {
		for _, r := range c.Runs {
			if r.Doc == nil {
				continue
			}
			if err := r.Doc.Validate(); err != nil {
				return fmt.Errorf("report: case %d, %s: %w", c.Number, r.File, err)
			}
		}
	}
	p := buildExperiment(e, o)
	var buf bytes.Buffer
	if err := pageTemplate.ExecuteTemplate(&buf, "experiment", p); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// experimentPage is what the experiment's template shows.
type experimentPage struct {
	Title, Description, Source string
	Totals                     verdictCounts
	Cases                      []*caseView
	Tables                     []tableView
	TablesNote                 string
	// Comparison is the section that compares the experiment's runs with
	// others; nil without Options.Compare.
	Comparison *comparisonView
	// Shown are the variables that tell cases apart: those whose value
	// differs between them.
	Shown []string
}

// verdictCounts count a set of runs by what became of them: made or not,
// complete or partial, and the fidelity verdict of those made.
type verdictCounts struct {
	Runs, Made, Complete, Partial, NotMade int
	Faithful, Unfaithful, NoVerdict        int
}

func (v *verdictCounts) add(r CaseRun, state fidelityState) {
	v.Runs++
	if r.Doc == nil {
		v.NotMade++
		return
	}
	v.Made++
	if r.Status == experiment.StatusComplete {
		v.Complete++
	} else {
		v.Partial++
	}
	switch state {
	case stateFaithful:
		v.Faithful++
	case stateUnfaithful:
		v.Unfaithful++
	default:
		v.NoVerdict++
	}
}

func (v *verdictCounts) plus(o verdictCounts) {
	v.Runs += o.Runs
	v.Made += o.Made
	v.Complete += o.Complete
	v.Partial += o.Partial
	v.NotMade += o.NotMade
	v.Faithful += o.Faithful
	v.Unfaithful += o.Unfaithful
	v.NoVerdict += o.NoVerdict
}

// caseView is one case's section.
type caseView struct {
	ID     string
	Number int
	// Label names the case by the variables that vary ("delay=10ms
	// transport=reno"); Vars are all of its variables.
	Label            string
	Vars             []keyValue
	PathUp, PathDown string
	Verdicts         verdictCounts
	// Groups are the case's runs by test: most cases run one.
	Groups []*caseGroup
	Runs   []*caseRunView
	// Values, Main and Ping are the case's row in the table of cases:
	// the values of the variables that tell cases apart, and its first
	// test's main throughput (the mean of each run's) and latency (the
	// median of each run's).
	Values     []string
	Main, Ping aggregate
}

// caseGroup is a case's runs of one test: its figures over the
// repetitions, and its graph of them over time.
type caseGroup struct {
	Test    string
	Figures []aggregate
	Graph   graph
}

// aggregate is a statistic of a series over a case's complete runs: the
// mean over the runs of each run's figure (Stat: its mean or median), the
// sample standard deviation across them, their range and their number.
// Has is false when no run has the series.
type aggregate struct {
	Series, Unit, Stat     string
	Mean, Spread, Min, Max string
	N                      int
	Has                    bool
}

// caseRunView is one run of a case, its details folded.
type caseRunView struct {
	ID, File, Test string
	Repetition     int
	Status, Reason string
	State          fidelityState
	// Brief is the run's main figures, for its folded line.
	Brief string
	// Run is the run's details; nil for a run not made.
	Run *runView
}

func buildExperiment(e *Experiment, o Options) *experimentPage {
	p := &experimentPage{Title: o.Title, Description: e.Description, Source: e.Source, TablesNote: e.TablesNote,
		Comparison: buildComparison(o.Compare)}
	if p.Title == "" {
		p.Title = "wanlab report: " + e.Name
	}
	for _, v := range e.Variables {
		first := ""
		for i, c := range e.Cases {
			if i == 0 {
				first = c.Vars[v]
			} else if c.Vars[v] != first {
				p.Shown = append(p.Shown, v)
				break
			}
		}
	}
	for _, t := range e.Tables {
		p.Tables = append(p.Tables, buildTable(t))
	}
	for _, c := range e.Cases {
		cv := buildCase(c, e.Variables, p.Shown)
		p.Totals.plus(cv.Verdicts)
		p.Cases = append(p.Cases, cv)
	}
	return p
}

func buildCase(c Case, variables, shown []string) *caseView {
	cv := &caseView{ID: fmt.Sprintf("case-%d", c.Number), Number: c.Number, PathUp: c.Path.Up, PathDown: c.Path.Down}
	var label []string
	for _, v := range variables {
		cv.Vars = append(cv.Vars, keyValue{v, c.Vars[v]})
		if slices.Contains(shown, v) {
			label = append(label, v+"="+c.Vars[v])
			cv.Values = append(cv.Values, c.Vars[v])
		}
	}
	cv.Label = strings.Join(label, " ")
	if cv.Label == "" {
		cv.Label = "(no variables)"
	}
	groups := map[string]*caseGroup{}
	dataOf := map[string][]string{}
	labelsOf := map[string][]string{}
	severalTests := slices.ContainsFunc(c.Runs, func(r CaseRun) bool { return r.Test != c.Runs[0].Test })
	for _, r := range c.Runs {
		rv := &caseRunView{ID: fmt.Sprintf("c%d-r%d", c.Number, r.Repetition), File: r.File, Test: r.Test,
			Repetition: r.Repetition, Status: r.Status, Reason: r.Reason}
		if severalTests {
			rv.ID = fmt.Sprintf("c%d-%s-r%d", c.Number, fileSafe(r.Test), r.Repetition)
		}
		if r.Doc != nil {
			v := buildRun(rv.ID, r.Repetition, Run{Source: r.File, Doc: r.Doc})
			rv.Run, rv.State = v, v.Fidelity.State
			rv.Brief = brief(r.Doc)
			// The run's graph is the interactive one alone: a static
			// graph of each of hundreds of runs would weigh the page
			// down, and its summary is in print what the graph shows.
			g := graph{Kind: plot.AllScaled, Caption: captions[plot.AllScaled], Chart: v.chart()}
			switch {
			case g.Chart != "":
				dataOf[r.Test] = append(dataOf[r.Test], v.Data.ID)
				labelsOf[r.Test] = append(labelsOf[r.Test], fmt.Sprintf("#%d", r.Repetition))
			case r.Doc.Run.SamplesDropped:
				g.Err = "the document holds no samples (an experiment's summary file keeps only the figures): report the results directory to draw it"
			default:
				g.Err = "the run has no throughput or latency series"
			}
			v.Graphs = []graph{g}
		}
		cv.Verdicts.add(r, rv.State)
		cv.Runs = append(cv.Runs, rv)
		if groups[r.Test] == nil {
			groups[r.Test] = &caseGroup{Test: r.Test}
			cv.Groups = append(cv.Groups, groups[r.Test])
		}
	}
	for _, g := range cv.Groups {
		docs := completeDocs(c.Runs, g.Test)
		names := mainNames(c.Runs, g.Test)
		for _, name := range names {
			a := aggregateOf(docs, name, "mean")
			g.Figures = append(g.Figures, a)
			if a.Unit == "ms" {
				// A latency's median, as the table of cases and
				// Flent's box plots take it.
				g.Figures = append(g.Figures, aggregateOf(docs, name, "median"))
			}
		}
		g.Graph = graph{Kind: plot.AllScaled,
			Caption: "The case's main series over time, one line per repetition: throughput on the left axis, latency (dashed) on the right."}
		if len(dataOf[g.Test]) > 0 {
			g.Graph.Chart = chartSpec{Data: dataOf[g.Test], Series: names, Labels: labelsOf[g.Test]}.String()
		}
	}
	// The table of cases: the main throughput and the ping of the first
	// test's runs.
	if len(cv.Groups) > 0 {
		if docs := completeDocs(c.Runs, cv.Groups[0].Test); len(docs) > 0 {
			if s, _ := docs[0].MainSeries(); s != nil {
				cv.Main = aggregateOf(docs, s.Name, "mean")
			}
			if s := docs[0].LatencySeries(); s != nil {
				cv.Ping = aggregateOf(docs, s.Name, "median")
			}
		}
	}
	return cv
}

// completeDocs are the documents of a case's complete runs of a test:
// those its figures are over, as a table's are.
func completeDocs(runs []CaseRun, test string) []*results.Document {
	var docs []*results.Document
	for _, r := range runs {
		if r.Test == test && r.Doc != nil && r.Status == experiment.StatusComplete {
			docs = append(docs, r.Doc)
		}
	}
	return docs
}

// mainNames are the series that stand for a test's runs: the main
// throughput, each direction's load and the latency
// (results.Document.MainSeries, LoadSeries, LatencySeries), in that
// order, over every run of the test that has them.
func mainNames(runs []CaseRun, test string) []string {
	var names []string
	add := func(s *results.Series) {
		if s != nil && !slices.Contains(names, s.Name) {
			names = append(names, s.Name)
		}
	}
	for _, r := range runs {
		if r.Test != test || r.Doc == nil {
			continue
		}
		main, _ := r.Doc.MainSeries()
		add(main)
		add(r.Doc.LoadSeries("up"))
		add(r.Doc.LoadSeries("down"))
		add(r.Doc.LatencySeries())
	}
	return names
}

// aggregateOf summarises one statistic of a series over the runs.
func aggregateOf(docs []*results.Document, series, stat string) aggregate {
	a := aggregate{Series: series, Stat: stat}
	var xs []float64
	for _, d := range docs {
		s := d.FindSeries(series)
		if s == nil {
			continue
		}
		a.Unit = s.Unit
		v := s.Summary.Mean
		if stat == "median" {
			v = s.Summary.Median
		}
		xs = append(xs, v)
	}
	sm := stats.Summarize(xs)
	a.N, a.Has = sm.N, sm.N > 0
	if a.Has {
		a.Mean, a.Min, a.Max = figure(sm.Mean), figure(sm.Min), figure(sm.Max)
		a.Spread = figure(sm.SampleStdDev)
	}
	return a
}

// brief is a run's main figures in a line: its main throughput's mean
// and its latency's median.
func brief(d *results.Document) string {
	var parts []string
	if s, _ := d.MainSeries(); s != nil {
		parts = append(parts, fmt.Sprintf("%s mean %s %s", s.Name, figure(s.Summary.Mean), s.Unit))
	}
	if s := d.LatencySeries(); s != nil {
		parts = append(parts, fmt.Sprintf("%s median %s %s", s.Name, figure(s.Summary.Median), s.Unit))
	}
	return strings.Join(parts, ", ")
}

// fileSafe keeps the characters of a test's name that are safe in an id.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}
