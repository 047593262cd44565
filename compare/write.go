package compare

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"wanlab/internal/errwriter"
)

// Formats are the forms a comparison is written in.
var Formats = []string{"text", "markdown", "csv", "json"}

// Write writes the comparison in format, one of Formats.
func (r *Result) Write(w io.Writer, format string) error {
	switch format {
	case "text":
		return r.WriteText(w)
	case "markdown":
		return r.WriteMarkdown(w)
	case "csv":
		return r.WriteCSV(w)
	case "json":
		return r.WriteJSON(w)
	}
	return fmt.Errorf("format %q: use one of %s", format, strings.Join(Formats, ", "))
}

// confidenceText is the confidence as people write it: "95 %".
func (r *Result) confidenceText() string {
	return strconv.FormatFloat(r.Confidence*100, 'g', 6, 64) + " %"
}

// Caption says what the figures are, in two lines: the sides, then how
// the intervals and significance were found.
func (r *Result) Caption() []string {
	how := fmt.Sprintf("A and B are the mean of each run's figure; B − A with its %s confidence interval by Welch's t over the runs; significant: p < %s after Holm's correction across all %s.",
		r.confidenceText(), strconv.FormatFloat(1-r.Confidence, 'g', 6, 64), plural(r.Tests, "test"))
	if r.Tests == 0 {
		how = "A and B are the mean of each run's figure; no interval and no test: a side has one run."
	}
	return []string{fmt.Sprintf("A: %s (%s)   B: %s (%s)", r.A.Label, plural(r.A.Runs, "run"), r.B.Label, plural(r.B.Runs, "run")), how}
}

// Heading names a pair: its case, or both when they differ, and the
// number of runs on each side.
func (p *Pair) Heading() string {
	if p.A.equal(p.B) {
		return fmt.Sprintf("%s: %s in A, %d in B", p.A, plural(p.RunsA, "run"), p.RunsB)
	}
	return fmt.Sprintf("A %s (%s) against B %s (%s)", p.A, plural(p.RunsA, "run"), p.B, plural(p.RunsB, "run"))
}

// Header is the first row of a pair's table, whose rows Cells gives.
func (r *Result) Header() []string {
	return []string{"series", "stat", "unit", "A", "B", "B − A", "B − A %", r.confidenceText() + " interval of B − A", "p (Holm)", "significant"}
}

// Cells renders a row for people, under Header: figures to about three
// significant digits, the difference and its interval with the same
// decimals, "–" for what there is none of.
func (r *Result) Cells(row *Row) []string {
	dec := decimals(magnitude(row.A, row.B))
	ddec := decimals(magnitude(row.Diff, row.Lo, row.Hi))
	interval, p, sig := "", "–", "no"
	switch {
	case row.HasInterval():
		interval = signed(row.Lo, ddec) + " to " + signed(row.Hi, ddec)
		p = formatP(row.PHolm)
		if row.Significant {
			sig = "yes"
		}
	case row.NA == 0 || row.NB == 0:
		interval, sig = "none: a side has no figure", "–"
	default:
		interval, sig = fmt.Sprintf("none: %d run in A, %d in B", row.NA, row.NB), "–"
	}
	pct := "–"
	if x := row.Pct(row.Diff); !math.IsNaN(x) {
		pct = strconv.FormatFloat(x, 'f', 1, 64) + " %"
		if x >= 0 {
			pct = "+" + pct
		}
	}
	return []string{row.Series, row.Stat, row.Unit, formatNum(row.A, dec), formatNum(row.B, dec), signed(row.Diff, ddec), pct, interval, p, sig}
}

// tableRows are a pair's rows as Cells renders them, the series' name
// only on its first row.
func (r *Result) tableRows(p *Pair) [][]string {
	var out [][]string
	prev := ""
	for _, row := range p.Rows {
		c := r.Cells(&row)
		if c[0] == prev {
			c[0] = ""
		} else {
			prev = c[0]
		}
		out = append(out, c)
	}
	return out
}

