// Package qdisc implements Linux's queue disciplines (netem, tbf, the fifos,
// pfifo_fast, codel, fq_codel, pie, fq_pie, red, sfq, cake, dualpi2, and
// the classful htb and prio with u32 filters) as steppable state machines
// on a virtual clock, with tc's parent/child structure.
//
// Every method that depends on time takes now as an argument; a discipline
// that has no packet ready says when it will have one. Nothing here does I/O,
// reads the wall clock, starts goroutines or uses global randomness: the same
// code runs in the simulator, in tests and in the real-time router.
//
// The behaviour follows the kernel's net/sched/sch_{netem,tbf,fifo,generic,
// codel,fq_codel,pie,fq_pie,red,sfq,cake,htb,prio}.c, cls_u32.c and
// include/net/{codel.h,codel_impl.h,pie.h,red.h} (Linux 6.1 to 6.18),
// sch_dualpi2.c (6.17, RFC 9332), and tc's parsing in iproute2 (6.1, for
// what tc computes before the kernel sees it; q_dualpi2.c of 6.17); where a
// discipline deviates on purpose (a "correct" mode next to the
// kernel-compatible one) its config says so.
package qdisc

import (
	"fmt"
	"math"

	"wanlab/clock"
	"wanlab/packet"
)

// Verdict is the outcome of Enqueue, as the kernel's NET_XMIT_* codes.
type Verdict uint8

const (
	// Queued: the packet was accepted.
	Queued Verdict = iota
	// Dropped: the packet itself was dropped (and reported to the Observer).
	Dropped
	// Congested: the packet was accepted but others were dropped to make room
	// (fq_codel's overflow from the packet's own flow reports this; the
	// kernel's NET_XMIT_CN).
	Congested
)

// Reason says why a packet was dropped or marked.
type Reason uint8

// Reasons for drops and marks. Their String forms appear in event files
// ("dropped:limit") and are part of wanlab's output contract.
const (
	ReasonNone        Reason = iota
	ReasonLimit              // queue full: tail drop (fifos, netem limit, codel/pie limit)
	ReasonHeadDrop           // pfifo_head_drop made room by dropping the oldest packet
	ReasonLoss               // netem's loss model
	ReasonOversize           // tbf: packet larger than the bucket can ever hold
	ReasonCoDel              // CoDel's control law (codel, fq_codel)
	ReasonOverflow           // fq_codel: limit or memory_limit reached, dropped from the fattest flow
	ReasonPIE                // PIE's early drop
	ReasonCEThreshold        // marked because sojourn exceeded ce_threshold
	ReasonTrace              // trace-driven link: no delivery opportunity left
	ReasonFlushed            // the discipline holding it was replaced or removed (tc qdisc replace/del)
	ReasonClassify           // htb: its filters sent it round a loop of classes
	ReasonRED                // RED's early or forced drop or mark (the average queue)
	ReasonDualPI2            // dualpi2's PI2 drop or mark: p_C = p'² in the C queue, k·p' in the L queue
	ReasonDualPI2Step        // dualpi2's L queue step threshold: a mark, or the drop of a Not-ECT packet
	ReasonCobalt             // cake: COBALT's CoDel control law or its BLUE probability (drop or mark)
	ReasonAckFilter          // cake: a pure ACK made redundant by a later one of its flow (ack-filter)
	reasonCount
)

var reasonNames = [...]string{
	ReasonNone:        "none",
	ReasonLimit:       "limit",
	ReasonHeadDrop:    "head_drop",
	ReasonLoss:        "loss",
	ReasonOversize:    "oversize",
	ReasonCoDel:       "codel",
	ReasonOverflow:    "overflow",
	ReasonPIE:         "pie",
	ReasonCEThreshold: "ce_threshold",
	ReasonTrace:       "trace",
	ReasonFlushed:     "flushed",
	ReasonClassify:    "classify",
	ReasonRED:         "red",
	ReasonDualPI2:     "dualpi2",
	ReasonDualPI2Step: "dualpi2_step",
	ReasonCobalt:      "cobalt",
	ReasonAckFilter:   "ack_filter",
}

// String returns the reason's short name.
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// Reasons returns every reason, for counters indexed by Reason.
func Reasons() []Reason {
	rs := make([]Reason, 0, reasonCount)
	for r := ReasonNone; r < reasonCount; r++ {
		rs = append(rs, r)
	}
	return rs
}

// NumReasons is the number of distinct Reason values (for arrays indexed by
// Reason).
const NumReasons = int(reasonCount)

// Observer is told about every packet that a discipline drops or marks. It is
// the only way dropped packets leave a discipline: after Drop returns, the
// packet belongs to the observer (which typically counts it and frees it).
// from is the discipline instance that acted, so that an observer can credit
// each instance of a tree (the second netem of "netem; netem" is not the
// first).
type Observer interface {
	// Drop reports that the discipline from discarded p.
	Drop(now clock.Time, p *packet.Packet, from Qdisc, why Reason)
	// Mark reports that the discipline from set CE on p; p stays queued.
	Mark(now clock.Time, p *packet.Packet, from Qdisc, why Reason)
}

