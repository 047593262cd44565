package router

import (
	"encoding/binary"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/tun"
)

// Segments of one TCP flow that leave the link apart (a super-packet cut
// by a jittered netem, interleaved by fq_codel's round robin with other
// flows, released segment by segment by a shaper) but become due in the
// same release pass are written as one GSO super-packet, which the
// receiving kernel segments back into exactly the same segments: what the
// kernel's GRO does on receive (tcp_gro_receive). A packet joins a flow's
// batch only where that holds:
//
//   - the IP headers agree but for the lengths, the IPv4 identification
//     (which must run on by one per segment, as the kernel's segmentation
//     numbers them) and the header checksum;
//   - the TCP headers agree but for the sequence number, which must
//     continue the batch, and FIN and PSH, which only the last may carry
//     (CWR only the first): same acknowledgement, window and options;
//   - every segment but the last carries exactly the batch's segment size
//     (the first packet's), and the last no more;
//   - every checksum is left to the receiver (NEEDS_CSUM), as the kernel
//     hands locally sent TCP to the router and as Cut leaves the parts of
//     a super-packet; a packet whose checksum is complete (netem corrupted
//     it, say) goes out on its own.
//
// Batches are per flow, up to groFlows at a time; a packet that cannot join
// its flow's batch ends it. The egress writes every batch at the end of
// the release pass, and a flow's batch before any other packet of it, so
// that no flow's packets overtake each other.

const (
	// groFlows bounds the batches open at once.
	groFlows = 8
	// groMaxSegs bounds the segments of one written super-packet, as
	// the kernel's GRO bounds a batch (MAX_GRO_SKBS is 8 skbs, but a
	// super-packet of 64 KiB is 45 segments of 1448 bytes).
	groMaxSegs  = 64
	groMaxIPLen = 0xffff
)

// tcpSeg describes a packet that may join a batch.
type tcpSeg struct {
	v6      bool
	l4      int // transport header offset
	hdrLen  int // l4 + TCP header
	mss     int // payload per segment (of a super-packet: its gso_size)
	payload int
	segs    int
	seq     uint32
	id      uint16
	flags   byte
}

// tcpFIN, tcpPSH and tcpCWR are TCP flag bits.
const (
	tcpFIN = 0x01
	tcpPSH = 0x08
	tcpCWR = 0x80
)

// plainIP reads the IP header of b, a whole packet, which must be
// followed directly by a header of proto: an IPv4 header of a datagram
// that is no fragment, or an IPv6 header without extension headers, whose
// length field agrees with len(b). It returns where proto's header starts
// and whether the packet is IPv6; ok is false for anything else.
func plainIP(b []byte, proto uint8) (l4 int, v6, ok bool) {
	if len(b) < 1 {
		return 0, false, false
	}
	switch b[0] >> 4 {
	case 4:
		l4 = int(b[0]&0x0f) * 4
		if len(b) < 20 || b[9] != proto || l4 < 20 || int(binary.BigEndian.Uint16(b[2:])) != len(b) ||
			binary.BigEndian.Uint16(b[6:])&0x3fff != 0 {
			return 0, false, false
		}
		return l4, false, true
	case 6:
		if len(b) < 40 || b[6] != proto || int(binary.BigEndian.Uint16(b[4:]))+40 != len(b) {
			return 0, false, false
		}
		return 40, true, true
	}
	return 0, false, false
}

