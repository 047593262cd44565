package packet

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// superSpec describes a super-packet as the kernel hands it to a TUN
// reader: NEEDS_CSUM set, the checksum field holding the folded
// pseudo-header sum over the whole transport length.
type superSpec struct {
	v6      bool
	udp     bool
	ipOpts  int // IPv4 option bytes, a multiple of 4
	ext     int // IPv6 destination-options header bytes, a multiple of 8
	tcpOpts int // TCP option bytes, a multiple of 4
	payload int
	mss     int
	flags   uint8 // TCP flags
	seq     uint32
	id      uint16
	seed    uint64
}

// superPacket is a built super-packet and what the test knows about it.
type superPacket struct {
	b      []byte
	h      VirtioNetHdr
	thoff  int
	hdrLen int
}

// buildSuper writes the packet described by s, with pseudo-random payload.
// It computes sums with the package's byte-pair sum16, not with ChecksumAdd,
// so the code under test is checked against an independent sum.
func buildSuper(s superSpec) superPacket {
	iph := 20 + s.ipOpts
	if s.v6 {
		iph = 40 + s.ext
	}
	thl := 8
	proto := uint8(ProtoUDP)
	if !s.udp {
		thl = 20 + s.tcpOpts
		proto = ProtoTCP
	}
	hdrLen := iph + thl
	b := make([]byte, hdrLen+s.payload)
	r := rand.New(rand.NewPCG(s.seed, 1))
	for i := hdrLen; i < len(b); i++ {
		b[i] = byte(r.Uint32())
	}
	if s.v6 {
		// Traffic class 0x02 (ECT(0)), flow label 0x12345.
		b[0], b[1], b[2], b[3] = 0x60, 0x21, 0x23, 0x45
		binary.BigEndian.PutUint16(b[4:], uint16(len(b)-40))
		b[6] = proto
		b[7] = 64
		copy(b[8:24], []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
		copy(b[24:40], []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2})
		if s.ext > 0 {
			b[6] = 60 // destination options
			b[40] = proto
			b[41] = uint8(s.ext/8 - 1)
			b[42], b[43] = 1, uint8(s.ext-4) // one PadN option filling the header
		}
	} else {
		b[0] = 0x40 | uint8(iph/4)
		b[1] = 0x02 // ECT(0)
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		binary.BigEndian.PutUint16(b[4:], s.id)
		binary.BigEndian.PutUint16(b[6:], 0x4000) // DF
		b[8] = 64
		b[9] = proto
		copy(b[12:16], []byte{10, 0, 0, 1})
		copy(b[16:20], []byte{10, 0, 1, 2})
		for i := 20; i < iph; i++ {
			b[i] = 1 // NOP options
		}
		binary.BigEndian.PutUint16(b[10:], Checksum(b[:iph]))
	}
	th := b[iph:]
	binary.BigEndian.PutUint16(th[0:], 40000)
	binary.BigEndian.PutUint16(th[2:], 5201)
	csumOff := uint16(6)
	if s.udp {
		binary.BigEndian.PutUint16(th[4:], uint16(len(th)))
	} else {
		csumOff = 16
		binary.BigEndian.PutUint32(th[4:], s.seq)
		binary.BigEndian.PutUint32(th[8:], 0xa1b2c3d4) // ack
		th[12] = uint8(thl/4) << 4
		th[13] = s.flags
		binary.BigEndian.PutUint16(th[14:], 502) // window
		for i := 20; i < thl; i++ {
			th[i] = byte(i * 7)
		}
	}
	partial := fold(refPseudo(b, s.v6, proto, len(th)))
	binary.BigEndian.PutUint16(th[csumOff:], partial)
	typ := GSOTCPv4
	switch {
	case s.udp:
		typ = GSOUDPL4
	case s.v6:
		typ = GSOTCPv6
	}
	return superPacket{
		b: b,
		h: VirtioNetHdr{
			Flags:      VirtioNetHdrNeedsCsum,
			GSOType:    typ,
			HdrLen:     uint16(hdrLen),
			GSOSize:    uint16(s.mss),
			CsumStart:  uint16(iph),
			CsumOffset: csumOff,
		},
		thoff:  iph,
		hdrLen: hdrLen,
	}
}

// refPseudo returns the unfolded pseudo-header sum of an IP packet whose
// transport part is l4len bytes long.
func refPseudo(b []byte, v6 bool, proto uint8, l4len int) uint32 {
	var s uint32
	if v6 {
		s = sum16(b[8:40], 0)
	} else {
		s = sum16(b[12:20], 0)
	}
	return s + uint32(proto) + uint32(l4len>>16) + uint32(l4len&0xffff)
}

