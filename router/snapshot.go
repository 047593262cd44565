package router

import (
	"slices"
	"strings"
	"time"

	"wanlab/fidelity"
	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/stats"
	"wanlab/tcspec"
)

// Snapshot holds the live counters of both directions. Its JSON form is
// part of wanlab's output contract (docs/results-format.md).
type Snapshot struct {
	// ClockNs and Wall are when the snapshot was asked for, on the
	// router's clock (ns since the router started; event and pcap times
	// use it) and as wall time. Each direction carries the moment its own
	// counters were copied.
	ClockNs int64       `json:"clock_ns"`
	Wall    time.Time   `json:"wall"`
	Up      DirSnapshot `json:"up"`
	Down    DirSnapshot `json:"down"`
}

// DirSnapshot describes one direction.
//
// What counts: packets are wire segments (a GSO super-packet that crossed
// whole counts as the segments the receiving kernel sees); bytes are
// framed bytes as the emulated device counts them, per segment (the IP
// length plus Framing's header: 14 bytes on Ethernet, none on ip);
// payload bytes are transport payload. Counters.Delay and Lateness have
// one sample per buffer (a super-packet that leaves whole is one sample).
// Each discipline's packets, bytes and drops count segments and framed
// bytes too; its qlen counts packets as it takes them (segments, or
// super-packets whole under GranularityGSO) and its backlog their framed
// bytes.
type DirSnapshot struct {
	Name    string        `json:"name"`    // "up" / "down"
	Framing qdisc.Framing `json:"framing"` // "ethernet" or "ip"
	// Granularity is what the disciplines take as one packet: "segment"
	// or "gso" (see Config.Granularity).
	Granularity qdisc.Granularity `json:"granularity"`
	// ClockNs and Wall are when the direction's loop copied these
	// counters (see Snapshot).
	ClockNs int64     `json:"clock_ns"`
	Wall    time.Time `json:"wall"`
	// Chain is the chain in tc syntax (tcspec.FormatChain), "" for a
	// direct path; Qdiscs has each discipline instance of the tree, root
	// first.
	Chain  string          `json:"chain"`
	Qdiscs []QdiscSnapshot `json:"qdiscs"`
	// Classes are the tree's classes (htb's, prio's bands, the class a
	// netem's or tbf's child hangs on), in the order tc's lines make
	// them, for a tree with htb or prio; none for a chain of netem, tbf
	// and the classless disciplines.
	Classes []ClassSnapshot `json:"classes,omitempty"`
	// Counters: what entered, left and was dropped (by reason), marked,
	// duplicated and reordered, and the delay. Reordered counts delivered
	// TCP data segments whose sequence number is below the highest
	// delivered before in their flow (RFC 4737), among the segments that
	// arrived at the router in order: what the emulator reordered, not
	// the sender's retransmissions.
	Counters link.Counters `json:"counters"`
	Lateness Lateness      `json:"lateness"` // release lateness vs deadline
	// Ring is the kernel's ring in front of the router; on a router of
	// many hosts, its Size and Drops are the sums over the sending hosts'
	// rings (each port has its own).
	Ring RingSnapshot `json:"ring"`
	// WriteDrops counts segments the egress device refused after the link
	// had delivered them; WriteDropsByReason splits them by errno
	// ("eagain", "enobufs", "other").
	WriteDrops         uint64            `json:"write_drops"`
	WriteDropsByReason map[string]uint64 `json:"write_drops_by_reason,omitempty"`
	// Malformed counts packets dropped as the router read them: bytes
	// that are not an IPv4 or IPv6 packet whose header and length field
	// fit its size (packet.CheckIPLength; a GSO super-packet's length
	// field must cover it whole), a virtio-net header that does not fit
	// its packet (a super-packet that cannot be split into segments),
	// packets the device itself refused to hand over (tun.ErrMalformed),
	// and super-packets the device split only in part
	// (tun.ErrTooManySegments: its segments beyond a batch are lost; the
	// others cross).
	Malformed uint64 `json:"malformed"`
	// NonIP counts the frames that are not IP packets (ARP, LLDP, ...)
	// that crossed outside the link, unshaped: only on packet sockets.
	NonIP *NonIPSnapshot `json:"non_ip,omitempty"`
	GSO   GSOSnapshot    `json:"gso"`
	// MaxInFlight is the most packets (buffers) the direction has held.
	MaxInFlight int          `json:"max_in_flight"`
	Loop        LoopSnapshot `json:"loop"`
	// Flows has the direction's flows (per 5-tuple), in order of first
	// appearance, or the busiest first when a status request asked for
	// some of them; FlowsTotal is how many there are in all.
	Flows      []FlowSnapshot `json:"flows"`
	FlowsTotal int            `json:"flows_total"`
	// Verdict is fidelity.Judge's on the direction's whole run so far
	// (Fidelity): whether it did what its chain said, and if not why.
	// Router.Snapshot sets it.
	Verdict *fidelity.Verdict `json:"verdict,omitempty"`
	// Ports are the hosts' parts of the direction, its ingress ports
	// (the sending hosts) first, on a router of Config.Clients and
	// Servers; none on one of Client and Server. NoRoute counts packets
	// whose destination was no host's address, dropped as they entered.
	Ports   []PortSnapshot `json:"ports,omitempty"`
	NoRoute uint64         `json:"no_route,omitempty"`

	chain  []qdisc.Spec   // the chain when the counters were copied
	access [][]qdisc.Spec // and the access links' (many hosts)
}

