package experiment

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"wanlab/results"
	"wanlab/stats"
)

// TableOptions choose what a table shows.
type TableOptions struct {
	// Rows and Cols name the variables laid out down and across ("test"
	// is the runs' test). Empty: the first and second variables whose
	// value varies, in the file's order, the test last.
	Rows, Cols string
	// Where keeps only runs whose variables have one of these values. A
	// value is a value of the variable, or several joined by commas
	// ("reno,cubic") where the joined string is not one. A variable left
	// one value is fixed; one left several still varies, among them.
	Where map[string][]string
	// Series is the series whose statistic fills the cells. Empty: each
	// run's main throughput series (results.Document.MainSeries); when
	// the runs are of several tests, a test whose runs have none gets a
	// table per load series (tcp_bidirectional's download and upload).
	Series string
	// Stat is the statistic of each run's series, the run's figure: mean
	// (the default), median, min, max, p90, p99, stddev, variance or
	// total (Stats); or a figure of the whole run (results.RunStats:
	// jain_up, jain_down, Jain's fairness index of a direction's load
	// flows; jain_hosts_up, jain_hosts_down, of their hosts' sums where a
	// side has several, as rtt_fair's servers), which takes no Series.
	Stat string
	// Spread is the spread across repetitions that follows a cell's
	// figure and makes its graph's error bars: "stddev" (the default: the
	// sample standard deviation of the runs' figures), "ci95" (the 95 %
	// confidence interval of their mean), "minmax", or "none". It is
	// Show's shorthand ("--spread minmax" is "--show mean,minmax"): give
	// one or the other.
	Spread string
	// Show lists what each cell gives of its runs' figures, in order (see
	// Shows). Empty: their mean, then Spread.
	Show []string
	// Reference, if not nil, puts its figures beside the cells: a figure
	// per cell whose variables, series and Stat it has (Cell.Reference),
	// with the ratio of the cell's figure to it.
	Reference *Reference
	// FaithfulOnly leaves out the runs whose fidelity verdict is not
	// faithful (results.RouterReport.Faithful false); every cell still
	// counts them (Cell.NotFaithful). A run without a verdict is kept.
	FaithfulOnly bool
	// Warnf, if not nil, is told of each results file left out because it
	// holds no whole run (cut short, damaged, not a regular file), and of
	// each reference figure for a value the experiment does not have.
	Warnf func(format string, args ...any)
}

// ChoiceError is a table option that does not fit the directory: an
// unknown variable, value, statistic or series. Its message names the fix.
type ChoiceError struct{ Msg string }

func (e *ChoiceError) Error() string { return e.Msg }

func choicef(format string, args ...any) error {
	return &ChoiceError{Msg: fmt.Sprintf(format, args...)}
}

// Stats are the statistics of a run's series a table can show, one
// figure per run.
var Stats = results.Stats

// Shows are what a cell can give of its runs' figures (each run's Stat of
// the series): their mean, median, min and max; stddev, their sample
// standard deviation; ci95, the 95 % confidence interval of their mean by
// Student's t (given as its half-width); minmax, min and max together; n,
// the number of runs; and points, the number of data points behind them
// (the sum of the runs' series' sample counts).
var Shows = []string{"mean", "median", "min", "max", "stddev", "ci95", "minmax", "n", "points"}

// Spreads are the ways a cell can show the spread across repetitions
// after its figure, the first spread of Shows or none.
var Spreads = []string{"stddev", "ci95", "minmax", "none"}

// DefaultSpread is the spread a table shows when neither Spread nor Show
// is given.
const DefaultSpread = "stddev"

// Confidence is the confidence of the interval "ci95" gives.
const Confidence = 0.95

