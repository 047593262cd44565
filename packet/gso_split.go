package packet

import "encoding/binary"

// SplitGSO splits the super-packet b, described by its virtio header h,
// into the wire segments the kernel's GSO would have sent, writing segment
// i into out[i][:sizes[i]] and returning the number of segments. Leave
// headroom by passing out[i] = buf[off:]. It allocates nothing and does
// not modify b, which must not overlap out.
//
// Every segment gets a copy of the IP header (with its options or
// extension headers) and of the transport header, and GSOSize payload
// bytes (the last one the rest). The kernel's inet_gso_segment,
// ipv6_gso_segment, tcp_gso_segment and __udp_gso_segment rules are
// followed:
//   - IPv4: total length rewritten, ID incremented by one per segment
//     (wrapping), header checksum recomputed;
//   - IPv6: payload length rewritten;
//   - TCP: sequence number advanced by GSOSize per segment, FIN and PSH
//     kept on the last segment only, CWR on the first only;
//   - UDP: length rewritten;
//   - the transport checksum is complete in every segment, so the
//     segments can be written to a TUN device without NEEDS_CSUM. With
//     NEEDS_CSUM the super-packet's checksum field is taken to hold the
//     pseudo-header sum over its own transport length, and each segment's
//     sum is that one adjusted for the segment's length (so whatever
//     addresses the sender summed, e.g. an IPv6 routing header's final
//     destination, are kept). Without it the pseudo-header is summed from
//     the IP header's addresses, as tcp4_gso_segment does for a packet
//     that is not CHECKSUM_PARTIAL. A UDP checksum that comes out 0 is
//     sent as 0xffff (RFC 768).
//
// A packet with GSOType GSONone is copied into out[0] whole, with its
// checksum completed if NEEDS_CSUM is set (see CompleteChecksum). A
// super-packet with no more than GSOSize payload bytes is one segment.
// The layout rules and the errors are those of GSOSegments; in addition
// ErrGSOSegments is returned if out or sizes has fewer entries than there
// are segments, and ErrGSOBuffer if an out[i] is shorter than its segment.
// Those two are checked before anything is written; on any error n is 0
// and the contents of out are unspecified.
func SplitGSO(b []byte, h VirtioNetHdr, out [][]byte, sizes []int) (n int, err error) {
	if h.GSOType == GSONone {
		return copyWhole(b, h, out, sizes)
	}
	l, err := parseGSO(b, h)
	if err != nil {
		return 0, err
	}
	if l.segs > len(out) || l.segs > len(sizes) {
		return 0, ErrGSOSegments
	}
	for i := range l.segs {
		if len(out[i]) < l.segLen(len(b), i) {
			return 0, ErrGSOBuffer
		}
	}

	csumAt := l.thoff + 16
	if l.proto == ProtoUDP {
		csumAt = l.thoff + 6
	}
	// base is the pseudo-header sum without its length word, folded so
	// that adding a segment's length cannot overflow it.
	var base uint64
	switch {
	case l.partial:
		base = uint64(binary.BigEndian.Uint16(b[csumAt:])) + csumNeg(uint32(len(b)-l.thoff))
	case l.v6:
		base = ChecksumAdd(b[8:40], uint64(l.proto))
	default:
		base = ChecksumAdd(b[12:20], uint64(l.proto))
	}
	base = uint64(ChecksumFold(base))
	var id uint16
	if !l.v6 {
		id = binary.BigEndian.Uint16(b[4:])
	}
	var seq uint32
	if l.proto == ProtoTCP {
		seq = binary.BigEndian.Uint32(b[l.thoff+4:])
	}

	for i := range l.segs {
		o := out[i]
		size := l.segLen(len(b), i)
		start := l.hdrLen + i*l.mss
		copy(o[:l.hdrLen], b[:l.hdrLen])
		copy(o[l.hdrLen:size], b[start:start+size-l.hdrLen])

		if l.v6 {
			binary.BigEndian.PutUint16(o[4:], uint16(size-40))
		} else {
			binary.BigEndian.PutUint16(o[2:], uint16(size))
			binary.BigEndian.PutUint16(o[4:], id+uint16(i))
			o[10], o[11] = 0, 0
			binary.BigEndian.PutUint16(o[10:], Checksum(o[:l.thoff]))
		}

		th := o[l.thoff:size]
		if l.proto == ProtoTCP {
			binary.BigEndian.PutUint32(th[4:], seq+uint32(i*l.mss))
			if i > 0 {
				th[13] &^= tcpCWR
			}
			if i < l.segs-1 {
				th[13] &^= tcpFIN | tcpPSH
			}
		} else {
			binary.BigEndian.PutUint16(th[4:], uint16(len(th)))
		}
		o[csumAt], o[csumAt+1] = 0, 0
		sum := ^ChecksumFold(ChecksumAdd(th, base+uint64(len(th))))
		if sum == 0 && l.proto == ProtoUDP {
			sum = 0xffff
		}
		binary.BigEndian.PutUint16(o[csumAt:], sum)
		sizes[i] = size
	}
	return l.segs, nil
}

