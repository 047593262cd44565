package packet

import (
	"encoding/binary"
	"errors"
)

// Errors of DescribeGSO, Cut and FinishChecksum.
var (
	ErrNoVNet    = errors.New("packet: the packet carries no virtio_net_hdr (VNet is not set)")
	ErrCutRange  = errors.New("packet: Cut needs 0 < k < Segs")
	ErrCutLayout = errors.New("packet: Segs, SegSize or SegHdr disagree with the packet's virtio_net_hdr")
	ErrCutPool   = errors.New("packet: the pool's buffers are too small for the part Cut copies")
	ErrFinishGSO = errors.New("packet: FinishChecksum on a packet of more than one segment")
)

// vnetHdr returns the bytes of p's virtio_net_hdr, in front of its data.
func (p *Packet) vnetHdr() []byte { return p.buf[p.off-VirtioNetHdrLen : p.off] }

// DescribeGSO reads the virtio_net_hdr in front of p's data (p.VNet must
// be set) and sets Segs, SegSize and SegHdr as the segments the kernel's
// GSO would send (GSOSegments' rules). A packet whose header has GSONone
// is one segment; its SegSize and SegHdr are left as they are.
func DescribeGSO(p *Packet) error {
	if !p.VNet {
		return ErrNoVNet
	}
	h, _ := DecodeVirtioNetHdr(p.vnetHdr())
	if h.GSOType == GSONone {
		p.Segs = 1
		return nil
	}
	l, err := parseGSO(p.Bytes(), h)
	if err != nil {
		return err
	}
	p.Segs, p.SegSize, p.SegHdr = int32(l.segs), int32(l.mss), int32(l.hdrLen)
	return nil
}

// cutScratch bounds the headers Cut moves within a buffer; longer ones
// (IPv6 with long extension headers) are cut by copying the tail instead.
const cutScratch = 256

// Cut divides the super-packet p after its first k segments (0 < k <
// p.Segs) into two super-packets that a receiving kernel segments into
// exactly the segments p stands for: head holds segments 0 to k-1, tail
// the rest. One of the two is p itself, its data moved or shortened in its
// buffer; the other is a new packet from pl holding a copy of the smaller
// part, so a cut copies at most half of p. Both carry p's metadata, and
// Segs and a virtio_net_hdr of their own (GSONone when they hold one
// segment).
//
// The headers are rewritten as the kernel's GSO rewrites those of the
// segments they begin and end with: IPv4 total length, identification
// (p's plus the index of the part's first segment) and header checksum;
// IPv6 payload length; the TCP sequence number advanced by SegSize per
// segment, CWR kept only by the part holding the first segment, FIN and
// PSH only by the part holding the last; the UDP length. The transport
// checksum is left to the receiver (NEEDS_CSUM): each part's checksum
// field holds the pseudo-header sum for its own length, taken from p's
// (p's is computed from the IP addresses when p's checksum was
// complete).
//
// p must carry its virtio_net_hdr (VNet) and Segs, SegSize and SegHdr as
// DescribeGSO sets them; on an error nothing has changed.
func (pl *Pool) Cut(p *Packet, k int) (head, tail *Packet, err error) {
	if !p.VNet {
		return nil, nil, ErrNoVNet
	}
	if k <= 0 || k >= int(p.Segs) {
		return nil, nil, ErrCutRange
	}
	b := p.Bytes()
	h, _ := DecodeVirtioNetHdr(p.vnetHdr())
	l, err := parseGSO(b, h)
	if err != nil {
		return nil, nil, err
	}
	if l.segs != int(p.Segs) || l.mss != int(p.SegSize) || l.hdrLen != int(p.SegHdr) {
		return nil, nil, ErrCutLayout
	}
	o := origOf(b, h, &l)
	at := l.hdrLen + k*l.mss // where segment k's payload starts
	headLen, tailLen := at, l.hdrLen+len(b)-at
	moveTail := k < l.segs-k && l.hdrLen <= cutScratch
	copied := tailLen
	if moveTail {
		copied = headLen
	}
	if pl.headroom < VirtioNetHdrLen || pl.headroom+copied > pl.size {
		return nil, nil, ErrCutPool
	}
	c := pl.Get()
	buf, off, pool := c.buf, c.off, c.pool
	*c = *p
	c.buf, c.off, c.pool, c.live = buf, off, pool, true
	if moveTail {
		// c takes the head; p keeps the tail, its headers moved to just
		// before segment k's payload (over bytes c now holds).
		copy(c.buf[c.off:], b[:headLen])
		c.n = headLen
		var hdr [cutScratch]byte
		copy(hdr[:], b[:l.hdrLen])
		p.off += at - l.hdrLen
		copy(p.buf[p.off:], hdr[:l.hdrLen])
		p.n = tailLen
		head, tail = c, p
	} else {
		copy(c.buf[c.off:], b[:l.hdrLen])
		copy(c.buf[c.off+l.hdrLen:], b[at:])
		c.n = tailLen
		p.n = headLen
		head, tail = p, c
	}
	o.fix(head, &l, 0, k)
	o.fix(tail, &l, k, l.segs-k)
	return head, tail, nil
}