// Table is a statistic of one series laid out by two variables, for one
// combination of the other varying variables.
type Table struct {
	// Name is the experiment's name.
	Name string
	// Fixed are the other variables' values this table is for (the
	// variables that vary but are neither rows nor columns).
	Fixed []Var
	// Given are the variables that vary in the experiment and that
	// TableOptions.Where left one value, in the file's order ("test" last).
	Given []Var
	// RowVar and ColVar name the variables; ColVar is empty for a single
	// column.
	RowVar, ColVar string
	Rows, Cols     []string
	// Cells[i][j] is row i, column j.
	Cells [][]Cell
	// Stat is each run's statistic (TableOptions.Stat). Spread is the
	// spread across repetitions shown after a cell's figure and drawn as
	// its error bars: the first of stddev, ci95 and minmax in Show, or
	// "none". Series lists the series of the table's runs (several when
	// each run's main one was taken and the cases run different tests);
	// Unit is the series' unit.
	Stat, Spread string
	Series       []string
	Unit         string
	// Show is what each cell gives (TableOptions.Show, resolved); Center
	// is the figure that stands for a cell's runs, "mean" or "median":
	// the first of the two in Show, or the mean.
	Show   []string
	Center string
	// SplitSeries is the series this table is for when the runs' test has
	// no main series and the tests vary (tcp_bidirectional beside rrul):
	// one table per load series. Empty otherwise.
	SplitSeries string
	// Skipped counts the runs left out because they are not complete.
	Skipped int
	// Lacking counts the complete runs left out because they have no
	// series of the chosen name (a case that runs another test).
	Lacking int
	// Notes say what else was left out and the option that shows it.
	Notes []string
	// FaithfulOnly says the runs not faithful were left out. Verdicts
	// counts the table's runs that have a fidelity verdict, NotFaithful
	// those whose verdict is not faithful (left out or not).
	FaithfulOnly          bool
	Verdicts, NotFaithful int
	// runs counts the table's runs, those left out by FaithfulOnly
	// included.
	runs int
	// Reference is the file of the cells' reference figures, nil without
	// one.
	Reference *Reference
}

// Cell summarises the runs' figures of one cell.
type Cell struct {
	// N is the number of runs; Summary describes their figures (its
	// SampleStdDev is the spread across repetitions).
	N       int
	Summary stats.Summary
	// Interval is the Confidence interval of their mean (Student's t);
	// its HalfWidth is NaN for fewer than two runs.
	Interval stats.Interval
	// Points is the number of data points behind the cell: the sum of its
	// runs' series' sample counts (results.Summary.N).
	Points int
	// NotFaithful counts the cell's runs whose fidelity verdict is not
	// faithful: among the N, or left out with FaithfulOnly.
	NotFaithful int
	// Reference is the published figure for the cell, nil when the
	// reference has none.
	Reference *ReferenceRow
}

// figure returns one of Shows' single figures of a cell (NaN when it
// cannot be given).
func (c Cell) figure(name string) float64 {
	switch name {
	case "mean":
		return c.Summary.Mean
	case "median":
		return c.Summary.Median
	case "min":
		return c.Summary.Min
	case "max":
		return c.Summary.Max
	case "stddev":
		return c.Summary.SampleStdDev
	case "ci95":
		return c.Interval.HalfWidth
	case "n":
		return float64(c.N)
	case "points":
		return float64(c.Points)
	}
	return math.NaN()
}

// Extent returns what a cell's point on a graph shows: the table's Center
// figure and the ends of its Spread (for ci95 the Interval's ends, which
// are the mean's whatever the center). lo and hi equal the center when
// there is no spread to draw (Spread "none", one run); all three are NaN
// for a cell without runs.
func (t *Table) Extent(c Cell) (center, lo, hi float64) {
	if c.N == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	center = c.figure(t.Center)
	lo, hi = center, center
	switch t.Spread {
	case "stddev":
		if sd := c.Summary.SampleStdDev; !math.IsNaN(sd) {
			lo, hi = center-sd, center+sd
		}
	case "ci95":
		if !math.IsNaN(c.Interval.HalfWidth) {
			lo, hi = c.Interval.Lo(), c.Interval.Hi()
		}
	case "minmax":
		lo, hi = c.Summary.Min, c.Summary.Max
	}
	return center, lo, hi
}

// Ratio returns the cell's Center figure divided by its reference figure:
// NaN without either, or for a reference of 0.
func (t *Table) Ratio(c Cell) float64 {
	if c.N == 0 || c.Reference == nil || c.Reference.Value == 0 {
		return math.NaN()
	}
	return c.figure(t.Center) / c.Reference.Value
}

