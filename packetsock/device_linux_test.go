package packetsock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
	"wanlab/netns"
	"wanlab/packet"
)

func TestOpenRefuses(t *testing.T) {
	p := newPair(t, false)
	for _, tc := range []struct {
		ifname string
		o      Options
		want   string
	}{
		{"lo", Options{}, "not an Ethernet interface"},
		{"wl-none", Options{}, "no interface"},
		{tapIf, Options{Frames: -1}, "positive number"},
	} {
		d, err := Open(p.tap, tc.ifname, tc.o)
		if err == nil {
			d.Close()
			t.Errorf("Open(%s, %+v) succeeded", tc.ifname, tc.o)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s, %+v): %v; want it to say %q", tc.ifname, tc.o, err, tc.want)
		}
	}
	d := p.open(t, Options{Frames: 16})
	if d.Frames() != 30 {
		t.Errorf("a ring of 16 frames has %d, want 30 (two blocks)", d.Frames())
	}
}

// command runs name in h as a testbed process called wl-...
func (p *pair) command(h *netns.Handle, name string, args ...string) *netns.Cmd {
	cmd := p.tb.Command(h, name, args...)
	cmd.Args[0] = netns.Prefix + p.tb.Name() + "-" + name
	return cmd
}

// TestReadsFrames reads what a host sends to the tap's address: pings
// both ways and a TCP transfer, whose segments arrive as GSO super-packets
// with their virtio-net headers. Nothing the tap's own kernel sends out
// (echo requests and replies, ACKs) is read back, every frame carries
// its Ethernet header, and the kernel's timestamps are never after the
// read that took them, and in order but for a few microseconds: the
// kernel claims a frame's slot in the ring, copies the frame and only
// then stamps it (tpacket_rcv), so a small frame taken in on another CPU
// while a super-packet is being copied can be stamped first.
func TestReadsFrames(t *testing.T) {
	p := newPair(t, true)
	d := p.open(t, Options{})
	start := time.Now().UnixNano()
	r := startReader(d)
	for _, c := range []*netns.Cmd{
		p.command(p.host, "ping", "-c", "3", "-i", "0.1", "-W", "2", p.tapIP.String()),
		p.command(p.tap, "ping", "-c", "3", "-i", "0.1", "-W", "2", p.hostIP.String()),
	} {
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c.Args, " "), err, out)
		}
	}
	const size = 4 << 20
	roottest.Transfer(t, p.host, p.tap, p.tapIP, make([]byte, size))
	recs := r.records(t)

	var requests, replies, supers, tcpPayload, backwards int
	var last int64
	for i, rec := range recs {
		fr := rec.fr
		if src := net.HardwareAddr(fr.MAC[6:12]); !bytes.Equal(src, p.hostMAC) {
			t.Fatalf("frame %d from %s: only the host's frames (%s) may be read, none the tap's kernel sent out", i, src, p.hostMAC)
		}
		if fr.Time > rec.readAt || fr.Time < start {
			t.Errorf("frame %d: kernel time %d outside [test start %d, read %d]", i, fr.Time, start, rec.readAt)
		}
		if fr.Time < last {
			backwards++
			if fr.Time < last-int64(time.Millisecond) {
				t.Errorf("frame %d: kernel time %d, %v before the previous frame's", i, fr.Time, time.Duration(last-fr.Time))
			}
		}
		last = max(last, fr.Time)
		if fr.MACLen != 14 || fr.EtherType() != 0x0800 {
			continue // ARP, IPv6
		}
		if dst := net.HardwareAddr(fr.MAC[:6]); !bytes.Equal(dst, p.tapMAC) {
			t.Errorf("frame %d: IPv4 to %s, not to the tap's %s", i, dst, p.tapMAC)
		}
		pkt, h := rec.pkt, rec.hdr
		if err := packet.CheckIPLength(pkt, h.GSOType != packet.GSONone); err != nil || len(pkt) != fr.Len {
			t.Fatalf("frame %d: %d bytes stored, Len %d: %v", i, len(pkt), fr.Len, err)
		}
		switch pkt[9] {
		case packet.ProtoICMP:
			switch pkt[20] {
			case 8:
				requests++
			case 0:
				replies++
			}
		case packet.ProtoTCP:
			thl := int(pkt[32]>>4) * 4
			tcpPayload += len(pkt) - 20 - thl
			if h.GSOType&^packet.GSOECN != packet.GSOTCPv4 {
				continue
			}
			supers++
			if h.Flags&packet.VirtioNetHdrNeedsCsum == 0 || h.CsumStart != 20 || h.CsumOffset != 16 || h.GSOSize < 500 || h.GSOSize > 1460 || len(pkt) <= 1500 {
				t.Errorf("frame %d: super-packet of %d bytes with header %+v; want NEEDS_CSUM from the TCP header at 20, checksum at 16, an MSS", i, len(pkt), h)
			}
		}
	}
	t.Logf("%d frames: %d echo requests and %d replies from the host, %d TCP super-packets, %d bytes of TCP payload; %d stamped before the frame before them", len(recs), requests, replies, supers, tcpPayload, backwards)
	if requests != 3 || replies != 3 {
		t.Errorf("%d echo requests and %d replies read, want 3 of each", requests, replies)
	}
	if supers == 0 || tcpPayload < size {
		t.Errorf("%d super-packets and %d bytes of TCP payload read, want some and at least %d", supers, tcpPayload, size)
	}
	if s, err := d.Stats(); err != nil || s.Drops != 0 || s.Skipped != 0 || s.Packets != uint64(len(recs)) {
		t.Errorf("Stats = %+v, %v; want %d packets, no drops or skipped frames", s, err, len(recs))
	}
}