// Fidelity returns what fidelity.Judge needs to know of the direction:
// its release lateness, the drops in the ring in front of it and how busy
// its loop was.
func (d DirSnapshot) Fidelity() fidelity.Direction {
	return fidelity.Direction{
		Name:        d.Name,
		Releases:    d.Lateness.N,
		LatenessP99: time.Duration(d.Lateness.P99Ns),
		RingDrops:   d.Ring.Drops,
		Running:     time.Duration(d.Loop.RunNs),
		Busy:        time.Duration(d.Loop.BusyNs),
		Held:        time.Duration(d.Loop.HeldNs),
	}
}

// QdiscSnapshot is one discipline instance, as `tc -s qdisc show` lists
// it: Handle and Parent as tc prints them ("1:", "root", "1:1"), with the
// handles the tree's tc lines give (tcspec.FormatScript: down a chain 1:,
// 2:, ... from the root; an htb's or prio's own; MIN: under a class
// MAJ:MIN), and Options its configuration in tc syntax (tcspec.Format),
// defaults filled in. Its counters' dropped and dropped_by_reason are the
// segments this instance dropped itself, never those of its child.
type QdiscSnapshot struct {
	Kind     string             `json:"kind"`
	Handle   string             `json:"handle"`
	Parent   string             `json:"parent"`
	Options  string             `json:"options"`
	Counters link.QdiscCounters `json:"counters"`
	// DirectPackets is an htb's direct_packets_stat: the packets its
	// direct queue took.
	DirectPackets uint64 `json:"direct_packets,omitempty"`
	// OptionStats are the lines of statistics tc -s prints among the
	// qdisc's options, before its counters (tcspec.ShowOptionStats: sfq's
	// RED mode), and XStats the lines of extended statistics it prints
	// under its counters (tcspec.ShowXStats); empty for a kind that has
	// none.
	OptionStats string `json:"option_stats,omitempty"`
	XStats      string `json:"xstats,omitempty"`
}

