package router

import (
	"testing"
	"time"

	"wanlab/clock"
)

// TestReviewSpin drives review through windows of known spinning: a
// loop that spins half its time has its spin cap halved window by window
// down to minSpin, one that spins between the share and half of it keeps
// its cap, one that hardly spins gets it back, doubling up to maxSpin; no
// decision is taken before a whole window has passed.
func TestReviewSpin(t *testing.T) {
	l := &loop{r: &Router{}, maxSpin: maxSpin, spinCap: maxSpin}
	now := clock.Time(time.Second)
	l.review(now) // the first window begins
	window := func(spun time.Duration) {
		t.Helper()
		l.st.spun += int64(spun)
		now += clock.Time(spinWindow)
		l.review(now)
	}

	// Half of a window spinning, but the window is not over: no change.
	l.st.spun += int64(spinWindow / 2)
	l.review(now + clock.Time(spinWindow/2))
	if l.spinCap != maxSpin {
		t.Fatalf("cap %v after half a window, want %v unchanged", l.spinCap, maxSpin)
	}
	// The window ends with that half spun: halved.
	window(0)
	if l.spinCap != maxSpin/2 {
		t.Fatalf("cap %v after a window spun half, want %v", l.spinCap, maxSpin/2)
	}
	want := maxSpin / 2
	for range 20 {
		window(spinWindow / 2)
		want = max(want/2, minSpin)
		if l.spinCap != want {
			t.Fatalf("cap %v, want %v", l.spinCap, want)
		}
	}
	if l.spinCap != minSpin {
		t.Fatalf("cap %v after 20 windows spun half, want the floor %v", l.spinCap, minSpin)
	}
	// Between half the share and the share: kept.
	window(time.Duration(0.2 * float64(spinWindow)))
	if l.spinCap != minSpin {
		t.Fatalf("cap %v after a window spun 20%%, want %v kept", l.spinCap, minSpin)
	}
	// Hardly spinning: doubled each window, up to maxSpin.
	for range 20 {
		window(spinWindow / 100)
	}
	if l.spinCap != maxSpin {
		t.Fatalf("cap %v after 20 windows spun 1%%, want %v", l.spinCap, maxSpin)
	}
}

// TestReviewBoost drives review through windows of known busy time: the
// boost goes above boostOffBusy, stays between the two thresholds, and
// comes back below boostOnBusy; spinning does not touch it. While the
// router's other loop is busy, neither has it.
func TestReviewBoost(t *testing.T) {
	l := &loop{r: &Router{}, maxSpin: maxSpin, spinCap: maxSpin, boost: true}
	now := clock.Time(time.Second)
	l.review(now)
	for i, c := range []struct {
		busy, spun float64 // shares of the window
		want       bool
	}{
		{0.1, 0.5, true},
		{0.7, 0, false},
		{0.5, 0, false},
		{0.3, 0, true},
		{0.5, 0, true},
		{0.65, 0.2, false},
		{0, 0, true},
	} {
		l.st.busy += int64(c.busy * float64(spinWindow))
		l.st.spun += int64(c.spun * float64(spinWindow))
		now += clock.Time(spinWindow)
		l.review(now)
		if l.boost != c.want {
			t.Errorf("window %d (busy %.0f%%): boost %v, want %v", i, 100*c.busy, l.boost, c.want)
		}
	}
	// The other loop of the router is busy: no boost, whatever this one does.
	l.r.busyLoops.Add(1)
	now += clock.Time(spinWindow)
	l.review(now)
	if l.boost {
		t.Error("boost kept while the other loop is busy")
	}
	l.r.busyLoops.Add(-1)
	now += clock.Time(spinWindow)
	l.review(now)
	if !l.boost {
		t.Error("no boost once neither loop is busy")
	}
}
