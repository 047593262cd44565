package bridgeport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
	"wanlab/netns"
)

// taken checks that the port st of h (nil: the process's own namespace)
// was taken: up, IPv6 off and without
// IPv6 addresses, wanlab's filter on a clsact at ingress.
func taken(t *testing.T, h *netns.Handle, st State) {
	t.Helper()
	now := mustInspect(t, h, st.Name)
	if !now.Up || now.DisableIPv6 != "1" || !now.Clsact {
		t.Errorf("taken, %s is up %v, disable_ipv6 %q, clsact %v; want up, 1, clsact", st.Name, now.Up, now.DisableIPv6, now.Clsact)
	}
	for _, a := range now.Addrs {
		if a.Addr().Is6() {
			t.Errorf("taken, %s still has the IPv6 address %s", st.Name, a)
		}
	}
	s, err := openSpace(h)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	l, err := s.nl.LinkByIndex(st.Index)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := s.nl.FilterList(l, netlink.HANDLE_MIN_INGRESS)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("taken, %s has %d ingress filters, want 1", st.Name, len(fs))
	}
	if b, ok := fs[0].(*netlink.BpfFilter); !ok || b.Name != filterName || !b.DirectAction {
		t.Errorf("taken, %s's ingress filter is %+v, want wanlab's bpf filter in direct-action mode", st.Name, fs[0])
	}
}

func TestTakeReleaseRestores(t *testing.T) {
	for _, up := range []bool{true, false} {
		name := map[bool]string{true: "up", false: "down"}[up]
		t.Run(name, func(t *testing.T) {
			pr := newPair(t)
			steps := []error{pr.p.AddAddr(portName, netip.MustParsePrefix("fd77::1/64"))}
			if up {
				// Up, with an IPv4 address (left alone), a static IPv6
				// address and routes through it, which turning IPv6 off
				// removes and Release must put back.
				steps = append(steps,
					pr.p.SetLinkUp(portName),
					pr.p.AddAddr(portName, portAddr),
					pr.p.AddRoute(netns.Route{Dst: netip.MustParsePrefix("::/0"), Dev: portName, Via: netip.MustParseAddr("fd77::2")}),
					pr.p.AddRoute(netns.Route{Dst: netip.MustParsePrefix("fd78::/64"), Dev: portName, Via: netip.MustParseAddr("fd77::3")}))
			}
			for _, err := range steps {
				if err != nil {
					t.Fatal(err)
				}
			}
			before := mustInspect(t, pr.p, portName)
			if up && (len(before.DefaultRoute) != 1 || len(before.Addrs) < 3) {
				t.Fatalf("the set-up is not as meant: %+v", before)
			}
			port, err := Take(pr.p, portName, "TestTakeReleaseRestores")
			if err != nil {
				t.Fatal(err)
			}
			taken(t, pr.p, before)
			if now, err := port.State(); err != nil || now.Name != portName || now.MAC == "" || now.MAC != before.MAC || !now.Clsact {
				t.Errorf("State of the port taken: %+v, %v; want %s with its MAC %s and the clsact", now, err, portName, before.MAC)
			}
			r, err := readRecord(recordPath(before.NetnsID, before.Index))
			if err != nil {
				t.Fatal(err)
			}
			self, _ := netns.Self()
			if r.Owner != self || r.SetUp == up || r.DisableIPv6 != "0" || len(r.IPv6Addrs) != 1 || len(r.IPv6Routes) != map[bool]int{true: 2}[up] {
				t.Errorf("record %+v", r)
			}
			// Held by this process: refused to anyone, this process too,
			// and Check says so before anyone tries (rather than call
			// the holder's clsact someone else's).
			_, err = Take(pr.p, portName, "a second bridge")
			checkRefusal(t, err, pr.p.Name()+"'s "+portName+" is held by TestTakeReleaseRestores (pid ")
			now := mustInspect(t, pr.p, portName)
			_, err = Check(now, State{Name: "wl-other", Index: 999, LinkType: "ether"}, false)
			checkRefusal(t, err, pr.p.Name()+"'s "+portName+" is held by TestTakeReleaseRestores (pid ")
			if err := port.Release(); err != nil {
				t.Fatal(err)
			}
			settlesTo(t, pr.p, portName, before)
			if _, err := os.Stat(port.path); !os.IsNotExist(err) {
				t.Errorf("record %s still there after Release (%v)", port.path, err)
			}
			if err := port.Release(); err != nil {
				t.Errorf("a second Release: %v", err)
			}
			if _, err := port.State(); err == nil {
				t.Error("State of a released port: no error")
			}
			if h := mustInspect(t, pr.p, portName).Holder; h != "" {
				t.Errorf("a released port is held by %q", h)
			}
		})
	}
}

