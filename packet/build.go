package packet

import "encoding/binary"

// UDP4 describes a synthetic IPv4/UDP packet, as the simulator and tests
// make them.
type UDP4 struct {
	Src, Dst         [4]byte
	SrcPort, DstPort uint16
	TOS              uint8 // DSCP << 2 | ECN
	TTL              uint8 // 64 if zero
	ID               uint16
}

// WriteUDP4 writes an IPv4 header (valid checksum) and a UDP header into b
// for a packet of total IP length size, and returns size. The payload is left
// as it is. It panics if size < 28 or b is shorter than size.
func WriteUDP4(b []byte, h UDP4, size int) int {
	if size < 28 || len(b) < size {
		panic("packet: WriteUDP4 needs 28 <= size <= len(b)")
	}
	ttl := h.TTL
	if ttl == 0 {
		ttl = 64
	}
	b[0] = 0x45
	b[1] = h.TOS
	binary.BigEndian.PutUint16(b[2:], uint16(size))
	binary.BigEndian.PutUint16(b[4:], h.ID)
	binary.BigEndian.PutUint16(b[6:], 0x4000) // DF
	b[8] = ttl
	b[9] = ProtoUDP
	b[10], b[11] = 0, 0
	copy(b[12:16], h.Src[:])
	copy(b[16:20], h.Dst[:])
	binary.BigEndian.PutUint16(b[10:], Checksum(b[:20]))
	binary.BigEndian.PutUint16(b[20:], h.SrcPort)
	binary.BigEndian.PutUint16(b[22:], h.DstPort)
	binary.BigEndian.PutUint16(b[24:], uint16(size-20))
	b[26], b[27] = 0, 0 // UDP checksum optional on IPv4
	return size
}

// TCP describes a synthetic TCP packet, or a GSO super-packet of several,
// as a TUN device opened with IFF_VNET_HDR hands one to its reader: from
// 10.0.0.1 to 10.0.0.2 (IPv4) or fd00::1 to fd00::2 (IPv6), a 32-byte
// timestamp option, and the transport checksum left to the receiver
// (NEEDS_CSUM).
type TCP struct {
	V6               bool
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	Flags            uint8 // TCP flags; ACK when zero
	TOS              uint8 // traffic class: DSCP << 2 | ECN
	ID               uint16
	Payload          int // payload bytes, filled with Fill
	MSS              int // payload bytes per segment: a Payload above it makes a super-packet
	Fill             byte
}

// TCPHeaderLen is the IP and TCP header length of a packet BuildTCP
// writes: 72 bytes on IPv4, 92 on IPv6.
func (s TCP) TCPHeaderLen() int {
	if s.V6 {
		return 40 + 32
	}
	return 20 + 32
}

// BuildTCP writes the packet s describes into p, with its virtio_net_hdr
// in front (VNet), and sets p's segments (DescribeGSO). p's buffer must
// hold it behind at least VirtioNetHdrLen bytes of headroom.
func BuildTCP(p *Packet, s TCP) error {
	thoff := 20
	typ := GSOTCPv4
	if s.V6 {
		thoff, typ = 40, GSOTCPv6
	}
	hdrLen := thoff + 32
	n := hdrLen + s.Payload
	buf, off := p.Buffer()
	if off < VirtioNetHdrLen || off+n > len(buf) || s.MSS <= 0 {
		return ErrGSOBuffer
	}
	b := buf[off : off+n]
	if s.V6 {
		b[0], b[1], b[2], b[3] = 0x60|s.TOS>>4, s.TOS<<4, 0, 0
		binary.BigEndian.PutUint16(b[4:], uint16(n-40))
		b[6], b[7] = ProtoTCP, 64
		clear(b[8:40])
		b[8], b[9], b[23] = 0xfd, 0x00, 1
		b[24], b[25], b[39] = 0xfd, 0x00, 2
	} else {
		b[0], b[1] = 0x45, s.TOS
		binary.BigEndian.PutUint16(b[2:], uint16(n))
		binary.BigEndian.PutUint16(b[4:], s.ID)
		binary.BigEndian.PutUint16(b[6:], 0x4000)
		b[8], b[9], b[10], b[11] = 64, ProtoTCP, 0, 0
		copy(b[12:20], []byte{10, 0, 0, 1, 10, 0, 0, 2})
		binary.BigEndian.PutUint16(b[10:], Checksum(b[:20]))
	}
	th := b[thoff:hdrLen]
	binary.BigEndian.PutUint16(th[0:], s.SrcPort)
	binary.BigEndian.PutUint16(th[2:], s.DstPort)
	binary.BigEndian.PutUint32(th[4:], s.Seq)
	binary.BigEndian.PutUint32(th[8:], s.Ack)
	flags := s.Flags
	if flags == 0 {
		flags = 0x10
	}
	th[12], th[13] = 8<<4, flags
	binary.BigEndian.PutUint16(th[14:], 1024)
	th[16], th[17], th[18], th[19] = 0, 0, 0, 0
	copy(th[20:], []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2})
	for i := hdrLen; i < n; i++ {
		b[i] = s.Fill
	}
	var pseudo uint64
	if s.V6 {
		pseudo = ChecksumAdd(b[8:40], ProtoTCP)
	} else {
		pseudo = ChecksumAdd(b[12:20], ProtoTCP)
	}
	binary.BigEndian.PutUint16(th[16:], ChecksumFold(pseudo+uint64(n-thoff)))
	h := VirtioNetHdr{Flags: VirtioNetHdrNeedsCsum, HdrLen: uint16(hdrLen), CsumStart: uint16(thoff), CsumOffset: 16}
	if s.Payload > s.MSS {
		h.GSOType, h.GSOSize = typ, uint16(s.MSS)
	}
	h.Encode(buf[off-VirtioNetHdrLen:])
	p.SetLen(n)
	p.VNet = true
	p.SegHdr = int32(hdrLen)
	p.SegSize = int32(s.MSS)
	return DescribeGSO(p)
}
