package plot

import (
	"math"
	"slices"
	"strings"
	"testing"

	"wanlab/experiment"
	"wanlab/stats"
)

func TestNumericValues(t *testing.T) {
	for _, c := range []struct {
		vals []string
		xs   []float64
		unit string
	}{
		{[]string{"10ms", "30ms", "50ms", "70ms", "100ms"}, []float64{10, 30, 50, 70, 100}, "ms"},
		{[]string{"500ms", "1s", "2.5s"}, []float64{0.5, 1, 2.5}, "s"},
		{[]string{"100us", "250us"}, []float64{100, 250}, "µs"},
		{[]string{"1mbit", "2mbit", "5mbit", "10mbit"}, []float64{1, 2, 5, 10}, "Mbit/s"},
		{[]string{"500kbit", "10mbit"}, []float64{0.5, 10}, "Mbit/s"},
		{[]string{"10mbps", "1gbit"}, []float64{0.08, 1}, "Gbit/s"},
		{[]string{"20M", "50M"}, []float64{20, 50}, "Mbit/s"},
		{[]string{"1500b", "32kb", "64kb"}, []float64{1500.0 / 1024, 32, 64}, "KiB"},
		{[]string{"1000", "10000", "0.5"}, []float64{1000, 10000, 0.5}, ""},
	} {
		xs, unit, ok := numericValues(c.vals)
		if !ok || unit != c.unit || !slices.Equal(xs, c.xs) {
			t.Errorf("numericValues(%q) = %v %q %v; want %v %q", c.vals, xs, unit, ok, c.xs, c.unit)
		}
	}
	for _, cats := range [][]string{
		{"reno", "cubic"},
		{"10ms", "30ms", "direct"}, // E1's direct row
		{"10ms", "1mbit"},          // two kinds
		{"10", "10ms"},
		{"fixed", "jitter"},
		{"tbf rate 100mbit burst 32k limit 1514000"},
	} {
		if xs, unit, ok := numericValues(cats); ok {
			t.Errorf("numericValues(%q) = %v %q; want categorical", cats, xs, unit)
		}
	}
}

// e1Table is a table of E1's shape: goodput by delay and transport, three
// runs a cell, one table of those with variant=fixed.
func e1Table(spread string) *experiment.Table {
	t := &experiment.Table{Name: "e1", Fixed: []experiment.Var{{Name: "variant", Value: "fixed"}},
		RowVar: "delay", ColVar: "transport",
		Rows: []string{"10ms", "30ms", "50ms", "70ms", "100ms"}, Cols: []string{"reno", "quic"},
		Stat: "mean", Spread: spread, Center: "mean", Series: []string{"TCP upload", "QUIC upload"}, Unit: "Mbits/s", Skipped: 2}
	for i := range t.Rows {
		var row []experiment.Cell
		for j := range t.Cols {
			m := 90 - 8*float64(i) - 40*float64(j)
			xs := []float64{m - 4, m, m + 10}
			if i == 4 && j == 1 {
				xs = []float64{0.5, 1, 9} // QUIC at 100 ms: the spread is larger than the mean
			}
			if i == 0 && j == 1 {
				xs = xs[:1]
			}
			s := stats.Summarize(xs)
			row = append(row, experiment.Cell{N: s.N, Summary: s, Interval: stats.MeanInterval(xs, experiment.Confidence)})
		}
		t.Cells = append(t.Cells, row)
	}
	return t
}