// Selection returns the options that select this table alone among the
// tables of its directory ("--where test=rrul"), for a view that takes one.
func (t *Table) Selection() []string {
	var out []string
	for _, v := range t.Fixed {
		out = append(out, "--where "+v.Name+"="+v.Value)
	}
	if t.SplitSeries != "" {
		out = append(out, "--series "+strconv.Quote(t.SplitSeries))
	}
	return out
}

// tableRun is one complete run's figure with its position on every
// dimension. A run of a test without a main series gives one per load
// series when the tables split by series.
type tableRun struct {
	dims map[string]string
	// series is the series of the figure; main says it is the run's main
	// series (which a reference row without a series stands for); split is
	// the series when the tables are split by it, "" otherwise.
	series, split string
	main          bool
	unit          string
	value         float64
	points        int
	// verdict says the run has a fidelity verdict, unfaithful that it is
	// not faithful; leftOut that FaithfulOnly leaves it out.
	verdict, unfaithful, leftOut bool
}

// runSeries returns the series a table shows of a run: the one asked for,
// or else its main series (results.Document.MainSeries). When the tables
// hold several tests (severalTests), a run whose test has no main series
// gives its load flows' series, each for a table of its own (split), or
// none for a run without load (ping), which the caller counts and names.
// Otherwise a run without a main series is an error that names the series
// to choose.
func runSeries(d *results.Document, asked string, severalTests bool) (names []string, split bool, err error) {
	if asked != "" {
		return []string{asked}, false, nil
	}
	s, load := d.MainSeries()
	switch {
	case s != nil:
		return []string{s.Name}, false, nil
	case severalTests:
		return load, len(load) > 0, nil
	case len(load) == 0:
		return nil, false, choicef("a %s run has no throughput series: choose a series with --series (e.g. %q)", d.Run.Test, latencyName(d))
	}
	var choices []string
	for _, name := range load {
		choices = append(choices, "--series "+strconv.Quote(name))
	}
	return nil, false, choicef("a %s run has several throughput series (%s): choose one with %s", d.Run.Test, strings.Join(load, ", "), strings.Join(choices, " or "))
}

// latencyName names the run's latency series, for a message that suggests
// one.
func latencyName(d *results.Document) string {
	if s := d.LatencySeries(); s != nil {
		return s.Name
	}
	return results.ICMPPing
}

// resolveShow checks the statistic, the spread and what the cells show,
// and returns Show with the defaults filled in, its spread and its center.
func resolveShow(o *TableOptions) (show []string, spread, center string, err error) {
	switch {
	case contains(results.RunStats, o.Stat) && o.Series != "":
		return nil, "", "", choicef("--stat %s is a figure of the whole run (Jain's fairness index of its %s), not of a series: leave out --series %q", o.Stat, runStatOver(o.Stat), o.Series)
	case !contains(Stats, o.Stat) && !contains(results.RunStats, o.Stat):
		return nil, "", "", choicef("--stat %q: use one of %s (the statistic of each run's series), or one of %s (a figure of the whole run); --show chooses what a cell gives of the runs' figures", o.Stat, strings.Join(Stats, ", "), strings.Join(results.RunStats, ", "))
	}
	if o.Spread != "" && !contains(Spreads, o.Spread) {
		return nil, "", "", choicef("--spread %q: use one of %s", o.Spread, strings.Join(Spreads, ", "))
	}
	if len(o.Show) == 0 {
		spread = o.Spread
		if spread == "" {
			spread = DefaultSpread
		}
		show = []string{"mean"}
		if spread != "none" {
			show = append(show, spread)
		}
		return show, spread, "mean", nil
	}
	if o.Spread != "" {
		return nil, "", "", choicef("--spread %s and --show %s: --spread is --show's shorthand (--spread %s is --show mean,%s): give one of them", o.Spread, strings.Join(o.Show, ","), o.Spread, o.Spread)
	}
	spread, center = "none", ""
	for i, s := range o.Show {
		switch {
		case !contains(Shows, s):
			return nil, "", "", choicef("--show %q: use one or several of %s, joined by commas", s, strings.Join(Shows, ", "))
		case contains(o.Show[:i], s):
			return nil, "", "", choicef("--show %s: %s is given twice", strings.Join(o.Show, ","), s)
		case (s == "min" || s == "max") && contains(o.Show, "minmax"):
			return nil, "", "", choicef("--show %s: minmax gives min and max already", strings.Join(o.Show, ","))
		}
		if center == "" && (s == "mean" || s == "median") {
			center = s
		}
		if spread == "none" && contains(Spreads, s) {
			spread = s
		}
	}
	if center == "" {
		center = "mean"
	}
	return slices.Clone(o.Show), spread, center, nil
}