// Env is what a tree of disciplines shares: where drops go, where duplicates
// come from, the device's properties and the seed of all randomness.
type Env struct {
	// Observer receives drops and marks; nil means packets are freed silently.
	Observer Observer
	// Pool supplies packets for netem duplicates.
	Pool *packet.Pool
	// Root is the root of the tree, which netem's duplicates re-enter, as
	// the kernel's rootq->enqueue. Build sets it.
	Root Qdisc
	// Seed seeds every discipline's random stream: the discipline at
	// position k of the tree draws from PositionSeed(Seed, k), a stream of
	// its own; netem's own "seed" overrides it.
	Seed uint64
	// MTU is the device MTU (the largest IP packet); zero means 1500.
	// psched_mtu, which sizes fq_codel's quantum and the default byte
	// limits, is MTU plus the framing's header (see PschedMTU).
	MTU int
	// Framing says what the device counts in a packet's length: the
	// Ethernet header too (the zero value) or the IP packet alone, as on a
	// TUN device. See PktLen.
	Framing Framing
	// Granularity says whether a GSO super-packet is as many packets as
	// its wire segments (GranularitySegment, the zero value) or one
	// (GranularityGSO).
	Granularity Granularity
	// TxQueueLen is the device's txqueuelen, the default limit of the fifos
	// and of pfifo_fast's bands. Zero means 1000.
	TxQueueLen int
	// HZ is the kernel tick rate for jiffy-granular timers (PIE's tupdate).
	// Zero means 250.
	HZ int
}

// Bounds of the device properties in Env, as Linux enforces them for a
// TUN or Ethernet device: dev_set_mtu keeps the MTU within [68, 65535]
// (the IPv4 minimum and tun's maximum); txqueuelen is a 32-bit count; the
// kernel runs at HZ 100 to 1000.
const (
	MinMTU = 68
	MaxMTU = 65535
	MinHZ  = 100
	MaxHZ  = 1000
)

// Check refuses device properties no Linux device has: an MTU outside
// [MinMTU, MaxMTU], a negative or 32-bit-overflowing txqueuelen, an HZ
// outside [MinHZ, MaxHZ], an unknown framing or an unknown granularity
// (zero values mean the defaults). The constructors call it; a caller may call it first to
// refuse bad input before building anything.
func (e *Env) Check() error {
	if e == nil {
		return nil
	}
	switch {
	case e.MTU != 0 && (e.MTU < MinMTU || e.MTU > MaxMTU):
		return fmt.Errorf("the device MTU %d is outside %d..%d, the range Linux allows; give an MTU in it (1500 is Ethernet's)", e.MTU, MinMTU, MaxMTU)
	case e.TxQueueLen < 0 || int64(e.TxQueueLen) > math.MaxUint32:
		return fmt.Errorf("the device's txqueuelen %d is outside 1..%d; give a packet count such as 1000", e.TxQueueLen, uint32(math.MaxUint32))
	case e.HZ != 0 && (e.HZ < MinHZ || e.HZ > MaxHZ):
		return fmt.Errorf("HZ %d is outside %d..%d, the tick rates Linux offers; give e.g. 250", e.HZ, MinHZ, MaxHZ)
	case e.Framing != FramingEthernet && e.Framing != FramingIP:
		return fmt.Errorf("framing %d is unknown; use ethernet or ip", e.Framing)
	case e.Granularity != GranularitySegment && e.Granularity != GranularityGSO:
		return fmt.Errorf("granularity %d is unknown; use segment or gso", e.Granularity)
	}
	return nil
}

// PschedMTU returns the kernel's psched_mtu: the device MTU (Env.MTU or
// 1500) plus the framing's header length, 1514 on Ethernet and 1500 on TUN.
func (e *Env) PschedMTU() int {
	if e == nil {
		return 1500 + FramingEthernet.HeaderLen()
	}
	mtu := e.MTU
	if mtu == 0 {
		mtu = 1500
	}
	return mtu + e.Framing.HeaderLen()
}

// PktLen returns p's length as the device's qdiscs count it: its IP length
// plus the framing's header, for a GSO super-packet those of all its wire
// segments (packet.WireLen plus a header per segment), as the kernel's
// qdisc_pkt_len_init counts a GSO skb.
func (e *Env) PktLen(p *packet.Packet) int { return p.WireLen() + p.Segments()*e.headerLen() }

// headerLen is the framing's header length, which the disciplines cache at
// construction so that framing a packet costs one addition.
func (e *Env) headerLen() int {
	if e == nil {
		return FramingEthernet.HeaderLen()
	}
	return e.Framing.HeaderLen()
}

