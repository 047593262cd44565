package experiment

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"wanlab/internal/outfile"
	"wanlab/results"
)

const tableSweep = `
name: tab
vars:
  delay: [10ms, 30ms, 50ms, 70ms, 100ms]
  transport:
    - udp: {test: udp_flood, cc: cubic}
    - reno: {test: tcp_upload, cc: reno}
    - cubic: {test: tcp_upload, cc: cubic}
  variant: [fixed, jitter]
path:
  up: "netem delay ${delay}"
tests:
  - test: ${test}
    cc: ${cc}
repeat: 3
`

func runTableSweep(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := Execute(context.Background(), mustLoad(t, text, false), &fakeBackend{}, ExecOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTableDefaults(t *testing.T) {
	dir := runTableSweep(t, tableSweep)
	tables, err := Tables(dir, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// delay × transport, one table per variant.
	if len(tables) != 2 {
		t.Fatalf("%d tables, want one per variant", len(tables))
	}
	tb := tables[0]
	if tb.RowVar != "delay" || tb.ColVar != "transport" || varsLabel(tb.Fixed) != "variant=fixed" {
		t.Fatalf("rows %s, cols %s, fixed %v", tb.RowVar, tb.ColVar, tb.Fixed)
	}
	if strings.Join(tb.Rows, ",") != "10ms,30ms,50ms,70ms,100ms" || strings.Join(tb.Cols, ",") != "udp,reno,cubic" {
		t.Fatalf("rows %v cols %v", tb.Rows, tb.Cols)
	}
	if strings.Join(tb.Series, ",") != "UDP upload,TCP upload" || tb.Unit != "Mbits/s" {
		t.Errorf("series %v unit %q", tb.Series, tb.Unit)
	}
	// Each cell is the mean over its three runs of each run's own mean:
	// check one against the results files themselves.
	ix, _ := ReadIndex(dir)
	var want []float64
	for _, c := range ix.Cases {
		if c.Vars["delay"] == "30ms" && c.Vars["transport"] == "reno" && c.Vars["variant"] == "fixed" {
			for _, r := range c.Runs {
				d, err := results.ReadFile(dir + "/" + r.File)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, d.Series[0].Summary.Mean)
			}
		}
	}
	cell := tb.Cells[1][1]
	if len(want) != 3 || cell.N != 3 || !near(cell.Summary.Mean, (want[0]+want[1]+want[2])/3) || !(cell.Summary.SampleStdDev > 0) {
		t.Errorf("cell 30ms/reno: %+v, want the mean of %v", cell, want)
	}
	// The fake's throughput falls with delay and Reno is below CUBIC.
	for i := 1; i < len(tb.Rows); i++ {
		if !(tb.Cells[i][2].Summary.Mean < tb.Cells[i-1][2].Summary.Mean) {
			t.Errorf("cubic: %s not below %s", tb.Rows[i], tb.Rows[i-1])
		}
	}

	var text, md, cs bytes.Buffer
	if err := tb.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := tb.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := WriteCSV(&cs, tables); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	if len(lines) != 8 || !strings.HasPrefix(lines[0], "tab: mean of UDP upload / TCP upload (Mbits/s), mean of 3 runs ± sample std dev; variant=fixed") {
		t.Errorf("text:\n%s", text.String())
	}
	// Aligned: every row's second column starts where the header's does.
	col := strings.Index(lines[2], "udp")
	for _, l := range lines[3:] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("text not aligned at column %d:\n%s", col, text.String())
			break
		}
	}
	if !strings.Contains(md.String(), "| delay \\ transport | udp | reno | cubic |\n|---|---|---|---|\n| 10ms | ") {
		t.Errorf("markdown:\n%s", md.String())
	}
	rows, err := csv.NewReader(strings.NewReader(strings.ReplaceAll(cs.String(), "\n\n", "\n"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if h := strings.Join(rows[0], ","); h != "variant,delay,transport=udp,transport=udp stddev,transport=udp n,transport=reno,transport=reno stddev,transport=reno n,transport=cubic,transport=cubic stddev,transport=cubic n" {
		t.Errorf("csv header %s", h)
	}
	if len(rows) != 11 || rows[2][0] != "fixed" || rows[2][1] != "30ms" {
		t.Fatalf("csv: %d rows: %v", len(rows), rows)
	}
	if v, err := strconv.ParseFloat(rows[2][5], 64); err != nil || !near(v, cell.Summary.Mean) {
		t.Errorf("csv 30ms reno %q, want %v", rows[2][5], cell.Summary.Mean)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestTableChoices(t *testing.T) {
	dir := runTableSweep(t, tableSweep)
	tables, err := Tables(dir, TableOptions{Rows: "transport", Cols: "variant", Where: map[string][]string{"delay": {"50ms"}}, Stat: "p99", Spread: "minmax", Series: "Ping (ms) ICMP"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || tables[0].Unit != "ms" || strings.Join(tables[0].Rows, ",") != "udp,reno,cubic" {
		t.Fatalf("tables %d, unit %q, rows %v", len(tables), tables[0].Unit, tables[0].Rows)
	}
	var b bytes.Buffer
	tables[0].WriteText(&b)
	if !strings.Contains(b.String(), "p99 of Ping (ms) ICMP (ms), mean of 3 runs (min–max)") || !strings.Contains(b.String(), "–") {
		t.Errorf("text:\n%s", b.String())
	}
	// A flow's own series fills the cells as the run's do.
	flows, err := Tables(dir, TableOptions{Where: map[string][]string{"variant": {"jitter"}, "transport": {"reno"}}, Series: "TCP upload::tcp_reordering", Stat: "max"})
	if err != nil {
		t.Fatal(err)
	}
	if len(flows) != 1 || flows[0].Unit != "packets" || len(flows[0].Rows) != 5 {
		t.Fatalf("flow series: %d tables, unit %q", len(flows), flows[0].Unit)
	}
	for i, row := range flows[0].Cells {
		if c := row[0]; c.N != 3 || c.Summary.Mean != 10 {
			t.Errorf("flow series, %s: %+v, want the max 10 of each of 3 runs", flows[0].Rows[i], c)
		}
	}
	// Several values of one variable: it still varies, among them only,
	// in the file's order; one value fixes it.
	two, err := Tables(dir, TableOptions{Where: map[string][]string{"transport": {"cubic,reno"}, "variant": {"fixed"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(two) != 1 || two[0].RowVar != "delay" || two[0].ColVar != "transport" || strings.Join(two[0].Cols, ",") != "reno,cubic" || len(two[0].Rows) != 5 {
		t.Fatalf("--where transport=cubic,reno: %d tables, rows %s %v, cols %s %v", len(two), two[0].RowVar, two[0].Rows, two[0].ColVar, two[0].Cols)
	}
	same, err := Tables(dir, TableOptions{Where: map[string][]string{"transport": {"reno", "cubic"}, "variant": {"fixed"}}})
	if err != nil || len(same) != 1 || strings.Join(same[0].Cols, ",") != "reno,cubic" || same[0].Cells[0][1].Summary.Mean != two[0].Cells[0][1].Summary.Mean {
		t.Fatalf("--where given twice: %v, %+v", err, same)
	}
	// Runs of another test (udp_flood) lack the series: left out and
	// counted under the table, not an error.
	mixed, err := Tables(dir, TableOptions{Where: map[string][]string{"variant": {"fixed"}}, Series: "TCP upload::tcp_reordering"})
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	mixed[0].WriteText(&b)
	if len(mixed) != 1 || strings.Join(mixed[0].Cols, ",") != "reno,cubic" || mixed[0].Lacking != 15 ||
		!strings.Contains(b.String(), "(15 runs without TCP upload::tcp_reordering, left out)") {
		t.Errorf("mixed tests: cols %v, lacking %d:\n%s", mixed[0].Cols, mixed[0].Lacking, b.String())
	}
	for _, c := range []struct {
		o    TableOptions
		want string
	}{
		{TableOptions{Series: "TCP download"}, `has no series "TCP download"`},
		{TableOptions{Series: "UDP upload::tcp_cwnd"}, "and its flows' own (wanlab show "},
		{TableOptions{Where: map[string][]string{"delay": {"20ms"}}}, `delay has no value "20ms"`},
		{TableOptions{Where: map[string][]string{"dealy": {"20ms"}}}, "dealy is not a variable"},
		{TableOptions{Where: map[string][]string{"transport": {"reno,tfrc"}}}, `--where transport=reno,tfrc: transport has no value "tfrc"`},
		{TableOptions{Rows: "cc"}, "--rows cc: not a variable"},
		{TableOptions{Stat: "avg"}, "--stat \"avg\": use one of mean"},
		{TableOptions{Rows: "delay", Cols: "delay"}, "two different variables"},
	} {
		if _, err := Tables(dir, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.o, err, c.want)
		}
	}
}

func TestTableBidirectionalNeedsASeries(t *testing.T) {
	dir := runTableSweep(t, "vars: {delay: [10ms, 30ms]}\npath: {up: \"netem delay ${delay}\"}\ntests: [{test: tcp_bidirectional}]\n")
	if _, err := Tables(dir, TableOptions{}); err == nil || !strings.Contains(err.Error(), "several throughput series (TCP download, TCP upload): choose one with --series") {
		t.Errorf("err %v", err)
	}
	tables, err := Tables(dir, TableOptions{Series: "TCP download"})
	if err != nil || len(tables) != 1 || len(tables[0].Rows) != 2 || tables[0].ColVar != "" {
		t.Fatalf("tables %v, err %v", tables, err)
	}
}

// e3Shaped is examples/e3.yaml's shape: two variables, and each case runs
// rrul (whose main series is TCP totals) and tcp_bidirectional (which has
// none: a download and an upload).
const e3Shaped = `
name: e3
vars:
  rate: [10mbit, 100mbit]
  qdisc: [pfifo_fast, fq_codel]
path:
  both: "tbf rate ${rate} burst 32k latency 400ms; ${qdisc}"
tests:
  - test: rrul
  - test: tcp_bidirectional
repeat: 3
`

// An experiment whose cases run several tests gives a table per test by
// default, and a test without a main series a table per load series (the
// E3 first command exited 2, asking for --series without saying which).
func TestTableSeveralTests(t *testing.T) {
	dir := runTableSweep(t, e3Shaped)
	tables, err := Tables(dir, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tb := range tables {
		got = append(got, strings.Join(tb.Selection(), " ")+": "+strings.Join(tb.Series, ","))
		if tb.RowVar != "rate" || tb.ColVar != "qdisc" || len(tb.Rows) != 2 || len(tb.Cols) != 2 || tb.Cells[1][1].N != 3 {
			t.Errorf("%s: rows %s %v, cols %s %v, N %d", tb.Caption(), tb.RowVar, tb.Rows, tb.ColVar, tb.Cols, tb.Cells[1][1].N)
		}
	}
	want := []string{
		"--where test=rrul: TCP totals",
		`--where test=tcp_bidirectional --series "TCP download": TCP download`,
		`--where test=tcp_bidirectional --series "TCP upload": TCP upload`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tables:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c := tables[0].Caption(); c != "e3: mean of TCP totals (Mbits/s), mean of 3 runs ± sample std dev; test=rrul" {
		t.Errorf("caption %q", c)
	}
	// Each selection gives that table alone, with the same cells.
	for i, sel := range [][2]string{{"rrul", ""}, {"tcp_bidirectional", "TCP download"}, {"tcp_bidirectional", "TCP upload"}} {
		one, err := Tables(dir, TableOptions{Where: map[string][]string{"test": {sel[0]}}, Series: sel[1]})
		if err != nil || len(one) != 1 || one[0].Cells[0][1].Summary.Mean != tables[i].Cells[0][1].Summary.Mean {
			t.Errorf("%v: %v, %d tables", sel, err, len(one))
		}
	}
	// CSV says which series each row is of.
	var cs bytes.Buffer
	WriteCSV(&cs, tables)
	rows, err := csv.NewReader(&cs).ReadAll()
	if err != nil || len(rows) != 7 || strings.Join(rows[0][:3], ",") != "test,series,rate" ||
		strings.Join(rows[1][:3], ",") != "rrul,TCP totals,10mbit" || strings.Join(rows[6][:3], ",") != "tcp_bidirectional,TCP upload,100mbit" {
		t.Errorf("csv: %v %v", err, rows)
	}
	// tcp_bidirectional alone still needs a series, and the message names
	// both.
	_, err = Tables(dir, TableOptions{Where: map[string][]string{"test": {"tcp_bidirectional"}}})
	if err == nil || !strings.Contains(err.Error(), `choose one with --series "TCP download" or --series "TCP upload"`) {
		t.Errorf("tcp_bidirectional alone: %v", err)
	}

	// A test without load beside one with: left out, with the options that
	// show it.
	withPing := runTableSweep(t, strings.Replace(e3Shaped, "test: tcp_bidirectional", "test: ping", 1))
	tables, err = Tables(withPing, TableOptions{})
	if err != nil || len(tables) != 1 {
		t.Fatalf("rrul and ping: %v, %d tables", err, len(tables))
	}
	var b bytes.Buffer
	tables[0].WriteText(&b)
	if !strings.Contains(b.String(), `(12 ping runs have no throughput series, left out: show them with --where test=ping --series "Ping (ms) ICMP")`) {
		t.Errorf("rrul and ping:\n%s", b.String())
	}
}

// statsSweep has three runs in a case whose figures are set by hand.
const statsSweep = `
name: st
vars:
  delay: [10ms, 30ms]
path:
  up: "netem delay ${delay}"
tests:
  - test: tcp_upload
repeat: 3
`

// handRuns runs statsSweep: the 10ms case's runs give 10, 12 and 17
// Mbit/s (each ten samples of that value); edit, if not nil, changes each
// document further.
func handRuns(t *testing.T, edit func(r *Run, d *results.Document)) string {
	t.Helper()
	dir := t.TempDir()
	b := &fakeBackend{edit: func(r *Run, d *results.Document) {
		if delay, _ := r.Case.Value("delay"); delay == "10ms" {
			s := d.FindSeries("TCP upload")
			for k := range s.Samples {
				s.Samples[k].V = []float64{10, 12, 17}[r.Repetition-1]
			}
			d.Summarize()
		}
		if edit != nil {
			edit(r, d)
		}
	}}
	if _, err := Execute(context.Background(), mustLoad(t, statsSweep, false), b, ExecOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Every statistic over the repetitions, against figures worked by hand:
// 10, 12 and 17 have the mean 13, the median 12, the sample standard
// deviation √13 = 3.6056, and the 95 % confidence interval of their mean
// 13 ± t(0.975, 2 df) · √13/√3 = 13 ± 4.3027 · 2.0817 = 13 ± 8.9567.
func TestTableStatsOverRepetitions(t *testing.T) {
	dir := handRuns(t, nil)
	tables, err := Tables(dir, TableOptions{Show: []string{"mean", "ci95", "median", "min", "max", "stddev", "n", "points"}})
	if err != nil {
		t.Fatal(err)
	}
	tb := tables[0]
	c := tb.Cells[0][0]
	close := func(a, b float64) bool { return math.Abs(a-b) < 1e-4 }
	if tb.Rows[0] != "10ms" || c.N != 3 || c.Summary.Mean != 13 || c.Summary.Median != 12 || c.Summary.Min != 10 || c.Summary.Max != 17 ||
		!close(c.Summary.SampleStdDev, 3.6056) || !close(c.Interval.HalfWidth, 8.9567) || c.Points != 30 {
		t.Errorf("cell 10ms: %+v", c)
	}
	if tb.Spread != "ci95" || tb.Center != "mean" {
		t.Errorf("spread %q, center %q", tb.Spread, tb.Center)
	}
	if m, lo, hi := tb.Extent(c); m != 13 || !close(lo, 13-8.9567) || !close(hi, 13+8.9567) {
		t.Errorf("extent %v %v %v", m, lo, hi)
	}
	var text, md, cs bytes.Buffer
	tb.WriteText(&text)
	tb.WriteMarkdown(&md)
	WriteCSV(&cs, tables)
	checkHas(t, "text", text.String(),
		"st: mean of TCP upload (Mbits/s), mean of 3 runs ± 95 % confidence interval, median, min, max, stddev (sample std dev), n (runs), points (data points)\n",
		"delay   mean         mean median   mean min   mean max   mean stddev   mean n   mean points\n",
		"10ms    13.0 ± 9.0   12.0          10.0       17.0       ± 3.6         3        30\n",
	)
	if !strings.Contains(md.String(), "| delay | mean | mean median | mean min | mean max | mean stddev | mean n | mean points |\n|---|---|---|---|---|---|---|---|\n| 10ms | 13.0 ± 9.0 | 12.0 | 10.0 | 17.0 | ± 3.6 | 3 | 30 |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	rows, err := csv.NewReader(&cs).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if h := strings.Join(rows[0], ","); h != "delay,mean,mean ci95,mean median,mean min,mean max,mean stddev,mean n,mean points" {
		t.Errorf("csv header %s", h)
	}
	if r := rows[1]; r[0] != "10ms" || r[1] != "13" || !strings.HasPrefix(r[2], "8.9566") || r[3] != "12" || r[4] != "10" || r[5] != "17" || !strings.HasPrefix(r[6], "3.6055") || r[7] != "3" || r[8] != "30" {
		t.Errorf("csv row %v", r)
	}

	// The shorthand and the default: --spread ci95 is --show mean,ci95;
	// none given is the mean ± the sample std dev, which the graph draws.
	short, err := Tables(dir, TableOptions{Spread: "ci95"})
	if err != nil || strings.Join(short[0].Show, ",") != "mean,ci95" || short[0].Spread != "ci95" {
		t.Fatalf("--spread ci95: %v %+v", err, short)
	}
	def, _ := Tables(dir, TableOptions{})
	if m, lo, hi := def[0].Extent(def[0].Cells[0][0]); m != 13 || !close(lo, 13-3.6056) || !close(hi, 13+3.6056) {
		t.Errorf("default extent %v %v %v", m, lo, hi)
	}
	// The median with min–max: the median is the center.
	med, _ := Tables(dir, TableOptions{Show: []string{"median", "minmax"}})
	if m, lo, hi := med[0].Extent(med[0].Cells[0][0]); m != 12 || lo != 10 || hi != 17 {
		t.Errorf("median extent %v %v %v", m, lo, hi)
	}
	text.Reset()
	med[0].WriteText(&text)
	if !strings.Contains(text.String(), "median of 3 runs (min–max)") || !strings.Contains(text.String(), "10ms    12.0 (10.0–17.0)") {
		t.Errorf("median (min–max):\n%s", text.String())
	}
	for _, c := range []struct {
		o    TableOptions
		want string
	}{
		{TableOptions{Show: []string{"mean", "sd"}}, `--show "sd": use one or several of mean, median`},
		{TableOptions{Show: []string{"mean", "mean"}}, "mean is given twice"},
		{TableOptions{Show: []string{"min", "minmax"}}, "minmax gives min and max already"},
		{TableOptions{Show: []string{"mean"}, Spread: "minmax"}, "--spread is --show's shorthand"},
		{TableOptions{Spread: "iqr"}, `--spread "iqr": use one of stddev, ci95, minmax, none`},
		{TableOptions{Stat: "ci95"}, `--stat "ci95": use one of mean`},
	} {
		if _, err := Tables(dir, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.o, err, c.want)
		}
	}
}

// A reference file's figures stand beside the cells they are for, with
// the ratio of the cell's figure to each and their sources under the
// table; a row without a series stands for the main one.
func TestTableReference(t *testing.T) {
	dir := handRuns(t, nil)
	ref, err := ParseReference("ref.csv", []byte(`delay,series,stat,value,source
10ms,,mean,10,seed A
30ms,TCP upload,mean,50,seed B
30ms,,median,1,seed C
20ms,,mean,5,seed A
`))
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	tables, err := Tables(dir, TableOptions{Reference: ref, Warnf: func(f string, args ...any) { warned = append(warned, fmt.Sprintf(f, args...)) }})
	if err != nil {
		t.Fatal(err)
	}
	tb := tables[0]
	if c := tb.Cells[0][0]; c.Reference == nil || c.Reference.Value != 10 || tb.Ratio(c) != 1.3 {
		t.Errorf("10ms: %+v, ratio %v", c.Reference, tb.Ratio(c))
	}
	if c := tb.Cells[1][0]; c.Reference == nil || c.Reference.Source != "seed B" {
		t.Errorf("30ms: %+v", c.Reference)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "ref.csv:5: delay=20ms is not a value of the experiment (its values are 10ms, 30ms)") {
		t.Errorf("warnings %q", warned)
	}
	var text, cs bytes.Buffer
	tb.WriteText(&text)
	WriteCSV(&cs, tables)
	checkHas(t, "text", text.String(),
		"delay   mean         mean ref   mean ratio\n",
		"10ms    13.0 ± 3.6   10         1.30\n",
		"(ref: seed A; seed B (ref.csv); ratio: the cell's mean / ref)\n",
	)
	rows, _ := csv.NewReader(&cs).ReadAll()
	if h := strings.Join(rows[0], ","); h != "delay,mean,mean stddev,mean n,mean ref,mean ratio" || rows[1][4] != "10" || rows[1][5] != "1.3" {
		t.Errorf("csv %v", rows)
	}
	// Another series: the main series' figures are not its own.
	ping, _ := Tables(dir, TableOptions{Reference: ref, Series: "Ping (ms) ICMP"})
	text.Reset()
	ping[0].WriteText(&text)
	if strings.Contains(text.String(), "mean ref") || !strings.Contains(text.String(), "(ref.csv has no mean of Ping (ms) ICMP for this table's cells)") {
		t.Errorf("another series:\n%s", text.String())
	}

	// Per column: only the columns the reference has figures for.
	sweep := runTableSweep(t, tableSweep)
	ref, _ = ParseReference("e1.csv", []byte("delay,transport,series,stat,value,source\n10ms,reno,,mean,70,seed 001\n"))
	tables, err = Tables(sweep, TableOptions{Reference: ref, Where: map[string][]string{"variant": {"fixed"}}})
	if err != nil {
		t.Fatal(err)
	}
	cs.Reset()
	WriteCSV(&cs, tables)
	rows, _ = csv.NewReader(&cs).ReadAll()
	if h := strings.Join(rows[0], ","); h != "delay,transport=udp,transport=udp stddev,transport=udp n,transport=reno,transport=reno stddev,transport=reno n,transport=reno ref,transport=reno ratio,transport=cubic,transport=cubic stddev,transport=cubic n" ||
		rows[1][7] != "70" || rows[2][7] != "" || rows[2][8] != "" {
		t.Errorf("csv per column: %v", rows)
	}
	ref, _ = ParseReference("e1.csv", []byte("rate,series,stat,value,source\n10mbit,,mean,70,seed 001\n"))
	if _, err := Tables(sweep, TableOptions{Reference: ref}); err == nil || !strings.Contains(err.Error(), `--reference e1.csv: column "rate" is not a variable of the experiment (its variables are delay, transport, variant, test)`) {
		t.Errorf("a variable the experiment lacks: %v", err)
	}
}

// Every table says how many runs of each cell were not faithful, and
// --faithful-only leaves them out, so that a reader sees whether they
// move a figure.
func TestTableFaithfulOnly(t *testing.T) {
	dir := handRuns(t, func(r *Run, d *results.Document) {
		delay, _ := r.Case.Value("delay")
		if delay == "30ms" && r.Repetition == 1 {
			return // no verdict (no router)
		}
		ok := delay != "10ms" || r.Repetition != 3 // the run of 17 Mbit/s
		d.Router = &results.RouterReport{Mode: results.RouterTestbed, Testbed: "wl-t", Faithful: &ok}
	})
	sum := filepath.Join(t.TempDir(), "st.summary.json.gz")
	if _, _, err := Summarize(context.Background(), dir, sum, outfile.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{dir, sum} {
		all, err := Tables(from, TableOptions{})
		if err != nil {
			t.Fatal(err)
		}
		only, err := Tables(from, TableOptions{FaithfulOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		a, o := all[0].Cells[0][0], only[0].Cells[0][0]
		if a.N != 3 || a.NotFaithful != 1 || a.Summary.Mean != 13 || o.N != 2 || o.NotFaithful != 1 || o.Summary.Mean != 11 || o.Points != 20 {
			t.Errorf("%s: all %+v, faithful only %+v", from, a, o)
		}
		if all[0].Verdicts != 5 || all[0].NotFaithful != 1 || only[0].Cells[1][0].N != 3 {
			t.Errorf("%s: verdicts %d, not faithful %d", from, all[0].Verdicts, all[0].NotFaithful)
		}
		var ta, to, cs bytes.Buffer
		all[0].WriteText(&ta)
		only[0].WriteText(&to)
		WriteCSV(&cs, only)
		for _, c := range []struct{ got, want string }{
			{ta.String(), "10ms    13.0 ± 3.6 †1\n"},
			{ta.String(), "(fidelity: 1 of 6 runs not faithful, kept (†N: N of the cell's runs; --faithful-only leaves them out); 1 run without a verdict)\n"},
			{to.String(), "st: mean of TCP upload (Mbits/s), mean of 2–3 runs ± sample std dev, faithful runs only\n"},
			{to.String(), "10ms    11.0 ± 1.4 †1\n"},
			{to.String(), "(fidelity: 1 of 6 runs not faithful, left out by --faithful-only (†N: N of the cell's runs); 1 run without a verdict)\n"},
			{cs.String(), "delay,mean,mean stddev,mean n,mean not faithful\n10ms,11,1.4142135623730951,2,1\n"},
		} {
			if !strings.Contains(c.got, c.want) {
				t.Errorf("%s: lacks %q:\n%s", from, c.want, c.got)
			}
		}
	}
}

// The router's figures are series a table shows by name, from the
// results files and from their summary alike, and a statistic the router
// does not record is refused with the ones it does.
func TestTableRouterSeries(t *testing.T) {
	dir := handRuns(t, func(r *Run, d *results.Document) {
		ok := true
		late := int64(r.Repetition) * 1_000_000 // 1, 2, 3 ms at p99
		d.Router = &results.RouterReport{Mode: results.RouterTestbed, Testbed: "wl-t", Faithful: &ok,
			Directions: []results.DirectionReport{{Name: "up",
				Delay:    results.DelayReport{N: 10, MeanNs: 20e6, MinNs: 10e6, P50Ns: 19e6, P99Ns: 40e6, MaxNs: 41e6},
				Lateness: results.LatenessReport{N: 10, P50Ns: 3000, P99Ns: late, MaxNs: 2 * late}}}}
	})
	sum := filepath.Join(t.TempDir(), "st.summary.json.gz")
	if _, _, err := Summarize(context.Background(), dir, sum, outfile.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{dir, sum} {
		tabs, err := Tables(from, TableOptions{Series: "router up::lateness", Stat: "p99"})
		if err != nil {
			t.Fatal(err)
		}
		c := tabs[0].Cells[0][0]
		if c.N != 3 || c.Summary.Mean != 2 || tabs[0].Unit != "ms" {
			t.Errorf("%s: p99 of router up::lateness: %+v, unit %q", from, c, tabs[0].Unit)
		}
		tabs, err = Tables(from, TableOptions{Series: "router up::delay", Stat: "median"})
		if err != nil || tabs[0].Cells[0][0].Summary.Mean != 19 {
			t.Errorf("%s: median of router up::delay: %v %+v", from, err, tabs)
		}
		_, err = Tables(from, TableOptions{Series: "router up::lateness", Stat: "mean"})
		if err == nil || !strings.Contains(err.Error(), `the series "router up::lateness" has no mean in any run; use one it has: median, max, p99`) {
			t.Errorf("%s: the mean of the lateness: %v", from, err)
		}
		_, err = Tables(from, TableOptions{Series: "router down::delay"})
		if err == nil || !strings.Contains(err.Error(), `and the router's "router up::delay", "router up::lateness"`) {
			t.Errorf("%s: a direction the runs lack: %v", from, err)
		}
	}
}
