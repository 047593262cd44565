package results

import (
	"math"
	"strings"
	"testing"
)

func sameValues(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if math.IsNaN(want[i]) != math.IsNaN(got[i]) || !math.IsNaN(want[i]) && math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("%s[%d] = %v, want %v (all: %v)", what, i, got[i], want[i], got)
		}
	}
}

func TestGrid(t *testing.T) {
	nan := math.NaN()
	// On the grid (with k·step's rounding): unchanged, lost probes kept.
	on := []Sample{{0, 1}, {0.2, 2}, {0.4, nan}, {3 * 0.2, 4}}
	sameValues(t, "on grid", Grid(on, 0.2, 4), []float64{1, 2, nan, 4})

	// Off the grid: linear between neighbours; half a step of reach at the
	// ends; nothing beyond.
	off := []Sample{{0.05, 10}, {0.45, 30}, {0.85, nan}, {1.05, 50}}
	// x=0: before the first sample, 0.05 away (≤ 0.1): 10.
	// x=0.2: between 10@0.05 and 30@0.45: 10 + 20·0.15/0.4 = 17.5.
	// x=0.4: 10 + 20·0.35/0.4 = 27.5. x=0.6, 0.8: next to the lost probe.
	// x=1.0: between lost@0.85 and 50@1.05: NaN. x=1.2: after the last, 0.15 away: NaN.
	sameValues(t, "off grid", Grid(off, 0.2, 7), []float64{10, 17.5, 27.5, nan, nan, nan, nan})

	// A gap longer than 5 steps is not bridged; within 5 steps it is.
	gap := []Sample{{0, 0}, {1.2, 12}}
	g := Grid(gap, 0.2, 7) // the neighbours are 6 steps apart
	sameValues(t, "gap of 6 steps", g, []float64{0, 2, 4, 6, 8, 10, 12})
	// Neighbours 10 steps apart: only the middle point is within 5 steps
	// of both.
	far := []Sample{{0, 0}, {2.0, 20}}
	want := []float64{0, nan, nan, nan, nan, 10, nan, nan, nan, nan, 20}
	sameValues(t, "gap of 10 steps", Grid(far, 0.2, 11), want)

	if got := Grid(nil, 0.2, 3); !math.IsNaN(got[0]) || !math.IsNaN(got[2]) {
		t.Errorf("no samples: %v", got)
	}
}

// gapDoc is a tcp_nup run on a 1 s grid from 0 to 5 s whose flows have
// values at different points: flow 1 everywhere to 4 s, flow 2 lost at 1 s
// and ending at 3 s, flow 3 starting at 2 s. Nothing has a value at 5 s.
func gapDoc() *Document {
	nan := math.NaN()
	w := [2]float64{0, 5}
	return &Document{
		Run: Run{Test: "tcp_nup", StepS: 1, DurationS: 5, Framing: "ip"},
		Series: []Series{
			{Name: "TCP upload::1", Unit: "Mbits/s", Window: w, Samples: Samples{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}},
			{Name: "TCP upload::2", Unit: "Mbits/s", Window: w, Samples: Samples{{0, 10}, {1, nan}, {2, 30}, {3, 40}}},
			{Name: "TCP upload::3", Unit: "Mbits/s", Window: w, Samples: Samples{{2, 100}, {3, 200}, {4, 300}}},
			{Name: "Ping (ms) ICMP", Unit: "ms", Window: w, Samples: Samples{{0, 7}}},
		},
	}
}

func seriesValues(t *testing.T, d *Document, name string) (ts, vs []float64) {
	t.Helper()
	s := d.series(name)
	if s == nil {
		t.Fatalf("no series %q", name)
	}
	for _, p := range s.Samples {
		ts = append(ts, p.T)
		vs = append(vs, p.V)
	}
	return ts, vs
}

