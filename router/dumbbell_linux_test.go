package router

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/link"
	"wanlab/netns"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/tun"
)

// TestDumbbellAccessDelays pings one server from two clients whose access
// links delay each way by 10 and 40 ms, across bottlenecks of 20 ms each
// way: each client's RTT is its own path's within 1 %, and the ports'
// counters add up to the directions'. The pcap has every packet of both
// clients.
func TestDumbbellAccessDelays(t *testing.T) {
	b := newDumbbell(t, dumbbellOptions{clients: 2, servers: 1, up: "netem delay 20ms", down: "netem delay 20ms",
		access: map[string][2]string{"c1": {"netem delay 10ms", "netem delay 10ms"}, "c2": {"netem delay 40ms", "netem delay 40ms"}}, pcap: true})
	const n = 10
	want := []float64{60, 120} // 2 × (access + bottleneck)
	rounds := 0
	// Three attempts: 1 % of 60 ms is 0.6 ms, which a busy machine's
	// noise can take from the median on its own.
	roottest.Attempts(t, "ping", 3, func(r roottest.Reporter) {
		rounds++
		for i, c := range b.clients {
			rtts := b.pingRTTs(t, c, b.s.v4, n)
			if raceEnabled {
				if rtts[0] < want[i] {
					r.Errorf("c%d: %.3f ms, below the path's %g ms", i+1, rtts[0], want[i])
				}
				continue
			}
			roottest.JudgeRTT(r, "ping from c"+string(rune('1'+i)), rtts, want[i], want[i]/100, b.r.Snapshot().RoundTripLatenessP99())
		}
	})
	s := b.r.Snapshot()
	for _, d := range []DirSnapshot{s.Up, s.Down} {
		if len(d.Ports) != 3 {
			t.Fatalf("%s: %d ports, want 3 (two clients, one server): %+v", d.Name, len(d.Ports), d.Ports)
		}
		var in, out link.Counters
		nIn := 2 // the up direction's ingress hosts are the clients
		if d.Name == "down" {
			nIn = 1
		}
		for i, p := range d.Ports {
			wantPlace := "ingress"
			if i >= nIn {
				wantPlace = "egress"
			}
			if p.Place != wantPlace || p.If != tunName {
				t.Errorf("%s: port %d is %s %s on %q", d.Name, i, p.Host, p.Place, p.If)
			}
			c := &out
			if p.Place == "ingress" {
				c = &in
			}
			c.Sent += p.Counters.Sent
			c.Delivered += p.Counters.Delivered
			if p.Host[0] == 'c' {
				if p.Access == nil || p.Access.Delivered != p.Counters.Delivered {
					t.Errorf("%s: %s: access counters %+v, end to end %+v: every packet of the port crosses its access link", d.Name, p.Host, p.Access, p.Counters)
				}
				if wantChain := "netem limit 1000 delay " + map[string]string{"c1": "10ms", "c2": "40ms"}[p.Host]; p.Chain != wantChain {
					t.Errorf("%s: %s: chain %q, want %q", d.Name, p.Host, p.Chain, wantChain)
				}
			} else if p.Access != nil || p.Chain != "" {
				t.Errorf("%s: %s has no access link, but reports %+v, chain %q", d.Name, p.Host, p.Access, p.Chain)
			}
			if p.Counters.Delivered < n {
				t.Errorf("%s: %s: %d delivered, want at least %d", d.Name, p.Host, p.Counters.Delivered, n)
			}
		}
		ring := 0
		for _, p := range d.Ports[:nIn] {
			ring += p.Ring.Size
		}
		if d.Ports[0].Ring.Size == 0 || ring != d.Ring.Size {
			t.Errorf("%s: the ingress ports' rings %+v; the direction's %+v is to be their sum", d.Name, d.Ports[:nIn], d.Ring)
		}
		if in.Sent != d.Counters.Sent || out.Sent != d.Counters.Sent || in.Delivered != d.Counters.Delivered || out.Delivered != d.Counters.Delivered {
			t.Errorf("%s: ports sent %d/%d and delivered %d/%d (ingress/egress); the direction sent %d and delivered %d",
				d.Name, in.Sent, out.Sent, in.Delivered, out.Delivered, d.Counters.Sent, d.Counters.Delivered)
		}
		if d.Counters.Delay.Min < 30e6 {
			t.Errorf("%s: a packet crossed in %.0f ns, less than the shortest path's 30 ms", d.Name, d.Counters.Delay.Min)
		}
		if d.Verdict == nil || d.Lateness.N < 2*n {
			t.Errorf("%s: verdict %v, %d lateness samples", d.Name, d.Verdict, d.Lateness.N)
		}
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	echo := map[byte]int{} // by the client's address's last byte
	for _, r := range readPcap(t, b.pcap.Bytes()) {
		if len(r) >= 28 && r[0]>>4 == 4 && r[9] == 1 {
			if r[20] == 8 { // request: from the client
				echo[r[15]]++
			} else {
				echo[r[19]]++
			}
		}
	}
	for i, c := range b.clients {
		if got := echo[c.v4.As4()[3]]; got != 2*n*rounds {
			t.Errorf("pcap: %d ICMP packets of c%d, want %d (requests and replies)", got, i+1, 2*n*rounds)
		}
	}
}

// TestDumbbellSharedBottleneck runs a TCP flow from each of two clients to
// one server through a shared tbf of 20 Mbit/s: both flows get through,
// and together they fill the rate.
func TestDumbbellSharedBottleneck(t *testing.T) {
	const rate = 20e6
	b := newDumbbell(t, dumbbellOptions{clients: 2, servers: 1, up: "tbf rate 20mbit burst 32k latency 50ms"})
	var ln net.Listener
	if err := netns.Do(b.s.ns, func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(b.s.v4, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range b.clients {
		var conn net.Conn
		if err := netns.Do(c.ns, func() (err error) {
			conn, err = net.DialTimeout("tcp4", ln.Addr().String(), 2*time.Second)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			buf := make([]byte, 64<<10)
			for {
				select {
				case <-stop:
					return
				default:
				}
				conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
				if _, err := conn.Write(buf); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					return
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(500 * time.Millisecond) // past slow start
	s0 := b.r.Snapshot().Up
	time.Sleep(time.Second)
	s1 := b.r.Snapshot().Up
	secs := float64(s1.ClockNs-s0.ClockNs) / 1e9
	total := float64(s1.Counters.BytesOut-s0.Counters.BytesOut) * 8 / secs
	t.Logf("together %.2f Mbit/s", total/1e6)
	if total < 0.93*rate || total > 1.03*rate {
		t.Errorf("the flows together crossed at %.2f Mbit/s; want the tbf's %.0f within -7 %%..+3 %%", total/1e6, rate/1e6)
	}
	for i := range 2 {
		got := float64(s1.Ports[i].Counters.BytesOut-s0.Ports[i].Counters.BytesOut) * 8 / secs
		t.Logf("%s: %.2f Mbit/s", s1.Ports[i].Host, got/1e6)
		if got < 0.15*rate {
			t.Errorf("%s got %.2f Mbit/s of the shared %.0f: starved", s1.Ports[i].Host, got/1e6, rate/1e6)
		}
	}
	if s1.Ports[2].Counters.BytesOut != s1.Counters.BytesOut {
		t.Errorf("s1 took %d bytes, the direction delivered %d", s1.Ports[2].Counters.BytesOut, s1.Counters.BytesOut)
	}
}

// TestDumbbellNoRoute sends datagrams from a client to an address of its
// route that no host has: the router drops them as they enter, counted in
// NoRoute, and delivers none; datagrams to the server still cross.
func TestDumbbellNoRoute(t *testing.T) {
	b := newDumbbell(t, dumbbellOptions{clients: 2, servers: 2})
	a := b.s.v4.As4()
	a[3] = 200
	nowhere := netip.AddrFrom4(a)
	const n = 20
	// An unconnected socket: the server's port unreachable must not
	// refuse the next datagrams.
	var conn net.PacketConn
	if err := netns.Do(b.c.ns, func() (err error) {
		conn, err = net.ListenPacket("udp4", netip.AddrPortFrom(b.c.v4, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(dst netip.Addr) {
		for range n {
			if _, err := conn.WriteTo([]byte("nowhere"), net.UDPAddrFromAddrPort(netip.AddrPortFrom(dst, 9))); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := b.r.Snapshot().Up
	send(nowhere)
	var s DirSnapshot
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if s = b.r.Snapshot().Up; s.NoRoute-before.NoRoute >= n {
			break
		}
	}
	if got := s.NoRoute - before.NoRoute; got < n {
		t.Fatalf("NoRoute rose by %d, want at least the %d datagrams to %s", got, n, nowhere)
	}
	if s.Counters.Sent != before.Counters.Sent || s.Counters.Delivered != before.Counters.Delivered {
		t.Errorf("the up link took %d and delivered %d packets; want none of those to %s", s.Counters.Sent-before.Counters.Sent, s.Counters.Delivered-before.Counters.Delivered, nowhere)
	}
	send(b.servers[1].v4)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if s = b.r.Snapshot().Up; s.Ports[3].Counters.Delivered >= n {
			break
		}
	}
	if s.Ports[2].Counters.Delivered != 0 || s.Ports[3].Counters.Delivered != n {
		t.Errorf("s1 got %d and s2 %d packets; want 0 and the %d sent to s2", s.Ports[2].Counters.Delivered, s.Ports[3].Counters.Delivered, n)
	}
}

// TestDumbbellSetAccessChain changes one client's access delay while the
// router runs: that client's RTT follows, the other's does not.
func TestDumbbellSetAccessChain(t *testing.T) {
	b := newDumbbell(t, dumbbellOptions{clients: 2, servers: 1,
		access: map[string][2]string{"c1": {"netem delay 20ms", "netem delay 20ms"}, "c2": {"netem delay 20ms", "netem delay 20ms"}}})
	c1, c2 := link.Host{N: 1}, link.Host{N: 2}
	if err := b.r.CheckAccessChain(c1, "up", mustChain(t, "netem delay 30ms")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.r.SetAccessChain(c1, "up", mustChain(t, "netem delay 30ms")); err != nil {
		t.Fatal(err)
	}
	// Within 1 ms, as TestPingDelay: the change is 10 ms.
	roottest.Twice(t, "ping", func(r roottest.Reporter) {
		c1, c2 := b.pingRTTs(t, b.clients[0], b.s.v4, 8), b.pingRTTs(t, b.clients[1], b.s.v4, 8)
		late := b.r.Snapshot().RoundTripLatenessP99()
		roottest.JudgeRTT(r, "ping from c1", c1, 50, 1, late)
		roottest.JudgeRTT(r, "ping from c2", c2, 40, 1, late)
	})
	s := b.r.Snapshot()
	if got := s.Up.Ports[0].Chain; got != "netem limit 1000 delay 30ms" {
		t.Errorf("c1's up access chain reads %q after the change", got)
	}
	if got := s.Up.Ports[1].Chain; got != "netem limit 1000 delay 20ms" {
		t.Errorf("c2's up access chain reads %q, want it unchanged", got)
	}
	// The servers have no access links; c3 does not exist.
	for _, tc := range []struct {
		host link.Host
		dir  string
		want string
	}{
		{link.Host{Server: true, N: 1}, "up", "give it one when the router is made"},
		{link.Host{N: 3}, "up", "there are 2 clients"},
		{c1, "sideways", `use "up" or "down"`},
	} {
		_, err := b.r.SetAccessChain(tc.host, tc.dir, mustChain(t, "netem delay 1ms"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetAccessChain(%s, %s): %v; want an error saying %q", tc.host, tc.dir, err, tc.want)
		}
	}
	if _, err := b.r.SetAccessChain(c2, "up", mustChain(t, "")); err != nil {
		t.Errorf("c2 back to a direct access link: %v", err)
	}
}

// TestDumbbellRefusals checks what New refuses of a router of many hosts,
// and that the error says what to do.
func TestDumbbellRefusals(t *testing.T) {
	addr := func(i int) []netip.Addr { return []netip.Addr{netip.AddrFrom4([4]byte{10, 9, 0, byte(i)})} }
	hosts := func(n, first int) []Host {
		var hs []Host
		for i := range n {
			hs = append(hs, Host{Device: &fakeVNet{}, Addrs: addr(first + i)})
		}
		return hs
	}
	plain := &plainFake{closed: make(chan struct{})}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"mixed", Config{Client: &fakeVNet{}, Clients: hosts(2, 1), Servers: hosts(1, 50)}, "leave those unset"},
		{"17 clients", Config{Clients: hosts(17, 1), Servers: hosts(1, 50)}, "17 clients: a router of many hosts has 1 to 16 clients"},
		{"no servers", Config{Clients: hosts(2, 1)}, "0 servers"},
		{"not VNet", Config{Clients: append(hosts(1, 1), Host{Device: plain, Addrs: addr(2)}), Servers: hosts(1, 50)}, "is not a VNet TUN"},
		{"duplicate address", Config{Clients: hosts(2, 1), Servers: hosts(1, 2)}, "address 10.9.0.2 is given to both c2 and s1"},
		{"no address", Config{Clients: append(hosts(1, 1), Host{Device: &fakeVNet{}}), Servers: hosts(1, 50)}, "host c2 has no Addrs"},
		{"misnamed", Config{Clients: []Host{{Name: link.Host{N: 2}, Device: &fakeVNet{}, Addrs: addr(1)}}, Servers: hosts(1, 50)}, "name the clients c1, c2"},
		{"fake VNet", Config{Clients: hosts(2, 1), Servers: hosts(1, 50)}, "not a VNet device opened by tun.Open"},
	} {
		r, err := New(tc.cfg)
		if err == nil {
			r.up.close()
			r.down.close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", tc.name, err, tc.want)
		}
	}
	// One client and one server without access links are the router of
	// Client and Server, which takes other devices too.
	r, err := New(Config{Clients: []Host{{Device: plain, Addrs: addr(1)}}, Servers: hosts(1, 50)})
	if err != nil {
		t.Fatalf("one client and one server: %v", err)
	}
	r.up.close()
	r.down.close()
	if r.up.path != nil || len(r.Snapshot().Up.Ports) != 2 {
		t.Errorf("one client and one server: path %v, ports %+v; want the direct loop with two ports", r.up.path, r.Snapshot().Up.Ports)
	}
}

// allReadable is a deviceSet of fake devices, which always have packets.
type allReadable struct{}

func (allReadable) Wait(int, time.Duration) (bool, error) { return false, nil }
func (allReadable) Readable(int) bool                     { return true }

// BenchmarkDumbbellLoop measures one MTU-sized packet through a router of
// four clients and four servers over fake devices: read round robin from
// the clients, routed by its destination (the last of the table's
// addresses), through the path and written to its server. Compare
// BenchmarkLoop/mtu/direct, the router of two hosts.
func BenchmarkDumbbellLoop(b *testing.B) {
	saved := openSet
	openSet = func([]tun.VNetDevice) (deviceSet, error) { return allReadable{}, nil }
	b.Cleanup(func() { openSet = saved })
	h, p := tcpSuper(false, 1448, 1448, 0x10)
	h[1] = packet.GSONone
	pkt := append(h, p...) // to 10.0.0.2
	for _, bc := range []struct{ name, access string }{{"direct", ""}, {"access", "netem delay 200us"}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := Config{Up: link.Config{Env: qdisc.Env{Seed: 1}}}
			var clients []*fakeVNet
			var server *fakeVNet
			for i := range 4 {
				c := &fakeVNet{pkts: [][]byte{pkt}, perRead: readBatch, budget: -1}
				clients = append(clients, c)
				host := Host{Device: c, Addrs: []netip.Addr{netip.AddrFrom4([4]byte{10, 0, 2, byte(i)})}}
				if bc.access != "" {
					host.Up = &link.Config{Chain: mustChain(b, bc.access)}
				}
				cfg.Clients = append(cfg.Clients, host)
				s := &fakeVNet{perRead: readBatch}
				addrs := []netip.Addr{netip.AddrFrom4([4]byte{10, 0, 1, byte(i)}), netip.AddrFrom16([16]byte{0xfd, 15: byte(i)})}
				if i == 3 {
					addrs[1], server = netip.AddrFrom4([4]byte{10, 0, 0, 2}), s
				}
				cfg.Servers = append(cfg.Servers, Host{Device: s, Addrs: addrs})
			}
			r, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { r.up.close(); r.down.close() })
			l := r.up
			for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
				step(l)
			}
			segs0 := server.segs
			b.ReportAllocs()
			b.ResetTimer()
			read := 0
			for read < b.N {
				for _, c := range clients {
					c.budget = 2
				}
				l.pacer.credit, l.pacer.next = maxCredit, 0
				read += step(l)
			}
			b.StopTimer()
			b.ReportMetric(float64(server.segs-segs0)/b.Elapsed().Seconds()/1e6, "Msegs/s")
			if server.segs == segs0 {
				b.Fatal("the server got nothing")
			}
		})
	}
}

// TestFakeDumbbell sends super-packets from c1 to s2 (IPv4 and IPv6, each
// to one of its addresses) and datagrams from c2
// to an address no host has, over fake devices, through a direct
// bottleneck (the super-packets cross whole) and through a trace (they are
// split before the path): s2 gets every segment, s1 nothing, the
// datagrams count in NoRoute, and no packet leaks.
func TestFakeDumbbell(t *testing.T) {
	saved := openSet
	openSet = func([]tun.VNetDevice) (deviceSet, error) { return allReadable{}, nil }
	t.Cleanup(func() { openSet = saved })
	const payload, mss, supers, strays = 20000, 1448, 10, 7
	segs := (payload + mss - 1) / mss
	stray := udpDatagram(false, 1, 1000, 100, 0)
	stray[tun.VNetHdrLen+19] = 99 // to 10.0.0.99
	trace, err := link.ParseTrace([]byte(strings.Repeat("1\n", 50)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		trace *link.Trace
	}{{"whole", nil}, {"trace", trace}} {
		c1 := &fakeVNet{pkts: append(superPkts(false, payload, mss), superPkts(true, payload, mss)...), perRead: readBatch, budget: supers}
		c2 := &fakeVNet{pkts: [][]byte{stray}, perRead: readBatch, budget: strays}
		s1, s2 := &fakeVNet{perRead: readBatch}, &fakeVNet{perRead: readBatch}
		addr := func(b byte) []netip.Addr { return []netip.Addr{netip.AddrFrom4([4]byte{10, 0, 0, b})} }
		r, err := New(Config{
			Up:      link.Config{Env: qdisc.Env{Seed: 1}, Trace: tc.trace},
			Clients: []Host{{Device: c1, Addrs: addr(1)}, {Device: c2, Addrs: addr(3)}},
			Servers: []Host{{Device: s1, Addrs: addr(4)}, {Device: s2, Addrs: append(addr(2), netip.MustParseAddr("fd00::2"))}},
		})
		if err != nil {
			t.Fatal(err)
		}
		l := r.up
		for end := time.Now().Add(2 * time.Second); s2.segs < supers*segs && time.Now().Before(end); {
			step(l)
		}
		snap := r.Snapshot().Up
		if s2.segs != supers*segs || s2.badCsum != 0 || s1.written != 0 {
			t.Errorf("%s: s2 got %d segments (%d bad checksums), s1 %d writes; want %d, 0 and 0", tc.name, s2.segs, s2.badCsum, s1.written, supers*segs)
		}
		if snap.NoRoute != strays {
			t.Errorf("%s: NoRoute %d, want the %d strays", tc.name, snap.NoRoute, strays)
		}
		if whole := tc.trace == nil; snap.GSO.Whole != whole || !whole && snap.GSO.Split != supers {
			t.Errorf("%s: GSO %+v; want whole %v", tc.name, snap.GSO, whole)
		}
		if p := snap.Ports; len(p) != 4 || p[0].Counters.Delivered != uint64(supers*segs) || p[1].Counters.Sent != 0 || p[3].Counters.Delivered != uint64(supers*segs) {
			t.Errorf("%s: ports %+v", tc.name, p)
		}
		if live := l.small.Live() + l.large.Live() - 2; live != l.path.Len() {
			t.Errorf("%s: %d packets live beside the two read rings, %d in the path", tc.name, live, l.path.Len())
		}
		r.up.close()
		r.down.close()
	}
}

// TestFakeDumbbellRoundRobin reads three clients that always have packets
// waiting: each pass takes them in turn, starting after the one the last
// pass ended at, so each gets a third of the reads whatever the batch.
func TestFakeDumbbellRoundRobin(t *testing.T) {
	saved := openSet
	openSet = func([]tun.VNetDevice) (deviceSet, error) { return allReadable{}, nil }
	t.Cleanup(func() { openSet = saved })
	pkt := udpDatagram(false, 1, 1000, 100, 0) // to 10.0.0.2
	cfg := Config{Up: link.Config{Env: qdisc.Env{Seed: 1}}, Servers: []Host{{Device: &fakeVNet{perRead: readBatch}, Addrs: []netip.Addr{netip.AddrFrom4([4]byte{10, 0, 0, 2})}}}}
	for i := range 3 {
		c := &fakeVNet{pkts: [][]byte{pkt}, perRead: readBatch, budget: -1}
		cfg.Clients = append(cfg.Clients, Host{Device: c, Addrs: []netip.Addr{netip.AddrFrom4([4]byte{10, 0, 1, byte(i)})}})
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.up.close(); r.down.close() })
	read := 0
	for range 30 {
		r.up.pacer.credit, r.up.pacer.next = maxCredit, 0
		read += step(r.up)
	}
	ports := r.Snapshot().Up.Ports
	for _, p := range ports[:3] {
		if d := int(p.Counters.Sent) - read/3; d < -1 || d > 1 {
			t.Errorf("%s: %d of %d packets read; want a third", p.Host, p.Counters.Sent, read)
		}
	}
}

// TestDumbbellOneEach runs a router of one client and one server without
// access links: it is the router of Client and Server, and its two ports
// each report the whole direction.
func TestDumbbellOneEach(t *testing.T) {
	b := newDumbbell(t, dumbbellOptions{clients: 1, servers: 1, up: "netem delay 5ms", down: "netem delay 5ms"})
	if b.r.up.path != nil || b.r.down.path != nil {
		t.Fatal("one client and one server without access links go through a path, not the direct loop")
	}
	rtts := b.pingRTTs(t, b.c, b.s.v4, 5)
	if rtts[0] < 10 {
		t.Errorf("ping: %.3f ms, below the path's 10 ms", rtts[0])
	}
	for _, d := range []DirSnapshot{b.r.Snapshot().Up, b.r.Snapshot().Down} {
		if len(d.Ports) != 2 || d.Ports[0].Place != "ingress" || d.Ports[1].Place != "egress" {
			t.Fatalf("%s: ports %+v", d.Name, d.Ports)
		}
		for _, p := range d.Ports {
			if p.Counters.Delivered < 5 || p.Counters.Delivered > d.Counters.Delivered || p.Access != nil {
				t.Errorf("%s: %s: %d delivered (access %+v); the direction %d", d.Name, p.Host, p.Counters.Delivered, p.Access, d.Counters.Delivered)
			}
		}
		if d.Ports[0].Ring.Size == 0 {
			t.Errorf("%s: the ingress port's ring %+v: want its TUN's", d.Name, d.Ports[0].Ring)
		}
	}
}
