package lab

import (
	"cmp"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
	"wanlab/internal/snmp"
	"wanlab/netns"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/router"
	"wanlab/tun"
)

// TestUpInfoPingAndCleanup builds a testbed on each data plane, checks its
// namespaces and devices, and pings across it both ways over IPv4 and
// IPv6 (on the packet plane, ARP and NDP cross the router first).
func TestUpInfoPingAndCleanup(t *testing.T) {
	for _, p := range []DataPlane{TUNPlane, PacketPlane} {
		t.Run(p.String(), func(t *testing.T) { testUpInfoPing(t, p) })
	}
}

func testUpInfoPing(t *testing.T, plane DataPlane) {
	tb := up(t, Options{CC: "reno", DataPlane: plane})
	i := tb.Info()
	name := tb.Name()
	if i.Name != name || i.Client.NS != "wl-"+name+"-c" || i.Server.NS != "wl-"+name+"-s" {
		t.Errorf("Info = %+v, want namespaces wl-%s-c and wl-%s-s", i, name, name)
	}
	for _, r := range []Role{Client, Server} {
		h := i.Host(r)
		if !netns.Exists(h.NS) {
			t.Errorf("namespace %s does not exist", h.NS)
		}
		if _, err := tb.Namespace(r).LinkStats(h.IfName); err != nil {
			t.Errorf("device %s in %s: %v", h.IfName, h.NS, err)
		}
		if cc, err := tb.Namespace(r).Sysctl("net.ipv4.tcp_congestion_control"); err != nil || cc != "reno" {
			t.Errorf("%s: tcp_congestion_control = %q, %v; want reno", r, cc, err)
		}
	}
	if plane == PacketPlane {
		checkRouterNamespace(t, i)
	} else if i.RouterNS != "" || i.Client.RouterIf != "" {
		t.Errorf("Info on the TUN plane names a router namespace: %+v", i)
	}
	ping(t, tb, Client, i.Server.Addr4.String(), "-c", "2", "-i", "0.1", "-W", "2")
	ping(t, tb, Server, i.Client.Addr6.String(), "-c", "2", "-i", "0.1", "-W", "2")
	st := tb.Status()
	if st.Up.Counters.Delivered < 2 || st.Down.Counters.Delivered < 2 {
		t.Errorf("router delivered %d up and %d down, want at least the 2+2 echoes", st.Up.Counters.Delivered, st.Down.Counters.Delivered)
	}
	if st.DataPlane != plane.String() {
		t.Errorf("status says data plane %q, want %q", st.DataPlane, plane)
	}
	// Only what the hosts send each other crosses the router, on either
	// plane: no neighbour discovery, no MLD report or duplicate address
	// detection of the hosts' own.
	for _, f := range append(st.Up.Flows, st.Down.Flows...) {
		if !f.Flow.Dst.Addr().IsGlobalUnicast() || !f.Flow.Src.Addr().IsGlobalUnicast() {
			t.Errorf("on the %s plane, the router carried %s > %s: not the hosts' own traffic to each other", plane, f.Flow.Src, f.Flow.Dst)
		}
	}
	// Only a packet socket stamps arrivals, and so knows how long a
	// packet waited in the ring.
	if w := st.Up.Ring.Wait; (w != nil && w.N > 0) != (plane == PacketPlane) || st.Up.Ring.Size == 0 {
		t.Errorf("on the %s plane, the up ring: size %d, wait %+v", plane, st.Up.Ring.Size, w)
	}
}

