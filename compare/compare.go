// Package compare tells whether two sets of runs differ, as a researcher
// or a CI pipeline guarding a transport or qdisc change asks: for every
// series both sets have and each statistic chosen, A's and B's figure
// (the mean over their runs of each run's figure), the difference B − A
// with its confidence interval by Welch's t over the runs, and whether it
// is significant once Holm's correction has accounted for every test
// made, so that twenty statistics do not raise false alarms. A set of
// one run gives no interval, and its differences are never called
// significant. An experiment's runs are compared case by case, the cases
// matched by their variables. Conditions (ParseCondition, `wanlab compare
// --fail-if`) turn the differences into a verdict.
//
// The package reads no file: its sides are made of results documents the
// caller read (results.ReadFile) or of an experiment's runs
// (experiment.OpenRuns, FromExperiment).
package compare

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"wanlab/results"
	"wanlab/stats"
)

// DefaultStats are the statistics compared when none are chosen.
var DefaultStats = []string{"mean", "median", "p99"}

// DefaultConfidence is the confidence of the intervals and of the
// significance test (p below 1 − confidence after Holm's correction).
const DefaultConfidence = 0.95

// Options choose what is compared.
type Options struct {
	// Stats are the statistics of each run's series to compare, each one
	// of results.Stats (DefaultStats when empty).
	Stats []string
	// Series are the series to compare (a flow's own too, "TCP
	// upload::tcp_rtt"); empty: every series of the runs' that both
	// sides have, and the flows' own with FlowSeries.
	Series     []string
	FlowSeries bool
	// Where keeps only the runs whose variables (or "test") have one of
	// these values, on both sides; WhereA and WhereB on one side. A
	// value may be several joined by commas ("reno,cubic") where the
	// joined string is not itself a value. A variable that WhereA or
	// WhereB names is not matched between the sides (compare cc=reno in
	// A with cc=cubic in B).
	Where, WhereA, WhereB map[string][]string
	// Confidence is the confidence of the intervals, in (0, 1)
	// (DefaultConfidence when 0).
	Confidence float64
	// Conditions are judged on the differences (Result.Verdicts); their
	// series and statistics are compared whatever Series and Stats say.
	Conditions []Condition
}

// Result is a comparison of two sides.
type Result struct {
	// A and B describe the sides.
	A, B SideInfo
	// Confidence is the intervals' confidence; a difference is
	// significant when its p-value after Holm's correction is below
	// 1 − Confidence.
	Confidence float64
	// Tests counts the tests made (the rows with an interval): Holm's
	// correction is over all of them.
	Tests int
	// Pairs are the cases compared, in A's order.
	Pairs []Pair
	// UnmatchedA and UnmatchedB are the cases of one side that meet no
	// case of the other.
	UnmatchedA, UnmatchedB []Case
	// Verdicts are the conditions' verdicts, condition by condition,
	// each on every pair that has its series and statistic.
	Verdicts []Verdict
}

// SideInfo describes a side of a comparison.
type SideInfo struct {
	// Label names the side as given; Runs counts its runs compared and
	// Skipped those left out because they are not complete.
	Label         string
	Runs, Skipped int
}

// Pair is a case of A compared with a case of B.
type Pair struct {
	// A and B are the cases; they differ only in the variables one side
	// lacks or that WhereA and WhereB chose apart.
	A, B Case
	// RunsA and RunsB count their runs.
	RunsA, RunsB int
	// Rows are the series' statistics compared, series by series: the
	// run's main series first, then its latency, then the others in the
	// order of A's first run.
	Rows []Row
}

// Row is one statistic of one series compared.
type Row struct {
	// Series, Stat and Unit say what is compared (Unit is the
	// statistic's: the series' unit, Mbits for a total of Mbits/s).
	Series, Stat, Unit string
	// NA and NB count the runs with a figure on each side; A and B are
	// the mean of their figures (NaN without one).
	NA, NB int
	A, B   float64
	// Diff is B − A; Lo and Hi bound it at the comparison's confidence
	// (Welch's interval), NaN when a side has fewer than two runs.
	Diff, Lo, Hi float64
	// P is the two-sided p-value of "no difference" by Welch's t, and
	// PHolm the same after Holm's correction across all of the
	// comparison's tests; both NaN without an interval.
	P, PHolm float64
	// Significant says PHolm < 1 − confidence: never without an interval.
	Significant bool
}

