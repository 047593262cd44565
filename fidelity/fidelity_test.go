package fidelity

import (
	"testing"
	"time"

	"wanlab/tcspec"
)

func TestTolerance(t *testing.T) {
	for _, c := range []struct{ delay, want time.Duration }{
		{0, time.Millisecond},
		{2 * time.Millisecond, 200 * time.Microsecond},
		{10 * time.Millisecond, time.Millisecond},
		{100 * time.Millisecond, time.Millisecond},
	} {
		if got := Tolerance(c.delay); got != c.want {
			t.Errorf("Tolerance(%v) = %v, want %v", c.delay, got, c.want)
		}
	}
}

func TestJudge(t *testing.T) {
	ok := Judge(Direction{Name: "up", Releases: 1000, LatenessP99: 90 * time.Microsecond}, time.Millisecond)
	if !ok.Faithful || len(ok.Causes) != 0 || ok.ToleranceNs != 100000 {
		t.Errorf("90 µs against 1 ms of delay: %+v", ok)
	}
	late := Judge(Direction{Name: "up", Releases: 1000, LatenessP99: 110 * time.Microsecond}, time.Millisecond)
	if late.Faithful || len(late.Causes) != 1 || late.Causes[0].Code != "late_releases" {
		t.Errorf("110 µs against 1 ms of delay: %+v", late)
	}
	ring := Judge(Direction{Name: "down", RingDrops: 3}, 0)
	if ring.Faithful || ring.Causes[0].Code != "ring_drops" {
		t.Errorf("ring drops: %+v", ring)
	}
	both := Judge(Direction{Name: "down", Releases: 5, LatenessP99: 5 * time.Millisecond, RingDrops: 1}, 0)
	if both.Faithful || len(both.Causes) != 2 {
		t.Errorf("both causes: %+v", both)
	}
}

func TestMinDelay(t *testing.T) {
	up, _ := tcspec.ParseChain("netem delay 30ms; netem delay 5ms 1ms; tbf rate 1mbit burst 10k latency 50ms", tcspec.Options{})
	down, _ := tcspec.ParseChain("netem delay 10ms", tcspec.Options{})
	none, _ := tcspec.ParseChain("tbf rate 1mbit burst 10k latency 50ms", tcspec.Options{})
	if d := OneWayDelay(up); d != 35*time.Millisecond {
		t.Errorf("OneWayDelay(up) = %v", d)
	}
	if d := MinDelay(up, down, none); d != 10*time.Millisecond {
		t.Errorf("MinDelay = %v, want 10ms", d)
	}
	if d := MinDelay(none, nil); d != 0 {
		t.Errorf("MinDelay without delays = %v", d)
	}
}
