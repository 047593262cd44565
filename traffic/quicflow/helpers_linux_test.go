package quicflow

import (
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/lab"
	"wanlab/traffic"
)

func TestMain(m *testing.M) { roottest.Main(m, lab.CleanStale) }

var (
	lo4 = netip.MustParseAddr("127.0.0.1")
	lo6 = netip.MustParseAddr("::1")
)

// loopback returns a client and a server host on this process's loopback
// address of the family of addr.
func loopback(addr netip.Addr) (client, server traffic.Host) {
	return traffic.Host{Net: traffic.Local{}, Addr: addr}, traffic.Host{Net: traffic.Local{}, Addr: addr}
}

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// noLeaks checks, when the test ends, that no goroutine and no file
// descriptor it started is left (goroutines get a short while to finish
// exiting, which they do after Run has waited for them).
func noLeaks(t *testing.T) { checkLeaks(t, true) }

// noFlowLeaks checks, when the test ends, that no goroutine runs code of
// quic-go or of this package and no file descriptor the test opened is
// left. It is noLeaks for tests beside a testbed, whose router starts
// goroutines of its own in the background.
func noFlowLeaks(t *testing.T) { checkLeaks(t, false) }

func checkLeaks(t *testing.T, count bool) {
	t.Helper()
	g0, fd0 := runtime.NumGoroutine(), openFDs(t)
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		var g, fd int
		var flows []string
		for {
			g, fd, flows = runtime.NumGoroutine(), openFDs(t), flowGoroutines()
			if ((g <= g0 || !count) && len(flows) == 0 && fd <= fd0) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if count && g > g0 {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines after the test, %d before:\n%s", g, g0, buf[:runtime.Stack(buf, true)])
		}
		if len(flows) > 0 {
			t.Errorf("%d goroutines of quic-go or quicflow after the test:\n%s", len(flows), strings.Join(flows, "\n\n"))
		}
		if fd > fd0 {
			t.Errorf("%d open file descriptors after the test, %d before", fd, fd0)
		}
	})
}

// flowGoroutines returns the stacks of the goroutines that run code of
// quic-go or methods of this package's types (the flow's goroutines, not
// the tests').
func flowGoroutines() []string {
	buf := make([]byte, 1<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if (strings.Contains(g, "github.com/quic-go/") || strings.Contains(g, "wanlab/traffic/quicflow.(*")) && !strings.Contains(g, "checkLeaks") {
			out = append(out, g)
		}
	}
	return out
}

func mustNew(t *testing.T, cfg Config) *Flow {
	t.Helper()
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
