package router

import (
	"encoding/binary"
	"net/netip"
	"strconv"

	"wanlab/packet"
	"wanlab/stats"
)

// maxFlows bounds the flow table; packets of further flows are counted in
// one shared entry whose tuple is all zeros.
const maxFlows = 1 << 14

// flowTable maps 5-tuples of one direction to counters.
type flowTable struct {
	ids   map[packet.Tuple]int32
	flows []flowAcc
	// The last tuple looked up: a bulk transfer hits it almost always.
	last   packet.Tuple
	lastID int32
}

// flowAcc counts one flow, in wire segments and IP bytes.
type flowAcc struct {
	t                       packet.Tuple
	packets, bytes, payload uint64
	dropped                 uint64
	reordered               uint64
	inSeq                   int64 // highest TCP data sequence number seen arriving, unwrapped
	inSeen                  bool
	out                     stats.Reorder // of the delivered segments
}

func newFlowTable() flowTable {
	return flowTable{ids: make(map[packet.Tuple]int32), lastID: -1}
}

// lookup returns the index of t's flow, adding it on first sight.
func (ft *flowTable) lookup(t packet.Tuple) int32 {
	if ft.lastID >= 0 && t == ft.last {
		return ft.lastID
	}
	id, ok := ft.ids[t]
	if !ok {
		if len(ft.flows) >= maxFlows {
			t = packet.Tuple{}
			if id, ok = ft.ids[t]; ok {
				return id
			}
		}
		id = int32(len(ft.flows))
		ft.flows = append(ft.flows, flowAcc{t: t})
		ft.ids[t] = id
	}
	ft.last, ft.lastID = t, id
	return id
}

// arrivalSeq returns the sequence number the reordering count uses for a
// packet of flow id arriving with transport header at l4 of pkt: the
// unwrapped TCP sequence number of a data segment that is in order at the
// router's ingress, -1 for anything else. A segment below the highest one
// seen already is a retransmission (or was reordered before the router),
// and leaving it out makes the count measure the emulator's reordering
// only.
func (ft *flowTable) arrivalSeq(id int32, pkt []byte, g gsoInfo) int64 {
	if g.proto != packet.ProtoTCP || g.l4 < 0 || len(pkt) <= g.hdrLen {
		return -1
	}
	f := &ft.flows[id]
	s32 := binary.BigEndian.Uint32(pkt[g.l4+4:])
	var s int64
	if !f.inSeen {
		s = int64(s32) + 1<<32 // room below for wraps backwards
		f.inSeen = true
		f.inSeq = s
		return s
	}
	s = f.inSeq + int64(int32(s32-uint32(f.inSeq)))
	if s < f.inSeq {
		return -1
	}
	f.inSeq = s
	return s
}

// delivered counts p as delivered in its flow and applies RFC 4737's
// reordered singleton (stats.Reorder) to its sequence number.
func (ft *flowTable) delivered(p *packet.Packet) {
	id := tagFlow(p)
	if id < 0 || int(id) >= len(ft.flows) {
		return
	}
	f := &ft.flows[id]
	segs := uint64(segsOf(p))
	f.packets += segs
	f.bytes += uint64(tagWire(p))
	f.payload += uint64(payloadOf(p))
	if p.Seq >= 0 && f.out.Arrive(p.Seq) {
		f.reordered += segs
	}
}

// dropped counts p as lost in its flow.
func (ft *flowTable) dropped(p *packet.Packet) {
	if id := tagFlow(p); id >= 0 && int(id) < len(ft.flows) {
		ft.flows[id].dropped += uint64(segsOf(p))
	}
}

func (ft *flowTable) reordered() uint64 {
	var n uint64
	for i := range ft.flows {
		n += ft.flows[i].reordered
	}
	return n
}

func (ft *flowTable) snapshot() []FlowSnapshot {
	out := make([]FlowSnapshot, len(ft.flows))
	for i := range ft.flows {
		f := &ft.flows[i]
		out[i] = FlowSnapshot{
			Proto:     protoName(f.t.Proto),
			Src:       endpoint(f.t, f.t.Src, f.t.SrcPort),
			Dst:       endpoint(f.t, f.t.Dst, f.t.DstPort),
			Packets:   f.packets,
			Bytes:     f.bytes,
			Payload:   f.payload,
			Dropped:   f.dropped,
			Reordered: f.reordered,
		}
	}
	return out
}

func endpoint(t packet.Tuple, a [16]byte, port uint16) string {
	var ip netip.Addr
	switch t.Version {
	case 4:
		ip = netip.AddrFrom4([4]byte(a[:4]))
	case 6:
		ip = netip.AddrFrom16(a)
	default:
		return ""
	}
	return netip.AddrPortFrom(ip, port).String()
}

func protoName(p uint8) string {
	switch p {
	case packet.ProtoTCP:
		return "tcp"
	case packet.ProtoUDP:
		return "udp"
	case packet.ProtoICMP:
		return "icmp"
	case packet.ProtoICMPv6:
		return "icmpv6"
	}
	return strconv.Itoa(int(p))
}
