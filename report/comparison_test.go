package report

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"wanlab/compare"
	"wanlab/experiment"
	"wanlab/internal/resultstest"
)

// comparedRuns builds n tcp_upload runs across a bottleneck of rate
// Mbit/s: the report's runs, and the same as a side of a comparison.
func comparedRuns(label string, rate float64, seed uint64, n int) ([]Run, *compare.Side) {
	side := &compare.Side{Label: label}
	var runs []Run
	for i := range n {
		d := resultstest.Run("tcp_upload", "", seed+uint64(i), resultstest.Path{RateMbit: rate, BaseRTTMs: 40, BloatMs: 60})
		runs = append(runs, Run{Source: label + "/run.json.gz", Doc: d})
		side.Runs = append(side.Runs, compare.Run{Source: label, Doc: d})
	}
	return runs, side
}

// TestComparisonSection: a report of runs compared with others has the
// section "Comparison with B" after its table across runs and before the
// runs, linked from its contents: the comparison's caption, a table per
// pair whose rows are the comparison's, the significant ones (twice the
// rate's throughput) marked by a class and in words, the others not, the
// notes and the conditions' verdicts. B's label is text.
func TestComparisonSection(t *testing.T) {
	runsA, a := comparedRuns("base", 10, 1, 5)
	_, b := comparedRuns(xssTitle, 20, 11, 5)
	cond, err := compare.ParseCondition("TCP upload mean > +50%")
	if err != nil {
		t.Fatal(err)
	}
	res, err := compare.Compare(a, b, compare.Options{Conditions: []compare.Condition{cond}})
	if err != nil {
		t.Fatal(err)
	}
	root := parse(t, render(t, runsA, Options{Compare: res}))
	checkSelfContained(t, root)
	sec := checkComparison(t, root, res)
	if !before(root, byID(root, "overview"), sec) || !before(root, sec, byID(root, "run-1")) {
		t.Error("the comparison is not between the table across runs and the runs")
	}
	if got := text(first(sec, func(n *html.Node) bool { return attr(n, "class") == "conditions" })); !strings.Contains(got, cond.Text+": "+res.Explain(res.Verdicts[0])) {
		t.Errorf("the conditions say %q", got)
	}

	// Without Options.Compare, no section.
	if byID(parse(t, render(t, runsA, Options{})), "comparison") != nil {
		t.Error("a report without a comparison has its section")
	}
}

// TestExperimentComparison: the report of an experiment by case, compared
// with another experiment case by case, has the same section between its
// tables and its cases, linked from its contents.
func TestExperimentComparison(t *testing.T) {
	vars, cases := sweepCases()
	dirA, dirB := t.TempDir(), t.TempDir()
	e := writeExperiment(t, dirA, vars, cases, 2, resultstest.Short, nil)
	for i := range cases {
		cases[i].Path.RateMbit *= 2
	}
	writeExperiment(t, dirB, vars, cases, 2, resultstest.Short, nil)
	var sides []*compare.Side
	for _, dir := range []string{dirA, dirB} {
		rs, err := experiment.OpenRuns(dir, experiment.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sides = append(sides, compare.FromExperiment(dir, rs))
	}
	res, err := compare.Compare(sides[0], sides[1], compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pairs) != len(cases) {
		t.Fatalf("%d pairs compared, want a case each", len(res.Pairs))
	}
	root := parse(t, renderExperiment(t, e, Options{Compare: res}))
	checkSelfContained(t, root)
	sec := checkComparison(t, root, res)
	if !before(root, byID(root, "tables"), sec) || !before(root, sec, byID(root, "cases")) {
		t.Error("the comparison is not between the tables and the cases")
	}
}

// checkComparison checks the section #comparison against the comparison
// it shows, and returns it.
func checkComparison(t *testing.T, root *html.Node, res *compare.Result) *html.Node {
	t.Helper()
	sec := byID(root, "comparison")
	if sec == nil {
		t.Fatal("no #comparison section")
	}
	want := "Comparison with " + res.B.Label
	if got := text(first(sec, tag("h2"))); got != want {
		t.Errorf("the section's heading is %q, want %q", got, want)
	}
	if findAll(sec, tag("script")) != nil {
		t.Error("B's label made a script element")
	}
	links := findAll(first(root, tag("nav")), func(n *html.Node) bool { return attr(n, "href") == "#comparison" })
	if len(links) != 1 || text(links[0]) != want {
		t.Errorf("the contents link to the comparison %d times", len(links))
	}
	all := text(sec)
	for _, s := range append(res.Caption(), res.Notes()...) {
		if !strings.Contains(all, strings.Join(strings.Fields(s), " ")) {
			t.Errorf("the section lacks %q", s)
		}
	}
	pairs := findAll(sec, func(n *html.Node) bool { return hasAttr(n, "data-pair") })
	if len(pairs) != len(res.Pairs) {
		t.Fatalf("%d pairs shown, want %d", len(pairs), len(res.Pairs))
	}
	significant, not := 0, 0
	for i, pn := range pairs {
		p := &res.Pairs[i]
		if got := text(first(pn, tag("h3"))); got != p.Heading() {
			t.Errorf("pair %d: heading %q, want %q", i, got, p.Heading())
		}
		var head []string
		for _, th := range findAll(first(pn, tag("thead")), tag("th")) {
			head = append(head, text(th))
		}
		if !slices.Equal(head, res.Header()) {
			t.Errorf("pair %d: header %q, want %q", i, head, res.Header())
		}
		rows := findAll(first(pn, tag("tbody")), tag("tr"))
		if len(rows) != len(p.Rows) {
			t.Fatalf("pair %d: %d rows, want %d", i, len(rows), len(p.Rows))
		}
		for j, tr := range rows {
			row := &p.Rows[j]
			var cells []string
			for c := tr.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode {
					cells = append(cells, text(c))
				}
			}
			if !slices.Equal(cells, res.Cells(row)) {
				t.Errorf("pair %d row %d: %q, want %q", i, j, cells, res.Cells(row))
			}
			marked := attr(tr, "class") == "significant"
			if marked != row.Significant || (cells[len(cells)-1] == "yes") != row.Significant {
				t.Errorf("pair %d, %s %s: marked %v, says %q; significant %v", i, row.Series, row.Stat, marked, cells[len(cells)-1], row.Significant)
			}
			if row.Significant {
				significant++
			} else {
				not++
			}
		}
	}
	// Twice the rate is a significant change of the throughput; the
	// latency, the same path's, is not.
	if significant == 0 || not == 0 {
		t.Errorf("%d rows significant, %d not: want some of each", significant, not)
	}
	return sec
}

// before reports whether element a comes before element b in the page.
func before(root, a, b *html.Node) bool {
	order := findAll(root, func(n *html.Node) bool { return n.Type == html.ElementNode })
	i, j := slices.Index(order, a), slices.Index(order, b)
	return a != nil && b != nil && i < j
}