// HasInterval reports whether the row has a confidence interval: both
// sides have two runs or more.
func (r *Row) HasInterval() bool { return !math.IsNaN(r.Lo) }

// Pct returns x as a percentage of A's figure, NaN when A is 0 or missing.
func (r *Row) Pct(x float64) float64 {
	if r.A == 0 || math.IsNaN(r.A) || math.IsInf(r.A, 0) {
		return math.NaN()
	}
	return x / math.Abs(r.A) * 100
}

// Held reports whether any condition held on any pair.
func (r *Result) Held() bool {
	for _, v := range r.Verdicts {
		if v.Held {
			return true
		}
	}
	return false
}

// Compare compares side b with side a. Its errors are all about the
// input (a statistic, series, variable or value that the sides do not
// have, sides with no case in common, a condition that cannot be judged)
// and each says what to change.
func Compare(a, b *Side, o Options) (*Result, error) {
	if o.Confidence == 0 {
		o.Confidence = DefaultConfidence
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return nil, fmt.Errorf("confidence %g: give a number between 0 and 1, such as 0.95", o.Confidence)
	}
	if len(o.Stats) == 0 {
		o.Stats = DefaultStats
	}
	for _, st := range o.Stats {
		if !slices.Contains(results.Stats, st) {
			return nil, fmt.Errorf("statistic %q: use one of %s", st, strings.Join(results.Stats, ", "))
		}
	}
	if len(a.Runs) == 0 || len(b.Runs) == 0 {
		empty := a
		if len(a.Runs) > 0 {
			empty = b
		}
		return nil, fmt.Errorf("%s holds no complete run to compare", empty.Label)
	}
	where, err := resolveWhere("--where", o.Where, a, b)
	if err != nil {
		return nil, err
	}
	whereA, err := resolveWhere("--where-a", o.WhereA, a)
	if err != nil {
		return nil, err
	}
	whereB, err := resolveWhere("--where-b", o.WhereB, b)
	if err != nil {
		return nil, err
	}
	ga := a.groups(merge(where, whereA))
	gb := b.groups(merge(where, whereB))
	if len(ga) == 0 || len(gb) == 0 {
		empty := a
		if len(ga) > 0 {
			empty = b
		}
		return nil, fmt.Errorf("no run of %s is left once --where has chosen: widen it", empty.Label)
	}

	res := &Result{
		A:          SideInfo{Label: a.Label, Skipped: a.Skipped},
		B:          SideInfo{Label: b.Label, Skipped: b.Skipped},
		Confidence: o.Confidence,
	}
	matched := matcher(a, b, o)
	pairedB := make([]bool, len(gb))
	for _, x := range ga {
		paired := false
		for j, y := range gb {
			if matched(x.key, y.key) {
				res.Pairs = append(res.Pairs, Pair{A: x.key, B: y.key, RunsA: len(x.docs), RunsB: len(y.docs),
					Rows: rows(x.docs, y.docs, o)})
				paired, pairedB[j] = true, true
			}
		}
		if !paired {
			res.UnmatchedA = append(res.UnmatchedA, x.key)
		}
	}
	for j, y := range gb {
		if !pairedB[j] {
			res.UnmatchedB = append(res.UnmatchedB, y.key)
		}
	}
	if len(res.Pairs) == 0 {
		return nil, fmt.Errorf("no case of %s matches one of %s (cases are matched by their test and the variables both have): %s has %s; %s has %s",
			a.Label, b.Label, a.Label, casesText(ga), b.Label, casesText(gb))
	}
	for _, g := range ga {
		res.A.Runs += len(g.docs)
	}
	for _, g := range gb {
		res.B.Runs += len(g.docs)
	}
	if err := res.checkNamed(o, ga, gb); err != nil {
		return nil, err
	}
	res.holm()
	if err := res.judge(o.Conditions); err != nil {
		return nil, err
	}
	return res, nil
}