func TestFailedTakeUndoes(t *testing.T) {
	pr := newPair(t)
	if err := pr.p.AddAddr(portName, netip.MustParsePrefix("fd77::1/64")); err != nil {
		t.Fatal(err)
	}
	before := mustInspect(t, pr.p, portName)
	real := loadProgram
	t.Cleanup(func() { loadProgram = real })
	// IPv6 is off and the clsact in place when the program fails to load.
	loadProgram = func() (int, error) { return -1, errors.New("injected failure") }
	if _, err := Take(pr.p, portName, "TestFailedTakeUndoes"); err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("Take = %v, want the injected failure", err)
	}
	settlesTo(t, pr.p, portName, before)
	if left, _ := filepath.Glob(filepath.Join(recordDir, "*.json")); len(left) != 0 {
		t.Errorf("records left: %v", left)
	}
}

// echoCounter counts the ICMP echo requests to dst that a packet socket on
// the interface index of h receives. The socket is bound to ETH_P_ALL, as
// the router's is: that puts it on the device's ptype_all list, whose taps
// run before the ingress filter.
type echoCounter struct {
	fd   int
	n    atomic.Int64
	done chan struct{}
	stop atomic.Bool
}

func countEchoes(t *testing.T, h *netns.Handle, index int, dst netip.Addr) *echoCounter {
	t.Helper()
	c := &echoCounter{done: make(chan struct{})}
	proto := int(htons(unix.ETH_P_ALL))
	err := netns.Do(h, func() (err error) {
		if c.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto); err != nil {
			return err
		}
		return unix.Bind(c.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: index})
	})
	if err != nil {
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	go func() {
		defer close(c.done)
		b := make([]byte, 2048)
		for !c.stop.Load() {
			n, _, err := unix.Recvfrom(c.fd, b, 0)
			if err != nil {
				continue
			}
			f := b[:n]
			// Ethernet, IPv4, ICMP echo request to dst.
			if len(f) < 14+20+1 || binary.BigEndian.Uint16(f[12:]) != unix.ETH_P_IP || f[14+9] != unix.IPPROTO_ICMP {
				continue
			}
			ihl := int(f[14]&0xf) * 4
			if to, _ := netip.AddrFromSlice(f[14+16 : 14+20]); to == dst && len(f) > 14+ihl && f[14+ihl] == 8 {
				c.n.Add(1)
			}
		}
	}()
	t.Cleanup(c.close)
	return c
}

func (c *echoCounter) close() {
	if c.stop.Swap(true) {
		return
	}
	<-c.done
	unix.Close(c.fd)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// ping pings dst three times from h and returns how many replies came.
func ping(t *testing.T, h *netns.Handle, dst netip.Addr) int {
	t.Helper()
	out, _ := netns.Command(h, "ping", "-n", "-c", "3", "-i", "0.2", "-W", "1", dst.String()).CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		var sent, got int
		if _, err := fmt.Sscanf(line, "%d packets transmitted, %d received", &sent, &got); err == nil {
			return got
		}
	}
	t.Fatalf("ping %s said:\n%s", dst, out)
	return 0
}

