package results

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

// rateSeries is a load flow's series sampled every 0.5 s from 0 to 10 s:
// rate while on(t), 0 otherwise, summarised over window.
func rateSeries(name string, window [2]float64, rate float64, on func(t float64) bool) Series {
	s := Series{Name: name, Unit: "Mbits/s", Window: window}
	for k := 0; k <= 20; k++ {
		t := float64(k) * 0.5
		v := 0.0
		if on(t) {
			v = rate
		}
		s.Samples = append(s.Samples, Sample{T: t, V: v})
	}
	return s
}

// fairnessDoc has two upload flows at 3 and 1 Mbit/s over the whole load,
// and two download flows at 2 Mbit/s, the second of which runs only the
// second half of the load, its span, over which it is summarised; and a
// ping, which is no load flow.
func fairnessDoc() *Document {
	all := func(float64) bool { return true }
	load := [2]float64{0, 10}
	half := [2]float64{5, 10}
	d := &Document{
		Run: Run{Test: "tcp_4up_squarewave", Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), DurationS: 10, StepS: 0.5, Framing: "ip"},
		Series: []Series{
			rateSeries("TCP upload::1", load, 3, all),
			rateSeries("TCP upload::2", load, 1, all),
			rateSeries("TCP download::1", load, 2, all),
			rateSeries("TCP download::2", half, 2, func(t float64) bool { return t > 5 }),
			{Name: ICMPPing, Unit: "ms", Window: load, Samples: Samples{{1, 40}, {2, 41}}},
		},
		Flows: []Flow{
			{ID: 1, Label: "TCP upload::1", Direction: "up", Protocol: "tcp"},
			{ID: 2, Label: "TCP upload::2", Direction: "up", Protocol: "tcp"},
			{ID: 3, Label: "TCP download::1", Direction: "down", Protocol: "tcp", Span: &load},
			{ID: 4, Label: "TCP download::2", Direction: "down", Protocol: "tcp", Span: &half},
			{ID: 5, Label: ICMPPing, Direction: "both", Protocol: "icmp"},
		},
	}
	d.Summarize()
	return d
}

func TestFlowFairness(t *testing.T) {
	d := fairnessDoc()
	fair := d.FlowFairness()
	if len(fair) != 2 || fair[0].Direction != "up" || fair[1].Direction != "down" {
		t.Fatalf("fairness %+v, want up then down", fair)
	}
	// Two flows at 3:1: (3+1)² / (2·(9+1)) = 0.8, shares 3/4 and 1/4.
	closeTo(t, "up jain", fair[0].Jain, 0.8)
	closeTo(t, "share of flow 1", fair[0].Flows[0].Share, 0.75)
	closeTo(t, "share of flow 2", fair[0].Flows[1].Share, 0.25)
	// Each download flow got 2 Mbit/s while it ran: equal over their
	// spans (over the whole load the second's mean would be 1, and the
	// index 0.9).
	closeTo(t, "down jain", fair[1].Jain, 1)
	for _, f := range fair {
		sum := 0.0
		for _, s := range f.Flows {
			sum += s.Share
		}
		closeTo(t, f.Direction+" shares' sum", sum, 1)
		if len(f.Flows) != 2 || f.Flows[0].Unit != "Mbits/s" {
			t.Errorf("%s flows %+v", f.Direction, f.Flows)
		}
	}
	if _, ok := FlowShareOf(fair, 5); ok {
		t.Error("the ping has a share")
	}
	if v, ok := FlowShareOf(fair, 4); !ok || v != 0.5 {
		t.Errorf("share of flow 4 = %v, %v; want 0.5", v, ok)
	}
}