// checkRouterNamespace checks the router's namespace of a testbed on the
// packet plane: it exists and holds the router's ends of the veth pairs,
// up, without addresses, IPv6 off.
func checkRouterNamespace(t *testing.T, i Info) {
	t.Helper()
	if i.RouterNS != "wl-"+i.Name+"-r" {
		t.Fatalf("Info.RouterNS = %q, want wl-%s-r", i.RouterNS, i.Name)
	}
	h, err := netns.Open(i.RouterNS)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, ifn := range []string{i.Client.RouterIf, i.Server.RouterIf} {
		l, err := h.Netlink().LinkByName(ifn)
		if err != nil {
			t.Errorf("the router's end %s: %v", ifn, err)
			continue
		}
		addrs, err := h.Netlink().AddrList(l, 0)
		if l.Attrs().Flags&net.FlagUp == 0 || len(addrs) > 0 || err != nil {
			t.Errorf("the router's end %s: flags %v, addresses %v (%v); want up, none", ifn, l.Attrs().Flags, addrs, err)
		}
		if v, err := h.Sysctl("net/ipv6/conf/" + ifn + "/disable_ipv6"); err != nil || v != "1" {
			t.Errorf("the router's end %s: disable_ipv6 %q (%v), want 1", ifn, v, err)
		}
	}
}

func TestUpRefusesSecondOwnerAndBadOptions(t *testing.T) {
	tb := up(t, Options{})
	_, err := Up(t.Context(), Options{Name: tb.Name()})
	if err == nil || !strings.Contains(err.Error(), "wanlab down "+tb.Name()) {
		t.Errorf("second Up of %s: %v, want an error naming `wanlab down %s`", tb.Name(), err, tb.Name())
	}
	for _, o := range []Options{{Name: "Bad Name"}, {Name: strings.Repeat("x", 33)}, {ECN: -2}, {CC: "bbr; rm"}} {
		if _, err := Up(t.Context(), o); err == nil {
			t.Errorf("Up(%+v) succeeded, want an error", o)
		}
	}
}

// TestDelayRTT checks, on each kind of TUN device and on the packet
// plane, that netem delay 25ms in both directions gives ICMP and TCP
// round trips of 50 ms.
func TestDelayRTT(t *testing.T) {
	for _, kind := range []tun.Kind{tun.Offload, tun.VNet, tun.Raw} {
		t.Run(kind.String(), func(t *testing.T) { testDelayRTT(t, Options{DeviceKind: kind}, kind.String()) })
	}
	t.Run("packet", func(t *testing.T) { testDelayRTT(t, Options{DataPlane: PacketPlane}, "") })
}

// testDelayRTT measures the round trips on a testbed of o, whose status
// must name the TUN device kind device.
func testDelayRTT(t *testing.T, o Options, device string) {
	o.Up, o.Down = mustChain(t, "netem delay 25ms"), mustChain(t, "netem delay 25ms")
	tb := up(t, o)
	if st := tb.Status(); st.Device != device {
		t.Errorf("status says device %q, want %q", st.Device, device)
	}
	i := tb.Info()
	tol := 1.0 // ms
	if raceEnabled {
		tol = 5
	}
	roottest.Twice(t, "ping", func(r roottest.Reporter) {
		v4 := ping(t, tb, Client, i.Server.Addr4.String(), "-c", "20", "-i", "0.05", "-W", "2")
		v6 := ping(t, tb, Client, i.Server.Addr6.String(), "-c", "10", "-i", "0.05", "-W", "2")
		late := tb.Status().RoundTripLatenessP99()
		roottest.JudgeRTT(r, "ping", v4, 50, tol, late)
		roottest.JudgeRTT(r, "ping6", v6, 50, tol, late)
	})

	srv := netip.AddrPortFrom(i.Server.Addr4, 5001).String()
	l, _ := listenIn(t, tb, Server, "tcp", srv)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c) // echo
			}()
		}
	}()
	roottest.Twice(t, "TCP", func(r roottest.Reporter) {
		// Each connect takes one round trip (SYN, SYN-ACK); a single one
		// also catches a scheduling delay of the test, so judge ten.
		var connects []float64
		var c net.Conn
		for range 10 {
			var took time.Duration
			c, took = dialIn(t, tb, Client, "tcp", srv)
			connects = append(connects, float64(took)/1e6)
		}
		// A connect's time, taken in the program, also holds what this
		// machine spends outside the path: the socket's setup and the
		// dialer's wake-up (a loopback connect in the client's namespace
		// measures both), and the router's loops woken from idle once
		// each way. Those widen the tolerance; none of the samples may
		// still be shorter than the path's 50 ms.
		local := loopbackConnect(t, tb, Client)
		wake := roottest.IdleWakeup(t)
		extra := local + 2*float64(wake)/1e6
		r.Logf("outside the path: loopback connect %.3f ms, idle wake-up %v", local, wake)
		roottest.JudgeRTT(r, "TCP connect", slices.Sorted(slices.Values(connects)), 50, tol+extra, tb.Status().RoundTripLatenessP99())
		// A few round trips on the last connection give the kernel's
		// smoothed RTT samples.
		buf := make([]byte, 100)
		for range 5 {
			if _, err := c.Write(buf); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				t.Fatal(err)
			}
		}
		srtt := float64(tcpInfo(t, c).Rtt) / 1000
		r.Logf("TCP_INFO rtt %.3f ms", srtt)
		// Its samples end at the echo's data, which the server's program
		// wrote after waking: the same time outside the path.
		if srtt < 50-tol || srtt > 50+tol+extra {
			r.Errorf("TCP_INFO rtt %.3f ms, want 50-%g to 50+%.3f ms", srtt, tol, tol+extra)
		}
	})
}

