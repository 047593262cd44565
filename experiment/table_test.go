package experiment

import (
	"bytes"
	"context"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"

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
	if len(lines) != 8 || !strings.HasPrefix(lines[0], "tab: mean of UDP upload / TCP upload (Mbits/s), ± sample std dev across repetitions; variant=fixed") {
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
	if !strings.Contains(b.String(), "p99 of Ping (ms) ICMP (ms), min–max across repetitions") || !strings.Contains(b.String(), "–") {
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
