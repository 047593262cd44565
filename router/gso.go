package router

import (
	"encoding/binary"
	"errors"
	"math/bits"

	"wanlab/packet"
)

// vnetHdr is struct virtio_net_hdr (include/uapi/linux/virtio_net.h), which
// a VNet TUN device puts in front of every packet, in little-endian order
// (a TUN's default on little-endian hosts).
type vnetHdr struct {
	flags      uint8
	gsoType    uint8
	hdrLen     uint16
	gsoSize    uint16
	csumStart  uint16
	csumOffset uint16
}

const (
	vnetNeedsCsum = 1 // VIRTIO_NET_HDR_F_NEEDS_CSUM

	gsoNone  = 0    // VIRTIO_NET_HDR_GSO_NONE
	gsoTCPv4 = 1    // VIRTIO_NET_HDR_GSO_TCPV4
	gsoTCPv6 = 4    // VIRTIO_NET_HDR_GSO_TCPV6
	gsoUDPL4 = 5    // VIRTIO_NET_HDR_GSO_UDP_L4
	gsoECN   = 0x80 // VIRTIO_NET_HDR_GSO_ECN
)

func decodeVNet(b []byte) vnetHdr {
	return vnetHdr{
		flags:      b[0],
		gsoType:    b[1],
		hdrLen:     binary.LittleEndian.Uint16(b[2:]),
		gsoSize:    binary.LittleEndian.Uint16(b[4:]),
		csumStart:  binary.LittleEndian.Uint16(b[6:]),
		csumOffset: binary.LittleEndian.Uint16(b[8:]),
	}
}

var (
	errGSOType   = errors.New("router: unsupported GSO type")
	errGSOHeader = errors.New("router: GSO packet with inconsistent headers")
)

// gsoInfo describes a packet as the wire would carry it.
type gsoInfo struct {
	segs   int // wire segments (1 unless a super-packet)
	hdrLen int // IP and transport headers, repeated in every segment
	wire   int // bytes of all segments together
	l4     int // offset of the transport header
	size   int // payload bytes per segment (the last may have fewer)
	proto  uint8
}

// payload returns the transport payload of all segments.
func (g gsoInfo) payload() int { return g.wire - g.segs*g.hdrLen }

// inspect works out the segments of pkt under header h. For packets that
// are no super-packet, hdrLen is where the transport payload starts (the
// IP header's end for protocols without ports), for payload accounting.
func inspect(pkt []byte, h vnetHdr) (gsoInfo, error) {
	g := gsoInfo{segs: 1, wire: len(pkt)}
	proto, l4, err := packet.Transport(pkt)
	if err != nil {
		return g, err
	}
	g.proto, g.l4 = proto, l4
	switch {
	case l4 < 0:
		g.hdrLen = 0
	case proto == packet.ProtoTCP && len(pkt) >= l4+20:
		g.hdrLen = l4 + int(pkt[l4+12]>>4)*4
	case proto == packet.ProtoUDP && len(pkt) >= l4+8:
		g.hdrLen = l4 + 8
	default:
		g.hdrLen = l4
	}
	g.hdrLen = min(g.hdrLen, len(pkt))
	t := h.gsoType &^ gsoECN
	if t == gsoNone {
		return g, nil
	}
	switch {
	case (t == gsoTCPv4 || t == gsoTCPv6) && proto == packet.ProtoTCP:
	case t == gsoUDPL4 && proto == packet.ProtoUDP:
	default:
		return g, errGSOType
	}
	if h.gsoSize == 0 || l4 < 0 || g.hdrLen >= len(pkt) {
		return g, errGSOHeader
	}
	g.size = int(h.gsoSize)
	pay := len(pkt) - g.hdrLen
	g.segs = (pay + g.size - 1) / g.size
	g.wire = len(pkt) + (g.segs-1)*g.hdrLen
	return g, nil
}