// QueueLen returns Env.TxQueueLen or its default.
func (e *Env) QueueLen() int {
	if e == nil || e.TxQueueLen == 0 {
		return 1000
	}
	return e.TxQueueLen
}

// Hz returns Env.HZ or its default.
func (e *Env) Hz() int {
	if e == nil || e.HZ == 0 {
		return 250
	}
	return e.HZ
}

// Drop reports p as dropped by from to the observer, or frees it if there
// is none.
func (e *Env) Drop(now clock.Time, p *packet.Packet, from Qdisc, why Reason) {
	if e != nil && e.Observer != nil {
		e.Observer.Drop(now, p, from, why)
		return
	}
	p.Free()
}

// Mark reports p as CE-marked by from to the observer, if there is one.
func (e *Env) Mark(now clock.Time, p *packet.Packet, from Qdisc, why Reason) {
	p.Marked = true
	if e != nil && e.Observer != nil {
		e.Observer.Mark(now, p, from, why)
	}
}

// Qdisc is one queue discipline: a steppable state machine.
//
// Contract:
//   - Enqueue offers p at time now. The discipline either keeps p or reports
//     it to Env.Observer as dropped (and returns Dropped); it may also drop
//     other packets it holds.
//   - Dequeue returns the next packet that may leave at now. If none may,
//     it returns nil and the earliest time at which one could (with no further
//     arrivals), or clock.Never if it holds nothing that will ever become ready
//     by itself. A caller releases everything due by calling Dequeue until it
//     returns nil. When p is not nil, next is meaningless.
//   - Peek returns the packet that Dequeue(now) would return, without
//     removing it (disciplines that decide at dequeue, such as CoDel, decide
//     once and keep the result, as the kernel's qdisc_peek_dequeued does).
//   - Times passed in never go backwards.
type Qdisc interface {
	Enqueue(now clock.Time, p *packet.Packet) Verdict
	Dequeue(now clock.Time) (p *packet.Packet, next clock.Time)
	Peek(now clock.Time) (p *packet.Packet, next clock.Time)
	// Len is the number of packets held, children included: wire
	// segments under GranularitySegment, buffers under GranularityGSO.
	Len() int
	// Backlog is the number of bytes held, children included, each
	// packet counted as the device counts it (Env.PktLen).
	Backlog() int
	// Stats returns the counters tc -s would show.
	Stats() Stats
	// Kind is tc's name for the discipline ("netem", "tbf", ...).
	Kind() string
	// Child returns the attached child discipline, or nil.
	Child() Qdisc
	// Config returns the discipline's configuration, with defaults filled in.
	Config() Spec
	// Change applies spec, a configuration of the same kind, in place, as
	// tc qdisc change does through the kernel's *_change: the packets held
	// stay, and each kind keeps or resets its state as the kernel does
	// (see each discipline's Change). spec is the whole new configuration:
	// an option it leaves at its default takes the default, where tc qdisc
	// change keeps the old value of an option not named on its command
	// line for some kinds. A discipline that lowers its limit below what it
	// holds drops the excess as the kernel does, reporting each packet to
	// the Observer. Change returns an error, and changes nothing, if spec
	// is not a valid configuration of this discipline.
	Change(now clock.Time, spec Spec) error
	// Flush discards every packet the discipline holds, its children's
	// included, reporting each to the Observer as dropped with
	// ReasonFlushed, as the kernel's qdisc_reset does to a qdisc that tc
	// replaces or deletes.
	Flush(now clock.Time)
}

// Stats are the counters of one discipline, as `tc -s qdisc show` prints
// them (Sent bytes/pkt, dropped, overlimits, requeues, backlog) plus ECN
// marks. Bytes and Backlog count packets as the device does (Env.PktLen),
// as tc -s does: on Ethernet each packet's 14-byte header is included.
// Packets and Bytes count the wire segments of a super-packet, as the
// kernel's byte counters count a GSO skb's; Drops, Marks and Qlen count
// packets as the discipline takes them (see Granularity).
type Stats struct {
	Bytes      uint64 // bytes dequeued
	Packets    uint64 // packets dequeued
	Drops      uint64 // packets dropped by this discipline
	Overlimits uint64 // times the discipline throttled (tbf) or overflowed
	Requeues   uint64 // netem: packets sent ahead of their turn by reorder
	Marks      uint64 // packets CE-marked
	Qlen       int    // packets held now
	Backlog    int    // bytes held now
	// DropsByReason counts drops per Reason.
	DropsByReason [NumReasons]uint64
}

// Spec is the configuration of one discipline, as tc's options describe it.
// The concrete types are the ...Config struct types of this package, used
// as values: Build and Change refuse a pointer to one with an error.
type Spec interface {
	// Kind is tc's name for the discipline.
	Kind() string
}