// udpFrame writes into b, at offset, an IPv4 UDP packet from src to dst
// carrying payload, with a virtio-net header in front: a checksum left to
// the kernel (NEEDS_CSUM) when partial is set, none at all otherwise. It
// returns the packet's end.
func udpFrame(b []byte, offset int, src, dst netip.AddrPort, payload []byte, partial bool) int {
	size := 28 + len(payload)
	packet.WriteUDP4(b[offset:], packet.UDP4{Src: src.Addr().As4(), Dst: dst.Addr().As4(), SrcPort: src.Port(), DstPort: dst.Port()}, size)
	copy(b[offset+28:], payload)
	h := packet.VirtioNetHdr{}
	if partial {
		pkt := b[offset : offset+size]
		// The pseudo-header's sum, which the kernel completes.
		acc := packet.ChecksumAdd(pkt[12:20], uint64(packet.ProtoUDP)+uint64(size-20))
		binary.BigEndian.PutUint16(pkt[26:], packet.ChecksumFold(acc))
		h = packet.VirtioNetHdr{Flags: packet.VirtioNetHdrNeedsCsum, CsumStart: 20, CsumOffset: 6}
	}
	h.Encode(b[offset-VNetHdrLen:])
	return offset + size
}

// ethHeader returns an Ethernet header from src to dst of type typ,
// tagged with VLAN vid unless it is 0.
func ethHeader(dst, src net.HardwareAddr, vid int, typ uint16) []byte {
	h := append(append([]byte(nil), dst...), src...)
	if vid != 0 {
		h = binary.BigEndian.AppendUint16(h, unix.ETH_P_8021Q)
		h = binary.BigEndian.AppendUint16(h, uint16(vid))
	}
	return binary.BigEndian.AppendUint16(h, typ)
}

// readUDP waits up to two seconds for a datagram on c.
func readUDP(t *testing.T, c *net.UDPConn) ([]byte, error) {
	t.Helper()
	buf := make([]byte, 2048)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := c.Read(buf)
	return buf[:n], err
}

