package lab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
	"wanlab/netns"
)

func TestMain(m *testing.M) { roottest.Main(m, CleanStale) }

// uniqueName returns a testbed name no other test run uses.
func uniqueName() string { return fmt.Sprintf("tl%06x", rand.Uint32()&0xffffff) }

// up starts a testbed with a unique name and checks, when the test ends,
// that Close leaves nothing behind.
func up(t *testing.T, o Options) *Testbed {
	t.Helper()
	if o.DataPlane == PacketPlane {
		roottest.NeedRealRoot(t, roottest.PacketPlaneNeedsRoot)
	}
	roottest.NeedRoot(t)
	if o.Name == "" {
		o.Name = uniqueName()
	}
	tb, err := Up(context.Background(), o)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		assertGone(t, o.Name)
	})
	return tb
}

// assertGone checks that nothing of testbed name is left: namespaces,
// registry record, control socket.
func assertGone(t *testing.T, name string) {
	t.Helper()
	for _, ns := range []string{NamespaceName(name, Client), NamespaceName(name, Server), RouterNamespaceName(name)} {
		if netns.Exists(ns) {
			t.Errorf("namespace %s still exists", ns)
		}
	}
	// Every host of a dumbbell, too: wl-NAME-c2 ... wl-NAME-s16.
	all, err := netns.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range all {
		if strings.HasPrefix(ns, netns.NamespaceName(name, "")) {
			t.Errorf("namespace %s still exists", ns)
		}
	}
	if registered(name) {
		t.Errorf("testbed %s is still registered", name)
	}
	if _, err := os.Stat(SocketPath(name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control socket of %s still there (%v)", name, err)
	}
	// The devices lived in the namespaces: none may show in the root
	// namespace, where this goroutine's thread is.
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, netns.Prefix+name+"-") || i.Name == IfName(name, Client) || i.Name == IfName(name, Server) || i.Name == RouterIfName(name, Client) || i.Name == RouterIfName(name, Server) {
			t.Errorf("device %s in the root namespace", i.Name)
		}
	}
}

var pingTime = regexp.MustCompile(`icmp_seq=\d+ .*time=([0-9.]+) ms`)

// ping runs ping inside host r to addr and returns each reply's RTT in ms,
// sorted.
func ping(t *testing.T, tb *Testbed, r Role, addr string, args ...string) []float64 {
	t.Helper()
	out, err := tb.Command(r, "ping", append(args, addr)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ping %s from %s: %v\n%s", addr, r, err, out)
	}
	var rtts []float64
	for _, m := range pingTime.FindAllStringSubmatch(string(out), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		rtts = append(rtts, v)
	}
	if len(rtts) == 0 {
		t.Fatalf("no replies in ping's output:\n%s", out)
	}
	slices.Sort(rtts)
	return rtts
}

// listenIn opens a socket inside host r of tb.
func listenIn(t *testing.T, tb *Testbed, r Role, network, addr string) (l net.Listener, pc net.PacketConn) {
	t.Helper()
	err := netns.Do(tb.Namespace(r), func() error {
		var err error
		if network == "udp" {
			pc, err = net.ListenPacket(network, addr)
		} else {
			l, err = net.Listen(network, addr)
		}
		return err
	})
	if err != nil {
		t.Fatalf("listen %s %s in %s: %v", network, addr, r, err)
	}
	if l != nil {
		t.Cleanup(func() { l.Close() })
	} else {
		t.Cleanup(func() { pc.Close() })
	}
	return l, pc
}

// dialIn connects from inside host r of tb and returns the connection and
// how long the connect took (for TCP, one round trip). A TCP socket uses
// the congestion control cc if it is not empty.
func dialIn(t *testing.T, tb *Testbed, r Role, network, addr string, cc ...string) (net.Conn, time.Duration) {
	t.Helper()
	var c net.Conn
	var took time.Duration
	d := net.Dialer{Timeout: 5 * time.Second}
	if len(cc) > 0 && cc[0] != "" {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc[0]) })
			return errors.Join(err, serr)
		}
	}
	err := netns.Do(tb.Namespace(r), func() error {
		var err error
		start := time.Now()
		c, err = d.Dial(network, addr)
		took = time.Since(start)
		return err
	})
	if err != nil {
		t.Fatalf("dial %s %s from %s: %v", network, addr, r, err)
	}
	t.Cleanup(func() { c.Close() })
	return c, took
}

// need skips the test if the program is not installed.
func need(t *testing.T, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		t.Skipf("skipped: %s is not installed (apt-get install -y %s)", prog, prog)
	}
	return p
}