// Notes are the sentences under the tables: runs left out, cases
// without a partner, sides of one run.
func (r *Result) Notes() []string {
	var out []string
	for _, s := range []struct {
		name string
		info SideInfo
	}{{"A", r.A}, {"B", r.B}} {
		if s.info.Skipped > 0 {
			out = append(out, fmt.Sprintf("%s: %s not complete, left out.", s.name, plural(s.info.Skipped, "run")))
		}
	}
	for _, u := range []struct {
		name  string
		cases []Case
	}{{"A", r.UnmatchedA}, {"B", r.UnmatchedB}} {
		if len(u.cases) > 0 {
			names := make([]string, len(u.cases))
			for i, c := range u.cases {
				names[i] = c.String()
			}
			out = append(out, fmt.Sprintf("Only in %s, not compared: %s.", u.name, strings.Join(names, "; ")))
		}
	}
	single := false
	for _, p := range r.Pairs {
		for _, row := range p.Rows {
			single = single || (!row.HasInterval() && row.NA > 0 && row.NB > 0)
		}
	}
	if single {
		out = append(out, "A side of one run gives no interval: its differences are shown, never called significant; repeat the runs (an experiment's repeat: 5) to judge them.")
	}
	return out
}

// Explain says why a verdict holds or not, in one line.
func (r *Result) Explain(v Verdict) string {
	row := v.Row
	ddec := decimals(magnitude(row.Diff, row.Lo, row.Hi, v.Bound))
	bound := signed(v.Bound, ddec)
	if v.Condition.Percent {
		bound += fmt.Sprintf(" (%s%% of A's %s)", signed(v.Condition.Bound, -1), formatNum(row.A, decimals(row.A)))
	}
	side := map[string]string{"<": "below", "<=": "at or below", ">": "above", ">=": "at or above"}[v.Condition.Op]
	unit := ""
	if row.Unit != "" {
		unit = " " + row.Unit
	}
	var s string
	if v.Interval {
		s = fmt.Sprintf("B − A is %s to %s%s (%s interval), ", signed(row.Lo, ddec), signed(row.Hi, ddec), unit, r.confidenceText())
		if v.Held {
			s += "wholly " + side + " " + bound
		} else {
			s += "not wholly " + side + " " + bound
		}
	} else {
		s = fmt.Sprintf("B − A is %s%s (no interval: a side has one run), ", signed(row.Diff, ddec), unit)
		if v.Held {
			s += side + " " + bound
		} else {
			s += "not " + side + " " + bound
		}
	}
	if len(r.Pairs) > 1 {
		s = r.Pairs[v.Pair].A.String() + ": " + s
	}
	return s
}

// verdictWord is a verdict as its line in the output starts.
func verdictWord(v Verdict) string {
	if v.Held {
		return "HOLDS"
	}
	return "does not hold"
}

// WriteText writes the comparison as aligned text: the caption, a table
// per pair of cases, the notes and the conditions' verdicts.
func (r *Result) WriteText(w io.Writer) error {
	ew := errwriter.New(w)
	for _, l := range r.Caption() {
		ew.Linef("%s", l)
	}
	for _, p := range r.Pairs {
		ew.Linef("")
		ew.Linef("%s", p.Heading())
		ew.Linef("")
		tw := tabwriter.NewWriter(ew, 0, 0, 3, ' ', 0)
		fmt.Fprintln(tw, strings.Join(r.Header(), "\t"))
		for _, c := range r.tableRows(&p) {
			fmt.Fprintln(tw, strings.Join(c, "\t"))
		}
		tw.Flush()
	}
	if notes := r.Notes(); len(notes) > 0 {
		ew.Linef("")
		for _, n := range notes {
			ew.Linef("%s", n)
		}
	}
	if len(r.Verdicts) > 0 {
		ew.Linef("")
		ew.Linef("Conditions (--fail-if):")
		for _, v := range r.Verdicts {
			ew.Linef("  %s: %s: %s", verdictWord(v), v.Condition.Text, r.Explain(v))
		}
	}
	return ew.Err()
}

