package results

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
)

// sampleAt returns the value of s's sample at t, and false when it has
// none there.
func sampleAt(s *Series, t float64) (float64, bool) {
	for _, p := range s.Samples {
		if math.Abs(p.T-t) < 1e-9 {
			return p.V, true
		}
	}
	return 0, false
}

// hostsSeriesDoc is hostsDoc (one client; upload flows 3 and 1 Mbit/s to
// s1, 2 to s2, 1 to s3; downloads 2 and 2 from s1 and s2) with s1's second
// upload at 5 Mbit/s at t = 2 s and at 0 at t = 4 s, its series computed.
func hostsSeriesDoc(t *testing.T) *Document {
	d := hostsDoc()
	s := d.series("TCP upload BE2 s1")
	for i := range s.Samples {
		switch s.Samples[i].T {
		case 2:
			s.Samples[i].V = 5
		case 4:
			s.Samples[i].V = 0
		}
	}
	if err := d.AddComputed(); err != nil {
		t.Fatal(err)
	}
	d.Summarize()
	return d
}

// At each grid point the series is Jain's index of the servers' sums of
// their flows there: s1's two flows count as one host.
func TestHostFairnessSeries(t *testing.T) {
	d := hostsSeriesDoc(t)
	up := d.series("TCP upload hosts fairness")
	if up == nil {
		t.Fatalf("no TCP upload hosts fairness among %s", d.SeriesList())
	}
	if up.Unit != "Idx" {
		t.Errorf("unit %q, want Idx", up.Unit)
	}
	for _, c := range []struct {
		t, want float64
		why     string
	}{
		// s1 3+1, s2 2, s3 1: (4+2+1)² / (3·(16+4+1)).
		{1, 49.0 / 63, "4, 2, 1"},
		// s1 3+5: (8+2+1)² / (3·(64+4+1)).
		{2, 121.0 / 207, "8, 2, 1"},
		// s1 3+0: (3+2+1)² / (3·(9+4+1)).
		{4, 36.0 / 42, "3, 2, 1"},
	} {
		v, ok := sampleAt(up, c.t)
		if !ok || math.Abs(v-c.want) > 1e-12 {
			t.Errorf("at %vs (hosts at %s): %v (present %v), want %v", c.t, c.why, v, ok, c.want)
		}
	}
	// A point per grid point of the load (0 … 10 s by 0.5 s), summarised.
	if len(up.Samples) != 21 || up.Summary.N != 20 || up.Window != [2]float64{0, 10} {
		t.Errorf("%d samples, %d summarised, window %v; want 21, 20, [0 10]", len(up.Samples), up.Summary.N, up.Window)
	}
	// The flows' own index at t = 2 would be 121/(4·39): the host
	// series is not it.
	if v, _ := sampleAt(up, 2); math.Abs(v-121.0/156) < 1e-3 {
		t.Errorf("at 2s: %v is the flows' index, not the hosts'", v)
	}
	// show lists it with the other series.
	var out bytes.Buffer
	if err := WriteSummary(&out, d, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "TCP upload hosts fairness") {
		t.Errorf("show leaves out the series:\n%s", out.String())
	}
	down := d.series("TCP download hosts fairness")
	if down == nil || down.Summary.Mean != 1 || down.Summary.Min != 1 {
		t.Errorf("download hosts fairness: %+v, want 1 throughout", down)
	}
	// Computing again replaces them, and Flent's computed series of
	// rtt_fair_var ("TCP upload*" less avg and sum) never take them in.
	avg := d.series("TCP upload avg")
	if avg == nil {
		t.Fatalf("no TCP upload avg among %s", d.SeriesList())
	}
	if v, _ := sampleAt(avg, 1); math.Abs(v-7.0/4) > 1e-12 {
		t.Errorf("TCP upload avg at 1s = %v, want 7/4 (the four flows)", v)
	}
	before := len(d.Series)
	if err := d.AddComputed(); err != nil {
		t.Fatal(err)
	}
	if v, _ := sampleAt(d.series("TCP upload avg"), 1); len(d.Series) != before || math.Abs(v-7.0/4) > 1e-12 {
		t.Errorf("again: %d series (was %d), TCP upload avg at 1s = %v", len(d.Series), before, v)
	}
}

// A run between one client and one server has no hosts' fairness, though
// it has several flows.
func TestHostFairnessSeriesNoneForTwoHosts(t *testing.T) {
	d := hostsDoc()
	for i := range d.Flows {
		d.Flows[i].Server = "s1"
	}
	if err := d.AddComputed(); err != nil {
		t.Fatal(err)
	}
	d.Summarize()
	if len(d.FlowFairness()) != 2 {
		t.Fatalf("FlowFairness = %+v; the run's flows should count", d.FlowFairness())
	}
	for _, s := range d.Series {
		if IsWanlabSeries(s.Name) {
			t.Errorf("a run of one client and one server has %q", s.Name)
		}
	}
}

// The Flent export leaves the hosts' fairness out: it is wanlab's, and
// Flent's rtt_fair globs ("TCP upload*") would take it for a flow.
func TestFlentLeavesOutHostFairness(t *testing.T) {
	d := hostsSeriesDoc(t)
	var buf bytes.Buffer
	if err := WriteFlent(&buf, d); err != nil {
		t.Fatal(err)
	}
	var f struct {
		Metadata struct {
			SeriesMeta map[string]any `json:"SERIES_META"`
		} `json:"metadata"`
		Results   map[string]any `json:"results"`
		RawValues map[string]any `json:"raw_values"`
	}
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"TCP upload hosts fairness", "TCP download hosts fairness"} {
		_, r := f.Results[n]
		_, raw := f.RawValues[n]
		_, meta := f.Metadata.SeriesMeta[n]
		if r || raw || meta {
			t.Errorf("%q in the Flent file (results %v, raw_values %v, SERIES_META %v)", n, r, raw, meta)
		}
	}
	if _, ok := f.Results["TCP upload fairness"]; !ok {
		t.Errorf("Flent's own TCP upload fairness is missing: %v", slices.Sorted(maps.Keys(f.Results)))
	}
}
