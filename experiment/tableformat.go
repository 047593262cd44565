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
)

// A table is written three ways from the same parts: the caption, a
// header and a line per row, and notes under it. Text and Markdown give
// each cell's figures in pieces, a column each: a figure alone, or a
// center followed by its spread ("93.1 ± 0.4", "93.1 (92.0–94.0)"); CSV
// gives each figure its own column at full precision.

// notFaithfulMark marks a cell with runs not faithful, followed by their
// number.
const notFaithfulMark = "†"

// piece is one column of a cell's figures in text and Markdown.
type piece struct {
	// item is one of Shows; spread, if not empty, the spread that follows
	// it (item is then a center).
	item, spread string
}

// pairs says a center and a spread read as one figure: ci95 is the
// interval of the mean, so only the mean takes it.
func pairs(center, spread string) bool {
	switch spread {
	case "stddev", "minmax":
		return center == "mean" || center == "median"
	case "ci95":
		return center == "mean"
	}
	return false
}

func (t *Table) pieces() []piece {
	var ps []piece
	for i := 0; i < len(t.Show); i++ {
		p := piece{item: t.Show[i]}
		if i+1 < len(t.Show) && pairs(p.item, t.Show[i+1]) {
			p.spread = t.Show[i+1]
			i++
		}
		ps = append(ps, p)
	}
	return ps
}

// label names a piece after its column's title: none for the mean, which
// the column's title alone stands for.
func (p piece) label() string {
	if p.item == "mean" {
		return ""
	}
	return p.item
}

// spreadWords says what a spread after a figure is, for the caption.
var spreadWords = map[string]string{
	"stddev": " ± sample std dev",
	"ci95":   fmt.Sprintf(" ± %g %% confidence interval", Confidence*100),
	"minmax": " (min–max)",
}

// itemWords says what a figure alone is, for the caption.
var itemWords = map[string]string{
	"stddev": "stddev (sample std dev)",
	"ci95":   fmt.Sprintf("ci95 (± %g %% confidence interval of the mean)", Confidence*100),
	"minmax": "minmax (min–max)",
	"n":      "n (runs)",
	"points": "points (data points)",
}

// runsRange gives the fewest and most runs of the table's cells that have
// any.
func (t *Table) runsRange() (lo, hi int) {
	for _, row := range t.Cells {
		for _, c := range row {
			if c.N > 0 && (lo == 0 || c.N < lo) {
				lo = c.N
			}
			hi = max(hi, c.N)
		}
	}
	return lo, hi
}

// Caption describes the table in one line: what each run's figure is, what
// a cell gives of its runs (the number of runs and the spread among
// them), and for which values of the other variables (Given and Fixed).
func (t *Table) Caption() string {
	what := fmt.Sprintf("%s of %s", t.Stat, strings.Join(t.Series, " / "))
	if t.Unit != "" {
		what += " (" + t.Unit + ")"
	}
	lo, hi := t.runsRange()
	runs := plural(hi, "run")
	if lo != hi {
		runs = fmt.Sprintf("%d–%d runs", lo, hi)
	}
	var parts []string
	for k, p := range t.pieces() {
		words := itemWords[p.item]
		if words == "" {
			words = p.item
		}
		switch {
		case k == 0 && hi <= 1:
			words = "one run each"
		case k == 0 && p.spread != "":
			words = p.item + " of " + runs + spreadWords[p.spread]
		case k == 0 && (p.item == "mean" || p.item == "median"):
			words = p.item + " of " + runs
		case k == 0:
			words = "over " + runs + ": " + words
		}
		parts = append(parts, words)
	}
	what += ", " + strings.Join(parts, ", ")
	if t.FaithfulOnly {
		what += ", faithful runs only"
	}
	s := t.Name + ": " + what
	if vs := append(slices.Clone(t.Given), t.Fixed...); len(vs) > 0 {
		s += "; " + varsLabel(vs)
	}
	return s
}