func TestTakenPortDropsAfterTheTap(t *testing.T) {
	pr := newPair(t)
	if err := pr.p.SetLinkUp(portName); err != nil {
		t.Fatal(err)
	}
	before := mustInspect(t, pr.p, portName)
	port, err := Take(pr.p, portName, "TestTakenPortDropsAfterTheTap")
	if err != nil {
		t.Fatal(err)
	}
	defer port.Release()
	// An address on the port, as a test only (a bridge's ports have
	// none), and the peer's neighbour entry for it, since ARP requests
	// are dropped as well: the echo requests reach the port.
	if err := pr.p.AddAddr(portName, portAddr); err != nil {
		t.Fatal(err)
	}
	l, err := pr.q.Netlink().LinkByName(peerName)
	if err != nil {
		t.Fatal(err)
	}
	mac := mustLink(t, pr.p, portName).Attrs().HardwareAddr
	if err := pr.q.Netlink().NeighAdd(&netlink.Neigh{LinkIndex: l.Attrs().Index, IP: net.IP(portAddr.Addr().AsSlice()), HardwareAddr: mac, State: netlink.NUD_PERMANENT}); err != nil {
		t.Fatal(err)
	}
	c := countEchoes(t, pr.p, before.Index, portAddr.Addr())
	if got := ping(t, pr.q, portAddr.Addr()); got != 0 {
		t.Errorf("taken, the port answered %d of 3 pings: the kernel processed frames it should have dropped", got)
	}
	c.close()
	if n := c.n.Load(); n < 3 {
		t.Errorf("the packet socket saw %d echo requests, want 3: the tap did not get the frames before the filter dropped them", n)
	}
	if err := port.Release(); err != nil {
		t.Fatal(err)
	}
	if got := ping(t, pr.q, portAddr.Addr()); got != 3 {
		t.Errorf("released, the port answered %d of 3 pings, want 3", got)
	}
	if err := pr.p.Netlink().AddrDel(mustLink(t, pr.p, portName), &netlink.Addr{IPNet: ipNet(portAddr)}); err != nil {
		t.Fatal(err)
	}
	settlesTo(t, pr.p, portName, before)
}

func mustLink(t *testing.T, h *netns.Handle, ifname string) netlink.Link {
	t.Helper()
	l, err := h.Netlink().LinkByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestKilledOwnerIsRestored(t *testing.T) {
	pr := newPair(t)
	if err := pr.p.SetLinkUp(portName); err != nil {
		t.Fatal(err)
	}
	before := mustInspect(t, pr.p, portName)
	helper := startHelper(t, pr.p.Name(), portName)
	_, err := Take(pr.p, portName, "a second bridge")
	checkRefusal(t, err, "is held by the helper of TestKilledOwnerIsRestored (pid "+strconv.Itoa(helper.Process.Pid)+", since ")
	// Nothing of the helper's is restored while it lives.
	if notes, err := RestoreStale(); err != nil || len(notes) != 0 {
		t.Fatalf("RestoreStale with the owner alive = %q, %v; want nothing", notes, err)
	}
	if err := helper.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	taken(t, pr.p, before)
	notes, err := RestoreStale()
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], pr.p.Name()+"'s "+portName+", left by the helper of TestKilledOwnerIsRestored (pid "+strconv.Itoa(helper.Process.Pid)) || !strings.HasSuffix(notes[0], " restored") {
		t.Errorf("RestoreStale said %q, want that it restored the helper's port", notes)
	}
	settlesTo(t, pr.p, portName, before)
	if left, _ := filepath.Glob(filepath.Join(recordDir, "*.json")); len(left) != 0 {
		t.Errorf("records left: %v", left)
	}
	if notes, err := RestoreStale(); err != nil || len(notes) != 0 {
		t.Errorf("a second RestoreStale = %q, %v; want nothing", notes, err)
	}
}

