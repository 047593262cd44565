package packet

import (
	"encoding/binary"
	"errors"
)

// IP protocol numbers used by the header views.
const (
	ProtoICMP   = 1
	ProtoTCP    = 6
	ProtoUDP    = 17
	ProtoICMPv6 = 58
)

// ECN is the two-bit Explicit Congestion Notification field (RFC 3168).
type ECN uint8

// ECN codepoints.
const (
	NotECT ECN = 0
	ECT1   ECN = 1
	ECT0   ECN = 2
	CE     ECN = 3
)

// String returns the codepoint's RFC 3168 name.
func (e ECN) String() string {
	switch e & 3 {
	case ECT1:
		return "ECT(1)"
	case ECT0:
		return "ECT(0)"
	case CE:
		return "CE"
	}
	return "Not-ECT"
}

// Errors returned by the header views.
var (
	ErrTruncated = errors.New("packet: truncated header")
	ErrVersion   = errors.New("packet: not an IPv4 or IPv6 packet")
	ErrIPLength  = errors.New("packet: IP header or length field does not fit the packet")
)

// IPVersion returns 4 or 6, or 0 if b does not start with a plausible IPv4
// or IPv6 header.
func IPVersion(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] >> 4 {
	case 4:
		if len(b) >= 20 && int(b[0]&0x0f)*4 >= 20 {
			return 4
		}
	case 6:
		if len(b) >= 40 {
			return 6
		}
	}
	return 0
}

// TOS returns the IPv4 TOS byte or the IPv6 traffic class (DSCP << 2 | ECN).
func TOS(b []byte) (uint8, bool) {
	switch IPVersion(b) {
	case 4:
		return b[1], true
	case 6:
		return b[0]<<4 | b[1]>>4, true
	}
	return 0, false
}

// DSCP returns the six-bit Differentiated Services codepoint.
func DSCP(b []byte) uint8 {
	t, _ := TOS(b)
	return t >> 2
}

// ECNOf returns the packet's ECN codepoint (Not-ECT for a non-IP packet).
func ECNOf(b []byte) ECN {
	t, _ := TOS(b)
	return ECN(t & 3)
}

// SetCE behaves as Linux's INET_ECN_set_ce: a Not-ECT packet is left alone
// and false is returned; an ECT(0) or ECT(1) packet becomes CE and an
// already-CE packet stays CE, and true is returned. On IPv4 the header
// checksum is patched incrementally (RFC 1624), so a packet whose checksum
// was valid stays valid.
func SetCE(b []byte) bool {
	switch IPVersion(b) {
	case 4:
		old := b[1]
		if old&3 == uint8(NotECT) {
			return false
		}
		if old&3 == uint8(CE) {
			return true
		}
		b[1] = old | 3
		// The TOS byte is the low byte of the first 16-bit word.
		oldWord := uint16(b[0])<<8 | uint16(old)
		newWord := uint16(b[0])<<8 | uint16(b[1])
		sum := binary.BigEndian.Uint16(b[10:12])
		binary.BigEndian.PutUint16(b[10:12], checksumUpdate(sum, oldWord, newWord))
		return true
	case 6:
		e := ECN(b[1]>>4) & 3
		if e == NotECT {
			return false
		}
		b[1] |= 0x30
		return true
	}
	return false
}

// SetECN overwrites the ECN field (and fixes the IPv4 checksum).
func SetECN(b []byte, e ECN) {
	switch IPVersion(b) {
	case 4:
		old := b[1]
		b[1] = old&^3 | uint8(e&3)
		oldWord := uint16(b[0])<<8 | uint16(old)
		newWord := uint16(b[0])<<8 | uint16(b[1])
		sum := binary.BigEndian.Uint16(b[10:12])
		binary.BigEndian.PutUint16(b[10:12], checksumUpdate(sum, oldWord, newWord))
	case 6:
		b[1] = b[1]&^0x30 | uint8(e&3)<<4
	}
}

// IPv4HeaderValid reports whether b holds an IPv4 header whose checksum is
// correct.
func IPv4HeaderValid(b []byte) bool {
	if IPVersion(b) != 4 {
		return false
	}
	ihl := int(b[0]&0x0f) * 4
	if len(b) < ihl {
		return false
	}
	return ChecksumFold(ChecksumAdd(b[:ihl], 0)) == 0xffff
}

// CheckIPLength reports whether b is an IPv4 or IPv6 packet whose header
// and length field fit its size, the checks a receiving kernel makes
// before anything else (ip_rcv_core, ip6_rcv_core): ErrVersion if b does
// not start with a plausible header (IPVersion), ErrIPLength if the IPv4
// header length runs past b or its total length is below the header or
// beyond b, or the IPv6 payload length runs beyond b. Bytes after the
// length field's end are allowed, as the kernel trims them, unless exact
// is set: a GSO super-packet's length field covers it whole, since the
// kernel's segmentation rewrites it for every segment from the whole. It
// allocates nothing.
func CheckIPLength(b []byte, exact bool) error {
	switch IPVersion(b) {
	case 4:
		ihl := int(b[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(b[2:4]))
		if ihl > len(b) || total < ihl || total > len(b) || exact && total != len(b) {
			return ErrIPLength
		}
	case 6:
		total := 40 + int(binary.BigEndian.Uint16(b[4:6]))
		if total > len(b) || exact && total != len(b) {
			return ErrIPLength
		}
	default:
		return ErrVersion
	}
	return nil
}