// segment writes the i-th wire segment of the super-packet pkt into dst
// and returns its length: the headers with the lengths, IPv4 ID, TCP
// sequence number and flags a TSO engine would give it, complete
// checksums, and the i-th slice of the payload. dst must hold
// g.hdrLen+g.size bytes.
func segment(dst, pkt []byte, g gsoInfo, i int) int {
	start := g.hdrLen + i*g.size
	end := min(start+g.size, len(pkt))
	n := copy(dst, pkt[:g.hdrLen])
	n += copy(dst[n:], pkt[start:end])
	b := dst[:n]
	v4 := b[0]>>4 == 4
	if v4 {
		binary.BigEndian.PutUint16(b[2:], uint16(n))
		id := binary.BigEndian.Uint16(b[4:])
		binary.BigEndian.PutUint16(b[4:], id+uint16(i))
		b[10], b[11] = 0, 0
		ihl := int(b[0]&0x0f) * 4
		binary.BigEndian.PutUint16(b[10:], ^fold(sum(b[:ihl], 0)))
	} else {
		binary.BigEndian.PutUint16(b[4:], uint16(n-40))
	}
	l4 := b[g.l4:]
	var field int
	if g.proto == packet.ProtoTCP {
		seq := binary.BigEndian.Uint32(l4[4:])
		binary.BigEndian.PutUint32(l4[4:], seq+uint32(i*g.size))
		if i != g.segs-1 {
			l4[13] &^= 0x09 // FIN, PSH only on the last segment
		}
		if i != 0 {
			l4[13] &^= 0x80 // CWR only on the first
		}
		field = 16
	} else {
		binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
		field = 6
	}
	l4[field], l4[field+1] = 0, 0
	c := ^fold(sum(l4, pseudo(b, g.proto, len(l4))))
	if c == 0 && g.proto == packet.ProtoUDP {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(l4[field:], c)
	return n
}

// completeChecksum finishes the transport checksum of a packet that the
// kernel left CHECKSUM_PARTIAL (NEEDS_CSUM): the field at
// csumStart+csumOffset holds the pseudo-header sum, the rest is to be
// summed, as skb_checksum_help does.
func completeChecksum(pkt []byte, h vnetHdr) error {
	start, at := int(h.csumStart), int(h.csumStart)+int(h.csumOffset)
	if start >= len(pkt) || at+2 > len(pkt) {
		return errGSOHeader
	}
	c := ^fold(sum(pkt[start:], 0))
	if c == 0 && h.csumOffset == 6 { // UDP: 0 means no checksum
		c = 0xffff
	}
	binary.BigEndian.PutUint16(pkt[at:], c)
	return nil
}

// pseudo returns the sum of the pseudo header for a transport segment of
// n bytes of proto in the IP packet b.
func pseudo(b []byte, proto uint8, n int) uint64 {
	var s uint64
	if b[0]>>4 == 4 {
		s = sum(b[12:20], 0)
	} else {
		s = sum(b[8:40], 0)
	}
	return add(s, uint64(proto)+uint64(n))
}

// sum adds b, as big-endian 16-bit words, to the ones'-complement sum s.
// Summing 64-bit words with end-around carry gives the same result modulo
// 0xffff, since 2^16 ≡ 1.
func sum(b []byte, s uint64) uint64 {
	var c uint64
	for len(b) >= 32 {
		s, c = bits.Add64(s, binary.BigEndian.Uint64(b), c)
		s, c = bits.Add64(s, binary.BigEndian.Uint64(b[8:]), c)
		s, c = bits.Add64(s, binary.BigEndian.Uint64(b[16:]), c)
		s, c = bits.Add64(s, binary.BigEndian.Uint64(b[24:]), c)
		b = b[32:]
	}
	for len(b) >= 8 {
		s, c = bits.Add64(s, binary.BigEndian.Uint64(b), c)
		b = b[8:]
	}
	s = add(s, c)
	for len(b) >= 2 {
		s = add(s, uint64(binary.BigEndian.Uint16(b)))
		b = b[2:]
	}
	if len(b) == 1 {
		s = add(s, uint64(b[0])<<8)
	}
	return s
}

// add is ones'-complement addition of 64-bit words.
func add(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	return s + c
}

// fold reduces a ones'-complement sum to 16 bits.
func fold(s uint64) uint16 {
	s = (s >> 32) + (s & 0xffffffff)
	s = (s >> 32) + (s & 0xffffffff)
	s = (s >> 16) + (s & 0xffff)
	s = (s >> 16) + (s & 0xffff)
	s = (s >> 16) + (s & 0xffff)
	return uint16(s)
}
