package quicflow

import (
	"net/netip"
	"strings"
	"testing"

	"wanlab/internal/roottest"
	"wanlab/internal/traffictest"
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

// noLeaks checks, when the test ends, that no goroutine and no file
// descriptor it started is left, and no goroutine of quic-go or of this
// package.
func noLeaks(t *testing.T) { traffictest.Leaks{Goroutines: true, Owned: flowGoroutine}.Check(t) }

// noFlowLeaks checks, when the test ends, that no goroutine runs code of
// quic-go or of this package and no file descriptor the test opened is
// left. It is noLeaks for tests beside a testbed, whose router starts
// goroutines of its own in the background.
func noFlowLeaks(t *testing.T) { traffictest.Leaks{Owned: flowGoroutine}.Check(t) }

// flowGoroutine reports whether a goroutine's stack runs code of quic-go
// or methods of this package's types (the flow's goroutines, not the
// tests').
func flowGoroutine(stack string) bool {
	return strings.Contains(stack, "github.com/quic-go/") || strings.Contains(stack, "wanlab/traffic/quicflow.(*")
}