func TestFromTable(t *testing.T) {
	tb := e1Table("minmax")
	tb.Given = []experiment.Var{{Name: "link", Value: "100mbit"}}
	s, err := FromTable(tb, TableGraph{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Categories != nil || s.XLabel != "delay" || s.XUnit != "ms" {
		t.Errorf("x axis: categories %q, label %q, unit %q; want a numeric delay in ms", s.Categories, s.XLabel, s.XUnit)
	}
	// The title names every variable held fixed: --where's and the
	// table's.
	if want := "e1: mean of TCP upload / QUIC upload by delay and transport (link=100mbit, variant=fixed)"; s.Title != want {
		t.Errorf("title %q, want %q", s.Title, want)
	}
	if s.YLabel != "mean of TCP upload / QUIC upload" || s.YUnit != "Mbits/s" || s.Spread != "min–max across repetitions" || s.Note != "2 runs not complete, left out" {
		t.Errorf("y %q %q, spread %q, note %q", s.YLabel, s.YUnit, s.Spread, s.Note)
	}
	if len(s.Groups) != 2 || s.Groups[1].Name != "quic" {
		t.Fatalf("groups %+v", s.Groups)
	}
	// The bars are the table's spread: min–max, none for one run.
	p := s.Groups[0].Points[1]
	if p.X != 30 || p.Mean != 84 || p.Lo != 78 || p.Hi != 92 {
		t.Errorf("reno at 30 ms: %+v; want X 30, mean 84, 78–92", p)
	}
	if p := s.Groups[1].Points[0]; p.Lo != p.Mean || p.Hi != p.Mean {
		t.Errorf("a cell of one run has a bar: %+v", p)
	}
	for _, c := range []struct {
		spread, center string
		mean, lo, hi   float64
	}{
		{"stddev", "mean", 84, 84 - 7.2111025509279782, 84 + 7.2111025509279782},
		{"ci95", "mean", 84, 84 - 4.302652729911275*7.2111025509279782/math.Sqrt(3), 84 + 4.302652729911275*7.2111025509279782/math.Sqrt(3)},
		{"none", "mean", 84, 84, 84},
		{"stddev", "median", 82, 82 - 7.2111025509279782, 82 + 7.2111025509279782},
		// The interval of the mean is no bar of a median.
		{"ci95", "median", 82, 82, 82},
	} {
		tb := e1Table(c.spread)
		tb.Center = c.center
		s, err := FromTable(tb, TableGraph{})
		if err != nil {
			t.Fatal(err)
		}
		if p := s.Groups[0].Points[1]; p.Mean != c.mean || math.Abs(p.Lo-c.lo) > 1e-6 || math.Abs(p.Hi-c.hi) > 1e-6 {
			t.Errorf("%s of the %s: %v, bar %v–%v; want %v, %v–%v", c.spread, c.center, p.Mean, p.Lo, p.Hi, c.mean, c.lo, c.hi)
		}
		if c.center == "median" && s.YLabel != "median of mean of TCP upload / QUIC upload" {
			t.Errorf("the medians' y label: %q", s.YLabel)
		}
	}
	if _, err := FromTable(e1Table("iqr"), TableGraph{}); err == nil || !strings.Contains(err.Error(), `"iqr"`) {
		t.Errorf("an unknown spread: %v", err)
	}

	cat := e1Table("minmax")
	cat.Rows[4] = "direct"
	s, err = FromTable(cat, TableGraph{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Categories, cat.Rows) || s.XUnit != "" {
		t.Errorf("a row variable with a value that is no time: categories %q, unit %q", s.Categories, s.XUnit)
	}
	if _, err := FromTable(cat, TableGraph{LogX: true}); err == nil || !strings.Contains(err.Error(), "--log-x needs a numeric variable") {
		t.Errorf("--log-x on a categorical variable: %v", err)
	}
	zero := e1Table("minmax")
	zero.Rows[0] = "0ms"
	if _, err := FromTable(zero, TableGraph{LogX: true}); err == nil || !strings.Contains(err.Error(), "delay=0ms is not above zero") {
		t.Errorf("--log-x with a zero: %v", err)
	}
}

// TestFromTableReference: the cells' reference figures are a group per
// column and source, named by both, beside the column's group.
func TestFromTableReference(t *testing.T) {
	tb := e1Table("minmax")
	ref := func(v float64, source string) *experiment.ReferenceRow {
		return &experiment.ReferenceRow{Stat: "mean", Value: v, Source: source}
	}
	tb.Cells[0][0].Reference = ref(93.9, "seed 001")
	tb.Cells[4][0].Reference = ref(40, "seed 001")
	tb.Cells[0][1].Reference = ref(60, "a paper")
	s, err := FromTable(tb, TableGraph{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Groups) != 4 {
		t.Fatalf("%d groups, want the table's 2 and 2 of references", len(s.Groups))
	}
	reno, quic := s.Groups[2], s.Groups[3]
	if reno.Name != "reno: seed 001" || !reno.Reference || reno.Beside != "reno" || len(reno.Points) != 2 || reno.Points[1].X != 100 || reno.Points[1].Mean != 40 {
		t.Errorf("reno's reference: %+v", reno)
	}
	if quic.Name != "quic: a paper" || quic.Beside != "quic" || len(quic.Points) != 1 {
		t.Errorf("quic's reference: %+v", quic)
	}
}