// loopbackConnect returns the median time, in ms, of ten TCP connects to
// a listener on the loopback address of role r's namespace, each after a
// pause that lets the CPUs go idle, as a connect through the path does
// while it waits for the path's round trip.
func loopbackConnect(t *testing.T, tb *Testbed, r Role) float64 {
	t.Helper()
	l, _ := listenIn(t, tb, r, "tcp", "127.0.0.1:0")
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var took []float64
	for range 10 {
		time.Sleep(50 * time.Millisecond)
		c, d := dialIn(t, tb, r, "tcp", l.Addr().String())
		c.Close()
		took = append(took, float64(d)/1e6)
	}
	slices.Sort(took)
	return took[len(took)/2]
}

func tcpInfo(t *testing.T, c net.Conn) *unix.TCPInfo {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	var ierr error
	rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) })
	if ierr != nil {
		t.Fatal(ierr)
	}
	return info
}

func congestionControl(t *testing.T, c net.Conn) string {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var cc string
	var cerr error
	rc.Control(func(fd uintptr) { cc, cerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION) })
	if cerr != nil {
		t.Fatal(cerr)
	}
	return cc
}

// TestTCPUploadThroughTBF runs a 5 s upload with each congestion control
// through a 100 Mbit/s token bucket. A full-sized packet is 1500 IP bytes
// for 1448 bytes of payload (TCP with timestamps), so the goodput ceiling
// is 96.5 Mbit/s (on Ethernet, whose 14-byte header tbf would count too,
// it would be 95.6). Where the kernel does not allow an algorithm as a
// namespace's default (see CheckCC), the socket chooses it itself.
func TestTCPUploadThroughTBF(t *testing.T) {
	for _, cc := range []string{"reno", "cubic", "bbr"} {
		t.Run(cc, func(t *testing.T) {
			o := Options{CC: cc, Up: mustChain(t, "tbf rate 100mbit burst 32k latency 50ms")}
			perSocket := ""
			if err := CheckCC(cc); err != nil {
				t.Logf("%v; setting it per socket", err)
				o.CC, perSocket = "", cc
			}
			tb := up(t, o)
			srv := netip.AddrPortFrom(tb.Info().Server.Addr4, 5002).String()
			l, _ := listenIn(t, tb, Server, "tcp", srv)
			type result struct {
				n   int64
				dur time.Duration
				err error
			}
			done := make(chan result, 1)
			go func() {
				c, err := l.Accept()
				if err != nil {
					done <- result{err: err}
					return
				}
				defer c.Close()
				start := time.Now()
				n, err := io.Copy(io.Discard, c)
				done <- result{n, time.Since(start), err}
			}()
			c, _ := dialIn(t, tb, Client, "tcp", srv, perSocket)
			if got := congestionControl(t, c); got != cc {
				t.Fatalf("the sending socket uses %s, want %s", got, cc)
			}
			buf := make([]byte, 1<<16)
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				if _, err := c.Write(buf); err != nil {
					t.Fatal(err)
				}
			}
			c.Close()
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			mbps := float64(r.n) * 8 / r.dur.Seconds() / 1e6
			st := tb.Status()
			t.Logf("%s: %d bytes in %v = %.2f Mbit/s; router up: %d pkts, %d drops, tun queue drops %d",
				cc, r.n, r.dur.Round(time.Millisecond), mbps, st.Up.Counters.Delivered, st.Up.Counters.Dropped, st.Up.Ring.Drops)
			// tbf lets the bucket's 32 KiB through on top of the rate.
			ceiling := (100e6*1448/1500 + 32*1024*8/r.dur.Seconds()) / 1e6
			floor := 90.0
			if raceEnabled {
				floor = 50
			}
			if mbps < floor || mbps > ceiling*1.002 {
				t.Errorf("%s upload: %.2f Mbit/s, want %g to the goodput ceiling %.2f", cc, mbps, floor, ceiling)
			}
			if st.Up.Ring.Drops != 0 || st.Down.Ring.Drops != 0 {
				t.Errorf("the kernel dropped %d/%d packets in the TUNs' rings; the router fell behind", st.Up.Ring.Drops, st.Down.Ring.Drops)
			}
		})
	}
}