// ClassSnapshot is one class of the tree, as `tc -s class show` lists
// it: an htb class, a prio band, or the one class of a netem or tbf that
// its child hangs on. ClassID, Parent ("root" for an htb class at the
// top) and Leaf (the handle of the qdisc on it, "" for none or the
// kernel's default) are as tc prints them; Options are an htb class's
// options as the kernel holds them, in tc syntax (tcspec.FormatHTBClass),
// and Level its level (0 for a leaf). Counters are an htb class's own (its
// leaf's drops, its overlimits, its leaf's qlen and backlog) or a band's
// qdisc's; Lends and Borrows count the packets an htb class sent within
// its rate and on an ancestor's; Tokens and CTokens are its buckets'
// credit in ns, negative in debt.
type ClassSnapshot struct {
	Kind     string             `json:"kind"`
	ClassID  string             `json:"classid"`
	Parent   string             `json:"parent"`
	Leaf     string             `json:"leaf,omitempty"`
	Options  string             `json:"options,omitempty"`
	Level    int                `json:"level"`
	Counters link.QdiscCounters `json:"counters"`
	Lends    uint64             `json:"lends"`
	Borrows  uint64             `json:"borrows"`
	TokensNs int64              `json:"tokens_ns"`
	CTokens  int64              `json:"ctokens_ns"`
}

// TCDrops returns each qdisc's drops as tc shows them: its own and those
// of the qdiscs under it, which the kernel adds to every ancestor's (tbf
// counts what its child refused; qdisc_tree_reduce_backlog the drops a
// child makes while dequeuing). The snapshot counts each one's own.
func (d DirSnapshot) TCDrops() []uint64 {
	major := func(handle string) string { m, _, _ := strings.Cut(handle, ":"); return m }
	out := make([]uint64, len(d.Qdiscs))
	var sum func(i int) uint64
	sum = func(i int) uint64 {
		n := d.Qdiscs[i].Counters.Dropped
		for j, q := range d.Qdiscs {
			if j != i && q.Parent != "root" && major(q.Parent) == major(d.Qdiscs[i].Handle) {
				n += sum(j)
			}
		}
		return n
	}
	for i := range d.Qdiscs {
		out[i] = sum(i)
	}
	return out
}

// classSnapshot copies one class of a tree.
func classSnapshot(c tcspec.PlacedClass) ClassSnapshot {
	cs := ClassSnapshot{Kind: c.Kind, ClassID: c.ID.String(), Parent: c.Parent.String()}
	if c.Root {
		cs.Parent = "root"
	}
	if c.Leaf != 0 {
		cs.Leaf = c.Leaf.String()
	}
	switch {
	case c.HTB != nil:
		cs.Options = tcspec.FormatHTBClass(c.HTB.Class)
		cs.Level = c.HTB.Level
		cs.Counters = link.QdiscCountersOf(c.HTB.Stats)
		cs.Lends, cs.Borrows = c.HTB.Lends, c.HTB.Borrows
		cs.TokensNs, cs.CTokens = int64(c.HTB.Tokens), int64(c.HTB.CTokens)
	case c.Band != nil:
		cs.Counters = link.QdiscCountersOf(c.Band.Stats())
	}
	return cs
}

// Lateness summarises delays the router itself adds, in ns: release
// lateness (how long after the time the link said a packet could leave the
// router handed it to the egress device) or the ring's stalls.
// Percentiles come from a stats.Hist (exact for the first 256 values and
// below 128 ns, within 0.8 % otherwise); Max is exact.
type Lateness struct {
	N     uint64 `json:"n"`
	P50Ns int64  `json:"p50_ns"`
	P99Ns int64  `json:"p99_ns"`
	MaxNs int64  `json:"max_ns"`
}

// RoundTripLatenessP99 is what the router's own late releases add, at
// the 99th percentile, to a packet that crosses it out and back (the sum of
// both directions' p99 lateness): a round trip measured across the router
// that exceeds the emulated one by up to this much was delayed by wake-ups
// the router itself saw and reported, not by an error in the emulation.
func (s Snapshot) RoundTripLatenessP99() time.Duration {
	return time.Duration(s.Up.Lateness.P99Ns + s.Down.Lateness.P99Ns)
}