// l4Valid reports whether the transport checksum of the packet seg, whose
// transport header starts at thoff, verifies over pseudo-header and data.
func l4Valid(seg []byte, v6 bool, proto uint8, thoff int) bool {
	s := refPseudo(seg, v6, proto, len(seg)-thoff)
	s = sum16(seg[thoff:], s)
	return fold(s) == 0xffff
}

// outBufs returns n buffers of size bytes each and a sizes slice.
func outBufs(n, size int) ([][]byte, []int) {
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, size)
	}
	return out, make([]int, n)
}

// checkSplit verifies every segment of a split of p: IP header and lengths,
// TCP sequence numbers and flags or UDP lengths, transport checksums, that
// the bytes copied from the super-packet's headers are unchanged, and that
// the payloads concatenate back. It returns the segments' total length.
func checkSplit(t *testing.T, p superPacket, v6, udp bool, out [][]byte, sizes []int, n int) int {
	t.Helper()
	b, h := p.b, p.h
	proto := uint8(ProtoTCP)
	if udp {
		proto = ProtoUDP
	}
	mss := int(h.GSOSize)
	var payload []byte
	total := 0
	for i := range n {
		seg := out[i][:sizes[i]]
		total += len(seg)
		want := p.hdrLen + min(mss, len(b)-p.hdrLen-i*mss)
		if len(seg) != want {
			t.Errorf("segment %d: %d bytes, want %d", i, len(seg), want)
			continue
		}
		if v6 {
			if got := int(binary.BigEndian.Uint16(seg[4:])); got != len(seg)-40 {
				t.Errorf("segment %d: IPv6 payload length %d, want %d", i, got, len(seg)-40)
			}
			if !bytes.Equal(seg[:4], b[:4]) || !bytes.Equal(seg[6:p.thoff], b[6:p.thoff]) {
				t.Errorf("segment %d: IPv6 header or extension headers changed", i)
			}
		} else {
			if !IPv4HeaderValid(seg) {
				t.Errorf("segment %d: IPv4 header checksum invalid", i)
			}
			if got := int(binary.BigEndian.Uint16(seg[2:])); got != len(seg) {
				t.Errorf("segment %d: IPv4 total length %d, want %d", i, got, len(seg))
			}
			wantID := binary.BigEndian.Uint16(b[4:]) + uint16(i)
			if got := binary.BigEndian.Uint16(seg[4:]); got != wantID {
				t.Errorf("segment %d: IPv4 ID %#x, want %#x", i, got, wantID)
			}
			if !bytes.Equal(seg[6:10], b[6:10]) || !bytes.Equal(seg[12:p.thoff], b[12:p.thoff]) {
				t.Errorf("segment %d: IPv4 header fields or options changed", i)
			}
		}
		th, sth := seg[p.thoff:], b[p.thoff:p.hdrLen]
		if udp {
			if got := int(binary.BigEndian.Uint16(th[4:])); got != len(th) {
				t.Errorf("segment %d: UDP length %d, want %d", i, got, len(th))
			}
			if !bytes.Equal(th[:4], sth[:4]) {
				t.Errorf("segment %d: UDP ports changed", i)
			}
		} else {
			wantSeq := binary.BigEndian.Uint32(sth[4:]) + uint32(i*mss)
			if got := binary.BigEndian.Uint32(th[4:]); got != wantSeq {
				t.Errorf("segment %d: seq %d, want %d", i, got, wantSeq)
			}
			wantFlags := sth[13]
			if i > 0 {
				wantFlags &^= tcpCWR
			}
			if i < n-1 {
				wantFlags &^= tcpFIN | tcpPSH
			}
			if th[13] != wantFlags {
				t.Errorf("segment %d: TCP flags %#02x, want %#02x", i, th[13], wantFlags)
			}
			if !bytes.Equal(th[:4], sth[:4]) || !bytes.Equal(th[8:13], sth[8:13]) ||
				!bytes.Equal(th[14:16], sth[14:16]) || !bytes.Equal(th[18:p.hdrLen-p.thoff], sth[18:]) {
				t.Errorf("segment %d: TCP header fields or options changed", i)
			}
		}
		if !l4Valid(seg, v6, proto, p.thoff) {
			t.Errorf("segment %d: transport checksum invalid", i)
		}
		payload = append(payload, seg[p.hdrLen:]...)
	}
	if !bytes.Equal(payload, b[p.hdrLen:]) {
		t.Errorf("payloads concatenate to %d bytes that differ from the super-packet's %d", len(payload), len(b)-p.hdrLen)
	}
	return total
}