// TestUDPLoss sends 20000 datagrams through netem loss 1%: the router's
// count of drops must be 1% ± 0.2% (the binomial standard deviation is
// 0.07%), and what arrives must be what the router delivered.
func TestUDPLoss(t *testing.T) {
	tb := up(t, Options{Up: mustChain(t, "netem loss 1%"), Seed: 7})
	srv := netip.AddrPortFrom(tb.Info().Server.Addr4, 5003).String()
	_, pc := listenIn(t, tb, Server, "udp", srv)
	const n = 20000
	got := make(chan int, 1)
	go func() {
		buf := make([]byte, 2048)
		k := 0
		for {
			pc.SetReadDeadline(time.Now().Add(time.Second))
			if _, _, err := pc.ReadFrom(buf); err != nil {
				got <- k
				return
			}
			k++
		}
	}()
	c, _ := dialIn(t, tb, Client, "udp", srv)
	overflow0 := udpRcvbufErrors(t, tb, Server)
	msg := make([]byte, 200)
	start := time.Now()
	for k := range n {
		binary.BigEndian.PutUint32(msg, uint32(k))
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		// 10000 datagrams per second: fast enough to be quick, slow
		// enough that no queue in the kernel overflows.
		if d := time.Duration(k+1)*100*time.Microsecond - time.Since(start); d > 0 {
			time.Sleep(d)
		}
	}
	received := <-got
	// What the server's kernel dropped for a full socket buffer (the
	// reading goroutine held up by the machine's other work) arrived.
	overflow := udpRcvbufErrors(t, tb, Server) - overflow0
	st := tb.Status().Up
	var flow *uint64
	for _, f := range st.Flows {
		if f.Flow.Proto == packet.ProtoUDP && f.Flow.Dst.Port() == 5003 {
			flow = &f.Packets
		}
	}
	loss := float64(st.Counters.DroppedByReason[qdisc.ReasonLoss]) / float64(st.Counters.Sent)
	t.Logf("sent %d, router: in %d, dropped %d (%.3f%%), delivered %d; received %d, and %d dropped by the receiving socket's full buffer", n, st.Counters.Sent, st.Counters.Dropped, 100*loss, st.Counters.Delivered, received, overflow)
	if loss < 0.008 || loss > 0.012 {
		t.Errorf("router dropped %.3f%%, want 1%% ± 0.2%%", 100*loss)
	}
	if flow == nil {
		t.Fatalf("no UDP flow to port 5003 among the router's flows %+v", st.Flows)
	}
	if uint64(received)+overflow != *flow {
		t.Errorf("received %d datagrams and %d dropped by the receiving socket, the router delivered %d of the flow", received, overflow, *flow)
	}
}

