package packet

import (
	"encoding/binary"
	"errors"
)

// Errors returned for super-packets whose virtio_net_hdr does not fit
// their headers. None of them allocates, so a flood of bad packets costs
// no garbage.
var (
	ErrGSOType      = errors.New("packet: unsupported GSO type (want NONE, TCPV4, TCPV6 or UDP_L4, optionally with ECN)")
	ErrGSOVersion   = errors.New("packet: GSO type does not match the IP version (TCPV4 needs IPv4, TCPV6 needs IPv6)")
	ErrGSOSize      = errors.New("packet: GSO type set with gso_size 0")
	ErrGSOHdrLen    = errors.New("packet: virtio hdr_len beyond the end of the packet")
	ErrGSOCsum      = errors.New("packet: csum_start is not at the transport header or csum_offset is not its checksum field (16 for TCP, 6 for UDP)")
	ErrGSOProto     = errors.New("packet: IP protocol does not match the GSO type")
	ErrGSOFragment  = errors.New("packet: GSO super-packet is an IP fragment")
	ErrGSOTransport = errors.New("packet: transport header truncated or TCP data offset below 5")
	ErrGSOLength    = errors.New("packet: segment longer than its IP length field can express")
	ErrGSOSegments  = errors.New("packet: super-packet has more segments than output buffers or sizes")
	ErrGSOBuffer    = errors.New("packet: output buffer shorter than its segment")
	ErrCsumRange    = errors.New("packet: csum_start inside the IP header, or csum_start or csum_start+csum_offset+2 beyond the end of the packet")
	ErrCsumGSO      = errors.New("packet: CompleteChecksum on a GSO super-packet (split it with SplitGSO)")
)

// TCP flag bits in byte 13 of the TCP header.
const (
	tcpFIN = 0x01
	tcpPSH = 0x08
	tcpCWR = 0x80
)

// gsoLayout says where a super-packet's headers are and how it divides.
type gsoLayout struct {
	v6     bool
	proto  uint8 // ProtoTCP or ProtoUDP
	thoff  int   // transport header offset: IP header, options and extension headers
	hdrLen int   // thoff plus the transport header: the bytes every segment repeats
	mss    int
	segs   int
	// partial records NEEDS_CSUM: the checksum field holds the folded
	// pseudo-header sum over the super-packet's transport length.
	partial bool
}

// parseGSO checks a TCPV4, TCPV6 or UDP_L4 super-packet against its
// virtio_net_hdr and returns its layout.
//
// With NEEDS_CSUM the transport header is taken to start at CsumStart, as
// the kernel's virtio_net_hdr_to_skb does: on IPv4 it must equal the IHL,
// on IPv6 it must be at least 40 and whatever lies between 40 and
// CsumStart is copied as extension headers without being walked. Without
// NEEDS_CSUM the transport header is found by Transport, as the kernel
// finds it with the flow dissector. The header length is then CsumStart
// plus the TCP data offset (or 8 for UDP), as qdisc_pkt_len_init and
// tcp_gso_segment compute it, never HdrLen.
func parseGSO(b []byte, h VirtioNetHdr) (gsoLayout, error) {
	var l gsoLayout
	typ := h.GSOType &^ GSOECN
	switch typ {
	case GSOTCPv4, GSOTCPv6:
		l.proto = ProtoTCP
	case GSOUDPL4:
		l.proto = ProtoUDP
	default:
		return l, ErrGSOType
	}
	switch IPVersion(b) {
	case 4:
		if typ == GSOTCPv6 {
			return l, ErrGSOVersion
		}
		if binary.BigEndian.Uint16(b[6:8])&0x3fff != 0 { // MF or a fragment offset
			return l, ErrGSOFragment
		}
	case 6:
		if typ == GSOTCPv4 {
			return l, ErrGSOVersion
		}
		l.v6 = true
	default:
		return l, ErrVersion
	}
	if h.GSOSize == 0 {
		return l, ErrGSOSize
	}
	if int(h.HdrLen) > len(b) {
		return l, ErrGSOHdrLen
	}
	if err := l.locateTransport(b, h); err != nil {
		return l, err
	}
	thl := 8
	if l.proto == ProtoTCP {
		if len(b) < l.thoff+20 {
			return l, ErrGSOTransport
		}
		thl = int(b[l.thoff+12]>>4) * 4
		if thl < 20 {
			return l, ErrGSOTransport
		}
	}
	l.hdrLen = l.thoff + thl
	if len(b) < l.hdrLen {
		return l, ErrGSOTransport
	}
	l.mss = int(h.GSOSize)
	payload := len(b) - l.hdrLen
	// A packet with no more than one segment's payload is sent as it is
	// (tcp_gso_segment returns no list for it): one segment.
	l.segs = max(1, (payload+l.mss-1)/l.mss)
	first := l.hdrLen + min(payload, l.mss)
	if (!l.v6 && first > 0xffff) || (l.v6 && first-40 > 0xffff) {
		return l, ErrGSOLength
	}
	return l, nil
}

// locateTransport sets l.thoff and l.partial.
func (l *gsoLayout) locateTransport(b []byte, h VirtioNetHdr) error {
	if h.Flags&VirtioNetHdrNeedsCsum == 0 {
		proto, off, err := Transport(b)
		if err != nil {
			return err
		}
		if off < 0 {
			return ErrGSOFragment
		}
		if proto != l.proto {
			return ErrGSOProto
		}
		l.thoff = off
		return nil
	}
	want := uint16(16)
	if l.proto == ProtoUDP {
		want = 6
	}
	if h.CsumOffset != want {
		return ErrGSOCsum
	}
	l.thoff, l.partial = int(h.CsumStart), true
	if !l.v6 {
		if l.thoff != int(b[0]&0x0f)*4 {
			return ErrGSOCsum
		}
		if b[9] != l.proto {
			return ErrGSOProto
		}
		return nil
	}
	if l.thoff < 40 {
		return ErrGSOCsum
	}
	if l.thoff == 40 && b[6] != l.proto {
		return ErrGSOProto
	}
	return nil
}

// GSOSegments returns how many wire segments the packet b with virtio
// header h stands for, and their total length in IP bytes: every segment
// repeats the IP and transport headers, so wireBytes = len(b) +
// (segs-1)*hdrLen, where hdrLen runs from the IP header to the end of the
// TCP header (data offset) or UDP header. That is how the kernel's
// qdisc_pkt_len_init accounts a GSO skb on a device without a link-layer
// header such as TUN, so qdiscs that charge bytes (tbf, fq_codel's
// quantum) can charge the super-packet as its segments. A packet with
// GSOType GSONone is one segment of len(b) bytes. The errors are those of
// SplitGSO, which produces exactly segs segments of wireBytes in total.
func GSOSegments(b []byte, h VirtioNetHdr) (segs int, wireBytes int, err error) {
	if h.GSOType == GSONone {
		return 1, len(b), nil
	}
	l, err := parseGSO(b, h)
	if err != nil {
		return 0, 0, err
	}
	return l.segs, len(b) + (l.segs-1)*l.hdrLen, nil
}
