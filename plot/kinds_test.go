package plot

import (
	"math"
	"slices"
	"strings"
	"testing"

	"wanlab/internal/resultstest"
	"wanlab/results"
)

func TestKinds(t *testing.T) {
	if len(Kinds()) != len(kinds) {
		t.Fatalf("Kinds() lists %d kinds, the table has %d", len(Kinds()), len(kinds))
	}
	for _, k := range Kinds() {
		if k.Description() == "" {
			t.Errorf("%s has no description", k)
		}
		if got, err := ParseKind(string(k)); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, err)
		}
	}
	if !AllScaled.ManyRuns() || TCPCwndRTT.ManyRuns() {
		t.Errorf("ManyRuns: all_scaled %v, tcp_cwnd_rtt %v", AllScaled.ManyRuns(), TCPCwndRTT.ManyRuns())
	}
	_, err := ParseKind("totals")
	if err == nil {
		t.Fatal("ParseKind(totals) succeeded")
	}
	for _, k := range Kinds() {
		if !strings.Contains(err.Error(), string(k)) {
			t.Errorf("the error for an unknown kind does not list %s: %v", k, err)
		}
	}
}

func TestBoxStatsFollowMatplotlib(t *testing.T) {
	// numpy.percentile([1..10], [25, 50, 75]) = 3.25, 5.5, 7.75.
	b := newBoxStats([]float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1})
	if b.q1 != 3.25 || b.median != 5.5 || b.q3 != 7.75 || b.lo != 1 || b.hi != 10 || len(b.outliers) != 0 {
		t.Errorf("box of 1..10: %+v", b)
	}
	// [1, 2, 3, 4, 100]: quartiles 2, 3, 4; the upper fence is 4 + 1.5·2 =
	// 7, so the whisker ends at 4 and 100 is an outlier.
	b = newBoxStats([]float64{1, 2, 3, 4, 100})
	if b.q1 != 2 || b.median != 3 || b.q3 != 4 || b.lo != 1 || b.hi != 4 || !slices.Equal(b.outliers, []float64{100}) {
		t.Errorf("box of 1, 2, 3, 4, 100: %+v", b)
	}
	if b := newBoxStats([]float64{7}); b.q1 != 7 || b.q3 != 7 || b.lo != 7 || b.hi != 7 {
		t.Errorf("box of one value: %+v", b)
	}
}

func TestCDFPoints(t *testing.T) {
	got := cdfPoints([]float64{3, 1, 2})
	want := []xy{{1, 0}, {1, 1.0 / 3}, {2, 1.0 / 3}, {2, 2.0 / 3}, {3, 2.0 / 3}, {3, 1}}
	if !slices.Equal(got, want) {
		t.Errorf("cdfPoints(3, 1, 2) = %v, want %v", got, want)
	}
}

func TestDeliveredRate(t *testing.T) {
	d := &results.Document{Run: results.Run{StepS: 0.2}}
	s := &results.Series{Name: "x::router_delivered_bytes", Unit: "bytes", Samples: results.Samples{
		{T: 0.2, V: 125000}, {T: 0.4, V: 250000}, {T: 0.5, V: 125000}, {T: 0.7, V: math.NaN()},
	}}
	pts, unit, ok := deliveredRate(d, s)
	if !ok || unit != "Mbits/s" {
		t.Fatalf("deliveredRate: unit %q ok %v", unit, ok)
	}
	// 125 kB in a 0.2 s step is 5 Mbit/s; 250 kB is 10; 125 kB in the
	// 0.1 s since the previous sample is 10.
	want := []float64{5, 10, 10}
	for i, w := range want {
		if math.Abs(pts[i].y-w) > 1e-9 {
			t.Errorf("sample %d: %v Mbit/s, want %v", i, pts[i].y, w)
		}
	}
	if !math.IsNaN(pts[3].y) {
		t.Errorf("a lost sample became %v", pts[3].y)
	}
	if _, _, ok := deliveredRate(d, &results.Series{Unit: "packets"}); ok {
		t.Error("a series in packets was taken for bytes")
	}
}

func TestRunLabels(t *testing.T) {
	a := resultstest.Run("rrul", "same", 1, resultstest.DefaultPath)
	b := resultstest.Run("rrul", "same", 2, resultstest.DefaultPath)
	c := resultstest.Run("tcp_upload", "", 3, resultstest.DefaultPath)
	got, err := runLabels([]*results.Document{a, b, c}, Options{})
	want := []string{"same #1", "same #2", "tcp_upload 2026-03-04 05:09:07"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("runLabels = %q, %v; want %q", got, err, want)
	}
	if _, err := runLabels([]*results.Document{a, b}, Options{Labels: []string{"x"}}); err == nil || !strings.Contains(err.Error(), "one label per document") {
		t.Errorf("one label for two documents: %v", err)
	}
}