func TestRestoreStaleRemovesWhatIsGone(t *testing.T) {
	pr := newPair(t)
	st := mustInspect(t, pr.p, portName)
	dead := netns.Proc{PID: 1 << 30, Start: 1} // beyond any pid_max
	self, err := netns.Self()
	if err != nil {
		t.Fatal(err)
	}
	own, err := ownID()
	if err != nil {
		t.Fatal(err)
	}
	rec := func(owner netns.Proc, ns string, id netns.ID, index int) string {
		t.Helper()
		r := record{Version: recordVersion, Owner: owner, Who: "a bridge", Netns: ns, NetnsID: id, Name: portName, Index: index, DisableIPv6: "0"}
		path := recordPath(id, index)
		if err := writeRecord(path, r); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if err := os.MkdirAll(recordDir, 0o755); err != nil {
		t.Fatal(err)
	}
	goneNS := rec(dead, "wl-t000000-gone", netns.ID{Dev: 1, Ino: 1}, 5)
	goneIf := rec(dead, st.Netns, st.NetnsID, 9999)
	other := rec(dead, "", netns.ID{Dev: own.Dev, Ino: own.Ino + 1}, 5)
	live := rec(self, st.Netns, st.NetnsID, st.Index)
	notes, err := RestoreStale()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"wl-t000000-gone's wl-bp0, left by a bridge (pid 1073741824, since ",
		pr.p.Name() + "'s wl-bp0, left by a bridge (pid 1073741824, since ",
		"wl-bp0, left by a bridge (pid 1073741824, since ",
	}
	ends := []string{"), was in a namespace that is gone: record removed", "), is gone: record removed", " kept"}
	if len(notes) != 3 {
		t.Fatalf("RestoreStale said %q, want 3 notes", notes)
	}
	for i := range want {
		found := false
		for _, n := range notes {
			found = found || strings.HasPrefix(n, want[i]) && strings.HasSuffix(n, ends[i])
		}
		if !found {
			t.Errorf("no note %q...%q in %q", want[i], ends[i], notes)
		}
	}
	for path, kept := range map[string]bool{goneNS: false, goneIf: false, other: true, live: true} {
		if _, err := os.Stat(path); (err == nil) != kept {
			t.Errorf("record %s: kept %v, want %v", path, err == nil, kept)
		}
	}
	if after := mustInspect(t, pr.p, portName); sameAs(st, after) != "" {
		t.Errorf("the live owner's port was touched: %+v", after)
	}
}

func TestRecordsRefusePlantedFiles(t *testing.T) {
	pr := newPair(t)
	before := mustInspect(t, pr.p, portName)
	if err := os.MkdirAll(recordDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := recordPath(before.NetnsID, before.Index)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unchanged := func(what string) {
		t.Helper()
		if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
			t.Errorf("%s: the link's target now holds %q", what, b)
		}
		if d := sameAs(before, mustInspect(t, pr.p, portName)); d != "" {
			t.Errorf("%s: the port was changed (%s)", what, d)
		}
	}
	lock := filepath.Join(recordDir, lockName)
	link := func(to string) func(string) error { return func(at string) error { return os.Symlink(to, at) } }
	file := func(text string) func(string) error {
		return func(at string) error { return os.WriteFile(at, []byte(text), 0o644) }
	}
	for _, tc := range []struct {
		what  string
		at    string
		plant func(at string) error
		want  []string
	}{
		{"a link at the record", path, link(victim),
			[]string{"restore record " + path + " is a symbolic link (to " + victim + ")", "neither follows nor removes it", "rm " + path}},
		{"a dangling link at the record", path, link(victim + "-new"),
			[]string{"restore record " + path + " is a symbolic link"}},
		{"a directory at the record", path, func(at string) error { return os.Mkdir(at, 0o755) },
			[]string{"restore record " + path + " is a directory", "rmdir " + path}},
		{"a link at the lock", lock, link(victim),
			[]string{"the lock of the restore records " + lock + " is a symbolic link"}},
		{"a record wanlab did not write", path, file(`{"version": 1, "owner": {"pid": 1}, "extra": 1}`),
			[]string{"restore record " + path + " is not one this wanlab can read (json: unknown field"}},
	} {
		os.Remove(lock)
		if err := tc.plant(tc.at); err != nil {
			t.Fatal(err)
		}
		p, err := Take(pr.p, portName, "TestRecordsRefusePlantedFiles")
		switch {
		case err == nil:
			p.Release()
			t.Errorf("%s: taken", tc.what)
		case strings.HasPrefix(tc.what, "a record"):
			// An error of a file, not a refusal of the port: it names
			// the file all the same.
			if !strings.Contains(err.Error(), tc.want[0]) {
				t.Errorf("%s: %q lacks %q", tc.what, err, tc.want[0])
			}
		default:
			checkRefusal(t, err, tc.want...)
		}
		if _, err = RestoreStale(); err == nil || !strings.Contains(err.Error(), tc.want[0]) {
			t.Errorf("%s: RestoreStale = %v, want %q", tc.what, err, tc.want[0])
		}
		if _, err := os.Lstat(tc.at); err != nil {
			t.Errorf("%s: removed (%v)", tc.what, err)
		}
		unchanged(tc.what)
		if err := os.Remove(tc.at); err != nil {
			t.Fatal(err)
		}
	}
}