// RingSnapshot describes the kernel's ring between the direction's
// ingress device and the router: packets wait there while the router
// falls behind (unseen by the emulator on a TUN; on a packet socket with
// their arrival times, see Wait), and the kernel drops what does not fit.
type RingSnapshot struct {
	// Size is the ring's capacity in packets (the TUN's txqueuelen, the
	// packet socket's frames), 0 if unknown.
	Size int `json:"size"`
	// Drops counts the packets the kernel dropped because the ring was
	// full: the emulator's own loss, which should stay 0.
	Drops uint64 `json:"drops"`
	// Err is the error of reading Size and Drops, if any.
	Err string `json:"err,omitempty"`
	// Reads counts the router's reads that found packets, FullReads those
	// that took all they were allowed to (so more were probably waiting).
	Reads     uint64 `json:"reads"`
	FullReads uint64 `json:"full_reads"`
	// Waiting estimates the ring's occupancy: the packets the router
	// drained in one run of reads, from the read after a wait to the
	// first that found the ring empty behind it (1 when nothing else
	// waited). Its N counts the runs.
	Waiting WaitingSummary `json:"waiting"`
	// Wait is how long each packet waited in the ring, from the kernel's
	// time of its arrival to the router's read, in ns: the router's own
	// delay before a packet reaches the link, which the link's delay
	// includes. Only a packet socket stamps arrivals; on a TUN, a packet
	// arrives when it is read, and Wait is absent.
	Wait *Lateness `json:"wait,omitempty"`
	// Stall is the router's own delay on packets waiting in the ring:
	// from a read that took all it was allowed (so that more were probably
	// waiting: a whole batch, or fewer when a deadline was near or the
	// read pacer held reads back) to the next read that took packets, in
	// ns. A few
	// microseconds when the loop keeps up (the time to release what it
	// read); a loop that is descheduled or falls behind shows here, since
	// packets waiting in the ring have no deadline the release lateness
	// could be measured against.
	Stall Lateness `json:"stall"`
}

// NonIPSnapshot counts the frames that are not IP packets, which cross
// outside the link as they arrive: Frames, their Bytes (Ethernet headers
// included) and those the egress device Refused.
type NonIPSnapshot struct {
	Frames  uint64 `json:"frames"`
	Bytes   uint64 `json:"bytes"`
	Refused uint64 `json:"refused"`
}

