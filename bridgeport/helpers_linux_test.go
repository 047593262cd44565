package bridgeport

import (
	"bufio"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// bridgeNeedsRoot is why the bridge's tests skip in a user namespace.
const bridgeNeedsRoot = "a port's drop program is eBPF, which the kernel loads only for real root (CAP_BPF in the machine's own user namespace)"

// newPair makes the testbed, the veth pair and the peer's address, up;
// the port is left down, without addresses. Records go to a directory of
// the test's own (useRecordDir).
func newPair(t *testing.T) *pair {
	t.Helper()
	roottest.NeedRealRoot(t, bridgeNeedsRoot)
	tb := roottest.NewTestbed(t)
	useRecordDir(t)
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

// useRecordDir points the records at a directory of the test's own, so
// that tests never meet the machine's.
func useRecordDir(t *testing.T) string {
	t.Helper()
	old := recordDir
	recordDir = filepath.Join(t.TempDir(), "ports")
	t.Cleanup(func() { recordDir = old })
	return recordDir
}

func mustInspect(t *testing.T, h *netns.Handle, ifname string) State {
	t.Helper()
	st, err := Inspect(h, ifname)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// sameAs reports how got differs from want in what Take changes and the
// checks read, "" when it does not. The promiscuity count is compared
// too: no packet socket is open in these tests when it is read.
func sameAs(want, got State) string {
	var d []string
	if want.Flags != got.Flags || want.Up != got.Up {
		d = append(d, "flags")
	}
	if want.Promisc != got.Promisc || want.Promiscuity != got.Promiscuity {
		d = append(d, "promiscuity")
	}
	if want.MTU != got.MTU || want.MAC != got.MAC {
		d = append(d, "mtu or mac")
	}
	if !slices.Equal(want.Addrs, got.Addrs) {
		d = append(d, "addresses")
	}
	if !slices.Equal(want.Routes, got.Routes) || !slices.Equal(want.DefaultRoute, got.DefaultRoute) {
		d = append(d, "routes")
	}
	if want.DisableIPv6 != got.DisableIPv6 {
		d = append(d, "disable_ipv6")
	}
	if !slices.Equal(want.Qdiscs, got.Qdiscs) || want.Clsact != got.Clsact {
		d = append(d, "qdiscs")
	}
	return strings.Join(d, ", ")
}

// settlesTo waits until the port is as want again (an IPv6 address put
// back runs duplicate address detection, and the kernel's own routes come
// with it) and fails the test if it is not within a few seconds.
func settlesTo(t *testing.T, h *netns.Handle, ifname string, want State) {
	t.Helper()
	var got State
	var diff string
	for deadline := time.Now().Add(5 * time.Second); ; {
		got = mustInspect(t, h, ifname)
		if diff = sameAs(want, got); diff == "" {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("%s differs from before in %s:\nbefore %+v\nnow    %+v", ifname, diff, want, got)
}

// helperEnv carries a helper process's arguments: the namespace, the
// interface and the record directory.
const helperEnv = "WANLAB_BRIDGEPORT_HELPER"

// startHelper runs the test binary again as TestHelperTake, which takes
// the port of ns and says "ready"; it is killed, if it still runs, when
// the test ends.
func startHelper(t *testing.T, ns, ifname string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTake$")
	cmd.Env = append(os.Environ(), helperEnv+"="+ns+" "+ifname+" "+recordDir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the helper said %q", line)
	}
	return cmd
}

// TestHelperTake is the helper process of startHelper: it takes a port
// and waits to be killed.
func TestHelperTake(t *testing.T) {
	args := strings.Fields(os.Getenv(helperEnv))
	if len(args) != 3 {
		t.Skip("helper process only")
	}
	recordDir = args[2]
	h, err := netns.Open(args[0])
	if err == nil {
		_, err = Take(h, args[1], "the helper of TestKilledOwnerIsRestored")
	}
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("ready\n")
	time.Sleep(time.Minute)
	os.Exit(1)
}
