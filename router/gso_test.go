package router

import (
	"encoding/binary"
	"testing"

	"wanlab/packet"
)

// tcpSuper builds a TCP super-packet as a TSO-capable TUN hands it over:
// IPv4 (or IPv6) + TCP with 12 bytes of options, payload bytes of payload,
// the transport checksum left partial (the pseudo-header sum) and a
// virtio-net header asking for segments of mss bytes. It returns the header
// and the packet.
func tcpSuper(v6 bool, payload, mss int, flags byte) ([]byte, []byte) {
	l4 := 20
	if v6 {
		l4 = 40
	}
	hl := l4 + 32
	b := make([]byte, hl+payload)
	if v6 {
		b[0] = 0x60
		binary.BigEndian.PutUint16(b[4:], uint16(len(b)-40))
		b[6], b[7] = packet.ProtoTCP, 64
		b[8], b[23] = 0xfd, 1
		b[24], b[39] = 0xfd, 2
	} else {
		b[0] = 0x45
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		binary.BigEndian.PutUint16(b[4:], 0x1234)
		b[8], b[9] = 64, packet.ProtoTCP
		copy(b[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
		binary.BigEndian.PutUint16(b[10:], packet.Checksum(b[:20]))
	}
	t := b[l4:]
	binary.BigEndian.PutUint16(t[0:], 40000)
	binary.BigEndian.PutUint16(t[2:], 5201)
	binary.BigEndian.PutUint32(t[4:], 0xfffff000) // wraps inside the super-packet
	binary.BigEndian.PutUint32(t[8:], 77)
	t[12] = 8 << 4
	t[13] = flags
	binary.BigEndian.PutUint16(t[14:], 512)
	t[20], t[21], t[22] = 1, 1, 8 // NOP NOP timestamps
	for i := range payload {
		b[hl+i] = byte(i*7 + i>>8)
	}
	ps := fold(pseudo(b, packet.ProtoTCP, len(b)-l4))
	binary.BigEndian.PutUint16(t[16:], ps)
	h := make([]byte, 10)
	h[0] = vnetNeedsCsum
	h[1] = gsoTCPv4
	if v6 {
		h[1] = gsoTCPv6
	}
	binary.LittleEndian.PutUint16(h[2:], uint16(hl))
	binary.LittleEndian.PutUint16(h[4:], uint16(mss))
	binary.LittleEndian.PutUint16(h[6:], uint16(l4))
	binary.LittleEndian.PutUint16(h[8:], 16)
	return h, b
}

// refChecksumOK verifies a segment's transport checksum the slow way.
func refChecksumOK(b []byte, l4 int) bool {
	var ph []byte
	n := len(b) - l4
	if b[0]>>4 == 4 {
		ph = append(ph, b[12:20]...)
	} else {
		ph = append(ph, b[8:40]...)
	}
	ph = append(ph, 0, 0, byte(n>>8), byte(n), 0, 0, 0, b[9])
	if b[0]>>4 == 6 {
		ph[len(ph)-1] = b[6]
	}
	return packet.Checksum(append(ph, b[l4:]...)) == 0
}

func TestSegmentTCP(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		const payload, mss = 10000, 1448
		hb, pkt := tcpSuper(v6, payload, mss, 0x80|0x18|0x01) // CWR PSH ACK FIN
		h := decodeVNet(hb)
		g, err := inspect(pkt, h)
		if err != nil {
			t.Fatal(err)
		}
		wantSegs := (payload + mss - 1) / mss
		if g.segs != wantSegs || g.hdrLen != int(h.hdrLen) || g.wire != len(pkt)+(wantSegs-1)*g.hdrLen || g.payload() != payload {
			t.Fatalf("v6=%v: inspect = %+v, want %d segments of header %d", v6, g, wantSegs, h.hdrLen)
		}
		dst := make([]byte, 2048)
		got := make([]byte, 0, payload)
		wire := 0
		for i := range g.segs {
			n := segment(dst, pkt, g, i)
			s := dst[:n]
			wire += n
			if v6 {
				if int(binary.BigEndian.Uint16(s[4:]))+40 != n {
					t.Errorf("segment %d: payload length %d for %d bytes", i, binary.BigEndian.Uint16(s[4:]), n)
				}
			} else {
				if int(binary.BigEndian.Uint16(s[2:])) != n || !packet.IPv4HeaderValid(s) {
					t.Errorf("segment %d: total length %d for %d bytes, header valid %v", i, binary.BigEndian.Uint16(s[2:]), n, packet.IPv4HeaderValid(s))
				}
				if id := binary.BigEndian.Uint16(s[4:]); id != 0x1234+uint16(i) {
					t.Errorf("segment %d: IP ID %#x", i, id)
				}
			}
			if !refChecksumOK(s, g.l4) {
				t.Errorf("v6=%v segment %d: bad TCP checksum", v6, i)
			}
			tcp := s[g.l4:]
			if seq := binary.BigEndian.Uint32(tcp[4:]); seq != 0xfffff000+uint32(i*mss) {
				t.Errorf("segment %d: seq %#x", i, seq)
			}
			wantFlags := byte(0x10)
			if i == 0 {
				wantFlags |= 0x80
			}
			if i == g.segs-1 {
				wantFlags |= 0x09
			}
			if tcp[13] != wantFlags {
				t.Errorf("segment %d: flags %#x, want %#x", i, tcp[13], wantFlags)
			}
			got = append(got, s[g.hdrLen:]...)
		}
		if string(got) != string(pkt[g.hdrLen:]) {
			t.Errorf("v6=%v: the segments' payloads do not add up to the super-packet's", v6)
		}
		if wire != g.wire {
			t.Errorf("segments have %d bytes, inspect said %d", wire, g.wire)
		}
	}
}

func TestCompleteChecksum(t *testing.T) {
	hb, pkt := tcpSuper(false, 1000, 1448, 0x10)
	h := decodeVNet(hb)
	if refChecksumOK(pkt, 20) {
		t.Fatal("partial checksum already valid: the test proves nothing")
	}
	if err := completeChecksum(pkt, h); err != nil {
		t.Fatal(err)
	}
	if !refChecksumOK(pkt, 20) {
		t.Error("checksum not valid after completeChecksum")
	}
}

func TestSumMatchesReference(t *testing.T) {
	b := make([]byte, 1501)
	for i := range b {
		b[i] = byte(i*131 + 17)
	}
	for n := 0; n <= len(b); n += 7 {
		if got, want := ^fold(sum(b[:n], 0)), packet.Checksum(b[:n]); got != want {
			t.Fatalf("checksum of %d bytes: %#x, reference %#x", n, got, want)
		}
	}
}