// tcpCandidate reports whether p may be coalesced: a TCP packet or
// super-packet with data, over IPv4 without fragmentation or IPv6 without
// extension headers, whose checksum is left to the receiver.
func tcpCandidate(p *packet.Packet) (tcpSeg, bool) {
	var s tcpSeg
	b := p.Bytes()
	if !p.VNet || len(b) < 40 {
		return s, false
	}
	var ok bool
	if s.l4, s.v6, ok = plainIP(b, packet.ProtoTCP); !ok {
		return s, false
	}
	if !s.v6 {
		s.id = binary.BigEndian.Uint16(b[4:])
	}
	if len(b) < s.l4+20 {
		return s, false
	}
	s.hdrLen = s.l4 + int(b[s.l4+12]>>4)*4
	if s.hdrLen < s.l4+20 || len(b) <= s.hdrLen {
		return s, false
	}
	buf, off := p.Buffer()
	h, _ := packet.DecodeVirtioNetHdr(buf[off-tun.VNetHdrLen : off])
	if h.Flags&packet.VirtioNetHdrNeedsCsum == 0 || int(h.CsumStart) != s.l4 || h.CsumOffset != 16 {
		return s, false
	}
	s.payload = len(b) - s.hdrLen
	s.segs, s.mss = 1, s.payload
	if h.GSOType != packet.GSONone {
		if p.Segs < 1 || int(p.SegHdr) != s.hdrLen {
			return s, false
		}
		s.segs, s.mss = int(p.Segs), int(p.SegSize)
	}
	s.seq = binary.BigEndian.Uint32(b[s.l4+4:])
	s.flags = b[s.l4+13]
	return s, true
}

// groBatch is one flow's packets, gathered until the batch is written.
type groBatch struct {
	flow  int32
	pkts  []*packet.Packet
	dls   []clock.Time // each packet's deadline
	first tcpSeg
	next  tcpSeg // what the batch's next packet must continue: seq, id
	segs  int
	ipLen int  // IPv4 total length or IPv6 payload length of the whole
	ended bool // nothing may join any more
}

// groTable holds the open batches and the buffer a batch is built in.
type groTable struct {
	open []*groBatch
	free []*groBatch
	buf  []byte // the super-packet, its virtio-net header at headroom-VNetHdrLen
}

func newGROTable() *groTable {
	t := &groTable{open: make([]*groBatch, 0, groFlows), free: make([]*groBatch, groFlows), buf: make([]byte, headroom+groMaxIPLen+40)}
	for i := range t.free {
		t.free[i] = &groBatch{pkts: make([]*packet.Packet, 0, groMaxSegs), dls: make([]clock.Time, 0, groMaxSegs)}
	}
	return t
}

// batch returns the open batch of flow, or nil.
func (t *groTable) batch(flow int32) *groBatch {
	for _, b := range t.open {
		if b.flow == flow {
			return b
		}
	}
	return nil
}

// start opens a batch of flow with p; the table must have room.
func (t *groTable) start(flow int32, p *packet.Packet, s tcpSeg, deadline clock.Time) {
	b := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	b.flow, b.first, b.segs = flow, s, s.segs
	b.pkts = append(b.pkts[:0], p)
	b.dls = append(b.dls[:0], deadline)
	b.ipLen = len(p.Bytes())
	if s.v6 {
		b.ipLen -= 40
	}
	b.ended = s.flags&(tcpFIN|tcpPSH) != 0 || s.payload != s.segs*s.mss
	b.advance(s)
	t.open = append(t.open, b)
}

// advance records that s joined the batch.
func (b *groBatch) advance(s tcpSeg) {
	b.next.seq = s.seq + uint32(s.payload)
	b.next.id = s.id + uint16(s.segs)
}

// add appends p, described by s, to the batch if it continues it, and
// reports whether it did.
func (b *groBatch) add(p *packet.Packet, s tcpSeg, deadline clock.Time) bool {
	f := &b.first
	if b.ended || s.v6 != f.v6 || s.l4 != f.l4 || s.hdrLen != f.hdrLen || s.seq != b.next.seq ||
		s.mss > f.mss || s.segs > 1 && s.mss != f.mss || s.flags&tcpCWR != 0 ||
		b.segs+s.segs > groMaxSegs || b.ipLen+s.payload > groMaxIPLen {
		return false
	}
	if !f.v6 && s.id != b.next.id {
		return false
	}
	if !sameHeaders(b.pkts[0].Bytes(), p.Bytes(), f) {
		return false
	}
	b.pkts = append(b.pkts, p)
	b.dls = append(b.dls, deadline)
	b.segs += s.segs
	b.ipLen += s.payload
	b.ended = s.flags&(tcpFIN|tcpPSH) != 0 || s.payload != s.segs*f.mss
	b.advance(s)
	return true
}

