package router

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"

	"wanlab/link"
	"wanlab/packet"
	"wanlab/qdisc"
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

// flowAcc counts one flow, in wire segments, framed bytes and transport
// payload bytes.
type flowAcc struct {
	t                       packet.Tuple
	packets, bytes, payload uint64
	dropped                 uint64
	droppedBy               link.Reasons // the chain's drops, by reason
	marked                  uint64
	reordered               uint64
	// delaySum, delayN and delayMax are the flow's delay through the
	// router (from arrival at the link to the write to the egress
	// device), one sample per buffer delivered.
	delaySum, delayN uint64
	delayMax         int64
	inSeq            int64 // highest TCP data sequence number seen arriving, unwrapped
	inSeen           bool
	out              stats.Reorder // of the delivered segments
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
	if g.proto != packet.ProtoTCP || g.l4 < 0 || len(pkt) <= g.hdrLen || len(pkt) < g.l4+8 {
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

// delivered counts p as delivered in its flow, delay ns after it entered
// the link, and applies RFC 4737's reordered singleton (stats.Reorder) to its
// sequence number. Each segment's bytes count hdr bytes of framing.
func (ft *flowTable) delivered(p *packet.Packet, hdr int, delay int64) {
	id := tagFlow(p)
	if id < 0 || int(id) >= len(ft.flows) {
		return
	}
	f := &ft.flows[id]
	segs := uint64(p.Segments())
	f.packets += segs
	f.bytes += uint64(p.WireLen() + int(segs)*hdr)
	f.payload += uint64(payloadOf(p))
	if s := seqOf(p); s >= 0 && f.out.Arrive(s) {
		f.reordered += segs
	}
	delay = max(delay, 0)
	f.delaySum += uint64(delay)
	f.delayN++
	f.delayMax = max(f.delayMax, delay)
}

// dropped counts p as lost in its flow: dropped by the chain for why, or
// refused by the egress device (why is ReasonNone).
func (ft *flowTable) dropped(p *packet.Packet, why qdisc.Reason) {
	if id := tagFlow(p); id >= 0 && int(id) < len(ft.flows) {
		segs := uint64(p.Segments())
		f := &ft.flows[id]
		f.dropped += segs
		if why != qdisc.ReasonNone {
			f.droppedBy[why] += segs
		}
	}
}

// marked counts p's CE mark in its flow.
func (ft *flowTable) marked(p *packet.Packet) {
	if id := tagFlow(p); id >= 0 && int(id) < len(ft.flows) {
		ft.flows[id].marked += uint64(p.Segments())
	}
}

func (ft *flowTable) reordered() uint64 {
	var n uint64
	for i := range ft.flows {
		n += ft.flows[i].reordered
	}
	return n
}

// snapshot returns every flow, in order of first appearance.
func (ft *flowTable) snapshot() []FlowSnapshot {
	out := make([]FlowSnapshot, len(ft.flows))
	for i := range ft.flows {
		f := &ft.flows[i]
		out[i] = FlowSnapshot{
			Flow:            flowKeyOf(f.t),
			Packets:         f.packets,
			Bytes:           f.bytes,
			Payload:         f.payload,
			Dropped:         f.dropped,
			DroppedByReason: f.droppedBy,
			Marked:          f.marked,
			Reordered:       f.reordered,
			Delay:           FlowDelay{N: f.delayN, MaxNs: f.delayMax},
		}
		if f.delayN > 0 {
			out[i].Delay.MeanNs = float64(f.delaySum) / float64(f.delayN)
		}
	}
	return out
}

// FlowKey is a flow's 5-tuple: protocol, source and destination. Ports
// are 0 for protocols without them; ICMP echo uses its identifier as both
// ports. The key of the shared entry for flows beyond the table's bound is
// the zero FlowKey.
type FlowKey struct {
	Proto Proto          `json:"proto"`
	Src   netip.AddrPort `json:"src"`
	Dst   netip.AddrPort `json:"dst"`
}

// String returns the key as "tcp 10.0.0.1:40000 > 10.0.0.2:5201".
func (k FlowKey) String() string {
	return k.Proto.String() + " " + k.Src.String() + " > " + k.Dst.String()
}

func flowKeyOf(t packet.Tuple) FlowKey {
	k := FlowKey{Proto: Proto(t.Proto)}
	switch t.Version {
	case 4:
		k.Src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(t.Src[:4])), t.SrcPort)
		k.Dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(t.Dst[:4])), t.DstPort)
	case 6:
		k.Src = netip.AddrPortFrom(netip.AddrFrom16(t.Src), t.SrcPort)
		k.Dst = netip.AddrPortFrom(netip.AddrFrom16(t.Dst), t.DstPort)
	}
	return k
}

// Proto is an IP protocol number. Its text form is the protocol's name for
// those wanlab knows ("tcp", "udp", "icmp", "icmpv6") and the decimal
// number otherwise.
type Proto uint8

var protoNames = map[Proto]string{
	packet.ProtoTCP:    "tcp",
	packet.ProtoUDP:    "udp",
	packet.ProtoICMP:   "icmp",
	packet.ProtoICMPv6: "icmpv6",
}

// String returns the protocol's name or number.
func (p Proto) String() string {
	if s, ok := protoNames[p]; ok {
		return s
	}
	return strconv.Itoa(int(p))
}

// MarshalText implements encoding.TextMarshaler.
func (p Proto) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: a name String gives,
// or a number from 0 to 255.
func (p *Proto) UnmarshalText(b []byte) error {
	for k, name := range protoNames {
		if name == string(b) {
			*p = k
			return nil
		}
	}
	n, err := strconv.ParseUint(string(b), 10, 8)
	if err != nil {
		return fmt.Errorf("router: protocol %q is neither tcp, udp, icmp, icmpv6 nor a number from 0 to 255", b)
	}
	*p = Proto(n)
	return nil
}
