package router

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"wanlab/packet"
	"wanlab/tun"
)

// udpDatagram returns a virtio-net header of zeros and a UDP datagram with
// a complete checksum: IPv4 with identification id, or IPv6.
func udpDatagram(v6 bool, id, sport uint16, payload int, fill byte) []byte {
	l4 := 20
	if v6 {
		l4 = 40
	}
	b := make([]byte, tun.VNetHdrLen+l4+8+payload)
	p := b[tun.VNetHdrLen:]
	if v6 {
		p[0] = 0x60
		binary.BigEndian.PutUint16(p[4:], uint16(8+payload))
		p[6], p[7] = packet.ProtoUDP, 64
		p[8+15], p[24+15] = 1, 2
	} else {
		packet.WriteUDP4(p, packet.UDP4{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, ID: id}, len(p))
	}
	binary.BigEndian.PutUint16(p[l4:], sport)
	binary.BigEndian.PutUint16(p[l4+2:], 5201)
	binary.BigEndian.PutUint16(p[l4+4:], uint16(8+payload))
	for i := range payload {
		p[l4+8+i] = fill + byte(i)
	}
	n := len(p) - l4
	binary.BigEndian.PutUint16(p[l4+6:], packet.Checksum(append(pseudoHeader(p, n, packet.ProtoUDP), p[l4:]...)))
	return b
}

// runFake sends pkts through a direct path to a server that takes USO
// when uso is set, and returns the server and the up snapshot.
func runFake(t *testing.T, pkts [][]byte, uso bool) (*fakeVNet, DirSnapshot) {
	t.Helper()
	r, c, s := fakeRouter(t, nil, pkts)
	c.budget = len(pkts)
	s.keep = true
	if uso {
		s.offloads = tunUSO4 | tunUSO6
	}
	r.up.out = newVNetEgress(s)
	deadline := time.Now().Add(time.Second)
	for len(s.got) < len(pkts) && time.Now().Before(deadline) {
		step(r.up)
	}
	return s, r.Snapshot().Up
}

// TestUSOSameDatagrams checks that coalesced datagrams reach the receiver
// exactly as they were sent, and in fewer writes.
func TestUSOSameDatagrams(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		var pkts [][]byte
		for i := range 64 {
			pkts = append(pkts, udpDatagram(v6, uint16(65500+i), 4000, 1400, byte(i)))
		}
		s, snap := runFake(t, pkts, true)
		checkSame(t, s.got, pkts)
		// Eight datagrams are read, and due, per pass.
		if s.written != 8 || snap.GSO.USOWrites != 8 || snap.GSO.USODatagrams != 64 {
			t.Errorf("v6 %v: %d writes, %d USO writes of %d datagrams; want 8, 8, 64", v6, s.written, snap.GSO.USOWrites, snap.GSO.USODatagrams)
		}
		if snap.Counters.Delivered != 64 || len(snap.Flows) != 1 || snap.Flows[0].Payload != 64*1400 {
			t.Errorf("v6 %v: delivered %d, flows %+v", v6, snap.Counters.Delivered, snap.Flows)
		}
		if snap.Lateness.N != 64 {
			t.Errorf("v6 %v: %d lateness samples, want 64", v6, snap.Lateness.N)
		}
	}
}

// TestUSOBreaks checks what ends a batch: another flow, a gap in the IPv4
// identification, a shorter datagram, a wrong checksum, and a device
// without USO.
func TestUSOBreaks(t *testing.T) {
	bad := udpDatagram(false, 7, 4000, 1400, 7)
	bad[len(bad)-1] ^= 0xff
	pkts := [][]byte{
		udpDatagram(false, 1, 4000, 1400, 1),
		udpDatagram(false, 2, 4000, 1400, 2), // batch 1: 2 datagrams
		udpDatagram(false, 3, 4001, 1400, 3), // another flow: alone
		udpDatagram(false, 5, 4000, 1400, 5), // gap in the ids
		udpDatagram(false, 6, 4000, 1000, 6), // shorter: ends batch 2
		bad,                                  // alone, still wrong
		udpDatagram(false, 8, 4000, 1400, 8), // alone: the pass ends
	}
	s, snap := runFake(t, pkts, true)
	checkSame(t, s.got, pkts)
	if s.written != 5 || snap.GSO.USOWrites != 2 || snap.GSO.USODatagrams != 4 {
		t.Errorf("%d writes, %d USO writes of %d datagrams; want 5, 2, 4", s.written, snap.GSO.USOWrites, snap.GSO.USODatagrams)
	}
	s, snap = runFake(t, pkts, false)
	checkSame(t, s.got, pkts)
	if s.written != len(pkts) || snap.GSO.USOWrites != 0 {
		t.Errorf("without USO: %d writes, %d USO writes; want %d, 0", s.written, snap.GSO.USOWrites, len(pkts))
	}
}

// TestUSOPartialChecksum coalesces datagrams whose checksum the sender left
// to the kernel (NEEDS_CSUM), and checks the receiver's checksums.
func TestUSOPartialChecksum(t *testing.T) {
	var pkts [][]byte
	for i := range 8 {
		b := udpDatagram(false, uint16(i), 4000, 1400, byte(i))
		p := b[tun.VNetHdrLen:]
		binary.BigEndian.PutUint16(p[26:], ^packet.Checksum(pseudoHeader(p, len(p)-20, packet.ProtoUDP)))
		packet.VirtioNetHdr{Flags: packet.VirtioNetHdrNeedsCsum, CsumStart: 20, CsumOffset: 6}.Encode(b)
		pkts = append(pkts, b)
	}
	s, snap := runFake(t, pkts, true)
	if snap.GSO.USOWrites != 1 || len(s.got) != 8 {
		t.Fatalf("%d USO writes, %d datagrams received; want 1, 8", snap.GSO.USOWrites, len(s.got))
	}
	for i, g := range s.got {
		if !refChecksumOK(g, 20) {
			t.Errorf("datagram %d: wrong checksum", i)
		}
		if want := pkts[i][tun.VNetHdrLen+28:]; !bytes.Equal(g[28:], want) {
			t.Errorf("datagram %d: payload differs", i)
		}
	}
}

func checkSame(t *testing.T, got, sent [][]byte) {
	t.Helper()
	if len(got) != len(sent) {
		t.Fatalf("received %d datagrams, sent %d", len(got), len(sent))
	}
	for i := range got {
		if want := sent[i][tun.VNetHdrLen:]; !bytes.Equal(got[i], want) {
			t.Errorf("datagram %d differs:\n got %x\nwant %x", i, got[i][:48], want[:48])
		}
	}
}