// sameHeaders reports whether the headers of q agree with those of the
// batch's first packet f wherever a batch's segments must agree.
func sameHeaders(f, q []byte, s *tcpSeg) bool {
	if s.v6 {
		if string(q[:4]) != string(f[:4]) || string(q[6:40]) != string(f[6:40]) {
			return false
		}
	} else if string(q[:2]) != string(f[:2]) || string(q[6:10]) != string(f[6:10]) || string(q[12:s.l4]) != string(f[12:s.l4]) {
		return false
	}
	l4 := s.l4
	// Ports, acknowledgement, data offset, flags but CWR, FIN and PSH,
	// window, and the options.
	return string(q[l4:l4+4]) == string(f[l4:l4+4]) && string(q[l4+8:l4+13]) == string(f[l4+8:l4+13]) &&
		(q[l4+13]^f[l4+13])&^(tcpCWR|tcpFIN|tcpPSH) == 0 && string(q[l4+14:l4+16]) == string(f[l4+14:l4+16]) &&
		string(q[l4+20:s.hdrLen]) == string(f[l4+20:s.hdrLen])
}

// build writes the super-packet of the batch's two or more packets into
// t.buf and returns it from its virtio-net header on, with the packet at
// offset headroom.
func (t *groTable) build(b *groBatch) []byte {
	f := &b.first
	first := b.pkts[0].Bytes()
	out := t.buf[headroom:]
	n := copy(out, first[:f.hdrLen])
	for _, p := range b.pkts {
		n += copy(out[n:], p.Bytes()[f.hdrLen:])
	}
	o := out[:n]
	last := b.pkts[len(b.pkts)-1].Bytes()
	o[f.l4+13] = f.flags&^(tcpFIN|tcpPSH) | last[f.l4+13]&(tcpFIN|tcpPSH)
	typ := packet.GSOTCPv4
	var pseudo uint64
	if f.v6 {
		typ = packet.GSOTCPv6
		binary.BigEndian.PutUint16(o[4:], uint16(n-40))
		pseudo = packet.ChecksumAdd(o[8:40], packet.ProtoTCP)
	} else {
		binary.BigEndian.PutUint16(o[2:], uint16(n))
		o[10], o[11] = 0, 0
		binary.BigEndian.PutUint16(o[10:], packet.Checksum(o[:f.l4]))
		pseudo = packet.ChecksumAdd(o[12:20], packet.ProtoTCP)
	}
	binary.BigEndian.PutUint16(o[f.l4+16:], packet.ChecksumFold(pseudo+uint64(n-f.l4)))
	if f.flags&tcpCWR != 0 {
		typ |= packet.GSOECN
	}
	packet.VirtioNetHdr{
		Flags:      packet.VirtioNetHdrNeedsCsum,
		GSOType:    typ,
		HdrLen:     uint16(f.hdrLen),
		GSOSize:    uint16(f.mss),
		CsumStart:  uint16(f.l4),
		CsumOffset: 16,
	}.Encode(t.buf[headroom-tun.VNetHdrLen:])
	return t.buf[:headroom+n]
}

// close returns b, its packets written and freed, to the free list.
func (t *groTable) close(b *groBatch) {
	clear(b.pkts)
	b.pkts, b.dls = b.pkts[:0], b.dls[:0]
	for i, o := range t.open {
		if o == b {
			t.open = append(t.open[:i], t.open[i+1:]...)
			break
		}
	}
	t.free = append(t.free, b)
}