// merge joins two choices of values; a variable both name keeps only the
// values both allow.
func merge(x, y map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, vs := range x {
		out[k] = vs
	}
	for k, vs := range y {
		if prev, ok := out[k]; ok {
			vs = slices.DeleteFunc(slices.Clone(vs), func(v string) bool { return !slices.Contains(prev, v) })
		}
		out[k] = vs
	}
	return out
}

// resolveWhere checks a choice of values against the sides it applies
// to, and returns it with values joined by commas split where the joined
// string is not itself a value.
func resolveWhere(flag string, where map[string][]string, sides ...*Side) (map[string][]string, error) {
	out := map[string][]string{}
	for _, name := range sortedKeys(where) {
		var values []string
		known := false
		for _, s := range sides {
			if s.has(name) {
				known = true
				for _, v := range s.values(name) {
					if !slices.Contains(values, v) {
						values = append(values, v)
					}
				}
			}
		}
		if !known {
			var names []string
			for _, s := range sides {
				names = append(names, s.Variables...)
			}
			names = append(names, "test")
			return nil, fmt.Errorf("%s %s=...: %s is not a variable of %s (the variables are %s)", flag, name, name, sideNames(sides), strings.Join(dedupe(names), ", "))
		}
		for _, raw := range where[name] {
			vs := []string{raw}
			if !slices.Contains(values, raw) {
				vs = strings.Split(raw, ",")
			}
			for _, v := range vs {
				if !slices.Contains(values, v) {
					return nil, fmt.Errorf("%s %s=%s: %s has no value %q in %s (its values are %s)", flag, name, raw, name, v, sideNames(sides), strings.Join(values, ", "))
				}
				if !slices.Contains(out[name], v) {
					out[name] = append(out[name], v)
				}
			}
		}
	}
	return out, nil
}

// matcher returns whether a case of A meets a case of B: the same test and
// the same value of every variable both sides have, but for those that
// WhereA or WhereB chose (the sides differ in them by design).
func matcher(a, b *Side, o Options) func(x, y Case) bool {
	apart := func(name string) bool {
		_, inA := o.WhereA[name]
		_, inB := o.WhereB[name]
		return inA || inB
	}
	var shared []string
	for _, name := range append(slices.Clone(a.Variables), "test") {
		if b.has(name) && !apart(name) {
			shared = append(shared, name)
		}
	}
	return func(x, y Case) bool {
		for _, name := range shared {
			vx, _ := x.value(name)
			vy, _ := y.value(name)
			if vx != vy {
				return false
			}
		}
		return true
	}
}

// rows compares every series and statistic the two groups of runs have.
func rows(a, b []*results.Document, o Options) []Row {
	var out []Row
	for _, name := range seriesToCompare(a, b, o) {
		statsFor := slices.Clone(o.Stats)
		for _, c := range o.Conditions {
			if c.Series == name && !slices.Contains(statsFor, c.Stat) {
				statsFor = append(statsFor, c.Stat)
			}
		}
		for _, st := range statsFor {
			xa, unit := figures(a, name, st)
			xb, _ := figures(b, name, st)
			d := stats.Welch(xa, xb, o.Confidence)
			if d.NA == 0 && d.NB == 0 {
				// A statistic no run has (the total of a delay).
				continue
			}
			out = append(out, Row{Series: name, Stat: st, Unit: unit, NA: d.NA, NB: d.NB,
				A: d.MeanA, B: d.MeanB, Diff: d.Diff, Lo: d.Lo, Hi: d.Hi, P: d.P, PHolm: math.NaN()})
		}
	}
	return out
}

// figures returns each run's figure of a series' statistic (NaN where the
// run's series has none) and the statistic's unit.
func figures(docs []*results.Document, series, stat string) ([]float64, string) {
	var xs []float64
	unit := ""
	for _, d := range docs {
		s := d.FindSeries(series)
		if s == nil {
			continue
		}
		v, _ := s.Summary.Stat(stat)
		xs = append(xs, v)
		if unit == "" {
			unit = s.StatUnit(stat)
		}
	}
	return xs, unit
}

