package report

import (
	"encoding/json"
	"math"
	"testing"
)

// TestSeriesData: a run's series for the charts are its throughput and
// latency series, throughput first, with their samples to four
// significant digits, a lost probe as null, and their times to the
// millisecond: the grid's held once for every series sampled on it, as
// its start, step and length.
func TestSeriesData(t *testing.T) {
	d := synthRun("tcp_upload", "t", 3, faithfulRun)
	sd, ok := runSeriesData("x", d)
	if !ok || sd.ID != "x" {
		t.Fatalf("no series data (%v, %q)", ok, sd.ID)
	}
	var got struct {
		Load   [2]float64
		Xs     []json.RawMessage
		Series []struct {
			Label, Unit string
			X           int
			Y           []*float64
		}
	}
	if err := json.Unmarshal([]byte(sd.JSON), &got); err != nil {
		t.Fatal(err)
	}
	if got.Load != [2]float64{d.Run.LeadS, d.Run.LeadS + d.Run.DurationS} {
		t.Errorf("load %v", got.Load)
	}
	// tcp_upload's series: the upload (on the grid) and the ICMP ping
	// (13 ms after it): two lists of times.
	if len(got.Series) != 2 || got.Series[0].Label != "TCP upload" || got.Series[1].Label != "Ping (ms) ICMP" || len(got.Xs) != 2 {
		t.Fatalf("series %+v, %d lists of times", got.Series, len(got.Xs))
	}
	if string(got.Xs[0]) != `{"x0":0,"dx":0.2,"n":71}` {
		t.Errorf("the grid's times are %s", got.Xs[0])
	}
	xs := make([][]float64, len(got.Xs))
	for i, raw := range got.Xs {
		var even struct {
			X0, Dx float64
			N      int
		}
		if json.Unmarshal(raw, &xs[i]) != nil && json.Unmarshal(raw, &even) == nil {
			for k := range even.N {
				xs[i] = append(xs[i], even.X0+float64(k)*even.Dx)
			}
		}
	}
	lost := 0
	for i, cs := range got.Series {
		s := d.FindSeries(cs.Label)
		if cs.Unit != s.Unit || len(cs.Y) != len(s.Samples) || len(xs[cs.X]) != len(s.Samples) {
			t.Fatalf("%s: %s, %d values, %d times; want %s, %d", cs.Label, cs.Unit, len(cs.Y), len(xs[cs.X]), s.Unit, len(s.Samples))
		}
		for k, p := range s.Samples {
			x, y := xs[cs.X][k], cs.Y[k]
			if math.Abs(x-p.T) > 0.5e-3+1e-9 {
				t.Errorf("%s[%d]: time %v, want %v", cs.Label, k, x, p.T)
			}
			switch {
			case math.IsNaN(p.V):
				lost++
				if y != nil {
					t.Errorf("%s[%d]: a lost probe is %v, want null", cs.Label, k, *y)
				}
			case y == nil || math.Abs(*y-p.V) > 1e-3*math.Max(1, math.Abs(p.V)):
				t.Errorf("series %d %s[%d]: %v, want %v", i, cs.Label, k, y, p.V)
			}
		}
	}
	if lost == 0 {
		t.Error("the run has no lost probe to check")
	}

	d.Series = nil
	if _, ok := runSeriesData("x", d); ok {
		t.Error("series data for a run without series")
	}
}