// udpRcvbufErrors reads the Udp RcvbufErrors counter of /proc/net/snmp
// in host r's namespace: datagrams its kernel dropped because a socket's
// receive buffer was full.
func udpRcvbufErrors(t *testing.T, tb *Testbed, r Role) uint64 {
	t.Helper()
	out, err := tb.Command(r, "cat", "/proc/net/snmp").Output()
	if err != nil {
		t.Fatalf("/proc/net/snmp in %s: %v", r, err)
	}
	v, ok := snmp.Counter(string(out), "Udp", "RcvbufErrors")
	if !ok {
		t.Fatalf("/proc/net/snmp in %s has no Udp RcvbufErrors", r)
	}
	return v
}

// TestPcap captures ten pings, on each data plane, and reads the file
// back with tshark: twenty ICMP packets, and as many packets in all as the
// router forwarded (on the packet plane too: the capture holds IP
// packets, as the link sees them).
func TestPcap(t *testing.T) {
	tshark := need(t, "tshark")
	for _, p := range []DataPlane{TUNPlane, PacketPlane} {
		t.Run(p.String(), func(t *testing.T) { testPcap(t, tshark, p) })
	}
}

func testPcap(t *testing.T, tshark string, plane DataPlane) {
	path := filepath.Join(t.TempDir(), "wl-test.pcap")
	tb := up(t, Options{Pcap: path, DataPlane: plane})
	i := tb.Info()
	ping(t, tb, Client, i.Server.Addr4.String(), "-c", "10", "-i", "0.05", "-W", "2")
	st := tb.Status()
	forwarded := st.Up.Counters.Delivered + st.Down.Counters.Delivered
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	count := func(filter ...string) int {
		args := append([]string{"-r", path}, filter...)
		out, err := exec.Command(tshark, args...).Output()
		if err != nil {
			t.Fatalf("tshark %v: %v", args, err)
		}
		return strings.Count(string(out), "\n")
	}
	if n := count("-Y", "icmp"); n != 20 {
		t.Errorf("tshark finds %d ICMP packets, want 10 requests and 10 replies", n)
	}
	if n := count(); uint64(n) != forwarded {
		t.Errorf("tshark finds %d packets, the router forwarded %d", n, forwarded)
	}
}

