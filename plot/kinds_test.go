package plot

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	gplot "gonum.org/v1/plot"

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
	if !SweepKind.FromTable() || AllScaled.FromTable() || Kind("totals").FromTable() {
		t.Errorf("FromTable: sweep %v, all_scaled %v, unknown %v", SweepKind.FromTable(), AllScaled.FromTable(), Kind("totals").FromTable())
	}
	d := resultstest.Run("tcp_upload", "x", 1, resultstest.DefaultPath)
	if err := Draw(io.Discard, SweepKind, []*results.Document{d}, Options{}); err == nil || !strings.Contains(err.Error(), "experiment's table") {
		t.Errorf("Draw of a sweep: %v", err)
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

// TestBoxGroupsByCase: a box plot of an experiment's runs draws one box
// per case, over the samples of all its repetitions, labelled by the case,
// not a box per run (E1's 270 runs gave 270 boxes whose labels ran into
// each other).
func TestBoxGroupsByCase(t *testing.T) {
	var docs []*results.Document
	var groups []string
	var cases []string
	for c, delay := range []string{"10ms", "30ms", "50ms", "70ms", "100ms"} {
		for _, tr := range []string{"udp", "reno", "cubic", "tfrc", "quic", "bbr"} {
			name := delay + " · " + tr
			cases = append(cases, name)
			for r := 1; r <= 3; r++ {
				path := resultstest.Path{RateMbit: 100, BaseRTTMs: float64(10 + 20*c), BloatMs: 5}
				docs = append(docs, resultstest.Run("tcp_upload", fmt.Sprintf("e1 delay=%s transport=%s #%d", delay, tr, r), uint64(len(docs)+1), path))
				groups = append(groups, name)
			}
		}
	}
	o := Options{Groups: groups, GroupAxis: "delay · transport", Format: SVG}
	fig, err := boxPlot(docs, groups, o, newTheme(DefaultWidth, DefaultHeight))
	if err != nil {
		t.Fatal(err)
	}
	pn := fig.panels[0]
	ticks, ok := pn.p.X.Tick.Marker.(gplot.ConstantTicks)
	if !ok || len(ticks) != len(cases) {
		t.Fatalf("%d boxes for %d cases of 3 runs", len(ticks), len(cases))
	}
	for i, tk := range ticks {
		if tk.Label != cases[i] {
			t.Errorf("box %d is labelled %q, want %q", i, tk.Label, cases[i])
		}
	}
	if pn.p.X.Label.Text != "delay · transport" || !strings.Contains(fig.subtitle, "the load windows of its 3 runs") {
		t.Errorf("axis %q, subtitle %q", pn.p.X.Label.Text, fig.subtitle)
	}
	// Thirty boxes do not leave room for their labels side by side or
	// slanted: they stand upright.
	if pn.p.X.Tick.Label.Rotation != math.Pi/2 {
		t.Errorf("the labels of 30 boxes are turned by %v rad, want upright (π/2)", pn.p.X.Tick.Label.Rotation)
	}
	// A box is over the samples of its three runs.
	var pooled []float64
	for _, d := range docs[3:6] {
		pooled = append(pooled, windowValues(d.FindSeries("Ping (ms) ICMP"))...)
	}
	if got, want := pn.boxes.stats[1], newBoxStats(pooled); !reflect.DeepEqual(got, want) || got.n < 3*40 {
		t.Errorf("the box of 10ms · reno is %+v; want that of its three runs' %d samples, %+v", got, len(pooled), want)
	}
	var buf bytes.Buffer
	if _, err := drawKind(&buf, Box, docs[:6], Options{Groups: groups[:6], Format: SVG}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(">10ms · udp</text>")) || bytes.Contains(buf.Bytes(), []byte("#2")) {
		t.Error("the SVG does not label its boxes by case alone")
	}
}
