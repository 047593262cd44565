package router

import (
	"wanlab/packet"
)

// gsoInfo describes a packet as the wire would carry it.
type gsoInfo struct {
	segs   int // wire segments (1 unless a super-packet)
	hdrLen int // IP and transport headers, repeated in every segment
	wire   int // bytes of all segments together
	l4     int // offset of the transport header, -1 if unknown
	proto  uint8
}

// payload returns the transport payload of all segments.
func (g gsoInfo) payload() int { return g.wire - g.segs*g.hdrLen }

// inspect works out the wire segments of pkt under header h
// (packet.GSOSegments) and where its headers end. For a packet that is no
// super-packet, hdrLen is where the transport payload starts (the IP
// header's end for protocols without ports), for payload accounting. An
// error means a super-packet that cannot be split, or a checksum to
// complete whose field lies outside the transport part
// (packet.CheckCsumRange).
func inspect(pkt []byte, h packet.VirtioNetHdr) (gsoInfo, error) {
	g := gsoInfo{segs: 1, wire: len(pkt), l4: -1}
	if proto, l4, err := packet.Transport(pkt); err == nil {
		g.proto, g.l4 = proto, l4
		switch {
		case l4 < 0:
		case proto == packet.ProtoTCP && len(pkt) >= l4+20:
			g.hdrLen = l4 + int(pkt[l4+12]>>4)*4
		case proto == packet.ProtoUDP && len(pkt) >= l4+8:
			g.hdrLen = l4 + 8
		default:
			g.hdrLen = l4
		}
		g.hdrLen = min(g.hdrLen, len(pkt))
	}
	if h.GSOType == packet.GSONone {
		return g, packet.CheckCsumRange(pkt, h)
	}
	segs, wire, err := packet.GSOSegments(pkt, h)
	if err != nil {
		return g, err
	}
	g.segs, g.wire = segs, wire
	if segs > 1 {
		g.hdrLen = (wire - len(pkt)) / (segs - 1)
	}
	return g, nil
}

// splitter is the split step: it turns a super-packet into its wire
// segments, each in a packet of the loop's pools, without allocating.
type splitter struct {
	pkts  []*packet.Packet
	out   [][]byte
	sizes []int
}

// maxSegs bounds the segments of one super-packet: 64 KiB of payload in
// segments of the smallest MSS a TCP stack uses (88 bytes on Linux).
const maxSegs = 65536/88 + 1

func newSplitter() *splitter {
	return &splitter{
		pkts:  make([]*packet.Packet, maxSegs),
		out:   make([][]byte, maxSegs),
		sizes: make([]int, maxSegs),
	}
}

// split writes the g.segs segments of pkt (with header h) into packets
// from get and returns them; they stay valid until the next call. On error
// nothing is returned and nothing is live.
func (s *splitter) split(pkt []byte, h packet.VirtioNetHdr, g gsoInfo, get func(int) *packet.Packet) ([]*packet.Packet, error) {
	if g.segs > maxSegs {
		return nil, packet.ErrGSOSegments
	}
	size := g.hdrLen + int(h.GSOSize)
	for i := range g.segs {
		p := get(size)
		buf, off := p.Buffer()
		s.pkts[i], s.out[i] = p, buf[off:]
	}
	n, err := packet.SplitGSO(pkt, h, s.out[:g.segs], s.sizes[:g.segs])
	if err != nil || n != g.segs {
		for _, p := range s.pkts[:g.segs] {
			p.Free()
		}
		if err == nil {
			err = packet.ErrGSOSegments
		}
		return nil, err
	}
	for i, p := range s.pkts[:n] {
		p.SetLen(s.sizes[i])
	}
	return s.pkts[:n], nil
}
