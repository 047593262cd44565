package traffic

import (
	"net/netip"
	"os"
	"testing"

	"wanlab/internal/roottest"
	"wanlab/internal/traffictest"
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

// noLeaks checks, when the test ends, that no goroutine and no file
// descriptor it started is left.
func noLeaks(t *testing.T) { traffictest.NoLeaks(t) }

func isRoot() bool { return os.Geteuid() == 0 }

// quiet makes a test that judges timing the only root test running on the
// machine, when it runs as root (see roottest.Serialize); without root it
// takes its chances.
func quiet(t *testing.T) {
	if isRoot() {
		roottest.Serialize(t)
	}
}
