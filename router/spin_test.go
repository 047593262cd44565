package router

import (
	"testing"
	"time"

	"wanlab/clock"
)

// TestBudgetSpin drives budgetSpin through windows of known spinning: a
// loop that spins half its time has its spin cap halved window by window
// down to minSpin, one that spins between the share and half of it keeps
// its cap, one that hardly spins gets it back, doubling up to maxSpin; no
// decision is taken before a whole window has passed.
func TestBudgetSpin(t *testing.T) {
	l := &loop{maxSpin: maxSpin, spinCap: maxSpin}
	now := clock.Time(time.Second)
	l.budgetSpin(now) // the first window begins
	window := func(spun time.Duration) {
		t.Helper()
		l.st.spun += int64(spun)
		now += clock.Time(spinWindow)
		l.budgetSpin(now)
	}

	// Half of a window spinning, but the window is not over: no change.
	l.st.spun += int64(spinWindow / 2)
	l.budgetSpin(now + clock.Time(spinWindow/2))
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
