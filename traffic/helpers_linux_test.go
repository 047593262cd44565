package traffic

import (
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"

	"wanlab/internal/roottest"
)

var (
	lo4 = netip.MustParseAddr("127.0.0.1")
	lo6 = netip.MustParseAddr("::1")
)

// loopback returns a client and a server host on this process's loopback
// address of the family of addr.
func loopback(addr netip.Addr) (client, server Host) {
	return Host{Net: Local{}, Addr: addr}, Host{Net: Local{}, Addr: addr}
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
func noLeaks(t *testing.T) {
	t.Helper()
	g0, fd0 := runtime.NumGoroutine(), openFDs(t)
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		var g, fd int
		for {
			g, fd = runtime.NumGoroutine(), openFDs(t)
			if (g <= g0 && fd <= fd0) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if g > g0 {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines after the test, %d before:\n%s", g, g0, buf[:runtime.Stack(buf, true)])
		}
		if fd > fd0 {
			t.Errorf("%d open file descriptors after the test, %d before", fd, fd0)
		}
	})
}

func mustTCP(t *testing.T, cfg TCPConfig) *TCP {
	t.Helper()
	f, err := NewTCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// needRoot skips a test that needs root (raw sockets, namespaces) and
// otherwise holds the machine-wide lock of root tests while it runs.
func needRoot(t *testing.T) { roottest.NeedRoot(t) }

func isRoot() bool { return os.Geteuid() == 0 }

// quiet makes a test that judges timing the only root test running on the
// machine, when it runs as root (see roottest.Serialize); without root it
// takes its chances.
func quiet(t *testing.T) {
	if isRoot() {
		roottest.Serialize(t)
	}
}