// Tables lays out an experiment's complete runs, from its results
// directory or its summary file (OpenRuns): one table per combination of
// the varying variables that are neither rows nor columns. The results
// files decide which runs are complete, as for resuming: a run whose file
// is missing, cut short or damaged is left out and counted as not
// complete, whatever the index says. Every error names what to change.
func Tables(dir string, o TableOptions) ([]*Table, error) {
	if o.Stat == "" {
		o.Stat = "mean"
	}
	show, spread, center, err := resolveShow(&o)
	if err != nil {
		return nil, err
	}
	rs, err := OpenRuns(dir, OpenOptions{Warnf: o.Warnf})
	if err != nil {
		return nil, err
	}
	ix := rs.Index
	dims := append(append([]string{}, ix.Variables...), "test")
	// Every dimension's values in order of first appearance.
	values := map[string][]string{}
	addValue := func(dim, v string) {
		if !contains(values[dim], v) {
			values[dim] = append(values[dim], v)
		}
	}
	for _, c := range ix.Cases {
		for _, name := range ix.Variables {
			addValue(name, c.Vars[name])
		}
		for _, r := range c.Runs {
			addValue("test", r.Test)
		}
	}
	if o.Reference != nil {
		if err := checkReference(o.Reference, dims, values, o.Warnf); err != nil {
			return nil, err
		}
	}
	where, err := resolveWhere(dir, dims, values, o.Where)
	if err != nil {
		return nil, err
	}
	var given []Var
	for _, d := range dims {
		if len(where[d]) == 1 && len(values[d]) > 1 {
			given = append(given, Var{d, where[d][0]})
		}
	}
	// Only the values kept are laid out, in the file's order.
	for name, keep := range where {
		values[name] = slices.DeleteFunc(values[name], func(v string) bool { return !contains(keep, v) })
	}
	// The test is a dimension of its own only when a case runs several:
	// otherwise it follows from the case's variables (a transport variable
	// that binds the test), and laying runs out by it would add nothing.
	testVaries := false
	for _, c := range ix.Cases {
		for _, r := range c.Runs {
			testVaries = testVaries || r.Test != c.Runs[0].Test
		}
	}
	var varying []string
	for _, d := range dims {
		if len(values[d]) > 1 && (d != "test" || testVaries) {
			varying = append(varying, d)
		}
	}
	for _, pick := range []struct{ flag, name string }{{"--rows", o.Rows}, {"--cols", o.Cols}} {
		if pick.name != "" && !contains(dims, pick.name) {
			return nil, choicef("%s %s: not a variable of %s (its variables are %s)", pick.flag, pick.name, dir, strings.Join(dims, ", "))
		}
	}
	if o.Rows != "" && o.Rows == o.Cols {
		return nil, choicef("--rows and --cols are both %s: give two different variables", o.Rows)
	}
	rowVar, colVar := o.Rows, o.Cols
	for _, d := range varying {
		if rowVar == "" && d != colVar {
			rowVar = d
		} else if colVar == "" && d != rowVar && o.Cols == "" {
			colVar = d
		}
	}
	if rowVar == "" {
		// Nothing varies: one row, named by the first variable or the test.
		rowVar = dims[0]
	}
	var split []string
	for _, d := range varying {
		if d != rowVar && d != colVar {
			split = append(split, d)
		}
	}

	rd, err := readRuns(rs, where, &o, len(values["test"]) > 1)
	if err != nil {
		return nil, err
	}
	runs, notes := rd.runs, rd.notes

	// Tables of several tests split the runs of a test without a main
	// series by series: one table for the main series, one per load
	// series of theirs.
	splitSeries := []string{""}
	for _, tr := range runs {
		if tr.split != "" && !contains(splitSeries, tr.split) {
			splitSeries = append(splitSeries, tr.split)
		}
	}
	var tables []*Table
	for _, fixed := range combinations(split, values) {
		for _, ss := range splitSeries {
			in := func(tr tableRun) bool {
				if tr.split != ss {
					return false
				}
				for _, f := range fixed {
					if tr.dims[f.Name] != f.Value {
						return false
					}
				}
				return true
			}
			t := &Table{Name: ix.Name, Fixed: fixed, Given: given, RowVar: rowVar, ColVar: colVar, Stat: o.Stat, Spread: spread,
				Show: show, Center: center, SplitSeries: ss, Skipped: rd.skipped, Lacking: rd.lacking, Notes: notes,
				FaithfulOnly: o.FaithfulOnly, Reference: o.Reference}
			t.Rows = presentValues(runs, rowVar, values[rowVar], in)
			t.Cols = []string{""}
			if colVar != "" {
				t.Cols = presentValues(runs, colVar, values[colVar], in)
			}
			if len(t.Rows) == 0 || len(t.Cols) == 0 {
				continue
			}
			t.fill(runs, in, o.Reference)
			tables = append(tables, t)
		}
	}
	switch {
	case len(tables) == 0 && len(notes) > 0:
		return nil, choicef("%s has no run with a throughput series to show%s: %s", dir, whereText(where), strings.Join(notes, "; "))
	case len(tables) == 0:
		return nil, choicef("%s has no complete run to show%s: run `wanlab experiment run` on it first", dir, whereText(where))
	}
	return tables, nil
}