func TestRunStat(t *testing.T) {
	d := fairnessDoc()
	for name, want := range map[string]float64{"jain_up": 0.8, "jain_down": 1} {
		v, ok := d.RunStat(name)
		if !ok {
			t.Fatalf("RunStat(%q) unknown", name)
		}
		closeTo(t, name, v, want)
	}
	if _, ok := d.RunStat("mean"); ok {
		t.Error(`RunStat("mean") is a series' statistic, not the run's`)
	}
	// One flow each way: no index.
	d.Flows = d.Flows[1:3]
	if v, ok := d.RunStat("jain_up"); !ok || !math.IsNaN(v) {
		t.Errorf("jain_up of one upload flow = %v, %v; want NaN", v, ok)
	}
}

// Flows that all got nothing have no index, as Flent's fairness has no
// value where every flow is at 0; nor do flows without samples in their
// window.
func TestFlowFairnessNone(t *testing.T) {
	d := fairnessDoc()
	for i := range d.Series[:2] {
		for k := range d.Series[i].Samples {
			d.Series[i].Samples[k].V = 0
		}
	}
	d.Series[2].Window = [2]float64{20, 30}
	d.Summarize()
	if len(d.Fairness) != 0 {
		t.Errorf("fairness %+v, want none", d.Fairness)
	}
}

// Summarize records the fairness, and it goes through the file.
func TestFairnessRecorded(t *testing.T) {
	d := fairnessDoc()
	if len(d.Fairness) != 2 {
		t.Fatalf("Summarize recorded %+v", d.Fairness)
	}
	var b bytes.Buffer
	if err := d.Encode(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"fairness":[{"direction":"up","jain":0.8`) {
		t.Errorf("the document does not record the fairness: %.300s", b.String()[strings.Index(b.String(), `"flows"`):])
	}
	got, err := Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Fairness) != 2 || got.Fairness[0].Flows[0].Share != 0.75 || got.Fairness[1].Flows[1].Label != "TCP download::2" {
		t.Errorf("decoded %+v", got.Fairness)
	}
}

func TestMedianRTT(t *testing.T) {
	f := Flow{Label: "TCP upload::1", Series: []Series{
		{Name: "TCP upload::1::receiver_tcp_rtt", Unit: "ms", Window: [2]float64{0, 10}, Samples: Samples{{1, 5}}},
		{Name: "TCP upload::1::tcp_rtt", Unit: "ms", Window: [2]float64{0, 10}, Samples: Samples{{1, 45}, {2, 40}, {3, 41}, {12, 100}}},
	}}
	for i := range f.Series {
		f.Series[i].Summarize(1)
	}
	if ms, ok := f.MedianRTT(); !ok || ms != 41 {
		t.Errorf("MedianRTT = %v, %v; want 41 (the sender's, in the window)", ms, ok)
	}
	f.Series = f.Series[:1]
	if _, ok := f.MedianRTT(); ok {
		t.Error("a flow without tcp_rtt has a median RTT")
	}
}

// wanlab show prints each flow's share and a fairness line per direction.
func TestWriteSummaryFairness(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummary(&b, fairnessDoc(), false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"\n  id  label            dir   prot  tos        share  congestion control\n",
		"\n   1  TCP upload::1    up    tcp   tos 0x00   75.0%  -\n",
		"\n   2  TCP upload::2    up    tcp   tos 0x00   25.0%  -\n",
		"\n   4  TCP download::2  down  tcp   tos 0x00   50.0%  -\n",
		"\n   5  Ping (ms) ICMP   both  icmp  tos 0x00       -  -\n",
		"\n fairness up:  Jain's index 0.8000 of the 2 upload flows' mean goodput, each over its span\n",
		"\n fairness down: Jain's index 1.0000 of the 2 download flows' mean goodput, each over its span\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	// Without two flows in a direction: no share column, no fairness.
	d := fairnessDoc()
	d.Flows = d.Flows[1:3]
	d.Summarize()
	b.Reset()
	if err := WriteSummary(&b, d, false); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "share") || strings.Contains(out, "fairness") {
		t.Errorf("a run of one flow each way has a share or fairness:\n%s", out)
	}
}