// gsoOrig is what the parts of a cut super-packet take from its headers.
type gsoOrig struct {
	typ   uint8  // GSO type, without the ECN bit
	ecn   bool   // GSOECN was set
	id    uint16 // IPv4 identification
	seq   uint32 // TCP sequence number
	flags uint8  // TCP flags
	base  uint64 // pseudo-header sum without the length, folded
	segs  int
}

func origOf(b []byte, h VirtioNetHdr, l *gsoLayout) gsoOrig {
	o := gsoOrig{typ: h.GSOType &^ GSOECN, ecn: h.GSOType&GSOECN != 0, segs: l.segs}
	if !l.v6 {
		o.id = binary.BigEndian.Uint16(b[4:])
	}
	if l.proto == ProtoTCP {
		o.seq = binary.BigEndian.Uint32(b[l.thoff+4:])
		o.flags = b[l.thoff+13]
	}
	switch {
	case l.partial:
		o.base = uint64(binary.BigEndian.Uint16(b[l.csumAt():])) + csumNeg(uint32(len(b)-l.thoff))
	case l.v6:
		o.base = ChecksumAdd(b[8:40], uint64(l.proto))
	default:
		o.base = ChecksumAdd(b[12:20], uint64(l.proto))
	}
	o.base = uint64(ChecksumFold(o.base))
	return o
}

// csumAt returns the offset of the transport checksum field.
func (l *gsoLayout) csumAt() int {
	if l.proto == ProtoUDP {
		return l.thoff + 6
	}
	return l.thoff + 16
}

// fix rewrites the headers of q, which holds count segments of the
// original starting with segment first, and gives it its own
// virtio_net_hdr and segment count.
func (o *gsoOrig) fix(q *Packet, l *gsoLayout, first, count int) {
	b := q.Bytes()
	if l.v6 {
		binary.BigEndian.PutUint16(b[4:], uint16(len(b)-40))
	} else {
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		binary.BigEndian.PutUint16(b[4:], o.id+uint16(first))
		b[10], b[11] = 0, 0
		binary.BigEndian.PutUint16(b[10:], Checksum(b[:l.thoff]))
	}
	if l.proto == ProtoTCP {
		binary.BigEndian.PutUint32(b[l.thoff+4:], o.seq+uint32(first*l.mss))
		f := o.flags
		if first > 0 {
			f &^= tcpCWR
		}
		if first+count < o.segs {
			f &^= tcpFIN | tcpPSH
		}
		b[l.thoff+13] = f
	} else {
		binary.BigEndian.PutUint16(b[l.thoff+4:], uint16(len(b)-l.thoff))
	}
	binary.BigEndian.PutUint16(b[l.csumAt():], ChecksumFold(o.base+uint64(len(b)-l.thoff)))
	h := VirtioNetHdr{
		Flags:      VirtioNetHdrNeedsCsum,
		GSOType:    GSONone,
		HdrLen:     uint16(l.hdrLen),
		CsumStart:  uint16(l.thoff),
		CsumOffset: uint16(l.csumAt() - l.thoff),
	}
	if count > 1 {
		h.GSOType, h.GSOSize = o.typ, uint16(l.mss)
		if o.ecn && first == 0 {
			h.GSOType |= GSOECN
		}
	}
	h.Encode(q.vnetHdr())
	q.Segs, q.SegSize, q.SegHdr, q.VNet = int32(count), int32(l.mss), int32(l.hdrLen), true
}

// FinishChecksum completes the transport checksum of a packet of one
// segment whose virtio_net_hdr leaves it to the receiver (NEEDS_CSUM), as
// the kernel's skb_checksum_help does, and clears the flag, so that a
// change to its bytes afterwards (netem's corruption) is seen by the
// receiver's checksum. A packet without VNet, or whose checksum is
// complete, is left as it is.
func FinishChecksum(p *Packet) error {
	if !p.VNet {
		return nil
	}
	if p.Segs > 1 {
		return ErrFinishGSO
	}
	hb := p.vnetHdr()
	h, _ := DecodeVirtioNetHdr(hb)
	if h.Flags&VirtioNetHdrNeedsCsum == 0 {
		return nil
	}
	c := h
	c.GSOType = GSONone
	if err := CompleteChecksum(p.Bytes(), c); err != nil {
		return err
	}
	VirtioNetHdr{}.Encode(hb)
	return nil
}
