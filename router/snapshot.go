package router

import (
	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/stats"
)

// Snapshot holds the live counters of both directions.
type Snapshot struct {
	Up, Down DirSnapshot
}

// DirSnapshot describes one direction.
//
// What counts: packets are wire segments (a GSO super-packet that crossed
// whole counts as the segments the receiving kernel sees) and bytes are
// their IP bytes (headers repeated per segment). Counters.Delay and
// Lateness have one sample per buffer (a whole super-packet is one
// sample). Qdisc Packets, Bytes and Drops count segments and wire bytes as
// well; Qlen and Backlog count buffers and their length, as the kernel's
// qlen counts skbs.
type DirSnapshot struct {
	Name  string `json:"name"`  // "up" / "down"
	Chain string `json:"chain"` // tc syntax (tcspec.FormatChain), "" for a direct path
	// Counters: packets/bytes in/out, drops by reason, marks, dups, delay
	// summary. Counters.Reordered equals Reordered.
	Counters link.Counters `json:"counters"`
	Qdiscs   []QdiscStats  `json:"qdiscs"`   // root first, then each child: Kind + qdisc.Stats, as tc -s qdisc show
	Lateness Lateness      `json:"lateness"` // release lateness vs deadline
	// Reordered counts delivered TCP data segments whose sequence number
	// is below the highest delivered before in their flow (RFC 4737),
	// among the segments that arrived at the router in order: what the
	// emulator reordered, not the sender's retransmissions.
	Reordered uint64         `json:"reordered"`
	Flows     []FlowSnapshot `json:"flows"` // per 5-tuple, in order of first appearance
	// TunQueueDrops counts drops in the kernel queue of the egress TUN
	// (should be 0): what UpQueueDrops/DownQueueDrops report.
	TunQueueDrops uint64 `json:"tun_queue_drops"`
	// TunQueueErr is the error of reading TunQueueDrops, if any.
	TunQueueErr string `json:"tun_queue_err,omitempty"`
	// WriteDrops counts segments the egress device refused after the link
	// had delivered them; WriteDropsByReason splits them by errno
	// ("eagain", "enobufs", "other").
	WriteDrops         uint64            `json:"write_drops"`
	WriteDropsByReason map[string]uint64 `json:"write_drops_by_reason,omitempty"`
	// Malformed counts packets dropped because they could not be split
	// into segments (an inconsistent GSO header).
	Malformed uint64 `json:"malformed"`
	// Whole tells whether the current chain lets GSO super-packets cross
	// whole (see the package documentation); Split counts super-packets
	// split before the link.
	Whole bool   `json:"whole"`
	Split uint64 `json:"split"`
	// USOWrites counts the USO super-packets the direction wrote, each
	// holding several consecutive UDP datagrams of one flow that were due
	// together, and USODatagrams the datagrams they held (also counted,
	// one by one, everywhere else).
	USOWrites    uint64 `json:"uso_writes"`
	USODatagrams uint64 `json:"uso_datagrams"`
	// MaxInFlight is the most packets (buffers) the direction has held.
	MaxInFlight int `json:"max_in_flight"`
	// LoopCPUNs is the CPU time the direction's loop thread has used, in
	// ns; Sleeps counts the times it waited in the kernel and Spins the
	// passes in which it polled instead, a deadline being near.
	LoopCPUNs int64  `json:"loop_cpu_ns"`
	Sleeps    uint64 `json:"sleeps"`
	Spins     uint64 `json:"spins"`
}

// QdiscStats is one discipline of the chain.
type QdiscStats struct {
	Kind  string      `json:"kind"`
	Stats qdisc.Stats `json:"stats"`
}

// Lateness summarises release lateness: how long after the time the link
// said a packet could leave the router handed it to the egress device, in
// ns. Percentiles come from a stats.Hist (exact below 128 ns, within 0.8 %
// above); Max is exact.
type Lateness struct {
	N     uint64 `json:"n"`
	P50Ns int64  `json:"p50_ns"`
	P99Ns int64  `json:"p99_ns"`
	MaxNs int64  `json:"max_ns"`
}

// FlowSnapshot counts one 5-tuple of a direction: delivered segments, their
// IP bytes and transport payload bytes (what iperf3 counts), and segments
// dropped (by the link or refused by the egress device).
type FlowSnapshot struct {
	Proto     string `json:"proto"` // "tcp", "udp", "icmp", "icmpv6" or the protocol number
	Src       string `json:"src"`   // addr:port
	Dst       string `json:"dst"`
	Packets   uint64 `json:"packets"`
	Bytes     uint64 `json:"bytes"`
	Payload   uint64 `json:"payload_bytes"`
	Dropped   uint64 `json:"dropped"`
	Reordered uint64 `json:"reordered"`
}

func latenessOf(h *stats.Hist) Lateness {
	return Lateness{N: h.N(), P50Ns: int64(h.Percentile(50)), P99Ns: int64(h.Percentile(99)), MaxNs: h.Max()}
}