// A grid point's sum, average and fairness are over the flows that have a
// value there, as Flent computes them; a point where none has one has no
// sample.
func TestAddComputedOverFlowsWithValues(t *testing.T) {
	d := gapDoc()
	if n := d.GridLen(); n != 6 {
		t.Fatalf("grid of %d points, want 6 (0 to 5 s)", n)
	}
	if err := d.AddComputed(); err != nil {
		t.Fatal(err)
	}
	ts, sum := seriesValues(t, d, "TCP upload sum")
	sameValues(t, "sum times", ts, []float64{0, 1, 2, 3, 4})
	sameValues(t, "sum", sum, []float64{11, 2, 133, 244, 305})
	_, avg := seriesValues(t, d, "TCP upload avg")
	sameValues(t, "avg", avg, []float64{5.5, 2, 133.0 / 3, 244.0 / 3, 152.5})
	_, fair := seriesValues(t, d, "TCP upload fairness")
	sameValues(t, "fairness", fair, []float64{
		121.0 / (2 * 101), 1, 133.0 * 133 / (3 * (9 + 900 + 10000)), 244.0 * 244 / (3 * (16 + 1600 + 40000)), 305.0 * 305 / (2 * (25 + 90000)),
	})

	sum0 := *d.series("TCP upload sum")
	if sum0.Window != [2]float64{0, 5} || sum0.Unit != "Mbits/s" {
		t.Errorf("sum: window %v unit %q", sum0.Window, sum0.Unit)
	}
	// Summarised over (0, 5]: 2 + 133 + 244 + 305 over 1 s steps.
	if sum0.Summary.N != 4 || sum0.Summary.Total != 684 {
		t.Errorf("sum summary: N %d total %v, want 4 and 684", sum0.Summary.N, sum0.Summary.Total)
	}
	if u := d.series("TCP upload fairness").Unit; u != "Idx" {
		t.Errorf("fairness unit %q", u)
	}

	// Computing again replaces the series and does not feed the sum into
	// the average or the other way round.
	n := len(d.Series)
	if err := d.AddComputed(); err != nil {
		t.Fatal(err)
	}
	if len(d.Series) != n {
		t.Errorf("%d series after a second AddComputed, %d after the first", len(d.Series), n)
	}
	_, again := seriesValues(t, d, "TCP upload avg")
	sameValues(t, "avg again", again, avg)
}

func TestAddComputedFairnessOfZeros(t *testing.T) {
	d := gapDoc()
	d.Series[0].Samples = Samples{{0, 0}, {1, 0}}
	d.Series = d.Series[:1]
	if err := d.AddComputed(); err != nil {
		t.Fatal(err)
	}
	// Flent's fairness has no value when every flow has 0.
	if s := d.series("TCP upload fairness"); len(s.Samples) != 0 {
		t.Errorf("fairness of zeros: %v", s.Samples)
	}
}

func TestAddComputedRRUL(t *testing.T) {
	d := synthDoc("rrul", 5)
	for _, name := range []string{"TCP upload avg", "TCP upload sum", "TCP download avg", "TCP download sum", "TCP totals", "Ping (ms) avg"} {
		if d.series(name) == nil {
			t.Errorf("rrul: no %q", name)
		}
	}
	// On the grid every load series has a value at every point, so the
	// totals' total is the sum of the eight flows' totals.
	var flows float64
	for _, name := range synthSeries["rrul"].tcp {
		flows += d.series(name).Summary.Total
	}
	up, down, all := d.series("TCP upload sum").Summary.Total, d.series("TCP download sum").Summary.Total, d.series("TCP totals").Summary.Total
	if math.Abs(up+down-all) > 1e-9*all || math.Abs(flows-all) > 1e-9*all {
		t.Errorf("upload sum %v + download sum %v vs totals %v vs the flows' %v", up, down, all, flows)
	}
	bad := synthDoc("rrul", 5)
	bad.Series[0].Samples[1].T = 1e9
	if err := bad.AddComputed(); err == nil || !strings.Contains(err.Error(), "far past the run's end") {
		t.Errorf("a sample at 1e9 s: %v", err)
	}
	if tests := synthDoc("tcp_upload", 1); len(tests.Series) != 2 {
		t.Errorf("tcp_upload has %d series; Flent computes none for it", len(tests.Series))
	}
}

func TestGlob(t *testing.T) {
	cases := []struct {
		glob, name string
		want       bool
	}{
		{"TCP upload*", "TCP upload BE", true},
		{"TCP upload*", "TCP upload", true},
		{"TCP upload*", "TCP upload::1", false}, // * stops at ':'
		{"TCP upload*", "TCP download BE", false},
		{"TCP upload::*", "TCP upload::12", true},
		{"TCP upload::*", "TCP upload::1::tcp_cwnd", false},
		{"TCP**", "TCP upload::1::tcp_cwnd", true},
		{"Ping (ms)*", "Ping (ms) UDP BE", true},
		{"TCP*", "Ping (ms) ICMP", false},
	}
	for _, c := range cases {
		if got := globMatch(c.glob, c.name); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v", c.glob, c.name, got)
		}
	}
	if !excludeMatch("*fairness*", "TCP upload::1 fairness") || excludeMatch("TCP upload sum", "TCP upload sum2") {
		t.Error("exclude patterns: fnmatch semantics")
	}
}

// FindSeries looks among the top-level series first, then among the
// flows' own series.
func TestFindSeries(t *testing.T) {
	d := gapDoc()
	d.Flows = []Flow{{Label: "TCP upload::1", Series: []Series{{Name: "TCP upload::1::cwnd"}}}}
	if s := d.FindSeries("Ping (ms) ICMP"); s != &d.Series[3] {
		t.Errorf("top-level series: %p, want %p", s, &d.Series[3])
	}
	if s := d.FindSeries("TCP upload::1::cwnd"); s != &d.Flows[0].Series[0] {
		t.Errorf("a flow's series: %p, want %p", s, &d.Flows[0].Series[0])
	}
	if s := d.FindSeries("TCP download"); s != nil {
		t.Errorf("a series that is not there: %+v", s)
	}
}
