package roottest

import (
	"testing"
	"time"
)

func TestRTTWithin(t *testing.T) {
	for _, tc := range []struct {
		rtts []float64
		ok   bool
	}{
		{[]float64{50.1, 50.1, 50.2, 50.3}, true},
		{[]float64{50.0, 50.1, 50.1, 53.9}, true},  // one in four outside: machine noise
		{[]float64{50.1, 50.1, 52.0, 53.9}, false}, // half outside
		{[]float64{49.5, 50.1, 50.1, 50.2}, false}, // early: the emulator never delivers early
		{[]float64{51.2, 51.3, 51.4, 51.5}, false}, // systematic error
		{nil, false},
	} {
		if ok, sum := RTTWithin(tc.rtts, 50, 1); ok != tc.ok {
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
