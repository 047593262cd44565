package packet

import "encoding/binary"

// Builders for test packets that WriteUDP4 does not cover.

var (
	v6Src = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}
	v6Dst = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 2}
)

// ipv6 returns an IPv6 packet with traffic class tc, flow label flow, next
// header next and the given payload (extension headers included).
func ipv6(tc uint8, flow uint32, next uint8, payload []byte) []byte {
	b := make([]byte, 40+len(payload))
	b[0] = 0x60 | tc>>4
	b[1] = tc<<4 | byte(flow>>16)&0x0f
	b[2], b[3] = byte(flow>>8), byte(flow)
	binary.BigEndian.PutUint16(b[4:], uint16(len(payload)))
	b[6], b[7] = next, 64
	copy(b[8:24], v6Src[:])
	copy(b[24:40], v6Dst[:])
	copy(b[40:], payload)
	return b
}

// extHeader returns an extension header (hop-by-hop, routing or
// destination options) of 8·(units+1) bytes announcing next.
func extHeader(next uint8, units uint8) []byte {
	h := make([]byte, 8*(int(units)+1))
	h[0], h[1] = next, units
	return h
}

// fragHeader returns an IPv6 fragment header for offset (in 8-byte units).
func fragHeader(next uint8, offset uint16, more bool) []byte {
	h := make([]byte, 8)
	h[0] = next
	v := offset << 3
	if more {
		v |= 1
	}
	binary.BigEndian.PutUint16(h[2:], v)
	binary.BigEndian.PutUint32(h[4:], 0xdeadbeef)
	return h
}

// ports returns the first four bytes of a TCP, UDP, SCTP or DCCP header,
// padded to n bytes.
func ports(src, dst uint16, n int) []byte {
	h := make([]byte, n)
	binary.BigEndian.PutUint16(h[0:], src)
	binary.BigEndian.PutUint16(h[2:], dst)
	return h
}

// icmpEcho returns an ICMP or ICMPv6 echo request with identifier id.
func icmpEcho(typ uint8, id uint16) []byte {
	h := make([]byte, 8)
	h[0] = typ
	binary.BigEndian.PutUint16(h[4:], id)
	binary.BigEndian.PutUint16(h[6:], 1)
	return h
}

// ipv4 returns an IPv4 packet with the given TOS, protocol, fragment field
// (flags<<13 | offset), options (a multiple of 4 bytes) and payload, with a
// valid header checksum.
func ipv4(tos, proto uint8, frag uint16, options, payload []byte) []byte {
	ihl := 20 + len(options)
	b := make([]byte, ihl+len(payload))
	b[0] = 0x40 | byte(ihl/4)
	b[1] = tos
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	binary.BigEndian.PutUint16(b[4:], 0x1234)
	binary.BigEndian.PutUint16(b[6:], frag)
	b[8], b[9] = 64, proto
	copy(b[12:16], []byte{10, 0, 0, 1})
	copy(b[16:20], []byte{10, 0, 0, 2})
	copy(b[20:], options)
	copy(b[ihl:], payload)
	binary.BigEndian.PutUint16(b[10:], Checksum(b[:ihl]))
	return b
}

// recomputed returns the header checksum computed afresh over b's header.
func recomputed(b []byte) uint16 {
	ihl := int(b[0]&0x0f) * 4
	h := append([]byte(nil), b[:ihl]...)
	h[10], h[11] = 0, 0
	return Checksum(h)
}

// sum16 is the reference ones' complement sum the tests check ChecksumAdd
// against: RFC 1071's loop over byte pairs, as plain as it can be written.
func sum16(b []byte, s uint32) uint32 {
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = (s & 0xffff) + (s >> 16)
	}
	return uint16(s)
}
