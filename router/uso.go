package router

import (
	"encoding/binary"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/tun"
)

// A burst of UDP datagrams that arrived within microseconds of each other
// becomes due within microseconds too, and writing them one system call
// each (each running the receiver's IP and UDP input on the loop's thread)
// makes the tail of the burst leave late. usoBatch gathers the consecutive
// datagrams of one flow that a release pass lets go and writes them as
// one USO (GSO_UDP_L4) super-packet, which the receiving kernel splits
// back into the same datagrams: same headers (the IPv4 identification
// numbers must run on by one, as the kernel's segmentation numbers them),
// same payloads, and checksums that the kernel computes afresh, so a
// datagram goes into a batch only if its own checksum is either left to
// the kernel already (NEEDS_CSUM) or correct.

// maxUSOSegs bounds the datagrams of one super-packet; the kernel takes up
// to UDP_MAX_SEGMENTS (128), and 64 KiB of 1400-byte datagrams are 46.
const maxUSOSegs = 64

// usoMaxIPLen is the largest IPv4 total length or IPv6 payload length.
const usoMaxIPLen = 0xffff

// usoDatagram describes a datagram that may join a batch.
type usoDatagram struct {
	v6    bool
	l4    int // transport header offset
	total int // IP bytes
}

// usoCandidate reports whether p can be written inside a USO super-packet:
// a single UDP datagram over IPv4 without options' surprises (no
// fragment) or IPv6 without extension headers, whose lengths agree with
// its size and whose checksum is trustworthy.
func usoCandidate(p *packet.Packet) (usoDatagram, bool) {
	b := p.Bytes()
	d := usoDatagram{total: len(b)}
	if p.Segments() != 1 {
		return d, false
	}
	var ok bool
	if d.l4, d.v6, ok = plainIP(b, packet.ProtoUDP); !ok {
		return d, false
	}
	if len(b) <= d.l4+8 || int(binary.BigEndian.Uint16(b[d.l4+4:])) != len(b)-d.l4 {
		return d, false
	}
	if p.VNet {
		buf, off := p.Buffer()
		h, _ := packet.DecodeVirtioNetHdr(buf[off-tun.VNetHdrLen : off])
		if h.GSOType != packet.GSONone {
			return d, false
		}
		if h.Flags&packet.VirtioNetHdrNeedsCsum != 0 {
			return d, int(h.CsumStart) == d.l4 && h.CsumOffset == 6
		}
	}
	return d, udpChecksumOK(b, d)
}

// udpChecksumOK reports whether the UDP checksum of b is complete and
// correct; an IPv4 datagram without one (0) does not qualify, since the
// kernel would give its segment one.
func udpChecksumOK(b []byte, d usoDatagram) bool {
	if binary.BigEndian.Uint16(b[d.l4+6:]) == 0 {
		return false
	}
	s := udpPseudoSum(b, d, len(b)-d.l4)
	return packet.ChecksumFold(packet.ChecksumAdd(b[d.l4:], s)) == 0xffff
}

// udpPseudoSum returns the packet.ChecksumAdd accumulator of the
// pseudo-header of a UDP datagram of udpLen bytes with b's addresses.
func udpPseudoSum(b []byte, d usoDatagram, udpLen int) uint64 {
	fixed := uint64(packet.ProtoUDP) + uint64(udpLen)
	if d.v6 {
		return packet.ChecksumAdd(b[8:40], fixed)
	}
	return packet.ChecksumAdd(b[12:20], fixed)
}

// usoBatch is the batch being gathered. Its packets stay owned by the
// batch until flush writes them.
type usoBatch struct {
	pkts  []*packet.Packet
	dls   []clock.Time // each packet's deadline
	d     usoDatagram  // the first datagram
	size  int          // payload bytes of the first: the GSO size
	ipLen int          // IPv4 total length or IPv6 payload length of the whole
	ended bool         // a shorter datagram was added: nothing may follow
	buf   []byte       // the super-packet, with its virtio-net header at headroom-VNetHdrLen
}