// TestWriteOneReachesPeer writes frames out of the tap and checks that a
// socket on the host receives them: with the checksum complete, and with
// one left to the kernel, whose offsets WriteOne moves past the Ethernet
// header.
func TestWriteOneReachesPeer(t *testing.T) {
	p := newPair(t, false)
	d := p.open(t, Options{Frames: 15})
	c := p.listenUDP(t)
	dst := c.LocalAddr().(*net.UDPAddr).AddrPort()
	src := netip.AddrPortFrom(p.tapIP, 4242)
	eth := ethHeader(p.hostMAC, p.tapMAC, 0, 0x0800)
	buf := make([]byte, 64+2048)
	for _, partial := range []bool{false, true} {
		msg := []byte(fmt.Sprintf("partial checksum %v", partial))
		end := udpFrame(buf, 64, src, dst, msg, partial)
		if e := d.WriteOne(eth, buf[:end], 64); e != 0 {
			t.Fatalf("WriteOne (%s): %v", msg, e)
		}
		got, err := readUDP(t, c)
		if err != nil || !bytes.Equal(got, msg) {
			t.Errorf("the host received %q, %v; want %q", got, err, msg)
		}
	}
	if e := d.WriteOne(eth[:13], buf[:100], 64); e != unix.EINVAL {
		t.Errorf("WriteOne with a 13-byte header = %v, want EINVAL", e)
	}
}

// TestVLANFrames sends tagged frames between a device on the host's end
// and one on the tap's (this kernel need not have VLAN interfaces): the
// tag, which the receive path takes off into the frame's metadata, comes
// back in the header read, one tag or two, and the packet after it is the
// one written.
func TestVLANFrames(t *testing.T) {
	p := newPair(t, false)
	host, err := Open(p.host, hostIf, Options{Frames: 15})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	tap := p.open(t, Options{Frames: 15})
	buf := make([]byte, testOffset+2048)
	src := netip.AddrPortFrom(p.hostIP, 4242)
	dst := netip.AddrPortFrom(p.tapIP, 4243)
	qinq := append(ethHeader(p.tapMAC, p.hostMAC, 0, unix.ETH_P_8021AD)[:12], 0x88, 0xa8, 0x00, 0x07, 0x81, 0x00, 0x00, 0x05, 0x08, 0x00)
	for _, tc := range []struct {
		name     string
		from, to *Device
		hdr      []byte
	}{
		{"host to tap, one tag", host, tap, ethHeader(p.tapMAC, p.hostMAC, 5, 0x0800)},
		{"tap to host, one tag", tap, host, ethHeader(p.hostMAC, p.tapMAC, 5, 0x0800)},
		{"host to tap, two tags", host, tap, qinq},
	} {
		msg := []byte(tc.name)
		end := udpFrame(buf, testOffset, src, dst, msg, true)
		sent := append([]byte(nil), buf[testOffset:end]...)
		if e := tc.from.WriteOne(tc.hdr, buf[:end], testOffset); e != 0 {
			t.Fatalf("%s: WriteOne: %v", tc.name, e)
		}
		r := startReader(tc.to)
		var got *record
		for end := time.Now().Add(2 * time.Second); got == nil && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			r.mu.Lock()
			for i := range r.recs {
				if bytes.Contains(r.recs[i].pkt, msg) {
					got = &r.recs[i]
				}
			}
			r.mu.Unlock()
		}
		r.records(t)
		if got == nil {
			t.Errorf("%s: frame not read", tc.name)
			continue
		}
		if !bytes.Equal(got.fr.Header(), tc.hdr) || !bytes.Equal(got.pkt, sent) {
			t.Errorf("%s: read header % x and packet % x\nwant % x and % x", tc.name, got.fr.Header(), got.pkt, tc.hdr, sent)
		}
		if got.hdr.Flags&packet.VirtioNetHdrNeedsCsum != 0 && got.hdr.CsumStart != 20 {
			t.Errorf("%s: virtio-net header %+v: the checksum starts 20 bytes into the packet", tc.name, got.hdr)
		}
	}
}

