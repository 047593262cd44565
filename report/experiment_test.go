package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"wanlab/experiment"
	"wanlab/internal/resultstest"
	"wanlab/plot"
	"wanlab/results"
)

// e1Cases are the cases of examples/e1.yaml: the 0 ms row of five
// transports; five delays, five transports and five variants of the path,
// less the two TCP-only variants for the other transports; and the direct
// row: 105 cases.
func e1Cases() (vars []string, cases []resultstest.Case) {
	transports := []struct{ name, test string }{
		{"udp", "udp_flood"}, {"reno", "tcp_upload"}, {"cubic", "tcp_upload"}, {"tfrc", "tfrc_upload"}, {"quic", "quic_upload"},
	}
	for _, tr := range transports {
		cases = append(cases, resultstest.Case{
			Vars: map[string]string{"delay": "0ms", "transport": tr.name, "variant": "fixed"},
			Test: tr.test, Path: resultstest.Path{RateMbit: 100, BaseRTTMs: 0.1, BloatMs: 5},
		})
	}
	for _, delay := range []float64{10, 30, 50, 70, 100} {
		for _, tr := range transports {
			for _, variant := range []string{"fixed", "fixed_wmem", "jitter", "jitter_reorder3", "fifo_jitter"} {
				if (variant == "jitter_reorder3" || variant == "fixed_wmem") && tr.test != "tcp_upload" {
					continue
				}
				cases = append(cases, resultstest.Case{
					Vars: map[string]string{"delay": fmt.Sprintf("%gms", delay), "transport": tr.name, "variant": variant},
					Test: tr.test, Path: resultstest.Path{RateMbit: 100, BaseRTTMs: delay, BloatMs: 5},
				})
			}
		}
	}
	for _, tr := range transports {
		cases = append(cases, resultstest.Case{
			Vars: map[string]string{"delay": "direct", "transport": tr.name, "variant": "direct"},
			Test: tr.test, Path: resultstest.Path{RateMbit: 1000, BaseRTTMs: 0.1, BloatMs: 1},
		})
	}
	return []string{"delay", "transport", "variant"}, cases
}

// sweepCases are a sweep of one variable: tcp_upload at four delays.
func sweepCases() (vars []string, cases []resultstest.Case) {
	for _, delay := range []float64{10, 30, 50, 70} {
		cases = append(cases, resultstest.Case{
			Vars: map[string]string{"delay": fmt.Sprintf("%gms", delay)},
			Test: "tcp_upload", Path: resultstest.Path{RateMbit: 10, BaseRTTMs: 2 * delay, BloatMs: 30},
		})
	}
	return []string{"delay"}, cases
}