// seriesToCompare lists the series both groups have among those chosen:
// the named ones (Options.Series and the conditions'), or else the runs'
// series (with the flows' own under FlowSeries) and the conditions'. The
// main series comes first, then the latency series, then the others in
// the order of the runs of a.
func seriesToCompare(a, b []*results.Document, o Options) []string {
	named := slices.Clone(o.Series)
	for _, c := range o.Conditions {
		if !slices.Contains(named, c.Series) {
			named = append(named, c.Series)
		}
	}
	var candidates []string
	add := func(name string) {
		if !slices.Contains(candidates, name) {
			candidates = append(candidates, name)
		}
	}
	first := a[0]
	if s, _ := first.MainSeries(); s != nil {
		add(s.Name)
	}
	if s := first.LatencySeries(); s != nil {
		add(s.Name)
	}
	if len(o.Series) == 0 {
		for _, d := range a {
			for _, s := range d.Series {
				add(s.Name)
			}
			if o.FlowSeries {
				for _, f := range d.Flows {
					for _, s := range f.Series {
						add(s.Name)
					}
				}
			}
		}
	}
	for _, n := range named {
		add(n)
	}
	var out []string
	for _, name := range candidates {
		if len(o.Series) > 0 && !slices.Contains(named, name) {
			continue
		}
		if anyHas(a, name) && anyHas(b, name) {
			out = append(out, name)
		}
	}
	return out
}

func anyHas(docs []*results.Document, series string) bool {
	return slices.ContainsFunc(docs, func(d *results.Document) bool { return d.FindSeries(series) != nil })
}

// checkNamed says which named series no pair compared: a typo, or a
// series only one side has.
func (r *Result) checkNamed(o Options, ga, gb []*group) error {
	compared := func(series string) bool {
		for _, p := range r.Pairs {
			for _, row := range p.Rows {
				if row.Series == series {
					return true
				}
			}
		}
		return false
	}
	for _, name := range o.Series {
		if !compared(name) {
			return fmt.Errorf("--series %q: no case of both %s and %s has it; the series they share are %s", name, r.A.Label, r.B.Label, shared(ga, gb))
		}
	}
	for _, c := range o.Conditions {
		if !compared(c.Series) {
			return fmt.Errorf("--fail-if %q: no case of both %s and %s has the series %q; the series they share are %s", c.Text, r.A.Label, r.B.Label, c.Series, shared(ga, gb))
		}
	}
	return nil
}

// shared lists, quoted, the series that some case of A and a case of B
// both have, for a message that names what could have been chosen.
func shared(ga, gb []*group) string {
	var names []string
	for _, x := range ga {
		for _, y := range gb {
			for _, name := range seriesToCompare(x.docs, y.docs, Options{}) {
				if q := strconv.Quote(name); !slices.Contains(names, q) {
					names = append(names, q)
				}
			}
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// holm adjusts every row's p-value for all the tests made, and judges
// significance on the adjusted value.
func (r *Result) holm() {
	var ps []float64
	for _, p := range r.Pairs {
		for _, row := range p.Rows {
			ps = append(ps, row.P)
		}
	}
	adj := stats.Holm(ps)
	k := 0
	for i := range r.Pairs {
		for j := range r.Pairs[i].Rows {
			row := &r.Pairs[i].Rows[j]
			row.PHolm = adj[k]
			k++
			if !math.IsNaN(row.PHolm) {
				r.Tests++
				row.Significant = row.PHolm < 1-r.Confidence
			}
		}
	}
}

func casesText(gs []*group) string {
	var parts []string
	for i, g := range gs {
		if i == 4 && len(gs) > 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(gs)-4))
			break
		}
		parts = append(parts, g.key.String())
	}
	return strings.Join(parts, "; ")
}

func sideNames(sides []*Side) string {
	names := make([]string, len(sides))
	for i, s := range sides {
		names[i] = s.Label
	}
	return strings.Join(names, " or ")
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