// TestRingOverflowCountsDrops sends more frames than the ring holds to a
// device nobody reads: the ring keeps the first, the kernel counts the
// rest as dropped, and TryRead then hands over exactly what was kept.
func TestRingOverflowCountsDrops(t *testing.T) {
	p := newPair(t, true)
	d := p.open(t, Options{Frames: 15})
	p.sendUDP(t, 100, 200)
	var s Stats
	for end := time.Now().Add(2 * time.Second); s.Packets < 100 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		var err error
		if s, err = d.Stats(); err != nil {
			t.Fatal(err)
		}
	}
	if s.Frames != 15 || s.Packets < 100 || s.Packets-s.Drops != 15 {
		t.Errorf("Stats = %+v; want 15 frames, at least 100 packets, all but 15 dropped", s)
	}
	bufs, frames := [][]byte{make([]byte, testOffset+MaxPacket)}, make([]Frame, 1)
	n := 0
	for {
		k, err := d.TryRead(bufs, frames, testOffset)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			break
		}
		n += k
	}
	if n != 15 {
		t.Errorf("read %d frames from a full ring of 15", n)
	}
}

// linkState is what Open must leave as it found it on an interface, and
// its promiscuity count, which it raises while the socket is open.
type linkState struct {
	flags   uint32
	mtu     int
	promisc int
	addrs   string
}

func (p *pair) linkState(t *testing.T) linkState {
	t.Helper()
	l, err := p.tap.Netlink().LinkByName(tapIf)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := p.tap.Netlink().AddrList(l, unix.AF_UNSPEC)
	if err != nil {
		t.Fatal(err)
	}
	a := l.Attrs()
	return linkState{flags: a.RawFlags, mtu: a.MTU, promisc: a.Promisc, addrs: fmt.Sprint(addrs)}
}

// waitPromisc waits up to two seconds for the tap's promiscuity count to
// become want and returns the state then.
func (p *pair) waitPromisc(t *testing.T, want int) linkState {
	t.Helper()
	s := p.linkState(t)
	for end := time.Now().Add(2 * time.Second); s.promisc != want && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		s = p.linkState(t)
	}
	return s
}

// TestPromiscuity checks that the interface is promiscuous while a socket
// is open on it and no longer once it is closed, or once the process that
// held it was killed, and that nothing else about the interface changed.
func TestPromiscuity(t *testing.T) {
	p := newPair(t, true)
	before := p.linkState(t)
	if before.promisc != 0 {
		t.Fatalf("a new veth has promiscuity %d", before.promisc)
	}
	check := func(what string, want int) {
		t.Helper()
		s := p.waitPromisc(t, want)
		if s.promisc != want {
			t.Errorf("%s: promiscuity %d, want %d", what, s.promisc, want)
		}
		s.promisc = before.promisc
		if s != before {
			t.Errorf("%s: interface %+v, was %+v", what, s, before)
		}
	}
	d, err := Open(p.tap, tapIf, Options{Frames: 15})
	if err != nil {
		t.Fatal(err)
	}
	check("open", 1)
	d.Close()
	check("after Close", 0)

	child := startHolder(t, p)
	check("held by a child process", 1)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	check("after SIGKILL of the child", 0)
}

