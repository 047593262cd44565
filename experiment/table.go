package experiment

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"wanlab/internal/errwriter"
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
	// run's main throughput series (results.Document.MainSeries).
	Series string
	// Stat is the statistic of each run's series: mean (the default),
	// median, min, max, p90, p99, stddev, variance or total.
	Stat string
	// Spread is how a cell shows the spread across repetitions: "stddev"
	// (the default: the sample standard deviation of the runs' figures),
	// "minmax", or "none".
	Spread string
	// Warnf, if not nil, is told of each results file left out because it
	// holds no whole run (cut short, damaged, not a regular file).
	Warnf func(format string, args ...any)
}

// ChoiceError is a table option that does not fit the directory: an
// unknown variable, value, statistic or series. Its message names the fix.
type ChoiceError struct{ Msg string }

func (e *ChoiceError) Error() string { return e.Msg }

func choicef(format string, args ...any) error {
	return &ChoiceError{Msg: fmt.Sprintf(format, args...)}
}

// Stats are the statistics a table can show.
var Stats = []string{"mean", "median", "min", "max", "p90", "p99", "stddev", "variance", "total"}

// Spreads are the ways a cell can show the spread across repetitions.
var Spreads = []string{"stddev", "minmax", "none"}

// Table is a statistic of one series laid out by two variables, for one
// combination of the other varying variables.
type Table struct {
	// Name is the experiment's name.
	Name string
	// Fixed are the other variables' values this table is for (the
	// variables that vary but are neither rows nor columns).
	Fixed []Var
	// RowVar and ColVar name the variables; ColVar is empty for a single
	// column.
	RowVar, ColVar string
	Rows, Cols     []string
	// Cells[i][j] is row i, column j.
	Cells [][]Cell
	// Stat, Spread and Series are the options the table was made with
	// (Series lists the series used when each run's main one was taken);
	// Unit is the series' unit.
	Stat, Spread string
	Series       []string
	Unit         string
	// Skipped counts the runs left out because they are not complete.
	Skipped int
	// Lacking counts the complete runs left out because they have no
	// series of the chosen name (a case that runs another test).
	Lacking int
}

// Cell summarises the statistic over the repetitions of one cell.
type Cell struct {
	// N is the number of runs; Summary describes their figures (its
	// SampleStdDev is the spread across repetitions).
	N       int
	Summary stats.Summary
}

// tableRun is one complete run with its position on every dimension.
type tableRun struct {
	dims  map[string]string
	value float64
	found bool
}

// mainSeries is the series a table shows of a run by default: its main
// throughput (results.Document.MainSeries). A run without one is an error
// that says to choose a series.
func mainSeries(d *results.Document) (string, error) {
	s, load := d.MainSeries()
	switch {
	case s != nil:
		return s.Name, nil
	case len(load) == 0:
		return "", choicef("a %s run has no throughput series: choose a series with --series (e.g. \"Ping (ms) ICMP\")", d.Run.Test)
	}
	return "", choicef("a %s run has several throughput series (%s): choose one with --series", d.Run.Test, strings.Join(load, ", "))
}

// statOf returns a summary's figure by name.
func statOf(s results.Summary, name string) float64 {
	switch name {
	case "median":
		return s.Median
	case "min":
		return s.Min
	case "max":
		return s.Max
	case "p90":
		return s.P90
	case "p99":
		return s.P99
	case "stddev":
		return s.StdDev
	case "variance":
		return s.Variance
	case "total":
		return s.Total
	}
	return s.Mean
}

