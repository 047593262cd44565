// Package traffictest holds what the tests of the traffic generators
// share: checks that a flow leaves no goroutine or file descriptor behind
// and that a bulk flow's samples add up, and a sniffer that reads the TOS
// byte of the packets on a namespace's loopback device. It is for tests only, and imports no traffic package,
// so that package traffic's own tests can use it.
package traffictest

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// OpenFDs counts this process's open file descriptors.
func OpenFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// NoLeaks checks, when the test ends, that no goroutine and no file
// descriptor it started is left: both counts must be back to what they
// are now. Goroutines get a short while to finish exiting, which they do
// after Run has waited for them.
func NoLeaks(t testing.TB) { Leaks{Goroutines: true}.Check(t) }

// Leaks says what a leak check looks for besides the file descriptors,
// which must always be back to their count at the start.
type Leaks struct {
	// Goroutines requires the number of goroutines to be back to its
	// count at the start.
	Goroutines bool
	// Owned, if set, picks the goroutines, by their stack, that must all
	// have ended whatever else runs: the code under test's, beside a
	// testbed whose router starts goroutines of its own in the background.
	Owned func(stack string) bool
}

// Check arms the check: it takes the counts now and judges them when the
// test ends, after waiting up to 2 s for them to come back.
func (l Leaks) Check(t testing.TB) {
	t.Helper()
	g0, fd0 := runtime.NumGoroutine(), OpenFDs(t)
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		var g, fd int
		var owned []string
		for {
			g, fd, owned = runtime.NumGoroutine(), OpenFDs(t), l.owned()
			if ((g <= g0 || !l.Goroutines) && len(owned) == 0 && fd <= fd0) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if l.Goroutines && g > g0 {
			t.Errorf("%d goroutines after the test, %d before:\n%s", g, g0, stacks())
		}
		if len(owned) > 0 {
			t.Errorf("%d goroutines of the code under test after the test:\n%s", len(owned), strings.Join(owned, "\n\n"))
		}
		if fd > fd0 {
			t.Errorf("%d open file descriptors after the test, %d before", fd, fd0)
		}
	})
}

// owned returns the stacks of the goroutines Owned picks, but the
// checking one's.
func (l Leaks) owned() []string {
	if l.Owned == nil {
		return nil
	}
	var out []string
	for _, g := range strings.Split(stacks(), "\n\n") {
		if l.Owned(g) && !strings.Contains(g, "wanlab/internal/traffictest.") {
			out = append(out, g)
		}
	}
	return out
}

// stacks returns the stacks of every goroutine.
func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
