package testrun

import (
	"strings"
	"testing"
	"time"

	"wanlab/results"
	"wanlab/tcspec"
)

// The router's report counts what happened between the reading before the
// run and the last one, judges each direction with package fidelity, and
// lays the steps out per direction, delays in ns. (Its keys are checked
// against the documentation in package results, which owns its types.)
func TestRouterReport(t *testing.T) {
	o := Defaults()
	o.Test = "tcp_upload"
	o.Up = "netem delay 2ms; tbf rate 10mbit burst 32k latency 50ms"
	o.Down = "netem delay 20ms"
	o.Duration, o.Lead, o.Tail = dur(time.Second), dur(time.Second), dur(0)
	s, err := Prepare(o, tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := func(out, delayN uint64, delaySum float64, latP99 int64, ring uint64) routerView {
		d := dirView{BytesOut: out, Delivered: out / 1000, Sent: out / 1000, DelayN: delayN, DelaySum: delaySum,
			LatenessN: delayN, LatenessP99Ns: latP99, RingDrops: ring, DroppedByReason: map[string]uint64{"limit": ring}}
		return routerView{Up: d, Down: d}
	}
	rec := &routerRecord{base: view(1000, 10, 10*2e6, 0, 0)}
	for k := 0; k <= 10; k++ {
		// 100 kB per step, each packet 2 ms through the chain; lateness
		// p99 0.3 ms: above the up direction's tolerance (a tenth of
		// 2 ms), within the down one's if judged alone.
		rec.steps = append(rec.steps, routerStep{K: k, View: view(1000+uint64(k)*100_000, 10+uint64(k)*100, (10+float64(k)*100)*2e6, 300_000, 0)})
	}
	rec.final = view(1000+10*100_000, 1010, 1010*2e6, 300_000, 3)
	rec.hasFinal = true
	rep := rec.report(s)
	if rep.Faithful == nil || *rep.Faithful || len(rep.Directions) != 2 {
		t.Fatalf("report %+v: want two directions, not faithful", rep)
	}
	up := rep.Directions[0]
	if up.Name != "up" || up.ConfiguredRateBps != 10_000_000 || up.ConfiguredDelayNs != int64(2*time.Millisecond) ||
		up.BytesOut != 1_000_000 || up.Delay.N != 1000 || up.Delay.MeanNs != 2e6 || up.RingDrops != 3 {
		t.Errorf("up %+v", up)
	}
	// The load is grid points 5 to 10: 5 steps of 100 kB in 1 s.
	if up.LoadRateBps != 500_000*8 {
		t.Errorf("load rate %v bit/s, want 4e6", up.LoadRateBps)
	}
	// The smallest delay of the run is 2 ms, so both directions tolerate
	// 0.2 ms and both are late; both had ring drops.
	for _, d := range rep.Directions {
		if d.Verdict.Faithful || d.Verdict.ToleranceNs != int64(200*time.Microsecond) || len(d.Verdict.Causes) != 2 {
			t.Errorf("%s verdict %+v", d.Name, d.Verdict)
		}
	}
	if len(rep.Steps.TS) != 11 || rep.Steps.Up.DeliveredBytes[3] != 100_000 || *rep.Steps.Down.DelayMeanNs[4] != 2e6 {
		t.Errorf("steps %+v", rep.Steps)
	}
	var b strings.Builder
	if err := results.WriteSummary(&b, &results.Document{Run: results.Run{Test: "tcp_upload"}, Router: rep}, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Verdict: NOT FAITHFUL", "up: the router released packets late", "ring drops 3", "configured: rate 10.000 Mbit/s, delay 2.000 ms",
		"delay mean 2.000 ms, median 0.000, 99th % 0.000, max 0.000 ms"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, b.String())
		}
	}

	direct := (&routerRecord{}).report(&Setup{Mode: ModeDirect, Lab: "x"})
	b.Reset()
	results.WriteSummary(&b, &results.Document{Router: direct}, false)
	if direct.Faithful != nil || direct.Mode != results.RouterDirect || !strings.Contains(b.String(), "Router: none") {
		t.Errorf("direct: %+v, printed %q", direct, b.String())
	}
}