// segLen returns the length of segment i of a super-packet of n bytes.
func (l *gsoLayout) segLen(n, i int) int {
	return l.hdrLen + min(l.mss, n-l.hdrLen-i*l.mss)
}

// copyWhole is SplitGSO for a packet that is not a super-packet.
func copyWhole(b []byte, h VirtioNetHdr, out [][]byte, sizes []int) (int, error) {
	if len(out) < 1 || len(sizes) < 1 {
		return 0, ErrGSOSegments
	}
	if len(out[0]) < len(b) {
		return 0, ErrGSOBuffer
	}
	o := out[0][:len(b)]
	copy(o, b)
	if err := CompleteChecksum(o, h); err != nil {
		return 0, err
	}
	sizes[0] = len(b)
	return 1, nil
}

// CompleteChecksum finishes the checksum of a packet that is not a
// super-packet, in place, as the kernel's skb_checksum_help does: if h has
// NEEDS_CSUM, the ones' complement of the sum of b[CsumStart:] (which
// includes the pseudo-header sum already in the checksum field) is written
// at CsumStart+CsumOffset, as 0xffff if it comes out 0. Without NEEDS_CSUM
// it does nothing. It returns ErrCsumGSO for a super-packet and
// ErrCsumRange if CsumStart is not inside b, the checksum field does not
// fit in it, or, for an IPv4 or IPv6 packet, CsumStart lies inside the IP
// header: the kernel lets a raw socket ask for that, and skb_checksum_help
// would overwrite the IP header, which a receiving host then drops.
func CompleteChecksum(b []byte, h VirtioNetHdr) error {
	if h.Flags&VirtioNetHdrNeedsCsum == 0 {
		return nil
	}
	if h.GSOType != GSONone {
		return ErrCsumGSO
	}
	if err := CheckCsumRange(b, h); err != nil {
		return err
	}
	start := int(h.CsumStart)
	at := start + int(h.CsumOffset)
	sum := ^ChecksumFold(ChecksumAdd(b[start:], 0))
	if sum == 0 {
		sum = 0xffff
	}
	binary.BigEndian.PutUint16(b[at:], sum)
	return nil
}

// CheckCsumRange reports ErrCsumRange when h asks for a checksum to be
// completed (VirtioNetHdrNeedsCsum) whose range does not lie in b's
// transport part: csum_start inside the IP header, or the checksum field
// beyond b's end. Such a packet cannot be completed, by the router or by
// a receiving host that trusts the header, so the router refuses it where
// it reads it.
func CheckCsumRange(b []byte, h VirtioNetHdr) error {
	if h.Flags&VirtioNetHdrNeedsCsum == 0 {
		return nil
	}
	start := int(h.CsumStart)
	at := start + int(h.CsumOffset)
	if start >= len(b) || at+2 > len(b) || start < ipHeaderLen(b) {
		return ErrCsumRange
	}
	return nil
}

// ipHeaderLen returns the length of b's IPv4 header (without extension
// headers: 40 for IPv6), or 0 if b is not IP.
func ipHeaderLen(b []byte) int {
	switch IPVersion(b) {
	case 4:
		return int(b[0]&0x0f) * 4
	case 6:
		return 40
	}
	return 0
}