// writeExperiment writes an experiment's results directory into dir and
// reads it back as `wanlab report DIR` does: its runs with their samples,
// its tables, and a sweep graph of each (testSweep). Every run is
// faithful unless edit changes it.
func writeExperiment(t testing.TB, dir string, vars []string, cases []resultstest.Case, repeat int, l resultstest.Lengths,
	edit func(d *results.Document, c, rep int)) *Experiment {
	t.Helper()
	_, err := resultstest.Experiment(dir, "e-test", vars, cases, repeat, l, func(d *results.Document, c, rep int) {
		d.Router = synthRouter(faithfulRun, d.Run.Path.Up)
		if edit != nil {
			edit(d, c, rep)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return readExperiment(t, dir)
}

func readExperiment(t testing.TB, dir string) *Experiment {
	t.Helper()
	rs, err := experiment.OpenRuns(dir, experiment.OpenOptions{Samples: true})
	if err != nil {
		t.Fatal(err)
	}
	e := ExperimentOf(rs)
	tables, err := experiment.Tables(dir, experiment.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		e.Tables = append(e.Tables, Table{Table: tb, Sweep: testSweep(tb)})
	}
	return e
}

// testSweep draws a table as `wanlab table --plot` would, near enough
// for the report's tests: its rows along x, a line per column.
func testSweep(t *experiment.Table) *plot.Sweep {
	s := &plot.Sweep{Title: t.Caption(), XLabel: t.RowVar, YLabel: t.Stat + " (" + t.Unit + ")", Categories: t.Rows}
	for j, col := range t.Cols {
		g := plot.SweepGroup{Name: col}
		for i, row := range t.Rows {
			c := t.Cells[i][j]
			p := plot.SweepPoint{Category: row, Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
			if c.N > 0 {
				p.Mean = c.Summary.Mean
			}
			g.Points = append(g.Points, p)
		}
		s.Groups = append(s.Groups, g)
	}
	return s
}

func renderExperiment(t testing.TB, e *Experiment, o Options) []byte {
	t.Helper()
	var buf strings.Builder
	if err := WriteExperiment(&buf, e, o); err != nil {
		t.Fatal(err)
	}
	return []byte(buf.String())
}

// maxE1Report is the most E1's whole report may weigh (issue 19: its
// report of per-run sections with their static graphs weighed 21.6 MB).
const maxE1Report = 5 << 20

// TestE1ReportSize measures the report of an experiment of E1's shape
// (examples/e1.yaml: 105 cases, three repetitions each, 315 runs of UDP,
// TCP, TFRC and QUIC) whose runs are as long as an experiment's (30 s of
// load between 5 s of lead and tail, a sample every 0.2 s), and holds it
// under 5 MB.
func TestE1ReportSize(t *testing.T) {
	vars, cases := e1Cases()
	t0 := time.Now()
	keys := recordedFlowSeries(t)
	e := writeExperiment(t, t.TempDir(), vars, cases, 3, resultstest.MainJob, func(d *results.Document, _, _ int) {
		asRecorded(d, keys)
	})
	t.Logf("written and read in %v", time.Since(t0))
	t0 = time.Now()
	defer func() { t.Logf("rendered in %v", time.Since(t0)) }()
	runs := 0
	for _, c := range e.Cases {
		runs += len(c.Runs)
	}
	if len(e.Cases) != 105 || runs != 315 || len(e.Tables) != 6 {
		t.Fatalf("%d cases, %d runs, %d tables; E1 has 105, 315 and 6", len(e.Cases), runs, len(e.Tables))
	}
	page := renderExperiment(t, e, Options{})
	t.Logf("E1's report: %d runs, %.2f MB (%.1f kB a run)", runs, float64(len(page))/(1<<20), float64(len(page))/1024/float64(runs))
	if len(page) > maxE1Report {
		t.Errorf("E1's report is %.2f MB, more than %.0f MB", float64(len(page))/(1<<20), float64(maxE1Report)/(1<<20))
	}
	root := parse(t, page)
	if got := len(findAll(root, func(n *html.Node) bool { return n.Data == "details" && hasAttr(n, "data-run") })); got != 315 {
		t.Errorf("%d runs' details, want 315", got)
	}
	// The direct row's table has one row, and no sweep graph.
	if got := len(findAll(root, func(n *html.Node) bool { return n.Data == "img" })); got != 5 {
		t.Errorf("%d static images, want the sweep graphs of the 5 tables of several rows", got)
	}
}

// recordedFlowSeries returns the keys and units of the series a real
// run records of a TCP flow (its TCP_INFO at both ends, what it sent, the
// router's view of it), read from a results file `wanlab run` wrote.
func recordedFlowSeries(t testing.TB) map[string]string {
	t.Helper()
	d, err := results.ReadFile(filepath.Join("..", "results", "testdata", "v1-trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, f := range d.Flows {
		for _, s := range f.Series {
			keys[strings.TrimPrefix(s.Name, f.Label+"::")] = s.Unit
		}
	}
	if len(keys) < 20 {
		t.Fatalf("the stored run's flows have %d series: is it still a TCP run?", len(keys))
	}
	return keys
}

// asRecorded gives each load flow of a synthetic document the series a
// real run records of it (keys: a TCP flow all of them, another flow
// those that are not TCP_INFO's), and its probes the times a real one
// sends them at (a little off the grid, each its own), so that the
// report of it weighs what a real one does.
func asRecorded(d *results.Document, keys map[string]string) {
	for i := range d.Series {
		if s := &d.Series[i]; s.Unit == "ms" {
			for k := range s.Samples {
				s.Samples[k].T += float64((k*7919)%1400) * 1e-6
			}
		}
	}
	for i := range d.Flows {
		f := &d.Flows[i]
		if f.Direction == "both" || len(f.Series) == 0 {
			continue // a latency probe
		}
		like := f.Series[0]
		for k, unit := range keys {
			tcp := strings.HasPrefix(k, "tcp_") || strings.HasPrefix(k, "receiver_tcp_")
			name := f.Label + "::" + k
			if (tcp && f.Protocol != "tcp") || d.FindSeries(name) != nil {
				continue
			}
			f.Series = append(f.Series, results.Series{Name: name, Unit: unit, Window: like.Window, Samples: like.Samples})
		}
		slices.SortFunc(f.Series, func(a, b results.Series) int { return strings.Compare(a.Name, b.Name) })
	}
	d.Summarize()
}

// TestExperimentPage checks the report of a sweep by case: its table and
// sweep graph; the table of cases; and each case's section, with its
// figures over the repetitions, its verdict counts, a graph of its runs,
// and each run's details folded under it, a run not made said so.
func TestExperimentPage(t *testing.T) {
	dir := t.TempDir()
	vars, cases := sweepCases()
	e := writeExperiment(t, dir, vars, cases, 3, resultstest.Short, func(d *results.Document, c, rep int) {
		switch {
		case c == 1 && rep == 2:
			d.Router = synthRouter(lateUp, d.Run.Path.Up)
		case c == 2 && rep == 3:
			d.Run.Partial, d.Run.PartialReason = true, "interrupted"
		}
	})
	if err := os.Remove(filepath.Join(dir, e.Cases[3].Runs[0].File)); err != nil {
		t.Fatal(err)
	}
	e = readExperiment(t, dir)
	e.Source = dir
	root := parse(t, renderExperiment(t, e, Options{}))
	checkSelfContained(t, root)

	if got := text(first(root, tag("title"))); got != "wanlab report: e-test" {
		t.Errorf("title %q", got)
	}
	if got := text(first(root, func(n *html.Node) bool { return hasAttr(n, "data-totals") })); !strings.Contains(got, "4 cases, 12 runs: 10 complete, 1 partial, 1 not made. Of the runs made, 10 faithful, 1 not faithful") {
		t.Errorf("totals %q", got)
	}

	// The table and its sweep graph.
	tables := byID(root, "tables")
	tt := findAll(tables, func(n *html.Node) bool { return hasAttr(n, "data-table") })
	if len(tt) != 1 {
		t.Fatalf("%d tables, want 1", len(tt))
	}
	tab := e.Tables[0].Table
	rows := findAll(first(tt[0], tag("tbody")), tag("tr"))
	if len(rows) != len(tab.Rows) {
		t.Fatalf("the table has %d rows, want %d", len(rows), len(tab.Rows))
	}
	for i, row := range rows {
		c := tab.Cells[i][0]
		if want := figure(c.Summary.Mean); !strings.Contains(text(row), tab.Rows[i]) || !strings.Contains(text(row), want) {
			t.Errorf("table row %d %q lacks %s and %s", i, text(row), tab.Rows[i], want)
		}
	}
	checkImages(t, "tables", findAll(tables, tag("figure")))

	// The table of cases links to each case.
	caseRows := findAll(byID(root, "cases"), func(n *html.Node) bool { return n.Data == "tr" && hasAttr(n, "data-case") })
	if len(caseRows) != len(cases) {
		t.Fatalf("%d rows in the table of cases, want %d", len(caseRows), len(cases))
	}
	for i, row := range caseRows {
		if a := first(row, tag("a")); a == nil || attr(a, "href") != fmt.Sprintf("#case-%d", i+1) || !strings.Contains(text(row), cases[i].Vars["delay"]) {
			t.Errorf("case row %d: %q", i+1, text(row))
		}
	}

	sections := findAll(root, func(n *html.Node) bool { return n.Data == "section" && attr(n, "class") == "case" })
	if len(sections) != len(cases) {
		t.Fatalf("%d case sections, want %d", len(sections), len(cases))
	}
	wantVerdicts := []string{"3 0 0", "2 1 0", "3 0 1", "2 0 0"}
	for i, sec := range sections {
		c := e.Cases[i]
		if h := text(first(sec, tag("h2"))); h != fmt.Sprintf("Case %d: delay=%s", i+1, cases[i].Vars["delay"]) {
			t.Errorf("case %d: heading %q", i+1, h)
		}
		v := first(sec, func(n *html.Node) bool { return hasAttr(n, "data-verdicts") })
		if v == nil || attr(v, "data-verdicts") != wantVerdicts[i] {
			t.Errorf("case %d: verdicts (faithful, not, partial) %q, want %q: %s", i+1, attr(v, "data-verdicts"), wantVerdicts[i], text(v))
		}
		// The figures over the complete runs: each run's mean of its
		// upload, then their mean and spread.
		var docs []*results.Document
		for _, r := range c.Runs {
			if r.Status == experiment.StatusComplete {
				docs = append(docs, r.Doc)
			}
		}
		agg := aggregateOf(docs, "TCP upload", "mean")
		fig := first(sec, func(n *html.Node) bool { return n.Data == "table" && strings.Contains(attr(n, "class"), "aggregate") })
		row := first(fig, func(n *html.Node) bool { return n.Data == "tr" && strings.HasPrefix(text(n), "TCP upload") })
		if row == nil || agg.N != len(docs) || !strings.Contains(text(row), agg.Mean) || !strings.Contains(text(row), agg.Spread) {
			t.Errorf("case %d: the upload's figures %q, want mean %s ± %s over %d runs", i+1, text(row), agg.Mean, agg.Spread, len(docs))
		}
		var sum float64
		for _, d := range docs {
			sum += d.FindSeries("TCP upload").Summary.Mean
		}
		if got := figure(sum / float64(len(docs))); got != agg.Mean {
			t.Errorf("case %d: mean over the runs %s, want %s", i+1, agg.Mean, got)
		}
		names := []string{}
		for _, r := range findAll(first(fig, tag("tbody")), tag("tr")) {
			names = append(names, text(first(r, tag("th")))+" "+text(first(r, tag("td"))))
		}
		if want := []string{"TCP upload mean", "Ping (ms) ICMP mean", "Ping (ms) ICMP median"}; !slices.Equal(names, want) {
			t.Errorf("case %d: figures of %q, want %q", i+1, names, want)
		}
		// The case's graph draws every run made, and each run's own
		// graph its data.
		chart := first(sec, func(n *html.Node) bool { return hasAttr(n, "data-chart") })
		if chart == nil {
			t.Fatalf("case %d has no graph", i+1)
		}
		details := findAll(sec, tag("details"))
		if len(details) != 3 {
			t.Fatalf("case %d: %d runs' details, want 3", i+1, len(details))
		}
		made := 0
		for j, d := range details {
			r := c.Runs[j]
			sum := text(first(d, tag("summary")))
			if !strings.Contains(sum, r.File) {
				t.Errorf("case %d run %d: its line %q does not name its file", i+1, j+1, sum)
			}
			if r.Doc == nil {
				if !strings.Contains(sum, "not made") || first(d, tag("section")) != nil {
					t.Errorf("case %d run %d, not made: %q", i+1, j+1, sum)
				}
				continue
			}
			made++
			for _, s := range []string{"setup", "summary", "graphs", "fidelity"} {
				if byID(d, attr(d, "id")+"-"+s) == nil {
					t.Errorf("case %d run %d has no %s", i+1, j+1, s)
				}
			}
			if first(d, tag("img")) != nil {
				t.Errorf("case %d run %d: a static graph in a run's details", i+1, j+1)
			}
		}
		if got := strings.Count(attr(chart, "data-chart"), "-series"); got != made {
			t.Errorf("case %d: its graph draws %d runs, want %d: %s", i+1, got, made, attr(chart, "data-chart"))
		}
	}
	for _, w := range []struct{ id, kind string }{{"c2-r2", "unfaithful"}, {"c3-r3", "partial"}} {
		d := byID(root, w.id)
		if d == nil || first(d, func(n *html.Node) bool { return attr(n, "data-warning") == w.kind }) == nil {
			t.Errorf("run %s has no %s warning", w.id, w.kind)
		}
	}
}

// TestExperimentRefuses: an experiment without cases, or with a document
// that does not validate, is an error, and nothing is written.
func TestExperimentRefuses(t *testing.T) {
	bad := synthRun("tcp_upload", "bad", 1, noRouter)
	bad.Run.StepS = 0
	for name, e := range map[string]*Experiment{
		"nil":      nil,
		"no cases": {Name: "x"},
		"invalid":  {Name: "x", Cases: []Case{{Number: 1, Runs: []CaseRun{{File: "bad.json", Doc: bad}}}}},
	} {
		var buf strings.Builder
		if err := WriteExperiment(&buf, e, Options{}); err == nil || buf.Len() != 0 {
			t.Errorf("%s: error %v, %d bytes written", name, err, buf.Len())
		}
	}
}

// TestCaseOfSeveralTests: a case whose entries run several tests gives
// each test its figures and its graph, never one axis for series of
// different tests, and its runs ids that tell the tests apart.
func TestCaseOfSeveralTests(t *testing.T) {
	c := Case{Number: 1, Vars: map[string]string{"delay": "10ms"}}
	for i, test := range []string{"tcp_upload", "udp_flood"} {
		for rep := 1; rep <= 2; rep++ {
			d := synthRun(test, "", uint64(10*i+rep), faithfulRun)
			c.Runs = append(c.Runs, CaseRun{File: fmt.Sprintf("c001-t%d-%s-r%d.json.gz", i+1, test, rep), Test: test,
				Repetition: rep, Status: experiment.StatusComplete, Doc: d})
		}
	}
	root := parse(t, renderExperiment(t, &Experiment{Name: "two", Variables: []string{"delay"}, Cases: []Case{c}}, Options{}))
	groups := findAll(root, func(n *html.Node) bool { return hasAttr(n, "data-test") })
	if len(groups) != 2 {
		t.Fatalf("%d groups of runs by test, want 2", len(groups))
	}
	for i, test := range []string{"tcp_upload", "udp_flood"} {
		g := groups[i]
		spec := attr(first(g, func(n *html.Node) bool { return hasAttr(n, "data-chart") }), "data-chart")
		want := fmt.Sprintf(`{"data":["c1-%[1]s-r1-series","c1-%[1]s-r2-series"]`, test)
		if attr(g, "data-test") != test || !strings.HasPrefix(spec, want) {
			t.Errorf("group %d: test %q, graph %s; want %s and %s...", i, attr(g, "data-test"), spec, test, want)
		}
		if byID(root, fmt.Sprintf("c1-%s-r2", test)) == nil {
			t.Errorf("no run c1-%s-r2", test)
		}
	}
	if n := len(findAll(root, tag("details"))); n != 4 {
		t.Errorf("%d runs' details, want 4", n)
	}
}
