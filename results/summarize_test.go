package results

import (
	"math"
	"strings"
	"testing"
)

func closeTo(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.15g, want %.15g", what, got, want)
	}
}

// The window is (1, 3]: the samples at 0.5 and 1.0 are the lead and 3.5 the
// tail. Inside are 2, a lost probe, 4 and 6.
func windowSeries(unit string) Series {
	nan := math.NaN()
	return Series{Name: "s", Unit: unit, Window: [2]float64{1, 3}, Samples: Samples{
		{0.5, 100}, {1.0, 200}, {1.5, 2}, {2.0, nan}, {2.5, 4}, {3.0, 6}, {3.5, 100}, {4, nan},
	}}
}

func TestSummarizeWindowAndLost(t *testing.T) {
	s := windowSeries("Mbits/s")
	s.Summarize(0.5)
	sm := s.Summary
	if sm.N != 3 || s.Lost != 1 {
		t.Fatalf("N %d lost %d, want 3 and 1 (the lost probe at 4 s is outside the window)", sm.N, s.Lost)
	}
	closeTo(t, "mean", sm.Mean, 4)
	closeTo(t, "median", sm.Median, 4)
	closeTo(t, "min", sm.Min, 2)
	closeTo(t, "max", sm.Max, 6)
	// Population: squared deviations 4, 0, 4 over 3.
	closeTo(t, "variance", sm.Variance, 8.0/3)
	closeTo(t, "stddev", sm.StdDev, math.Sqrt(8.0/3))
	// numpy linear: rank 0.9·2 = 1.8 → 4 + 0.8·2; rank 1.98 → 4 + 0.98·2.
	closeTo(t, "p90", sm.P90, 5.6)
	closeTo(t, "p99", sm.P99, 5.96)
	// (2 + 4 + 6) Mbit/s × 0.5 s.
	closeTo(t, "total", sm.Total, 6)
	if s.TotalUnit() != "Mbits" {
		t.Errorf("total unit %q", s.TotalUnit())
	}

	ms := windowSeries("ms")
	ms.Summarize(0.5)
	if !math.IsNaN(ms.Summary.Total) || ms.TotalUnit() != "" || ms.Summary.Mean != 4 {
		t.Errorf("a delay series: total %v (unit %q), mean %v", ms.Summary.Total, ms.TotalUnit(), ms.Summary.Mean)
	}

	empty := Series{Name: "e", Unit: "Mbits/s", Window: [2]float64{10, 20}, Samples: windowSeries("").Samples}
	empty.Summarize(0.5)
	if empty.Summary.N != 0 || !math.IsNaN(empty.Summary.Mean) || !math.IsNaN(empty.Summary.Total) {
		t.Errorf("no samples in the window: %+v", empty.Summary)
	}
}

func TestDocumentSummarizeCoversFlows(t *testing.T) {
	d := &Document{Run: Run{StepS: 0.5}, Series: []Series{windowSeries("ms")},
		Flows: []Flow{{ID: 1, Label: "s", Series: []Series{windowSeries("packets")}}}}
	d.Flows[0].Series[0].Name = "s::tcp_cwnd"
	d.Summarize()
	if d.Series[0].Summary.N != 3 || d.Flows[0].Series[0].Summary.N != 3 || d.Flows[0].Series[0].Lost != 1 {
		t.Errorf("summaries %+v / %+v", d.Series[0].Summary, d.Flows[0].Series[0].Summary)
	}
}

func TestValidate(t *testing.T) {
	good := func() *Document { return synthDoc("tcp_upload", 1) }
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		breakIt func(*Document)
		want    string
	}{
		{func(d *Document) { d.Run.Test = "" }, "run.test is empty"},
		{func(d *Document) { d.Run.StepS = 0 }, "run.step_s is 0"},
		{func(d *Document) { d.Run.LeadS = -1 }, "non-negative"},
		{func(d *Document) { d.Run.Framing = "atm" }, `run.framing is "atm"`},
		{func(d *Document) { d.Series[1].Name = d.Series[0].Name }, "two series are named"},
		{func(d *Document) { d.Series[0].Window = [2]float64{5, 1} }, "is not an interval"},
		{func(d *Document) { s := d.Series[0].Samples; s[3], s[4] = s[4], s[3] }, "before its predecessor"},
		{func(d *Document) { d.Series[0].Samples[0].T = -0.1 }, "before T0"},
		{func(d *Document) { d.Series[0].Samples[2].V = math.Inf(1) }, "infinite"},
		{func(d *Document) { d.Flows[0].Series[0].Name = "tcp_cwnd" }, `must be named "TCP upload::"`},
		{func(d *Document) { d.Flows[1].ID = d.Flows[0].ID }, "two flows have id"},
	}
	for _, c := range cases {
		d := good()
		c.breakIt(d)
		err := d.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}
