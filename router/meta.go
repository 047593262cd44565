package router

import "wanlab/packet"

// The router keeps its per-packet metadata in packet.Tag, so that it
// survives the qdisc tree (netem's duplicates copy it) without a side
// table:
//
//	bits  0..19  wire bytes: the IP bytes of all the wire segments the
//	             buffer stands for (Len for a plain packet)
//	bits 20..29  header bytes repeated in every segment (IP + TCP/UDP)
//	bit  30      the virtio-net header in front of the data is the one the
//	             kernel wrote and goes out unchanged
//	bits 32..63  flow index + 1 in the loop's flow table (0: none)
//
// packet.Flow is -1 for every router packet, so that the link keeps no flow
// state of its own; packet.Seq holds the TCP sequence number (unwrapped to
// 64 bits) of a data segment that arrived in order at the router, -1 for
// every other packet, for the reordering count.
const (
	tagWireBits = 20
	tagHdrShift = 20
	tagHdrBits  = 10
	tagVNet     = 1 << 30
	tagFlowPos  = 32
)

func makeTag(wire, hdrLen int, vnet bool, flow int32) uint64 {
	t := uint64(wire)&(1<<tagWireBits-1) | uint64(hdrLen)&(1<<tagHdrBits-1)<<tagHdrShift
	if vnet {
		t |= tagVNet
	}
	return t | uint64(uint32(flow+1))<<tagFlowPos
}

func tagWire(p *packet.Packet) int     { return int(p.Tag & (1<<tagWireBits - 1)) }
func tagHdr(p *packet.Packet) int      { return int(p.Tag >> tagHdrShift & (1<<tagHdrBits - 1)) }
func tagHasVNet(p *packet.Packet) bool { return p.Tag&tagVNet != 0 }
func tagFlow(p *packet.Packet) int32   { return int32(uint32(p.Tag>>tagFlowPos)) - 1 }

// segsOf returns the wire segments p stands for.
func segsOf(p *packet.Packet) int {
	if p.Segs < 1 {
		return 1
	}
	return int(p.Segs)
}

// payloadOf returns the transport payload bytes of p's segments.
func payloadOf(p *packet.Packet) int {
	return max(tagWire(p)-segsOf(p)*tagHdr(p), 0)
}
