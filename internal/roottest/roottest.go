// Package roottest holds what the tests that build real namespaces share:
// skipping without root, cleaning what a crashed earlier run left, and
// testbeds that remove themselves and check that they did.
package roottest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"wanlab/internal/rundir"
	"wanlab/internal/testlock"
	"wanlab/netns"
	"wanlab/rootless"
)

// The main goroutine stays in the root namespace, as in the wanlab command:
// namespace work happens on other threads locked for it (netns.Do).
func init() { runtime.LockOSThread() }

// Main runs a package's tests after clean has removed what a crashed run
// left behind (netns.CleanStale, or lab.CleanStale which also knows
// testbeds); it is meant to be called from TestMain. Without root (or with
// WANLAB_ROOTLESS=1) the tests run inside the user's namespace, as wanlab's
// commands do (see EnterRootless).
func Main(m *testing.M, clean func() ([]string, error)) {
	EnterRootless()
	if os.Geteuid() == 0 {
		if gone, err := clean(); err != nil {
			fmt.Fprintln(os.Stderr, "CleanStale:", err)
		} else if len(gone) > 0 {
			fmt.Fprintln(os.Stderr, "removed stale namespaces:", gone)
		}
	}
	os.Exit(m.Run())
}

// EnterRootless re-runs the test binary inside the user's namespace
// (rootless.Enter), where the user is root, when the tests run as an
// ordinary user or WANLAB_ROOTLESS=1 asks for that path as root: the tests
// that build namespaces then run as `wanlab` does without root, and those
// that need real root skip (NeedRealRoot). If the namespace cannot be
// entered, it says why and the tests that need root skip. TestMain calls
// it first: it also runs the keeper, when the binary was started as one.
func EnterRootless() {
	// The test binary may have been started as the namespace's keeper.
	rootless.Begin()
	if !rootless.Needed(false) {
		return
	}
	err := rootless.Enter(os.Args)
	fmt.Fprintf(os.Stderr, "roottest: the tests that need root will skip: %v\n", err)
}

// PacketPlaneNeedsRoot is why the packet data plane's tests skip in a user
// namespace.
const PacketPlaneNeedsRoot = "the packet data plane sizes its sockets' buffers with SO_SNDBUFFORCE and loads an eBPF drop program, which need capabilities over the machine, not only over its namespaces"

// NeedRealRoot skips the test in the user's namespace (rootless), where
// the user is root over its own namespaces but not over the machine; why
// names what only real root may do. Otherwise it is NeedRoot.
func NeedRealRoot(t testing.TB, why string) {
	t.Helper()
	if rundir.Rootless() {
		t.Skipf("skipped: needs real root, not root in a user namespace: %s", why)
	}
	NeedRoot(t)
}

// NeedRoot skips the test unless it runs as root; otherwise it holds the
// machine-wide test lock until the test ends (see Serialize).
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to create network namespaces and TUN devices (run the tests as root)")
	}
	Serialize(t)
}

// Serialize makes the test the only root test running on the machine until
// it ends. `go test ./...` runs packages in parallel; two packages pushing
// real traffic through namespaces at once on a 2-core machine would each
// see the other's load in their RTT and throughput figures, and a test that
// checks the machine for leftovers would see the other's testbeds. Nested
// helpers and subtests may call it again.
func Serialize(t testing.TB) {
	t.Helper()
	testlock.Hold(t)
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

// NoTestbed checks that nothing of testbed name is left, or was ever made:
// none of its namespaces exists and the registry holds no record of it.
func NoTestbed(t testing.TB, name string, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		if netns.Exists(ns) {
			t.Errorf("namespace %s of testbed %s exists", ns, name)
		}
	}
	states, _ := netns.Testbeds()
	for _, st := range states {
		if st.Name == name {
			t.Errorf("testbed %s on record: %+v", name, st)
		}
	}
}

