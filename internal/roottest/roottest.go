// Package roottest holds what the tests that build real namespaces share:
// skipping without root, cleaning what a crashed earlier run left, and
// testbeds that remove themselves and check that they did.
package roottest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"wanlab/netns"
)

// The main goroutine stays in the root namespace, as in the wanlab command:
// namespace work happens on other threads locked for it (netns.Do).
func init() { runtime.LockOSThread() }

// Main runs a package's tests after clean has removed what a crashed run
// left behind (netns.CleanStale, or lab.CleanStale which also knows
// testbeds); it is meant to be called from TestMain.
func Main(m *testing.M, clean func() ([]string, error)) {
	if os.Geteuid() == 0 {
		if gone, err := clean(); err != nil {
			fmt.Fprintln(os.Stderr, "CleanStale:", err)
		} else if len(gone) > 0 {
			fmt.Fprintln(os.Stderr, "removed stale namespaces:", gone)
		}
	}
	os.Exit(m.Run())
}

// NeedRoot skips the test unless it runs as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to create network namespaces and TUN devices (run the tests as root)")
	}
}

// NewTestbed registers a testbed with a random name; at the end of the test
// it is removed, and its namespaces must be gone.
func NewTestbed(t testing.TB) *netns.Testbed {
	t.Helper()
	NeedRoot(t)
	tb, err := netns.NewTestbed(fmt.Sprintf("t%06x", rand.Uint32()&0xffffff))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st, _ := tb.State()
		if err := tb.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, n := range st.Namespaces {
			if netns.Exists(n) {
				t.Errorf("namespace %s still exists after Close", n)
			}
		}
	})
	return tb
}
