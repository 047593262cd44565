package bridgeport

import (
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
	"wanlab/netns"
)

func TestMain(m *testing.M) { roottest.Main(m, netns.CleanStale) }

// The interfaces of a test: a veth pair, the port in namespace p and its
// peer in namespace q, with the peer's address on the port's subnet.
const (
	portName = "wl-bp0"
	peerName = "wl-bq0"
)

var (
	portAddr = netip.MustParsePrefix("10.77.0.1/24")
	peerAddr = netip.MustParsePrefix("10.77.0.2/24")
)

// pair is a port and its peer, each in a namespace of a testbed of the
// test's own, removed when the test ends.
type pair struct {
	tb   *netns.Testbed
	p, q *netns.Handle
}

// newPair makes the testbed, the veth pair and the peer's address, up;
// the port is left down, without addresses.
func newPair(t *testing.T) *pair {
	t.Helper()
	tb := roottest.NewTestbed(t)
	pr := &pair{tb: tb}
	var err error
	if pr.p, err = tb.Namespace("p"); err != nil {
		t.Fatal(err)
	}
	if pr.q, err = tb.Namespace("q"); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(pr.q.Path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: portName}, PeerName: peerName, PeerNamespace: netlink.NsFd(fd)}
	if err := pr.p.Netlink().LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		tb.AddDevice(pr.p, portName), tb.AddDevice(pr.q, peerName),
		pr.p.LoopbackUp(), pr.q.LoopbackUp(),
		pr.q.SetLinkUp(peerName), pr.q.AddAddr(peerName, peerAddr),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return pr
}

func mustInspect(t *testing.T, h *netns.Handle, ifname string) State {
	t.Helper()
	st, err := Inspect(h, ifname)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