// ownEnv carries the record directory to TestHelperOwnNamespace.
const ownEnv = "WANLAB_BRIDGEPORT_OWN"

// TestTakeInOwnNamespace takes a port of the process's own namespace (a
// nil Handle), as `wanlab bridge` takes the machine's NICs: in a helper
// process started in a new namespace of its own, so that nothing of the
// machine's is touched.
func TestTakeInOwnNamespace(t *testing.T) {
	roottest.NeedRealRoot(t, bridgeNeedsRoot)
	dir := useRecordDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOwnNamespace$", "-test.v")
	parent, err := ownID()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), ownEnv+"="+dir+" "+strconv.FormatUint(parent.Ino, 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHelperOwnNamespace") {
		t.Fatalf("the helper in a namespace of its own: %v\n%s", err, out)
	}
}

// TestHelperOwnNamespace is the helper process of TestTakeInOwnNamespace.
func TestHelperOwnNamespace(t *testing.T) {
	dir, parent, ok := strings.Cut(os.Getenv(ownEnv), " ")
	if !ok {
		t.Skip("helper process only")
	}
	recordDir = dir
	own, err := ownID()
	if err != nil {
		t.Fatal(err)
	}
	if strconv.FormatUint(own.Ino, 10) == parent {
		t.Fatal("the helper is in its parent's namespace")
	}
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: portName}, PeerName: peerName}); err != nil {
		t.Fatal(err)
	}
	_, err = Inspect(nil, "wl-nothing")
	checkRefusal(t, err, "this namespace has no interface wl-nothing; it has lo, wl-bp0, wl-bq0")
	before := mustInspect(t, nil, portName)
	if before.Netns != "" || before.NetnsID != own {
		t.Errorf("Inspect(nil) names namespace %q %v, want the process's own, %v", before.Netns, before.NetnsID, own)
	}
	port, err := Take(nil, portName, "TestHelperOwnNamespace")
	if err != nil {
		t.Fatal(err)
	}
	taken(t, nil, before)
	if err := port.Release(); err != nil {
		t.Fatal(err)
	}
	settlesTo(t, nil, portName, before)
}

// TestIgnoreWritesNoRecord makes a port of a namespace the test owns
// ignored by the kernel, as the lab's router namespace does: the port is
// as Take leaves it, no record is written, and a second Ignore is refused
// (its clsact is there now), as is the process's own namespace.
func TestIgnoreWritesNoRecord(t *testing.T) {
	pr := newPair(t)
	before := mustInspect(t, pr.p, portName)
	if err := Ignore(pr.p, portName); err != nil {
		t.Fatal(err)
	}
	taken(t, pr.p, before)
	if entries, err := os.ReadDir(recordDir); err != nil && !errors.Is(err, os.ErrNotExist) || len(entries) > 0 {
		t.Errorf("Ignore left %d entries in %s (%v), want none", len(entries), recordDir, err)
	}
	err := Ignore(pr.p, portName)
	checkRefusal(t, err, pr.p.Name()+"'s "+portName+" already has a clsact qdisc")
	if err := Ignore(nil, portName); err == nil {
		t.Error("Ignore of the process's own namespace succeeded, want a refusal")
	}
}