// TestControlSocket drives a testbed through its socket as another
// process would: status, set, exec and down.
func TestControlSocket(t *testing.T) {
	tb := up(t, Options{})
	name := tb.Name()
	if got, err := Resolve(name); err != nil || got != name {
		t.Fatalf("Resolve(%s) = %q, %v", name, got, err)
	}
	st, err := GetStatus(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Info, tb.Info()) || st.Owner != os.Getpid() || st.Up.Chain != "" {
		t.Errorf("status: %+v", st)
	}
	done, err := Set(name, ChainText{Dir: "both", Chain: "netem delay 10ms"})
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 2 || done[0].Dir != "up" || done[1].Dir != "down" || len(done[0].Change) != 1 || done[0].Change[0].Action != qdisc.Added {
		t.Errorf("Set both: %+v, want netem added up and down", done)
	}
	if _, err := Set(name, ChainText{Dir: "up", Chain: "netem delay"}); err == nil {
		t.Error("Set with a bad chain succeeded")
	}
	if _, err := Set(name, ChainText{Dir: "sideways"}); err == nil || !strings.Contains(err.Error(), "up, down or both") {
		t.Errorf("Set(sideways): %v, want an error naming up, down or both", err)
	}
	// A good up chain with a down chain the router refuses changes
	// neither: every chain is checked before any is applied.
	if _, err := Set(name, ChainText{Dir: "up", Chain: "netem delay 20ms"}, ChainText{Dir: "down", Chain: "pie; netem delay 1s"}); err == nil || !errors.Is(err, ErrBadInput) {
		t.Errorf("Set with a refused down chain: %v, want a bad-input error", err)
	}
	if st, _ := GetStatus(name, 0); st.Up.Chain != "netem limit 1000 delay 10ms" {
		t.Errorf("after a refused set, up chain %q; want it unchanged", st.Up.Chain)
	}
	st, _ = GetStatus(name, 0)
	if st.Up.Chain != "netem limit 1000 delay 10ms" || st.Down.Chain != st.Up.Chain {
		t.Errorf("after set: up %q, down %q; want netem limit 1000 delay 10ms both ways", st.Up.Chain, st.Down.Chain)
	}
	// Two flows up (IPv4 and IPv6 echo, two packets each): all of them,
	// or the busiest one, as asked.
	ping(t, tb, Client, tb.Info().Server.Addr4.String(), "-c", "2", "-i", "0.05")
	ping(t, tb, Client, tb.Info().Server.Addr6.String(), "-c", "2", "-i", "0.05")
	all, err := GetStatus(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	one, err := GetStatus(name, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Up.Flows) < 2 || all.Up.FlowsTotal != len(all.Up.Flows) || len(one.Up.Flows) != 1 || one.Up.FlowsTotal != all.Up.FlowsTotal ||
		one.Up.Flows[0].Bytes != all.Up.Flows[0].Bytes ||
		!slices.IsSortedFunc(all.Up.Flows, func(a, b router.FlowSnapshot) int { return cmp.Compare(b.Bytes, a.Bytes) }) {
		t.Errorf("all flows %+v (total %d); the busiest %+v (total %d)", all.Up.Flows, all.Up.FlowsTotal, one.Up.Flows, one.Up.FlowsTotal)
	}
	if _, err := GetStatus(name, -1); err == nil {
		t.Error("a status request for -1 flows succeeded")
	}
	if all.Framing != qdisc.FramingEthernet || all.Up.Framing != all.Framing || all.Wall.IsZero() || all.Up.Ring.Size != tun.DefaultTxQueueLen {
		t.Errorf("framing %s/%s, wall %v, ring %+v", all.Framing, all.Up.Framing, all.Wall, all.Up.Ring)
	}

	stdin, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	spec := ExecSpec{Host: Server, Path: "/bin/sh", Args: []string{"sh", "-c", "echo $WANLAB_HOST $WANLAB_PEER4 $KEEP; exit 3"}, Env: []string{"KEEP=kept", "WANLAB_HOST=wrong"}, Dir: "/"}
	code, err := Exec(name, spec, stdin, out, out)
	if err != nil || code != 3 {
		t.Fatalf("Exec: status %d, %v; want 3", code, err)
	}
	b, _ := os.ReadFile(out.Name())
	if want := "server " + tb.Info().Client.Addr4.String() + " kept\n"; string(b) != want {
		t.Errorf("program printed %q, want %q", b, want)
	}
	spec = ExecSpec{Path: "/bin/sh", Args: []string{"sh", "-c", "kill -TERM $$"}, Dir: "/"}
	if code, err := Exec(name, spec, stdin, out, out); err != nil || code != 128+15 {
		t.Errorf("program killed by SIGTERM: status %d, %v; want 143", code, err)
	}

	downed := make(chan error, 1)
	go func() { downed <- Down(name) }()
	select {
	case <-tb.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a down request did not close Done")
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-downed; err != nil {
		t.Errorf("Down: %v", err)
	}
	if _, err := GetStatus(name, 0); !errors.Is(err, ErrNotRunning) {
		t.Errorf("status after down: %v, want ErrNotRunning", err)
	}
	if err := Down(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("second Down: %v, want os.ErrNotExist", err)
	}
}
