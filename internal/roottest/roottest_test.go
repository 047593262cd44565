package roottest

import (
	"testing"
	"time"
)

func TestRTTWithin(t *testing.T) {
	for _, tc := range []struct {
		rtts []float64
		late float64
		ok   bool
	}{
		{[]float64{50.1, 50.1, 50.2, 50.3}, 0, true},
		{[]float64{50.0, 50.1, 50.1, 53.9}, 0, true},                          // one in four outside: machine noise
		{[]float64{50.1, 50.1, 52.0, 53.9}, 0, false},                         // half outside
		{[]float64{50.1, 50.1, 50.2, 50.3, 50.4, 52.5, 52.6, 53.9}, 0, false}, // 3 in 8 outside
		{[]float64{50.1, 50.1, 50.2, 50.3, 50.4, 52.5, 52.6, 53.9}, 2, true},  // ... the router itself saw 2 ms of lateness
		{[]float64{50.1, 50.1, 50.2, 50.3, 50.4, 52.5, 52.6, 53.9}, 1, false}, // ... 1 ms does not explain them
		{[]float64{48.9, 50.1, 50.1, 53.9}, 5, false},                         // lateness never excuses an early sample
		{[]float64{49.5, 50.1, 50.1, 50.2}, 0, false},                         // early: the emulator never delivers early
		{[]float64{51.2, 51.3, 51.4, 51.5}, 0, false},                         // systematic error
		{[]float64{51.2, 51.3, 51.4, 51.5}, 5, false},                         // ... which lateness does not excuse: the median
		{nil, 0, false},
	} {
		if ok, sum := RTTWithin(tc.rtts, 50, 1, tc.late); ok != tc.ok {
			t.Errorf("%v: ok = %v (%s), want %v", tc.rtts, ok, sum, tc.ok)
		}
	}
}

func TestTwiceFirstAttemptCleanIsEnough(t *testing.T) {
	calls := 0
	Twice(t, "x", func(r Reporter) {
		calls++
		r.Logf("attempt %d", calls)
	})
	if calls != 1 {
		t.Fatalf("%d attempts, want 1", calls)
	}
	calls = 0
	Twice(t, "y", func(r Reporter) {
		calls++
		if calls == 1 {
			r.Errorf("noise")
		}
	})
	if calls != 2 {
		t.Fatalf("%d attempts after a failed first one, want 2", calls)
	}
}

func TestIdleWakeup(t *testing.T) {
	d := IdleWakeup(t)
	t.Logf("idle wake-up median: %v", d)
	if d <= 0 || d > time.Second {
		t.Errorf("IdleWakeup = %v, want a positive duration under a second", d)
	}
}