// WriteMarkdown writes the comparison as Markdown: the caption, a table
// per pair of cases under its heading, the notes and the verdicts.
func (r *Result) WriteMarkdown(w io.Writer) error {
	ew := errwriter.New(w)
	for _, l := range r.Caption() {
		ew.Linef("%s", mdEscape(l))
		ew.Linef("")
	}
	for _, p := range r.Pairs {
		ew.Linef("**%s**", mdEscape(p.Heading()))
		ew.Linef("")
		h := r.Header()
		ew.Linef("| %s |", strings.Join(h, " | "))
		ew.Linef("|%s", strings.Repeat("---|", len(h)))
		for _, c := range r.tableRows(&p) {
			for i := range c {
				c[i] = mdEscape(c[i])
			}
			ew.Linef("| %s |", strings.Join(c, " | "))
		}
		ew.Linef("")
	}
	for _, n := range r.Notes() {
		ew.Linef("%s", mdEscape(n))
		ew.Linef("")
	}
	if len(r.Verdicts) > 0 {
		ew.Linef("Conditions (`--fail-if`):")
		ew.Linef("")
		for _, v := range r.Verdicts {
			ew.Linef("- **%s**: `%s`: %s", verdictWord(v), v.Condition.Text, mdEscape(r.Explain(v)))
		}
	}
	return ew.Err()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// WriteCSV writes one line per row of every pair, at full precision: the
// cases' variables (a_VAR and b_VAR where the sides' differ), the test,
// then the row; an empty field for a figure there is none of.
func (r *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	var vars []string
	for _, p := range r.Pairs {
		for _, c := range []Case{p.A, p.B} {
			for _, v := range c.Vars {
				if !slices.Contains(vars, v.Name) {
					vars = append(vars, v.Name)
				}
			}
		}
	}
	h := []string{}
	for _, v := range vars {
		h = append(h, "a_"+v, "b_"+v)
	}
	h = append(h, "a_test", "b_test", "series", "stat", "unit", "n_a", "n_b", "a", "b", "diff", "diff_pct", "lo", "hi", "lo_pct", "hi_pct", "p", "p_holm", "significant")
	cw.Write(h)
	for _, p := range r.Pairs {
		for _, row := range p.Rows {
			line := []string{}
			for _, v := range vars {
				va, _ := p.A.value(v)
				vb, _ := p.B.value(v)
				line = append(line, va, vb)
			}
			line = append(line, p.A.Test, p.B.Test, row.Series, row.Stat, row.Unit, strconv.Itoa(row.NA), strconv.Itoa(row.NB))
			for _, x := range []float64{row.A, row.B, row.Diff, row.Pct(row.Diff), row.Lo, row.Hi, row.Pct(row.Lo), row.Pct(row.Hi), row.P, row.PHolm} {
				line = append(line, csvNum(x))
			}
			line = append(line, strconv.FormatBool(row.Significant))
			cw.Write(line)
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvNum(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// JSONFormat is the "format" key of a comparison written as JSON, and
// JSONVersion its version.
const (
	JSONFormat  = "wanlab-compare"
	JSONVersion = 1
)

// jsonResult is the comparison as JSON: snake_case keys, null for a
// figure there is none of.
type jsonResult struct {
	Format     string        `json:"format"`
	Version    int           `json:"version"`
	A          jsonSide      `json:"a"`
	B          jsonSide      `json:"b"`
	Confidence float64       `json:"confidence"`
	Tests      int           `json:"tests"`
	Pairs      []jsonPair    `json:"pairs"`
	UnmatchedA []jsonCase    `json:"unmatched_a"`
	UnmatchedB []jsonCase    `json:"unmatched_b"`
	Conditions []jsonVerdict `json:"conditions"`
	Held       bool          `json:"held"`
}

type jsonSide struct {
	Label   string `json:"label"`
	Runs    int    `json:"runs"`
	Skipped int    `json:"skipped"`
}

type jsonCase struct {
	Vars map[string]string `json:"vars"`
	Test string            `json:"test"`
}

type jsonPair struct {
	A     jsonCase  `json:"a"`
	B     jsonCase  `json:"b"`
	RunsA int       `json:"runs_a"`
	RunsB int       `json:"runs_b"`
	Rows  []jsonRow `json:"rows"`
}

type jsonRow struct {
	Series      string   `json:"series"`
	Stat        string   `json:"stat"`
	Unit        string   `json:"unit"`
	NA          int      `json:"n_a"`
	NB          int      `json:"n_b"`
	A           *float64 `json:"a"`
	B           *float64 `json:"b"`
	Diff        *float64 `json:"diff"`
	DiffPct     *float64 `json:"diff_pct"`
	Lo          *float64 `json:"lo"`
	Hi          *float64 `json:"hi"`
	LoPct       *float64 `json:"lo_pct"`
	HiPct       *float64 `json:"hi_pct"`
	P           *float64 `json:"p"`
	PHolm       *float64 `json:"p_holm"`
	Significant bool     `json:"significant"`
}

type jsonVerdict struct {
	Condition string   `json:"condition"`
	Pair      int      `json:"pair"`
	Bound     *float64 `json:"bound"`
	Interval  bool     `json:"interval"`
	Held      bool     `json:"held"`
	Why       string   `json:"why"`
}

func orNull(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func jsonCaseOf(c Case) jsonCase {
	jc := jsonCase{Vars: map[string]string{}, Test: c.Test}
	for _, v := range c.Vars {
		jc.Vars[v.Name] = v.Value
	}
	return jc
}

// WriteJSON writes the comparison as one JSON object: the sides, the
// confidence, the number of tests, every pair with its rows, the cases
// without a partner, and the conditions' verdicts (pair is an index into
// pairs) with "held" true when any held.
func (r *Result) WriteJSON(w io.Writer) error {
	out := jsonResult{Format: JSONFormat, Version: JSONVersion,
		A: jsonSide(r.A), B: jsonSide(r.B), Confidence: r.Confidence, Tests: r.Tests,
		Pairs: []jsonPair{}, UnmatchedA: []jsonCase{}, UnmatchedB: []jsonCase{}, Conditions: []jsonVerdict{}, Held: r.Held()}
	for _, p := range r.Pairs {
		jp := jsonPair{A: jsonCaseOf(p.A), B: jsonCaseOf(p.B), RunsA: p.RunsA, RunsB: p.RunsB, Rows: []jsonRow{}}
		for _, row := range p.Rows {
			jp.Rows = append(jp.Rows, jsonRow{Series: row.Series, Stat: row.Stat, Unit: row.Unit, NA: row.NA, NB: row.NB,
				A: orNull(row.A), B: orNull(row.B), Diff: orNull(row.Diff), DiffPct: orNull(row.Pct(row.Diff)),
				Lo: orNull(row.Lo), Hi: orNull(row.Hi), LoPct: orNull(row.Pct(row.Lo)), HiPct: orNull(row.Pct(row.Hi)),
				P: orNull(row.P), PHolm: orNull(row.PHolm), Significant: row.Significant})
		}
		out.Pairs = append(out.Pairs, jp)
	}
	for _, c := range r.UnmatchedA {
		out.UnmatchedA = append(out.UnmatchedA, jsonCaseOf(c))
	}
	for _, c := range r.UnmatchedB {
		out.UnmatchedB = append(out.UnmatchedB, jsonCaseOf(c))
	}
	for _, v := range r.Verdicts {
		out.Conditions = append(out.Conditions, jsonVerdict{Condition: v.Condition.Text, Pair: v.Pair, Bound: orNull(v.Bound),
			Interval: v.Interval, Held: v.Held, Why: r.Explain(v)})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// decimals gives about three significant digits of x without an
// exponent.
func decimals(x float64) int {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	d := 2 - int(math.Floor(math.Log10(math.Abs(x))))
	return max(0, min(d, 6))
}

// magnitude is the largest absolute value of xs, those that are numbers.
func magnitude(xs ...float64) float64 {
	m := math.NaN()
	for _, x := range xs {
		if a := math.Abs(x); !math.IsNaN(a) && !math.IsInf(a, 0) && !(a <= m) {
			m = a
		}
	}
	return m
}

// formatNum writes x with dec decimals (-1: as few as it needs), "–" for
// none.
func formatNum(x float64, dec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', dec, 64)
}

// signed is formatNum with the sign always written.
func signed(x float64, dec int) string {
	s := formatNum(x, dec)
	if x >= 0 && !math.IsNaN(x) && !math.IsInf(x, 0) {
		s = "+" + s
	}
	return s
}

func formatP(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return strconv.FormatFloat(p, 'f', 3, 64)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