// Tables lays out a results directory's complete runs: one table per
// combination of the varying variables that are neither rows nor columns.
// The results files decide which runs are complete, as for resuming: a
// run whose file is missing, cut short or damaged is left out and counted
// as not complete, whatever the index says. Every error names what to
// change.
func Tables(dir string, o TableOptions) ([]*Table, error) {
	rs, err := OpenRuns(dir, OpenOptions{Warnf: o.Warnf})
	if err != nil {
		return nil, err
	}
	ix := rs.Index
	if o.Stat == "" {
		o.Stat = "mean"
	}
	if o.Spread == "" {
		o.Spread = "stddev"
	}
	if !contains(Stats, o.Stat) {
		return nil, choicef("--stat %q: use one of %s", o.Stat, strings.Join(Stats, ", "))
	}
	if !contains(Spreads, o.Spread) {
		return nil, choicef("--spread %q: use one of %s", o.Spread, strings.Join(Spreads, ", "))
	}
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
	where := map[string][]string{}
	for name, given := range o.Where {
		if !contains(dims, name) && len(given) > 0 {
			return nil, choicef("--where %s=%s: %s is not a variable of %s (its variables are %s)", name, given[0], name, dir, strings.Join(dims, ", "))
		}
		for _, raw := range given {
			vs := []string{raw}
			if !contains(values[name], raw) {
				vs = strings.Split(raw, ",")
			}
			for _, v := range vs {
				if !contains(values[name], v) {
					return nil, choicef("--where %s=%s: %s has no value %q (its values are %s)", name, raw, name, v, strings.Join(values[name], ", "))
				}
				if !contains(where[name], v) {
					where[name] = append(where[name], v)
				}
			}
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

	// Read every complete run's figure.
	var runs []tableRun
	skipped := 0
	seriesUsed := []string{}
	unit := ""
	lacking := 0
	var lackErr error
	for _, c := range ix.Cases {
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
				skipped++
				continue
			}
			doc := rr.Doc
			name := o.Series
			if name == "" {
				if name, err = mainSeries(doc); err != nil {
					return nil, choicef("%s: %v", r.File, err)
				}
			}
			tr := tableRun{dims: rd}
			// A flow's own series ("TCP upload::tcp_reordering") as well
			// as the run's: both are summarised over the same window.
			if s := doc.FindSeries(name); s != nil {
				tr.value, tr.found = statOf(s.Summary, o.Stat), true
				if unit == "" {
					unit = s.Unit
				}
			}
			if !tr.found && o.Series != "" {
				// Cases may run different tests (E1's transports): a
				// run without the series is left out and counted, and
				// only a series no run has is an error.
				if lacking == 0 {
					lackErr = choicef("%s (a %s run) has no series %q; its series are %s, and its flows' own (wanlab show %s --flow-series)",
						r.File, doc.Run.Test, o.Series, doc.SeriesList(), rs.Where(r.File))
				}
				lacking++
				continue
			}
			if !contains(seriesUsed, name) {
				seriesUsed = append(seriesUsed, name)
			}
			runs = append(runs, tr)
		}
	}

	if lacking > 0 && len(runs) == 0 {
		return nil, lackErr
	}

	var tables []*Table
	for _, fixed := range combinations(split, values) {
		t := &Table{Name: ix.Name, Fixed: fixed, RowVar: rowVar, ColVar: colVar, Stat: o.Stat, Spread: o.Spread,
			Series: seriesUsed, Unit: unit, Skipped: skipped, Lacking: lacking}
		in := func(tr tableRun) bool {
			for _, f := range fixed {
				if tr.dims[f.Name] != f.Value {
					return false
				}
			}
			return true
		}
		t.Rows = presentValues(runs, rowVar, values[rowVar], in)
		t.Cols = []string{""}
		if colVar != "" {
			t.Cols = presentValues(runs, colVar, values[colVar], in)
		}
		if len(t.Rows) == 0 || len(t.Cols) == 0 {
			continue
		}
		t.Cells = make([][]Cell, len(t.Rows))
		for i, rv := range t.Rows {
			t.Cells[i] = make([]Cell, len(t.Cols))
			for j, cv := range t.Cols {
				var xs []float64
				for _, tr := range runs {
					if in(tr) && tr.found && tr.dims[rowVar] == rv && (colVar == "" || tr.dims[colVar] == cv) {
						xs = append(xs, tr.value)
					}
				}
				s := stats.Summarize(xs)
				t.Cells[i][j] = Cell{N: s.N, Summary: s}
			}
		}
		tables = append(tables, t)
	}
	if len(tables) == 0 {
		return nil, choicef("%s has no complete run to show%s: run `wanlab experiment run` on it first", dir, whereText(where))
	}
	return tables, nil
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

// Caption describes the table in one line: what the cells are, and for
// which values of the other variables.
func (t *Table) Caption() string {
	what := fmt.Sprintf("%s of %s", t.Stat, strings.Join(t.Series, " / "))
	if t.Unit != "" {
		what += " (" + t.Unit + ")"
	}
	repeated := false
	for _, row := range t.Cells {
		for _, c := range row {
			repeated = repeated || c.N > 1
		}
	}
	switch {
	case !repeated:
		what += ", one run each"
	case t.Spread == "stddev":
		what += ", ± sample std dev across repetitions"
	case t.Spread == "minmax":
		what += ", min–max across repetitions"
	}
	s := t.Name + ": " + what
	if len(t.Fixed) > 0 {
		s += "; " + varsLabel(t.Fixed)
	}
	return s
}

// text renders a cell for people: the figure to about three significant
// digits, the spread with the same decimals, and the number of runs when
// they differ between cells.
func (t *Table) text(c Cell) string {
	if c.N == 0 {
		return "–"
	}
	m := c.Summary.Mean
	dec := decimals(m)
	s := strconv.FormatFloat(m, 'f', dec, 64)
	if c.N > 1 {
		switch t.Spread {
		case "stddev":
			s += " ± " + strconv.FormatFloat(c.Summary.SampleStdDev, 'f', dec, 64)
		case "minmax":
			s += " (" + strconv.FormatFloat(c.Summary.Min, 'f', dec, 64) + "–" + strconv.FormatFloat(c.Summary.Max, 'f', dec, 64) + ")"
		}
	}
	return s
}

// decimals gives about three significant digits without an exponent.
func decimals(x float64) int {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	d := 2 - int(math.Floor(math.Log10(math.Abs(x))))
	return max(0, min(d, 6))
}

func (t *Table) colTitle(j int) string {
	if t.ColVar == "" {
		return t.Stat
	}
	return t.Cols[j]
}

// header is the first row: the row variable, then the column values
// (headed by the column variable's name when there is one).
func (t *Table) header() []string {
	h := []string{t.RowVar}
	if t.ColVar != "" {
		h[0] = t.RowVar + " \\ " + t.ColVar
	}
	for j := range t.Cols {
		h = append(h, t.colTitle(j))
	}
	return h
}

// WriteText writes the table as aligned text under its caption.
func (t *Table) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, t.Caption())
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, strings.Join(t.header(), "\t"))
	for i, rv := range t.Rows {
		row := []string{rv}
		for j := range t.Cols {
			row = append(row, t.text(t.Cells[i][j]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if t.Skipped > 0 {
		fmt.Fprintf(tw, "(%s not complete, left out)\n", plural(t.Skipped, "run"))
	}
	if t.Lacking > 0 {
		fmt.Fprintf(tw, "(%s without %s, left out)\n", plural(t.Lacking, "run"), t.Series[0])
	}
	return tw.Flush()
}

// WriteMarkdown writes the table as a Markdown table under its caption.
func (t *Table) WriteMarkdown(w io.Writer) error {
	ew := errwriter.New(w)
	ew.Linef("%s", mdEscape(t.Caption()))
	ew.Linef("")
	h := t.header()
	for i := range h {
		h[i] = mdEscape(h[i])
	}
	ew.Linef("| %s |", strings.Join(h, " | "))
	ew.Linef("|%s", strings.Repeat("---|", len(h)))
	for i, rv := range t.Rows {
		row := []string{mdEscape(rv)}
		for j := range t.Cols {
			row = append(row, t.text(t.Cells[i][j]))
		}
		ew.Linef("| %s |", strings.Join(row, " | "))
	}
	if t.Skipped > 0 {
		ew.Linef("")
		ew.Linef("%s not complete, left out.", plural(t.Skipped, "run"))
	}
	if t.Lacking > 0 {
		ew.Linef("")
		ew.Linef("%s without %s, left out.", plural(t.Lacking, "run"), mdEscape(t.Series[0]))
	}
	return ew.Err()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// WriteCSV writes tables as one CSV: a column for each variable the tables
// are split by, the row variable, then per column its figure and spread
// (sample std dev, or min and max) and its number of runs, at full
// precision; an empty field where a cell has no run.
func WriteCSV(w io.Writer, tables []*Table) error {
	cw := csv.NewWriter(w)
	for ti, t := range tables {
		if ti == 0 || !sameColumns(t, tables[ti-1]) {
			h := []string{}
			for _, f := range t.Fixed {
				h = append(h, f.Name)
			}
			h = append(h, t.RowVar)
			for j := range t.Cols {
				name := t.colTitle(j)
				if t.ColVar != "" {
					name = t.ColVar + "=" + name
				}
				h = append(h, name)
				switch t.Spread {
				case "stddev":
					h = append(h, name+" stddev")
				case "minmax":
					h = append(h, name+" min", name+" max")
				}
				h = append(h, name+" n")
			}
			if ti > 0 {
				cw.Write(nil)
			}
			cw.Write(h)
		}
		for i, rv := range t.Rows {
			row := []string{}
			for _, f := range t.Fixed {
				row = append(row, f.Value)
			}
			row = append(row, rv)
			for j := range t.Cols {
				c := t.Cells[i][j]
				row = append(row, csvNum(c, c.Summary.Mean))
				switch t.Spread {
				case "stddev":
					row = append(row, csvNum(c, c.Summary.SampleStdDev))
				case "minmax":
					row = append(row, csvNum(c, c.Summary.Min), csvNum(c, c.Summary.Max))
				}
				row = append(row, strconv.Itoa(c.N))
			}
			cw.Write(row)
		}
	}
	cw.Flush()
	return cw.Error()
}

func sameColumns(a, b *Table) bool {
	return a.RowVar == b.RowVar && a.ColVar == b.ColVar && strings.Join(a.Cols, "\x00") == strings.Join(b.Cols, "\x00") && len(a.Fixed) == len(b.Fixed)
}

func csvNum(c Cell, x float64) string {
	if c.N == 0 || math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}