// TestHelperHoldsDevice is the child of TestPromiscuity: it opens a device
// on the interface WANLAB_HELPER_PACKETSOCK names (namespace/interface),
// says "ready" and waits to be killed.
func TestHelperHoldsDevice(t *testing.T) {
	v := os.Getenv("WANLAB_HELPER_PACKETSOCK")
	if v == "" {
		t.Skip("helper process only")
	}
	ns, ifname, _ := strings.Cut(v, "/")
	h, err := netns.Open(ns)
	if err == nil {
		_, err = Open(h, ifname, Options{Frames: 15})
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	select {}
}

// startHolder runs the test binary again as TestHelperHoldsDevice on the
// tap, named as the testbed's processes are, and returns it once it holds
// the device; it is killed, if it still runs, when the test ends.
func startHolder(t *testing.T, p *pair) *netns.Cmd {
	t.Helper()
	cmd := p.tb.Command(p.tap, os.Args[0], "-test.run=^TestHelperHoldsDevice$")
	cmd.Args[0] = netns.Prefix + p.tb.Name() + "-holder"
	cmd.Env = append(os.Environ(), "WANLAB_HELPER_PACKETSOCK="+p.tap.Name()+"/"+tapIf)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make([]byte, 128)
	n, _ := out.Read(line)
	if string(line[:n]) != "ready\n" {
		t.Fatalf("the holder said %q", line[:n])
	}
	return cmd
}

// TestCloseEndsWait checks that Close ends a Wait blocked for ever, and
// that every call after Close fails.
func TestCloseEndsWait(t *testing.T) {
	p := newPair(t, false)
	d, err := Open(p.tap, tapIf, Options{Frames: 15})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for {
			if _, _, err := d.Wait(-1, -1); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("Wait after Close: %v, want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end Wait")
	}
	if _, err := d.TryRead([][]byte{make([]byte, 100)}, make([]Frame, 1), testOffset); !errors.Is(err, os.ErrClosed) {
		t.Errorf("TryRead after Close: %v", err)
	}
	if e := d.WriteOne(make([]byte, 14), make([]byte, 100), testOffset); e != unix.EBADF {
		t.Errorf("WriteOne after Close: %v, want EBADF", e)
	}
	if _, err := d.Stats(); err != nil {
		t.Errorf("Stats after Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestReadWriteAllocateNothing reads frames and writes them back without
// allocating.
func TestReadWriteAllocateNothing(t *testing.T) {
	p := newPair(t, true)
	d := p.open(t, Options{Frames: 15})
	p.sendUDP(t, 15, 200)
	bufs, frames := [][]byte{make([]byte, testOffset+MaxPacket)}, make([]Frame, 1)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if s, _ := d.Stats(); s.Packets >= 15 {
			break
		}
	}
	read := 0
	allocs := testing.AllocsPerRun(10, func() {
		n, err := d.TryRead(bufs, frames, testOffset)
		if err != nil || n != 1 {
			t.Fatalf("TryRead = %d, %v", n, err)
		}
		read++
		// Back to where it came from: the host's kernel drops it.
		if e := d.WriteOne(frames[0].Header(), bufs[0][:testOffset+frames[0].Len], testOffset); e != 0 {
			t.Fatalf("WriteOne: %v", e)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per frame read and written", allocs)
	}
}

// BenchmarkTryRead measures TryRead of one frame at a time from a ring the
// host filled with UDP datagrams beforehand (the filling is not timed).
func BenchmarkTryRead(b *testing.B) {
	p := newPair(b, true)
	d := p.open(b, Options{Frames: 60})
	bufs, frames := [][]byte{make([]byte, testOffset+MaxPacket)}, make([]Frame, 1)
	fill := func() {
		b.StopTimer()
		defer b.StartTimer()
		s0, _ := d.Stats()
		p.sendUDP(b, 60, 1400)
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if s, _ := d.Stats(); s.Packets-s0.Packets >= 60 {
				return
			}
		}
		b.Fatal("the host's datagrams did not reach the ring")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for read := 0; read < b.N; {
		n, err := d.TryRead(bufs, frames, testOffset)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			fill()
		}
		read += n
	}
}

// TestOffloads checks that Offloads follows the interface's features: a
// veth segments every GSO type itself; once TSO is off, it takes no TCP
// super-packets (the kernel would drop them: see Offload).
func TestOffloads(t *testing.T) {
	p := newPair(t, false)
	if o := p.open(t, Options{Frames: 15}).Offloads(); o != TSO4|TSO6|USO {
		t.Errorf("a veth's offloads %#x, want TSO4|TSO6|USO", o)
	}
	err := netns.Do(p.tap, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		const ethtoolSTSO = 0x1f
		v := make([]byte, 8) // struct ethtool_value with data 0: off
		binary.NativeEndian.PutUint32(v, ethtoolSTSO)
		return ethtool(fd, tapIf, v)
	})
	if err != nil {
		t.Fatal(err)
	}
	if o := p.open(t, Options{Frames: 15}).Offloads(); o != USO {
		t.Errorf("offloads %#x with TSO off, want USO alone", o)
	}
}
