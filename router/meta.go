package router

import (
	"encoding/binary"

	"wanlab/packet"
)

// The router keeps its per-packet metadata in packet.Tag, so that it
// survives the qdisc tree (netem's duplicates and the parts of a cut
// super-packet copy it) without a side table:
//
//	bits  0..15  offset of the transport header + 1 (0: none known)
//	bits 16..31  index of the link-layer header the packet came with in
//	             the direction's l2Headers (0: none, on a TUN)
//	bits 32..63  flow index + 1 in the loop's flow table (0: none)
//
// The segments a packet stands for, and their lengths, are the packet's
// own (packet.Segments, WireLen, SegHdr: the headers before the transport
// payload, for payload accounting). packet.Flow is -1 for every router
// packet, so that the link keeps no flow state of its own; packet.Seq
// holds the TCP sequence number (unwrapped to 64 bits) of a data segment
// that arrived in order at the router, -1 for every other packet, for the
// reordering count: for a part of a super-packet the sequence number in
// its own header says how far past it the part begins.
const (
	tagL4Mask  = 1<<16 - 1
	tagL2Pos   = 16
	tagFlowPos = 32
)

func makeTag(l4 int, l2 uint16, flow int32) uint64 {
	return uint64(l4+1)&tagL4Mask | uint64(l2)<<tagL2Pos | uint64(uint32(flow+1))<<tagFlowPos
}

func tagL4(p *packet.Packet) int     { return int(p.Tag&tagL4Mask) - 1 }
func tagL2(p *packet.Packet) uint16  { return uint16(p.Tag >> tagL2Pos) }
func tagFlow(p *packet.Packet) int32 { return int32(uint32(p.Tag>>tagFlowPos)) - 1 }

// payloadOf returns the transport payload bytes of p's segments.
func payloadOf(p *packet.Packet) int {
	return max(p.WireLen()-p.Segments()*int(p.SegHdr), 0)
}

// seqOf returns the unwrapped TCP sequence number of p's first segment:
// p.Seq, the first segment's of the super-packet p was cut from, moved on
// by as much as p's own header says. It is -1 where p.Seq is.
func seqOf(p *packet.Packet) int64 {
	l4 := tagL4(p)
	b := p.Bytes()
	if p.Seq < 0 || l4 < 0 || len(b) < l4+8 {
		return p.Seq
	}
	s32 := binary.BigEndian.Uint32(b[l4+4:])
	return p.Seq + int64(int32(s32-uint32(p.Seq)))
}