// text renders a piece of a cell for people: a figure to about three
// significant digits, a spread with the figure's decimals.
func (t *Table) text(c Cell, p piece) string {
	switch p.item {
	case "n":
		return strconv.Itoa(c.N)
	case "points":
		return strconv.Itoa(c.Points)
	}
	if c.N == 0 {
		return "–"
	}
	dec := decimals(c.figure(t.Center))
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', dec, 64) }
	spread := func(name string) string {
		switch name {
		case "stddev", "ci95":
			if x := c.figure(name); !math.IsNaN(x) {
				return "± " + num(x)
			}
		case "minmax":
			if c.N > 1 {
				return num(c.Summary.Min) + "–" + num(c.Summary.Max)
			}
		}
		return ""
	}
	if contains(Spreads, p.item) {
		if s := spread(p.item); s != "" {
			return s
		}
		return "–"
	}
	s := num(c.figure(p.item))
	switch sp := spread(p.spread); {
	case sp == "":
	case p.spread == "minmax":
		s += " (" + sp + ")"
	default:
		s += " " + sp
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

// colName names a column's figure: its title, then the figure's label.
func (t *Table) colName(j int, label string) string {
	if label == "" {
		return t.colTitle(j)
	}
	return t.colTitle(j) + " " + label
}

// hasReference says column j has a reference figure in some row.
func (t *Table) hasReference(j int) bool {
	for i := range t.Rows {
		if t.Cells[i][j].Reference != nil {
			return true
		}
	}
	return false
}

// header is the first row: the row variable, then per column its pieces
// (the first headed by the column's value) and its reference and ratio.
func (t *Table) header() []string {
	h := []string{t.RowVar}
	if t.ColVar != "" {
		h[0] = t.RowVar + " \\ " + t.ColVar
	}
	for j := range t.Cols {
		for _, p := range t.pieces() {
			h = append(h, t.colName(j, p.label()))
		}
		if t.hasReference(j) {
			h = append(h, t.colName(j, "ref"), t.colName(j, "ratio"))
		}
	}
	return h
}

// row is row i's cells as text, after the row's value.
func (t *Table) row(i int) []string {
	out := []string{t.Rows[i]}
	for j := range t.Cols {
		c := t.Cells[i][j]
		for k, p := range t.pieces() {
			s := t.text(c, p)
			if k == 0 && c.NotFaithful > 0 {
				s += " " + notFaithfulMark + strconv.Itoa(c.NotFaithful)
			}
			out = append(out, s)
		}
		if t.hasReference(j) {
			ref, ratio := "–", "–"
			if c.Reference != nil {
				ref = strconv.FormatFloat(c.Reference.Value, 'g', -1, 64)
				if r := t.Ratio(c); !math.IsNaN(r) {
					ratio = strconv.FormatFloat(r, 'f', decimals(r), 64)
				}
			}
			out = append(out, ref, ratio)
		}
	}
	return out
}

// notes are the sentences under the table: the runs left out, the
// fidelity of the runs, the reference's sources.
func (t *Table) notes() []string {
	var out []string
	if t.Skipped > 0 {
		out = append(out, plural(t.Skipped, "run")+" not complete, left out")
	}
	if t.Lacking > 0 {
		out = append(out, fmt.Sprintf("%s without %s, left out", plural(t.Lacking, "run"), t.Series[0]))
	}
	out = append(out, t.Notes...)
	if n := t.fidelityNote(); n != "" {
		out = append(out, n)
	}
	if n := t.referenceNote(); n != "" {
		out = append(out, n)
	}
	return out
}

// fidelityNote says how many of the table's runs were not faithful and
// what became of them; nothing when no run has a verdict.
func (t *Table) fidelityNote() string {
	if t.Verdicts == 0 {
		return ""
	}
	total := t.runs
	var s string
	switch {
	case t.NotFaithful == 0:
		s = fmt.Sprintf("fidelity: %d of %s faithful", t.Verdicts, plural(total, "run"))
	case t.FaithfulOnly:
		s = fmt.Sprintf("fidelity: %d of %s not faithful, left out by --faithful-only (%sN: N of the cell's runs)", t.NotFaithful, plural(total, "run"), notFaithfulMark)
	default:
		s = fmt.Sprintf("fidelity: %d of %s not faithful, kept (%sN: N of the cell's runs; --faithful-only leaves them out)", t.NotFaithful, plural(total, "run"), notFaithfulMark)
	}
	if t.Verdicts < total {
		s += fmt.Sprintf("; %s without a verdict", plural(total-t.Verdicts, "run"))
	}
	return s
}

// referenceNote names the sources of the reference figures shown, or says
// the reference has none for this table.
func (t *Table) referenceNote() string {
	if t.Reference == nil {
		return ""
	}
	var sources []string
	for _, row := range t.Cells {
		for _, c := range row {
			if c.Reference != nil && !contains(sources, c.Reference.Source) {
				sources = append(sources, c.Reference.Source)
			}
		}
	}
	if len(sources) == 0 {
		return fmt.Sprintf("%s has no %s of %s for this table's cells", t.Reference.Path, t.Stat, strings.Join(t.Series, " / "))
	}
	return fmt.Sprintf("ref: %s (%s); ratio: the cell's %s / ref", strings.Join(sources, "; "), t.Reference.Path, t.Center)
}

// WriteText writes the table as aligned text under its caption.
func (t *Table) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, t.Caption())
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, strings.Join(t.header(), "\t"))
	for i := range t.Rows {
		fmt.Fprintln(tw, strings.Join(t.row(i), "\t"))
	}
	for _, n := range t.notes() {
		fmt.Fprintf(tw, "(%s)\n", n)
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
	for i := range t.Rows {
		row := t.row(i)
		for k := range row {
			row[k] = mdEscape(row[k])
		}
		ew.Linef("| %s |", strings.Join(row, " | "))
	}
	for _, n := range t.notes() {
		ew.Linef("")
		ew.Linef("%s.", mdEscape(n))
	}
	return ew.Err()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// csvItems are the figures of a cell in CSV, a column each: Show's, minmax
// as min and max, and the number of runs always.
func (t *Table) csvItems() []string {
	var items []string
	for _, s := range t.Show {
		if s == "minmax" {
			items = append(items, "min", "max")
		} else {
			items = append(items, s)
		}
	}
	if !contains(items, "n") {
		items = append(items, "n")
	}
	return items
}

// csvHeader is the table's CSV header: a column for each variable the
// tables are split by, and for the series when they are split by it too,
// the row variable, then per column its figures, its runs not faithful
// (when the runs have verdicts), and its reference and ratio (when it has
// references).
func (t *Table) csvHeader(seriesCol bool) []string {
	h := []string{}
	for _, f := range t.Fixed {
		h = append(h, f.Name)
	}
	if seriesCol {
		h = append(h, "series")
	}
	h = append(h, t.RowVar)
	for j := range t.Cols {
		name := func(label string) string {
			n := t.colName(j, label)
			if t.ColVar != "" {
				n = t.ColVar + "=" + n
			}
			return n
		}
		for _, it := range t.csvItems() {
			h = append(h, name(piece{item: it}.label()))
		}
		if t.Verdicts > 0 {
			h = append(h, name("not faithful"))
		}
		if t.hasReference(j) {
			h = append(h, name("ref"), name("ratio"))
		}
	}
	return h
}

// WriteCSV writes tables as one CSV: per table its header (when it differs
// from the previous table's; a blank line between; a "series" column when
// some tables are for a series each), then its rows, every
// figure at full precision and an empty field where a cell has none (a
// spread of one run, a cell without runs). The figures are csvItems'.
func WriteCSV(w io.Writer, tables []*Table) error {
	cw := csv.NewWriter(w)
	seriesCol := slices.ContainsFunc(tables, func(t *Table) bool { return t.SplitSeries != "" })
	var last string
	for ti, t := range tables {
		h := t.csvHeader(seriesCol)
		if key := strings.Join(h, "\x00"); ti == 0 || key != last {
			if ti > 0 {
				cw.Write(nil)
			}
			cw.Write(h)
			last = key
		}
		for i, rv := range t.Rows {
			row := []string{}
			for _, f := range t.Fixed {
				row = append(row, f.Value)
			}
			if seriesCol {
				row = append(row, strings.Join(t.Series, " / "))
			}
			row = append(row, rv)
			for j := range t.Cols {
				c := t.Cells[i][j]
				for _, it := range t.csvItems() {
					switch it {
					case "n", "points":
						row = append(row, strconv.FormatFloat(c.figure(it), 'g', -1, 64))
					default:
						row = append(row, csvNum(c, c.figure(it)))
					}
				}
				if t.Verdicts > 0 {
					row = append(row, strconv.Itoa(c.NotFaithful))
				}
				if t.hasReference(j) {
					ref := ""
					if c.Reference != nil {
						ref = strconv.FormatFloat(c.Reference.Value, 'g', -1, 64)
					}
					row = append(row, ref, csvNum(c, t.Ratio(c)))
				}
			}
			cw.Write(row)
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvNum(c Cell, x float64) string {
	if c.N == 0 || math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}