// runsRead is what readRuns read: every complete run's figure, and what
// was left out.
type runsRead struct {
	runs []tableRun
	// skipped counts the runs not complete, lacking those without the
	// series asked for; notes name the other runs left out and the options
	// that show them.
	skipped, lacking int
	notes            []string
	// first is the series of the first run read, whose statistics a
	// message lists.
	first *results.Series
}

// readRuns reads the figure of every complete run that where selects.
// severalTests says the runs are of several tests (see runSeries).
func readRuns(rs *Runs, where map[string][]string, o *TableOptions, severalTests bool) (runsRead, error) {
	var out runsRead
	var lackErr error
	// Runs without load in tables of several tests: left out, counted by
	// test, and named with the options that show them.
	var noLoad []string
	noLoadRuns := map[string]int{}
	noLoadSeries := map[string]string{}
	for _, c := range rs.Index.Cases {
		for _, r := range c.Runs {
			rd := map[string]string{"test": r.Test}
			for k, v := range c.Vars {
				rd[k] = v
			}
			if !matchesWhere(rd, where) {
				continue
			}
			// The results file decides, not the index: a file missing or
			// holding no whole run is a run not made, whatever the index
			// says.
			rr := rs.Run(r.File)
			if rr.Status != StatusComplete {
				out.skipped++
				continue
			}
			doc := rr.Doc
			verdict, unfaithful := false, false
			if rep := doc.Router; rep != nil && rep.Faithful != nil {
				verdict, unfaithful = true, !*rep.Faithful
			}
			if contains(results.RunStats, o.Stat) {
				v, _ := doc.RunStat(o.Stat)
				out.runs = append(out.runs, tableRun{dims: rd, series: runStatOver(o.Stat), unit: results.RunStatUnit,
					value: v, points: runStatPoints(doc, o.Stat),
					verdict: verdict, unfaithful: unfaithful, leftOut: unfaithful && o.FaithfulOnly})
				continue
			}
			names, splits, err := runSeries(doc, o.Series, severalTests)
			if err != nil {
				return out, choicef("%s: %v", r.File, err)
			}
			if len(names) == 0 {
				if noLoadRuns[r.Test] == 0 {
					noLoad = append(noLoad, r.Test)
					noLoadSeries[r.Test] = latencyName(doc)
				}
				noLoadRuns[r.Test]++
				continue
			}
			main, _ := doc.MainSeries()
			for _, name := range names {
				// A flow's own series ("TCP upload::tcp_reordering") as
				// well as the run's: both are summarised over the same
				// window.
				s := doc.FindSeries(name)
				if s == nil {
					// Cases may run different tests (E1's transports): a
					// run without the series is left out and counted, and
					// only a series no run has is an error.
					if out.lacking == 0 {
						lackErr = choicef("%s (a %s run) has no series %q; its series are %s%s its flows' own (wanlab show %s --flow-series)%s",
							r.File, doc.Run.Test, o.Series, doc.SeriesList(), andOrComma(doc), rs.Where(r.File), routerSeriesHint(doc))
					}
					out.lacking++
					continue
				}
				tr := tableRun{dims: rd, series: name, main: main != nil && main.Name == name, unit: s.Unit,
					value: stat(s, o.Stat), points: s.Summary.N,
					verdict: verdict, unfaithful: unfaithful, leftOut: unfaithful && o.FaithfulOnly}
				if splits {
					tr.split = name
				}
				if out.first == nil {
					out.first = s
				}
				out.runs = append(out.runs, tr)
			}
		}
	}
	if out.lacking > 0 && len(out.runs) == 0 {
		return out, lackErr
	}
	if err := checkStatRecorded(out, o); err != nil {
		return out, err
	}
	for _, test := range noLoad {
		out.notes = append(out.notes, fmt.Sprintf("%s %s no throughput series, left out: show them with --where test=%s --series %q",
			plural(noLoadRuns[test], test+" run"), map[bool]string{true: "have", false: "has"}[noLoadRuns[test] > 1], test, noLoadSeries[test]))
	}
	return out, nil
}

