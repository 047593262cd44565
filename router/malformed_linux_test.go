package router

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/netns"
	"wanlab/packet"
	"wanlab/tun"
)

// injector sends packets into the client's TUN from inside the client's
// namespace through an AF_PACKET socket bound to it: the kernel transmits
// them on the device, so the router reads them as it reads the host's own
// traffic, but they are whatever bytes the test chose, which a host's IP
// stack would never emit. With vnet set, every packet starts with a
// virtio-net header (PACKET_VNET_HDR) that the kernel turns into the
// packet's offload state and the TUN writes back for the router.
type injector struct {
	fd      int
	ifindex int
	vnet    bool
}

func newInjector(t *testing.T, h *host, vnet bool) *injector {
	t.Helper()
	in := &injector{vnet: vnet}
	err := netns.Do(h.ns, func() error {
		l, err := h.ns.Netlink().LinkByName(tunName)
		if err != nil {
			return err
		}
		in.ifindex = l.Attrs().Index
		// ETH_P_ALL in network byte order; the protocol of each packet
		// is given to sendto.
		in.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		return err
	})
	if err != nil {
		t.Fatalf("AF_PACKET socket in %s: %v", h.ns.Name(), err)
	}
	t.Cleanup(func() { unix.Close(in.fd) })
	if vnet {
		if err := unix.SetsockoptInt(in.fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			t.Fatalf("PACKET_VNET_HDR: %v", err)
		}
	}
	return in
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// send transmits hdr (a virtio-net header, used only with vnet) and pkt on
// the device, as protocol IPv4 or IPv6 by pkt's first nibble (IPv4 for
// anything else). It returns the kernel's refusal, if any.
func (in *injector) send(hdr, pkt []byte) error {
	proto := uint16(unix.ETH_P_IP)
	if len(pkt) > 0 && pkt[0]>>4 == 6 {
		proto = unix.ETH_P_IPV6
	}
	b := pkt
	if in.vnet {
		if hdr == nil {
			hdr = make([]byte, packet.VirtioNetHdrLen)
		}
		b = append(append([]byte(nil), hdr...), pkt...)
	}
	return unix.Sendto(in.fd, b, 0, &unix.SockaddrLinklayer{Protocol: htons(proto), Ifindex: in.ifindex})
}

// malformedCase is one packet that no IP stack would send.
type malformedCase struct {
	name string
	hdr  []byte // virtio-net header, for devices that take one
	pkt  []byte
	// want says what the router must do with the packet on a device of
	// kind k, on a path that keeps super-packets whole or not.
	want func(k tun.Kind, whole bool) outcome
}

// outcome is what becomes of a packet the router reads.
type outcome int

const (
	// dropped: counted as malformed once, and nothing of it sent.
	dropped outcome = iota
	// carried: sent (as one or more segments), nothing counted malformed.
	carried
	// partial: counted as malformed once, and some of its segments sent
	// (a super-packet the offload device split only in part).
	partial
)

func (o outcome) String() string { return [...]string{"dropped", "carried", "partial"}[o] }

func always(o outcome) func(tun.Kind, bool) outcome { return func(tun.Kind, bool) outcome { return o } }

// malformedCases builds the packets of TestMalformedPacketsAreCountedAndDropped.
func malformedCases(vnet bool) []malformedCase {
	ipv4 := func(n int) []byte {
		b := make([]byte, n)
		b[0] = 0x45
		binary.BigEndian.PutUint16(b[2:], uint16(n))
		b[8], b[9] = 64, 253 // a protocol for experiments (RFC 3692)
		copy(b[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
		binary.BigEndian.PutUint16(b[10:], packet.Checksum(b[:20]))
		return b
	}
	with := func(b []byte, f func([]byte)) []byte { f(b); return b }
	cs := []malformedCase{
		{name: "empty", pkt: []byte{}, want: always(dropped)},
		{name: "not IP (version 0)", pkt: with(ipv4(60), func(b []byte) { b[0] = 0x05 }), want: always(dropped)},
		{name: "version 5", pkt: with(ipv4(60), func(b []byte) { b[0] = 0x55 }), want: always(dropped)},
		{name: "version 15, one byte", pkt: []byte{0xf0}, want: always(dropped)},
		{name: "IPv4 header cut at 12 bytes", pkt: ipv4(20)[:12], want: always(dropped)},
		{name: "IPv4 IHL 4", pkt: with(ipv4(60), func(b []byte) { b[0] = 0x44 }), want: always(dropped)},
		{name: "IPv4 IHL 15 in 40 bytes", pkt: with(ipv4(40), func(b []byte) { b[0] = 0x4f }), want: always(dropped)},
		{name: "IPv4 total length beyond the packet", pkt: with(ipv4(60), func(b []byte) { binary.BigEndian.PutUint16(b[2:], 1000) }), want: always(dropped)},
		{name: "IPv4 total length below its header", pkt: with(ipv4(60), func(b []byte) { binary.BigEndian.PutUint16(b[2:], 16) }), want: always(dropped)},
		{name: "IPv6 header cut at 30 bytes", pkt: with(make([]byte, 30), func(b []byte) { b[0] = 0x60 }), want: always(dropped)},
		{name: "IPv6 payload length beyond the packet", pkt: with(make([]byte, 60), func(b []byte) {
			b[0] = 0x60
			binary.BigEndian.PutUint16(b[4:], 1000)
			b[6], b[7] = 253, 64
		}), want: always(dropped)},
		{name: "IPv4 with trailing bytes beyond its total length", pkt: with(ipv4(80), func(b []byte) { binary.BigEndian.PutUint16(b[2:], 60) }), want: always(carried)},
		{name: "IPv4 of an unassigned protocol", pkt: ipv4(100), want: always(carried)},
	}
	if !vnet {
		return cs
	}
	tcp := func(payload, mss int, f func(h, p []byte)) ([]byte, []byte) {
		h, p := tcpSuper(false, payload, mss, 0x10)
		f(h, p)
		return h, p
	}
	h1, p1 := tcp(1400, 1, func(h, p []byte) {})
	h2, p2 := tcp(3000, 1000, func(h, p []byte) { binary.BigEndian.PutUint16(p[2:], 1000) })
	h3, p3 := tcp(3000, 1000, func(h, p []byte) { p[0] = 0x75 })
	return append(cs,
		// The kernel takes one-byte segments. Whole, the super-packet
		// crosses as the segments it stands for; the router's splitter
		// refuses more than its bound; the offload device splits it
		// into the 128 segments of a batch and loses the rest.
		malformedCase{name: "TSO super-packet of 1400 one-byte segments", hdr: h1, pkt: p1, want: func(k tun.Kind, whole bool) outcome {
			switch {
			case k == tun.Offload:
				return partial
			case whole:
				return carried
			}
			return dropped
		}},
		// The offload device segments it as the kernel's GSO would,
		// rewriting every segment's length from the whole; the router
		// refuses a super-packet whose length field contradicts it.
		malformedCase{name: "TSO super-packet whose IPv4 length is cut", hdr: h2, pkt: p2, want: func(k tun.Kind, _ bool) outcome {
			if k == tun.Offload {
				return carried
			}
			return dropped
		}},
		malformedCase{name: "TSO super-packet of IP version 7", hdr: h3, pkt: p3, want: always(dropped)},
	)
}

// TestMalformedPacketsAreCountedAndDropped feeds the router's read path,
// through the client TUN, packets that are not IP, IP headers cut short or
// contradicting their length, and super-packets with virtio-net headers
// that do not fit them, on every kind of device and on a path that keeps
// super-packets whole as on one that splits them. None may stop or stall
// the router: each is read, and counted as malformed and dropped without
// reaching the server's device (or carried, for the odd but well-formed
// ones); a ping crosses afterwards; and so it goes for 600 random packets
// with random virtio-net headers.
func TestMalformedPacketsAreCountedAndDropped(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  tun.Kind
		chain string
	}{
		{"vnet-whole", tun.VNet, "netem delay 1ms"},
		{"vnet-split", tun.VNet, "netem delay 1ms 100us"},
		{"offload", tun.Offload, ""},
		{"raw", tun.Raw, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBed(t, bedOptions{kind: tc.kind, up: tc.chain})
			// No IPv6 on the client: nothing but the test's packets
			// crosses while it counts.
			if err := b.c.ns.SetSysctl("net.ipv6.conf.all.disable_ipv6", "1"); err != nil {
				t.Fatal(err)
			}
			vnet := tc.kind != tun.Raw
			in := newInjector(t, b.c, vnet)
			whole := b.r.Snapshot().Up.GSO.Whole
			b.quiesce(t)
			for _, mc := range malformedCases(vnet) {
				before := b.r.Snapshot().Up
				tx0 := b.clientTx(t)
				if err := in.send(mc.hdr, mc.pkt); err != nil {
					t.Logf("%s: the kernel refused it: %v", mc.name, err)
					continue
				}
				if !b.waitFor(func() bool { return b.clientTx(t) > tx0 }) {
					t.Logf("%s: the kernel did not transmit it on the device", mc.name)
					continue
				}
				var after DirSnapshot
				if !b.waitFor(func() bool {
					after = b.r.Snapshot().Up
					return after.Malformed > before.Malformed || after.Counters.Sent > before.Counters.Sent
				}) {
					t.Fatalf("%s: the router did not take the packet within 5 s", mc.name)
				}
				bad, sent := after.Malformed-before.Malformed, after.Counters.Sent-before.Counters.Sent
				want := mc.want(tc.kind, whole)
				got := carried
				switch {
				case bad == 1 && sent == 0:
					got = dropped
				case bad == 1 && sent > 0:
					got = partial
				case bad != 0 || sent == 0:
					got = -1
				}
				if got != want {
					t.Errorf("%s: malformed +%d, sent +%d; want it %s", mc.name, bad, sent, want)
				}
			}
			rng := rand.New(rand.NewPCG(1, uint64(tc.kind)))
			accepted := 0
			for range 600 {
				hdr, pkt := randomPacket(rng)
				if in.send(hdr, pkt) == nil {
					accepted++
				}
			}
			lo, _ := b.pingRTT(t, b.c, b.s.v4, 3)
			select {
			case err := <-b.done:
				t.Fatalf("the router stopped: %v", err)
			default:
			}
			up := b.r.Snapshot().Up
			t.Logf("600 random packets (%d taken by the kernel): router sent %d, malformed %d, write drops %v; then ping %.3f ms",
				accepted, up.Counters.Sent, up.Malformed, up.WriteDropsByReason, lo)
			if up.WriteDrops != 0 {
				t.Errorf("write drops %v: a packet the server's kernel refuses reached it", up.WriteDropsByReason)
			}
		})
	}
}

// quiesce waits until nothing has crossed the up direction for half a
// second: the client's IPv6 start-up traffic (router solicitations, MLD
// reports, sent until disable_ipv6 takes effect) has been carried, and
// every packet the client's kernel sent has been taken.
func (b *bed) quiesce(t *testing.T) {
	t.Helper()
	var last DirSnapshot
	lastTx, quiet := uint64(0), 0
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		s, tx := b.r.Snapshot().Up, b.clientTx(t)
		if tx == lastTx && s.Counters.Sent == last.Counters.Sent && s.Malformed == last.Malformed && s.Counters.Queued == 0 {
			if quiet++; quiet == 5 {
				return
			}
		} else {
			quiet = 0
		}
		last, lastTx = s, tx
	}
	t.Fatal("the up direction did not fall quiet within 10 s")
}

