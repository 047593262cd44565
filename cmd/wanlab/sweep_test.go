package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"wanlab/experiment"
	"wanlab/internal/svgtest"
)

// runFigures runs the experiment file's runs with a resultsBackend whose
// runs' main series have the means mean gives, into a new results
// directory.
func runFigures(t *testing.T, file string, mean func(r *experiment.Run) float64) string {
	t.Helper()
	b := resultsBackend{mean}
	p, err := experiment.Load("x.yaml", []byte(file), experiment.LoadOptions{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := experiment.Execute(context.Background(), p, b, experiment.ExecOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// e1Shape is E1's shape, smaller: two transports (of two tests) over
// delays that are not equally spaced, with fixed or varying delay.
const e1Shape = `name: e1
vars:
  delay: [10ms, 30ms, 50ms, 70ms, 100ms]
  transport:
    - reno: {test: tcp_upload}
    - quic: {test: quic_upload}
  variant: [fixed, jitter]
path:
  up: "netem delay ${delay}"
tests:
  - test: ${test}
repeat: 3
`

// e1Goodput is a goodput for E1's runs: reno falls with the delay, QUIC
// at 100 ms spreads wider than its mean (0.5, 1 and 9 Mbit/s, a standard
// deviation of 4.8 around 3.5).
func e1Goodput(r *experiment.Run) float64 {
	d, _ := r.Case.Value("delay")
	tr, _ := r.Case.Value("transport")
	ms, _ := strconv.ParseFloat(strings.TrimSuffix(d, "ms"), 64)
	switch {
	case tr == "quic" && ms == 100:
		return []float64{0.5, 1, 9}[r.Repetition-1]
	case tr == "quic":
		return 40 - 0.38*ms + float64(r.Repetition)
	}
	return 90 - 0.5*ms + float64(r.Repetition)
}

// readSVG reads back an SVG file.
func readSVG(t *testing.T, path string) *svgtest.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := svgtest.Read(data)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func hasText(img *svgtest.Image, sub string) bool {
	return slices.ContainsFunc(img.Texts, func(tx svgtest.Text) bool { return strings.Contains(tx.S, sub) })
}

// TestTablePlot draws E1's table as a graph (issue 19 finding 2): a
// numeric delay axis read back from the SVG, the title naming --where's
// variant, the y label's unit once, no error bar below zero, and the path
// of every file written printed.
func TestTablePlot(t *testing.T) {
	dir := runFigures(t, e1Shape, e1Goodput)
	graph := filepath.Join(t.TempDir(), "e1.svg")
	stdout, stderr, code := runWanlab(t, "table", dir, "--where", "variant=fixed", "--plot", graph)
	if code != 0 || !strings.Contains(stdout, "delay \\ transport") || stderr != "graph: "+graph+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	img := readSVG(t, graph)
	ticks, err := img.XTicks()
	if err != nil {
		t.Fatal(err)
	}
	// 10, 30, 50, 70 and 100 ms in proportion: 30 ms is 2/9 of the way
	// from 10 to 100 ms (a categorical axis put it at 1/4).
	var labels []string
	for _, tk := range ticks {
		labels = append(labels, tk.Label)
	}
	if !slices.Equal(labels, []string{"10", "30", "50", "70", "100"}) {
		t.Fatalf("x ticks %q", labels)
	}
	span := ticks[4].At - ticks[0].At
	for i, ms := range []float64{10, 30, 50, 70, 100} {
		if got, want := (ticks[i].At-ticks[0].At)/span, (ms-10)/90; math.Abs(got-want) > 0.005 {
			t.Errorf("%v ms is %.3f of the way along the axis, want %.3f", ms, got, want)
		}
	}
	for _, want := range []string{"delay (ms)", "mean of TCP upload / QUIC upload (Mbit/s)", "e1: mean of TCP upload / QUIC upload by delay and transport (variant=fixed)",
		"error bars: ± sample std dev across repetitions", "1 error bar cut at 0: a rate cannot be negative"} {
		if !hasText(img, want) {
			t.Errorf("the graph has no text %q", want)
		}
	}
	// No error bar reaches below 0.
	zero, err := img.YTickAt("0")
	if err != nil {
		t.Fatal(err)
	}
	bars := 0
	for _, p := range img.Paths {
		if x, lo, hi, ok := p.Vertical(); ok && p.Stroke != "#000000" && p.Stroke != "#DDDDDD" && hi-lo > 0 {
			bars++
			if !(lo >= zero-0.01) {
				t.Errorf("an error bar at x=%v goes down to %.1f pt below the 0 tick (%v)", x, zero-lo, zero)
			}
		}
	}
	if bars != 10 {
		t.Errorf("%d error bars, want one per cell (10)", bars)
	}

	// Two tables are two graphs, named after them and titled by them, and
	// both are said; with the table in a file, on stdout.
	table := filepath.Join(t.TempDir(), "e1.txt")
	stdout, stderr, code = runWanlab(t, "table", dir, "-o", table, "--plot", graph, "--spread", "minmax")
	fixed, jitter := filepath.Join(filepath.Dir(graph), "e1-fixed.svg"), filepath.Join(filepath.Dir(graph), "e1-jitter.svg")
	if want := "table: " + table + "\ngraph: " + fixed + "\ngraph: " + jitter + "\n"; code != 0 || stdout != want || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
	}
	if img := readSVG(t, jitter); !hasText(img, "(variant=jitter)") || hasText(img, "variant=fixed") || !hasText(img, "error bars: min–max across repetitions") || hasText(img, "cut at 0") {
		t.Errorf("the jitter table's graph: %v", img.Texts)
	}
	// --title replaces the title.
	if _, stderr, code := runWanlab(t, "table", dir, "--where", "variant=jitter", "--plot", graph, "--title", "E1 with jitter"); code != 0 || !hasText(readSVG(t, graph), "E1 with jitter") {
		t.Errorf("--title: exit %d, %s", code, stderr)
	}
}

// TestPlotSweepIsTablePlot: wanlab plot DIR --kind sweep draws the graph
// table --plot draws, from the directory or its summary file.
func TestPlotSweepIsTablePlot(t *testing.T) {
	dir := runFigures(t, e1Shape, e1Goodput)
	out := t.TempDir()
	a, b, c := filepath.Join(out, "a.svg"), filepath.Join(out, "b.svg"), filepath.Join(out, "c.svg")
	summary := filepath.Join(out, "e1.summary.json.gz")
	if _, stderr, code := runWanlab(t, "experiment", "summarize", dir, "-o", summary); code != 0 {
		t.Fatalf("summarize: %s", stderr)
	}
	if _, stderr, code := runWanlab(t, "table", dir, "--where", "variant=jitter", "--spread", "minmax", "--plot", a); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := runWanlab(t, "plot", dir, "--kind", "sweep", "--where", "variant=jitter", "--spread", "minmax", "-o", b)
	if code != 0 || stdout != "sweep graph: "+b+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, stderr, code := runWanlab(t, "plot", summary, "--kind", "sweep", "--where", "variant=jitter", "--spread", "minmax", "-o", c); code != 0 {
		t.Fatal(stderr)
	}
	ga, _ := os.ReadFile(a)
	gb, _ := os.ReadFile(b)
	gc, _ := os.ReadFile(c)
	if len(ga) == 0 || string(ga) != string(gb) || string(gb) != string(gc) {
		t.Error("table --plot, plot --kind sweep and plot of the summary file drew different graphs")
	}
}

// TestPlotExperimentBoxByCase: a box plot of an experiment's directory
// draws a box per case over its repetitions, labelled by the case (issue
// 19 finding 3: E1 drew a box per run).
func TestPlotExperimentBoxByCase(t *testing.T) {
	dir := runFigures(t, e1Shape, nil)
	out := filepath.Join(t.TempDir(), "box.svg")
	stdout, stderr, code := runWanlab(t, "plot", dir, "--kind", "box", "--where", "variant=fixed", "-o", out)
	if code != 0 || stdout != "box graph of 30 runs: "+out+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	img := readSVG(t, out)
	labels, err := img.XTickLabels()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range labels {
		got = append(got, tk.S)
	}
	var want []string
	for _, d := range []string{"10ms", "30ms", "50ms", "70ms", "100ms"} {
		for _, tr := range []string{"reno", "quic"} {
			want = append(want, d+" · "+tr)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("boxes %q, want one per case: %q", got, want)
	}
	if !hasText(img, "delay · transport") || !hasText(img, "its 3 runs") {
		t.Error("the box plot does not say what its boxes are")
	}
}

// TestPlotRefusesTwoQuantitiesOnOneAxis: E3's directory overlays RRUL's
// per-flow average and tcp_bidirectional's one flow no more; the refusal
// says which --where to give, and that one draws.
func TestPlotRefusesTwoQuantitiesOnOneAxis(t *testing.T) {
	dir := e3Dir(t)
	out := filepath.Join(t.TempDir(), "e3.png")
	_, stderr, code := runWanlab(t, "plot", dir, "-o", out)
	if code != exitUsage || !strings.Contains(stderr, "not the same quantity") || !strings.Contains(stderr, "(here: --where test=tcp_bidirectional or --where test=rrul)") {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	stdout, stderr, code := runWanlab(t, "plot", dir, "--where", "test=rrul", "-o", out)
	if code != 0 || !strings.Contains(stdout, "all_scaled graph of 24 runs") {
		t.Errorf("--where test=rrul: exit %d, %q %q", code, stdout, stderr)
	}
	// A series some runs lack: the others are drawn, and the warning says
	// which were left out.
	_, stderr, code = runWanlab(t, "plot", dir, "--kind", "series", "--series", "TCP download BE::tcp_rtt", "-o", out)
	if code != 0 || !strings.Contains(stderr, `wanlab: warning: 24 of the 48 runs have no samples of "TCP download BE::tcp_rtt", left out of the series graph: rate=10mbit qdisc=pfifo_fast cc=cubic test=tcp_bidirectional #1, `) {
		t.Errorf("a series half the runs lack: exit %d, %q", code, stderr)
	}
}

// TestPlotUsageErrors: the options of an experiment's graphs refused where
// they do not apply.
func TestPlotUsageErrors(t *testing.T) {
	dir := runFigures(t, e1Shape, e1Goodput)
	file := synthResults(t, t.TempDir(), "a.json.gz", "a", 1)
	out := filepath.Join(t.TempDir(), "g.svg")
	// E1's direct row: a delay that is no time.
	e1 := strings.ReplaceAll(e1Shape, "delay: [10ms, 30ms, 50ms, 70ms, 100ms]", "delay: [{10ms: {d: 10ms}}, {30ms: {d: 30ms}}, {direct: {d: 0ms}}]")
	direct := runFigures(t, strings.ReplaceAll(e1, "netem delay ${delay}", "netem delay ${d}"), e1Goodput)
	checkUsageErrors(t, out, []usageCase{
		{[]string{"plot", dir, "--rows", "delay", "-o", out}, "--rows is an option of the sweep graph: add --kind sweep"},
		{[]string{"plot", file, "--where", "delay=10ms", "-o", out}, "--where chooses among the runs of an experiment"},
		{[]string{"plot", dir, "--where", "delay=20ms", "-o", out}, `delay has no value "20ms"`},
		{[]string{"plot", file, "--kind", "sweep", "-o", out}, "not a summary file of wanlab's"},
		{[]string{"plot", dir, "--kind", "sweep", "-o", "-", "--format", "svg"}, "2 tables are one graph each and the output is stdout: choose one table with --where variant=fixed"},
		{[]string{"plot", direct, "--kind", "sweep", "--where", "variant=fixed", "--log-x", "-o", out}, "--log-x needs a numeric variable along x, and delay's values (10ms, 30ms, direct)"},
		{[]string{"table", dir, "--title", "x"}, "--title and --log-x are options of the graph: add --plot"},
		{[]string{"table", dir, "--where", "variant=fixed", "--plot", out, "--reference", filepath.Join(dir, "none.csv")}, "--reference"},
	})
}

// TestTablePlotReference: a reference file's figures are drawn as their
// own points, their source in the legend.
func TestTablePlotReference(t *testing.T) {
	dir := runFigures(t, e1Shape, e1Goodput)
	ref := filepath.Join(t.TempDir(), "ref.csv")
	os.WriteFile(ref, []byte("# seed 001\ndelay,transport,series,stat,value,source\n10ms,reno,,mean,93.9,seed 001 table 2\n100ms,reno,,mean,41,seed 001 table 2\n"), 0o644)
	graph := filepath.Join(t.TempDir(), "e1.svg")
	if _, stderr, code := runWanlab(t, "table", dir, "--where", "variant=fixed", "--plot", graph, "--reference", ref); code != 0 {
		t.Fatal(stderr)
	}
	if !hasText(readSVG(t, graph), "reno: seed 001 table 2") {
		t.Error("the legend does not name the reference's source")
	}
}