// PointToPoint readies the device ifname, which the test made in the
// namespace h of tb, as one end of a point-to-point link: it records the
// device with the testbed, so that removing the testbed removes it, brings
// up h's loopback and the device, and gives the device the addresses self
// and self6 with peer and peer6 at the other end. A failure fails the
// test.
func PointToPoint(t testing.TB, tb *netns.Testbed, h *netns.Handle, ifname string, self, peer, self6, peer6 netip.Addr) {
	t.Helper()
	if err := tb.AddDevice(h, ifname); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		h.LoopbackUp(),
		h.SetLinkUp(ifname),
		h.AddPeerAddr(ifname, self, netip.PrefixFrom(peer, 32)),
		h.AddPeerAddr(ifname, self6, netip.PrefixFrom(peer6, 128)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Veth joins namespaces a and b of tb with a veth pair, end aName in a and
// bName in b, records both ends with the testbed, so that removing the
// testbed removes them, and brings both up, without addresses. A failure
// fails the test.
func Veth(t testing.TB, tb *netns.Testbed, a *netns.Handle, aName string, b *netns.Handle, bName string) {
	t.Helper()
	f, err := os.Open(b.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: aName}, PeerName: bName, PeerNamespace: netlink.NsFd(int(f.Fd()))}
	if err := a.Netlink().LinkAdd(v); err != nil {
		t.Fatalf("veth %s (%s) - %s (%s): %v", aName, a.Name(), bName, b.Name(), err)
	}
	for _, err := range []error{tb.AddDevice(a, aName), tb.AddDevice(b, bName), a.SetLinkUp(aName), b.SetLinkUp(bName)} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// RTTWithin judges round-trip times (ms, sorted ascending) measured across
// an emulated path whose configured RTT is want: none may be shorter than
// want (the emulator never delivers early; ping prints 0.1 ms, so a 0.05 ms
// allowance covers its rounding), the median must lie within tol of want,
// and at least three in four samples must lie within tol below want and
// tol+late above it. late (ms) is the lateness the emulator itself measured
// and reported for the same packets (router.Snapshot.RoundTripLatenessP99),
// 0 when unknown. The third rule is not "all", and allows late, because a
// sample can meet a thread that another program kept off its CPU on a
// 2-core machine: that is the machine's noise, which the emulator declares
// when its own wake-up was the late one, and which the median and the
// quartile see through, while a systematic error of the emulation moves
// both. It returns whether the samples pass and a summary of them.
func RTTWithin(rtts []float64, want, tol, late float64) (bool, string) {
	if len(rtts) == 0 {
		return false, "no samples"
	}
	med := rtts[len(rtts)/2]
	in := 0
	for _, v := range rtts {
		if v >= want-tol && v <= want+tol+late {
			in++
		}
	}
	ok := rtts[0] >= want-0.05 && med >= want-tol && med <= want+tol && in*4 >= len(rtts)*3
	return ok, fmt.Sprintf("%d samples, min %.3f median %.3f max %.3f ms, %d within %g-%g..%g+%.3f ms", len(rtts), rtts[0], med, rtts[len(rtts)-1], in, want, tol, want, tol+late)
}

// Twice runs a timing measurement, and once more if the first attempt does
// not pass: load from other programs on a 2-core machine only ever adds
// delay, so one clean attempt shows the emulator's behaviour, while an
// error of the emulator's own fails both. measure reports through its
// argument, which records failures instead of failing the test; only the
// second attempt's failures fail it.
func Twice(t *testing.T, what string, measure func(r Reporter)) {
	t.Helper()
	Attempts(t, what, 2, measure)
}

// Attempts is Twice with n attempts, for a comparison whose reference
// itself varies under load (the kernel's own htb carries up to 5 % more or
// less in a few seconds on a busy 2-core machine): only the last
// attempt's failures fail the test.
func Attempts(t *testing.T, what string, n int, measure func(r Reporter)) {
	t.Helper()
	for i := 1; i < n; i++ {
		var a attempt
		measure(&a)
		if len(a.errs) == 0 {
			for _, l := range a.logs {
				t.Log(l)
			}
			return
		}
		t.Logf("%s: attempt %d of %d failed (%s); measuring again", what, i, n, strings.Join(a.errs, "; "))
	}
	measure(testReporter{t})
}

// Reporter is what a measurement given to Twice reports through.
type Reporter interface {
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
}

type attempt struct{ logs, errs []string }

func (a *attempt) Logf(f string, args ...any)   { a.logs = append(a.logs, fmt.Sprintf(f, args...)) }
func (a *attempt) Errorf(f string, args ...any) { a.errs = append(a.errs, fmt.Sprintf(f, args...)) }

type testReporter struct{ t *testing.T }

func (r testReporter) Logf(f string, args ...any)   { r.t.Helper(); r.t.Logf(f, args...) }
func (r testReporter) Errorf(f string, args ...any) { r.t.Helper(); r.t.Errorf(f, args...) }

// JudgeRTT reports through r whether RTTWithin accepts rtts; late is the
// emulator's own reported lateness (router.Snapshot.RoundTripLatenessP99;
// see RTTWithin), 0 if unknown.
func JudgeRTT(r Reporter, what string, rtts []float64, want, tol float64, late time.Duration) {
	lateMs := float64(late) / float64(time.Millisecond)
	ok, sum := RTTWithin(rtts, want, tol, lateMs)
	r.Logf("%s: %s", what, sum)
	if !ok {
		r.Errorf("%s: %s; want none below %g ms, the median within ±%g ms, and 3 in 4 within -%g..+%.3f ms (the router's own reported lateness widens the upper side)", what, sum, want, tol, tol, tol+lateMs)
	}
}

// Transfer sends data over TCP from namespace client to a listener on dst
// (any port) in namespace server, checks that exactly the same bytes arrive
// (length and SHA-256) and returns how long it took from connect to the last
// byte read.
func Transfer(t testing.TB, client, server *netns.Handle, dst netip.Addr, data []byte) time.Duration {
	t.Helper()
	var ln net.Listener
	if err := netns.Do(server, func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(dst, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		n   int64
		sum [32]byte
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(2 * time.Minute))
		h := sha256.New()
		n, err := io.Copy(h, conn)
		r := result{n: n, err: err, at: time.Now()}
		copy(r.sum[:], h.Sum(nil))
		done <- r
	}()
	start := time.Now()
	var conn net.Conn
	if err := netns.Do(client, func() (err error) {
		conn, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := io.Copy(conn, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).CloseWrite()
	r := <-done
	conn.Close()
	if r.err != nil {
		t.Fatal(r.err)
	}
	if want := sha256.Sum256(data); r.n != int64(len(data)) || r.sum != want {
		t.Fatalf("server got %d bytes (sha256 %x), want %d (%x)", r.n, r.sum[:8], len(data), want[:8])
	}
	return r.at.Sub(start)
}

// NullDevice returns a character device that discards what is written to
// it, for tests of programs that write to /dev/null. As root it is a twin
// of /dev/null (character device 1:3) made in dir, so that a program that
// wrongly replaces its output file replaces the twin, not the machine's
// /dev/null; without root (or in a user namespace, where mknod(2) is
// refused), /dev/null itself, which only real root could replace.
func NullDevice(t testing.TB, dir string) string {
	t.Helper()
	if os.Geteuid() != 0 || rundir.Rootless() {
		return "/dev/null"
	}
	path := filepath.Join(dir, "null")
	if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatalf("mknod %s: %v", path, err)
	}
	if err := os.Chmod(path, 0o666); err != nil { // past the umask
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("cannot open the device node %s (%v): is %s mounted nodev?", path, err, dir)
	}
	f.Close()
	return path
}