// clientTx returns how many packets the client's kernel has handed to the
// router through its TUN.
func (b *bed) clientTx(t *testing.T) uint64 {
	t.Helper()
	s, err := tun.ReadStats(b.c.ns, tunName)
	if err != nil {
		t.Fatal(err)
	}
	return s.TxPackets
}

// waitFor polls cond for up to 5 s, failing the wait if the router stops.
func (b *bed) waitFor(cond func() bool) bool {
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// randomPacket returns a random virtio-net header and packet: lengths up
// to 1600 bytes, a version nibble that is mostly 4 or 6, and header fields
// drawn around the values that mean something.
func randomPacket(rng *rand.Rand) ([]byte, []byte) {
	pkt := make([]byte, rng.IntN(1600))
	for i := range pkt {
		pkt[i] = byte(rng.Uint32())
	}
	if len(pkt) > 0 {
		v := []byte{4, 4, 4, 6, 6, 6, 0, 5, 15}[rng.IntN(9)]
		pkt[0] = v<<4 | pkt[0]&0x0f
		if v == 4 && rng.IntN(2) == 0 {
			pkt[0] = 0x45
		}
	}
	if len(pkt) >= 20 && rng.IntN(2) == 0 {
		// Lengths that agree with the packet, so that deeper checks run.
		binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
		if pkt[0]>>4 == 6 && len(pkt) >= 40 {
			binary.BigEndian.PutUint16(pkt[4:], uint16(len(pkt)-40))
		}
		pkt[9] = []byte{packet.ProtoTCP, packet.ProtoUDP, 1}[rng.IntN(3)]
	}
	h := packet.VirtioNetHdr{
		Flags:      []uint8{0, packet.VirtioNetHdrNeedsCsum}[rng.IntN(2)],
		GSOType:    []uint8{0, 0, packet.GSOTCPv4, packet.GSOTCPv6, packet.GSOUDPL4, packet.GSOUDP, packet.GSOTCPv4 | packet.GSOECN, 0x42}[rng.IntN(8)],
		HdrLen:     uint16(rng.IntN(100)),
		GSOSize:    uint16(rng.IntN(1500)),
		CsumStart:  uint16([]int{20, 40, rng.IntN(2000)}[rng.IntN(3)]),
		CsumOffset: uint16([]int{6, 16, rng.IntN(100)}[rng.IntN(3)]),
	}
	hdr := make([]byte, packet.VirtioNetHdrLen)
	h.Encode(hdr)
	return hdr, pkt
}