// routerSeriesHint names the router's series of a run, for a message that
// lists what a series could have been.
func routerSeriesHint(d *results.Document) string {
	names := d.Router.RouterSeriesNames()
	if len(names) == 0 {
		return ""
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return " and the router's " + strings.Join(quoted, ", ")
}

// andOrComma joins a run's series to its flows' in a message: with ", and"
// when they end the list, with a comma when the router's follow.
func andOrComma(d *results.Document) string {
	if routerSeriesHint(d) == "" {
		return ", and"
	}
	return ","
}

// checkStatRecorded refuses a statistic that no run's series has (the
// total of a delay, the mean of the router's lateness), naming the ones
// it has, rather than a table of empty cells.
func checkStatRecorded(read runsRead, o *TableOptions) error {
	if contains(results.RunStats, o.Stat) {
		if len(read.runs) == 0 || slices.ContainsFunc(read.runs, func(r tableRun) bool { return !math.IsNaN(r.value) }) {
			return nil
		}
		has := map[string]string{"upload flows": "tcp_nup, rrul, rrul_be_nflows, cubic_bbr, tcp_4up_squarewave", "download flows": "tcp_ndown, rrul, rrul_be_nflows, cubic_bbr",
			"upload hosts": "rtt_fair, rtt_fair_up, rtt_fair_var --servers 2 or more", "download hosts": "rtt_fair, rtt_fair_var_down --servers 2 or more"}
		over := runStatOver(o.Stat)
		return choicef("--stat %s: no run has two or more %s that carried data, which Jain's fairness index is over; tests with several (%s) have them", o.Stat, over, has[over])
	}
	if read.first == nil || slices.ContainsFunc(read.runs, func(r tableRun) bool { return !math.IsNaN(r.value) }) {
		return nil
	}
	var has []string
	for _, st := range Stats {
		if !math.IsNaN(stat(read.first, st)) {
			has = append(has, st)
		}
	}
	return choicef("--stat %s: the series %q has no %s in any run; use one it has: %s", o.Stat, read.first.Name, o.Stat, strings.Join(has, ", "))
}

// runStatOver names what a figure of the whole run (one of
// results.RunStats) is over: "upload flows", "download hosts", ...
func runStatOver(name string) string {
	what := " flows"
	if results.RunStatOverHosts(name) {
		what = " hosts"
	}
	return map[string]string{"up": "upload", "down": "download"}[results.RunStatDirection(name)] + what
}

// runStatPoints is the number of data points behind a figure of the run:
// the samples of the flows its fairness is over, summarised.
func runStatPoints(d *results.Document, name string) int {
	f, _ := d.RunStatFairness(name)
	if f == nil {
		return 0
	}
	n := 0
	for _, s := range f.Flows {
		if fs := d.FindSeries(s.Label); fs != nil {
			n += fs.Summary.N
		}
	}
	return n
}

// stat returns a series' figure by name (one of Stats), NaN for one it
// does not record.
func stat(s *results.Series, name string) float64 {
	v, ok := s.Summary.Stat(name)
	if !ok {
		return math.NaN()
	}
	return v
}

// fill computes the table's cells from the runs in it, with their
// reference figures, and the series, unit and verdicts of its runs.
func (t *Table) fill(runs []tableRun, in func(tableRun) bool, ref *Reference) {
	t.Cells = make([][]Cell, len(t.Rows))
	for i, rv := range t.Rows {
		t.Cells[i] = make([]Cell, len(t.Cols))
		for j, cv := range t.Cols {
			var xs []float64
			var c Cell
			var first *tableRun
			for k := range runs {
				tr := &runs[k]
				if !in(*tr) || tr.dims[t.RowVar] != rv || (t.ColVar != "" && tr.dims[t.ColVar] != cv) {
					continue
				}
				if first == nil {
					first = tr
				}
				if !contains(t.Series, tr.series) {
					t.Series = append(t.Series, tr.series)
				}
				if t.Unit == "" {
					t.Unit = tr.unit
				}
				t.runs++
				if tr.verdict {
					t.Verdicts++
				}
				if tr.unfaithful {
					t.NotFaithful++
					c.NotFaithful++
				}
				if tr.leftOut {
					continue
				}
				xs = append(xs, tr.value)
				c.Points += tr.points
			}
			c.Summary = stats.Summarize(xs)
			c.N = c.Summary.N
			c.Interval = stats.MeanInterval(xs, Confidence)
			if ref != nil && first != nil {
				// Every run of a cell shares its case's variables and
				// series, so the first stands for all.
				if row, ok := ref.Lookup(first.dims, first.series, first.main, t.Stat); ok {
					c.Reference = &row
				}
			}
			t.Cells[i][j] = c
		}
	}
}

// checkReference refuses a reference whose columns are not the
// experiment's variables, and warns of each figure for a value the
// experiment does not have, which no table can show.
func checkReference(ref *Reference, dims []string, values map[string][]string, warnf func(string, ...any)) error {
	if err := ref.CheckVariables(dims); err != nil {
		return &ChoiceError{Msg: "--reference " + err.Error()}
	}
	if warnf == nil {
		return nil
	}
	for _, row := range ref.Rows {
		for _, v := range ref.Vars {
			if got := row.Vars[v]; !contains(values[v], got) {
				warnf("%s:%d: %s=%s is not a value of the experiment (its values are %s): the figure is shown nowhere",
					ref.Path, row.Line, v, got, strings.Join(values[v], ", "))
				break
			}
		}
	}
	return nil
}

func whereText(where map[string][]string) string {
	if len(where) == 0 {
		return ""
	}
	var parts []string
	for k, vs := range where {
		parts = append(parts, k+"="+strings.Join(vs, ","))
	}
	slices.Sort(parts)
	return " with " + strings.Join(parts, " ")
}

func matchesWhere(dims map[string]string, where map[string][]string) bool {
	for k, vs := range where {
		if !contains(vs, dims[k]) {
			return false
		}
	}
	return true
}

// combinations returns every combination of the dimensions' values, the
// first dimension varying slowest; one empty combination for none.
func combinations(dims []string, values map[string][]string) [][]Var {
	combos := [][]Var{nil}
	for _, d := range dims {
		var next [][]Var
		for _, c := range combos {
			for _, v := range values[d] {
				next = append(next, append(append([]Var(nil), c...), Var{d, v}))
			}
		}
		combos = next
	}
	return combos
}

// presentValues keeps the values of dim that some run selected by in has.
func presentValues(runs []tableRun, dim string, all []string, in func(tableRun) bool) []string {
	var out []string
	for _, v := range all {
		for _, tr := range runs {
			if in(tr) && tr.dims[dim] == v {
				out = append(out, v)
				break
			}
		}
	}
	return out
}