func newUSOBatch() *usoBatch {
	return &usoBatch{
		pkts: make([]*packet.Packet, 0, maxUSOSegs),
		dls:  make([]clock.Time, 0, maxUSOSegs),
		buf:  make([]byte, headroom+usoMaxIPLen+40),
	}
}

// add appends p, described by d, to the batch if it continues it, and
// reports whether it did.
func (u *usoBatch) add(p *packet.Packet, d usoDatagram, deadline clock.Time) bool {
	if len(u.pkts) == 0 {
		u.pkts = append(u.pkts, p)
		u.dls = append(u.dls, deadline)
		u.d, u.size, u.ended = d, d.total-d.l4-8, false
		u.ipLen = d.total
		if d.v6 {
			u.ipLen -= 40
		}
		return true
	}
	pay := d.total - d.l4 - 8
	if u.ended || len(u.pkts) == cap(u.pkts) || d.v6 != u.d.v6 || d.l4 != u.d.l4 ||
		pay > u.size || u.ipLen+pay > usoMaxIPLen || !u.sameHeaders(p.Bytes()) {
		return false
	}
	u.pkts = append(u.pkts, p)
	u.dls = append(u.dls, deadline)
	u.ipLen += pay
	u.ended = pay < u.size
	return true
}

// sameHeaders reports whether b's headers are those of the batch's first
// datagram but for the fields segmentation rewrites (lengths, checksums),
// and, on IPv4, whether its identification follows the previous one's.
func (u *usoBatch) sameHeaders(b []byte) bool {
	f := u.pkts[0].Bytes()
	l4 := u.d.l4
	if string(b[l4:l4+4]) != string(f[l4:l4+4]) { // ports
		return false
	}
	if u.d.v6 {
		return string(b[:4]) == string(f[:4]) && string(b[6:40]) == string(f[6:40])
	}
	id := binary.BigEndian.Uint16(f[4:]) + uint16(len(u.pkts))
	return string(b[:2]) == string(f[:2]) && binary.BigEndian.Uint16(b[4:]) == id &&
		string(b[6:10]) == string(f[6:10]) && string(b[12:l4]) == string(f[12:l4])
}

// build writes the super-packet of the batch's two or more datagrams into
// u.buf and returns it from its virtio-net header on, with the packet at
// offset headroom.
func (u *usoBatch) build() []byte {
	first := u.pkts[0].Bytes()
	hdrLen := u.d.l4 + 8
	out := u.buf[headroom:]
	n := copy(out, first[:hdrLen])
	for _, p := range u.pkts {
		n += copy(out[n:], p.Bytes()[hdrLen:])
	}
	b := out[:n]
	if u.d.v6 {
		binary.BigEndian.PutUint16(b[4:], uint16(n-40))
	} else {
		binary.BigEndian.PutUint16(b[2:], uint16(n))
		b[10], b[11] = 0, 0
		binary.BigEndian.PutUint16(b[10:], packet.Checksum(b[:u.d.l4]))
	}
	udpLen := n - u.d.l4
	binary.BigEndian.PutUint16(b[u.d.l4+4:], uint16(udpLen))
	binary.BigEndian.PutUint16(b[u.d.l4+6:], packet.ChecksumFold(udpPseudoSum(b, u.d, udpLen)))
	packet.VirtioNetHdr{
		Flags:      packet.VirtioNetHdrNeedsCsum,
		GSOType:    packet.GSOUDPL4,
		HdrLen:     uint16(hdrLen),
		GSOSize:    uint16(u.size),
		CsumStart:  uint16(u.d.l4),
		CsumOffset: 6,
	}.Encode(u.buf[headroom-tun.VNetHdrLen:])
	return u.buf[:headroom+n]
}

// reset empties the batch; its packets must have been freed.
func (u *usoBatch) reset() {
	clear(u.pkts)
	u.pkts, u.dls = u.pkts[:0], u.dls[:0]
}