// WaitingSummary summarises the ring occupancy estimates, in packets.
type WaitingSummary struct {
	N   uint64  `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max int64   `json:"max"`
}

// RingCounters are the kernel's figures for the ring in front of a
// direction's ingress device, as Config.UpRing and DownRing report them.
type RingCounters struct {
	Size  int    // capacity in packets (a TUN's txqueuelen, a packet socket's frames)
	Drops uint64 // packets dropped because it was full (or lost there otherwise: see PacketRing)
}

// GSOSnapshot describes how super-packets crossed. Whole tells whether
// they enter the link whole (both devices take them and no trace is set;
// see the package documentation); Split counts super-packets split before
// the link otherwise; GROWrites counts the TCP super-packets the direction
// coalesced from packets that left the link apart, and GROPackets the
// packets they held; USOWrites counts the USO super-packets the direction
// wrote, each holding several consecutive UDP datagrams of one flow that
// were due together, and USODatagrams the datagrams they held (all also
// counted, segment by segment, everywhere else).
type GSOSnapshot struct {
	Whole        bool   `json:"whole"`
	Split        uint64 `json:"split"`
	GROWrites    uint64 `json:"gro_writes"`
	GROPackets   uint64 `json:"gro_packets"`
	USOWrites    uint64 `json:"uso_writes"`
	USODatagrams uint64 `json:"uso_datagrams"`
}

// LoopSnapshot describes the direction's loop thread: its thread id while
// it runs (for taskset or chrt; 0 otherwise), the CPU time it has used,
// how long it has run (RunNs) and how much of that it spent in passes
// that read or released packets (BusyNs: a loop that keeps up has time
// left over; one busy all the time is saturated), how much it spent
// holding reads back while packets waited, so as not to take in more than
// it could release on time (HeldNs; see readPacer: busy and held together
// near RunNs, the router set the pace), the times it waited in the kernel
// (Sleeps) and the passes in which it polled instead, a deadline being
// near (Spins).
type LoopSnapshot struct {
	TID    int    `json:"tid"`
	CPUNs  int64  `json:"cpu_ns"`
	RunNs  int64  `json:"run_ns"`
	BusyNs int64  `json:"busy_ns"`
	HeldNs int64  `json:"held_ns"`
	Sleeps uint64 `json:"sleeps"`
	Spins  uint64 `json:"spins"`
	// Nice and SliceNs are the loop thread's normal scheduling: its nice
	// value now (-20 as root while the loop mostly waits for deadlines,
	// 0 while traffic keeps it busy) and the time slice it asked for (0:
	// the kernel's default; kernels before 6.12 do not honour it).
	Nice    int   `json:"nice"`
	SliceNs int64 `json:"slice_ns"`
}

// FlowSnapshot counts one 5-tuple of a direction: delivered segments, their
// framed bytes and their transport payload bytes (what iperf3 counts),
// segments dropped (by the link or refused by the egress device),
// CE marks, and the delay through the chain of what was delivered.
type FlowSnapshot struct {
	Flow    FlowKey `json:"flow"`
	Packets uint64  `json:"packets"`
	Bytes   uint64  `json:"bytes"`
	Payload uint64  `json:"payload_bytes"`
	// Dropped counts every segment lost, DroppedByReason those the chain
	// dropped, by reason: the difference is what the egress device
	// refused.
	Dropped         uint64       `json:"dropped"`
	DroppedByReason link.Reasons `json:"dropped_by_reason"`
	// Marked counts the CE marks set on the flow's segments.
	Marked    uint64 `json:"marked"`
	Reordered uint64 `json:"reordered"`
	// Delay is the delay of the flow's delivered buffers through the
	// router: from their arrival at the link to their write to the egress
	// device, as the receiving host sees it (the direction's delay counts
	// to the link's release, a few microseconds earlier).
	Delay FlowDelay `json:"delay"`
}

// FlowDelay summarises a flow's delays through the router: N buffers
// (a whole super-packet is one), their exact mean and the largest, in ns.
// The mean and N are running figures, so the mean over an interval is the
// difference of two snapshots' N·MeanNs over the difference of their N.
type FlowDelay struct {
	N      uint64  `json:"n"`
	MeanNs float64 `json:"mean_ns"`
	MaxNs  int64   `json:"max_ns"`
}

func (l *loop) snapshot() DirSnapshot {
	var s DirSnapshot
	l.r.inLoop(l, func() { s = l.snap() })
	if l.ring != nil {
		rc, err := l.ring()
		s.Ring.Size, s.Ring.Drops = rc.Size, rc.Drops
		if err != nil {
			s.Ring.Err = err.Error()
		}
	}
	if l.hosts != nil {
		l.hosts.readRings(&s)
	}
	return s
}

// snap copies the counters; it runs on the loop's goroutine.
func (l *loop) snap() DirSnapshot {
	st := &l.st
	now := l.clk.Now()
	var c link.Counters
	if l.path != nil {
		c = l.path.Counters()
	} else {
		c = l.dir.Counters()
	}
	c.Reordered = st.flows.reordered()
	if l.onThread {
		l.cpu = threadCPU()
	}
	run := time.Duration(0)
	switch {
	case l.began != 0 && l.ended == 0:
		run = time.Duration(now - l.began)
	case l.began != 0:
		run = time.Duration(l.ended - l.began)
	}
	s := DirSnapshot{
		Name:        l.name,
		Framing:     st.framing,
		Granularity: l.env.Granularity,
		chain:       slices.Clone(l.chain),
		ClockNs:     int64(now),
		Wall:        l.clk.Wall(now),
		Chain:       tcspec.FormatChain(l.chain),
		Counters:    c,
		Lateness:    latenessOf(&st.late),
		Ring: RingSnapshot{
			Reads:     st.ring.reads,
			FullReads: st.ring.full,
			Waiting:   waitingOf(&st.ring.runs),
			Stall:     latenessOf(&st.ring.stalls),
		},
		Malformed: st.malformed,
		GSO: GSOSnapshot{
			Whole:        l.whole,
			Split:        st.split,
			GROWrites:    st.gro.writes,
			GROPackets:   st.gro.packets,
			USOWrites:    st.uso.writes,
			USODatagrams: st.uso.datagrams,
		},
		MaxInFlight: st.maxLen,
		Loop: LoopSnapshot{TID: int(l.tid.Load()), CPUNs: int64(l.cpu), RunNs: int64(run), BusyNs: st.busy, HeldNs: st.held,
			Sleeps: st.sleeps, Spins: st.spins, Nice: l.nice, SliceNs: int64(l.slice)},
		Flows: st.flows.snapshot(),
	}
	s.FlowsTotal = len(s.Flows)
	if l.stamps {
		w := latenessOf(&st.ringWait)
		s.Ring.Wait = &w
		s.NonIP = &NonIPSnapshot{Frames: st.nonIP.frames, Bytes: st.nonIP.bytes, Refused: st.nonIP.refused}
	}
	for i, p := range l.placed {
		q := p.Qdisc
		qc := link.QdiscCountersOf(q.Stats())
		if i < len(st.qx) {
			e := &st.qx[i]
			// The instance's own drops, from the link's events: a
			// discipline's Stats may also count packets its child
			// refused.
			qc.Dropped = e.drops
			qc.DroppedByReason = e.droppedBy
		}
		parent := "root"
		if !p.Root {
			parent = p.Parent.String()
		}
		qs := QdiscSnapshot{
			Kind:        q.Kind(),
			Handle:      p.Handle.String(),
			Parent:      parent,
			Options:     strings.TrimPrefix(strings.TrimPrefix(tcspec.Format(q.Config()), q.Kind()), " "),
			Counters:    qc,
			OptionStats: tcspec.ShowOptionStats(q),
			XStats:      tcspec.ShowXStats(q, now),
		}
		if h, ok := q.(*qdisc.HTB); ok {
			qs.DirectPackets = h.DirectPackets()
		}
		s.Qdiscs = append(s.Qdiscs, qs)
	}
	if tcspec.HasTree(l.chain) {
		_, classes := tcspec.Layout(l.dir.Root())
		for _, c := range classes {
			s.Classes = append(s.Classes, classSnapshot(c))
		}
	}
	for why, n := range st.writeDrops {
		if n > 0 {
			if s.WriteDropsByReason == nil {
				s.WriteDropsByReason = map[string]uint64{}
			}
			s.WriteDropsByReason[writeReasonNames[why]] = n
			s.WriteDrops += n
		}
	}
	if l.hosts != nil {
		s.Ports = l.portSnapshots(&s)
		s.NoRoute = st.noRoute
		for _, c := range l.hosts.chains {
			s.access = append(s.access, slices.Clone(c))
		}
	}
	return s
}

func latenessOf(h *stats.Hist) Lateness {
	return Lateness{N: h.N(), P50Ns: int64(h.Percentile(50)), P99Ns: int64(h.Percentile(99)), MaxNs: h.Max()}
}

func waitingOf(h *stats.Hist) WaitingSummary {
	return WaitingSummary{N: h.N(), P50: h.Percentile(50), P99: h.Percentile(99), Max: h.Max()}
}
