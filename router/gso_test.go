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
	binary.BigEndian.PutUint16(t[16:], pseudoSum(b, len(b)-l4))
	h := make([]byte, 10)
	h[0] = packet.VirtioNetHdrNeedsCsum
	h[1] = packet.GSOTCPv4
	if v6 {
		h[1] = packet.GSOTCPv6
	}
	binary.LittleEndian.PutUint16(h[2:], uint16(hl))
	binary.LittleEndian.PutUint16(h[4:], uint16(mss))
	binary.LittleEndian.PutUint16(h[6:], uint16(l4))
	binary.LittleEndian.PutUint16(h[8:], 16)
	return h, b
}

// pseudoSum returns the folded (not complemented) pseudo-header sum of a
// TCP segment of n bytes in the IP packet b, as the kernel leaves it in a
// CHECKSUM_PARTIAL packet.
func pseudoSum(b []byte, n int) uint16 { return ^packet.Checksum(pseudoHeader(b, n, packet.ProtoTCP)) }

// pseudoHeader returns the pseudo-header of a transport segment of n bytes
// and protocol proto in the IP packet b.
func pseudoHeader(b []byte, n int, proto byte) []byte {
	var ph []byte
	if b[0]>>4 == 4 {
		ph = append(ph, b[12:20]...)
	} else {
		ph = append(ph, b[8:40]...)
	}
	return append(ph, 0, 0, byte(n>>8), byte(n), 0, 0, 0, proto)
}

// refChecksumOK verifies a segment's transport checksum the slow way: a
// plain one's-complement sum over the pseudo-header and the segment,
// written out here rather than taken from the code under test (and without
// allocating, so that the loop benchmarks count only the router's own
// allocations).
func refChecksumOK(b []byte, l4 int) bool {
	n := len(b) - l4
	var s uint32
	add := func(x []byte) {
		for i := 0; i+1 < len(x); i += 2 {
			s += uint32(x[i])<<8 | uint32(x[i+1])
		}
		if len(x)%2 == 1 {
			s += uint32(x[len(x)-1]) << 8
		}
	}
	proto := b[9]
	if b[0]>>4 == 4 {
		add(b[12:20])
	} else {
		add(b[8:40])
		proto = b[6]
	}
	s += uint32(n) + uint32(proto)
	add(b[l4:])
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return s == 0xffff
}

func TestSplitTCP(t *testing.T) {
	pools := [2]*packet.Pool{packet.NewPool(2048, 64), packet.NewPool(70000, 64)}
	get := func(n int) *packet.Packet {
		if n <= 2048-64 {
			return pools[0].Get()
		}
		return pools[1].Get()
	}
	sp := newSplitter()
	for _, v6 := range []bool{false, true} {
		const payload, mss = 10000, 1448
		hb, pkt := tcpSuper(v6, payload, mss, 0x80|0x18|0x01) // CWR PSH ACK FIN
		h, _ := packet.DecodeVirtioNetHdr(hb)
		g, err := inspect(pkt, h)
		if err != nil {
			t.Fatal(err)
		}
		wantSegs := (payload + mss - 1) / mss
		if g.segs != wantSegs || g.hdrLen != int(h.HdrLen) || g.wire != len(pkt)+(wantSegs-1)*g.hdrLen || g.payload() != payload {
			t.Fatalf("v6=%v: inspect = %+v, want %d segments of header %d", v6, g, wantSegs, h.HdrLen)
		}
		segs, err := sp.split(pkt, h, g, get)
		if err != nil || len(segs) != g.segs {
			t.Fatalf("split: %d segments, %v", len(segs), err)
		}
		got := make([]byte, 0, payload)
		wire := 0
		for i, p := range segs {
			s := p.Bytes()
			wire += len(s)
			if !v6 && !packet.IPv4HeaderValid(s) {
				t.Errorf("segment %d: bad IPv4 header", i)
			}
			if !refChecksumOK(s, int(h.CsumStart)) {
				t.Errorf("v6=%v segment %d: bad TCP checksum", v6, i)
			}
			if seq := binary.BigEndian.Uint32(s[h.CsumStart+4:]); seq != 0xfffff000+uint32(i*mss) {
				t.Errorf("segment %d: seq %#x", i, seq)
			}
			got = append(got, s[g.hdrLen:]...)
			p.Free()
		}
		if string(got) != string(pkt[g.hdrLen:]) {
			t.Errorf("v6=%v: the segments' payloads do not add up to the super-packet's", v6)
		}
		if wire != g.wire {
			t.Errorf("segments have %d bytes, inspect said %d", wire, g.wire)
		}
	}
	// A header that does not fit its packet is refused and leaks nothing.
	hb, pkt := tcpSuper(false, 5000, 1448, 0x10)
	h, _ := packet.DecodeVirtioNetHdr(hb)
	g, _ := inspect(pkt, h)
	h.CsumOffset = 7
	if _, err := sp.split(pkt, h, g, get); err == nil {
		t.Error("split accepted csum_offset 7 for TCP")
	}
	if n := pools[0].Live() + pools[1].Live(); n != 0 {
		t.Errorf("%d packets live after the splits", n)
	}
}
