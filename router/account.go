package router

import (
	"syscall"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/stats"
)

// dirStats is one direction's accounting, the last step of a packet's
// path: what the router adds to the link's own counters (the segments
// each discipline dropped itself), the per-flow figures, release lateness,
// the estimate of the ring in front of the ingress (and, where the kernel
// stamps arrivals, how long packets waited there), refused writes, the
// frames that crossed outside the link, and what the loop did. It belongs
// to the direction's loop thread.
type dirStats struct {
	framing qdisc.Framing
	hdr     int // bytes the framing adds to each wire segment

	qx       []qextra // per discipline of the current chain, root first
	flows    flowTable
	late     stats.Hist
	ring     ringEstimate
	ringWait stats.Hist // ns from each packet's arrival to its read
	nonIP    nonIPCounts

	writeDrops [numWriteReasons]uint64
	malformed  uint64
	noRoute    uint64 // packets to no host's address (a router of many hosts)
	split      uint64
	uso        usoCounts
	gro        groCounts
	maxLen     int
	sleeps     uint64 // timed or untimed waits
	spins      uint64 // passes that polled instead of sleeping
	busy       int64  // ns the loop spent in passes that read or released packets
	held       int64  // ns between passes in which the read pacer held packets back
	spun       int64  // ns of the passes that followed a decision to spin
}

// qextra is every segment one discipline dropped itself (the link's
// events name the instance), which its Stats do not tell apart from what
// its child refused.
type qextra struct {
	drops     uint64
	droppedBy [qdisc.NumReasons]uint64
}

// usoCounts counts the USO super-packets the egress wrote and the
// datagrams inside them.
type usoCounts struct{ writes, datagrams uint64 }

// nonIPCounts counts the frames that are not IP packets, written to the
// other side at once, their bytes (with the link-layer header), and those
// the egress device refused.
type nonIPCounts struct{ frames, bytes, refused uint64 }

// groCounts counts the TCP super-packets the egress coalesced from
// packets that left the link apart, and the packets they took in.
type groCounts struct{ writes, packets uint64 }

// Write-drop reasons.
const (
	writeAgain = iota
	writeNoBufs
	writeOther
	numWriteReasons
)

var writeReasonNames = [numWriteReasons]string{"eagain", "enobufs", "other"}

func newDirStats(f qdisc.Framing) dirStats {
	return dirStats{framing: f, hdr: f.HeaderLen(), flows: newFlowTable()}
}

// resetChain starts the per-discipline extras of a new chain of n
// disciplines.
func (s *dirStats) resetChain(n int) { s.qx = make([]qextra, n) }

// dropped accounts p as dropped for why by the discipline at index qi of
// the chain (-1 for one of a replaced chain).
func (s *dirStats) dropped(p *packet.Packet, qi int, why qdisc.Reason) {
	s.flows.dropped(p, why)
	segs := uint64(p.Segments())
	if qi >= 0 && qi < len(s.qx) {
		s.qx[qi].drops += segs
		s.qx[qi].droppedBy[why] += segs
	}
}

// marked accounts p's CE mark in its flow.
func (s *dirStats) marked(p *packet.Packet) { s.flows.marked(p) }

// wrote accounts the outcome of writing p at t: errno 0 if the device
// took it.
func (s *dirStats) wrote(p *packet.Packet, t clock.Time, errno syscall.Errno) {
	if errno == 0 {
		s.flows.delivered(p, s.hdr, int64(t-p.Arrival))
		return
	}
	why := writeOther
	switch errno {
	case syscall.EAGAIN:
		why = writeAgain
	case syscall.ENOBUFS:
		why = writeNoBufs
	}
	s.writeDrops[why] += uint64(p.Segments())
	s.flows.dropped(p, qdisc.ReasonNone)
}

// ringEstimate estimates what the kernel does not say about its ring in
// front of the ingress: how many packets wait there, and for how long
// because of the router. A read that takes all it may means more may be
// waiting, and the loop reads again at once, so a run of such reads,
// ended by one that takes less, drained what was waiting when the run
// began (and what arrived while it ran): the runs' lengths estimate the
// occupancy (a run of one packet found the ring empty behind it). A read
// that took all it was allowed is followed by the next read at once unless
// the loop is held up (descheduled, slow to write what it released, a
// deadline near, or the read pacer holding reads back): the time until
// the next read that finds packets is the router's own delay on packets
// that were waiting, its stall.
type ringEstimate struct {
	run    uint64     // packets of the current run
	runs   stats.Hist // packets per finished run
	reads  uint64     // reads that took packets
	full   uint64     // reads that took all they were allowed
	since  clock.Time // when the last read took all it was allowed, 0 if it did not
	stalls stats.Hist // ns from such a read to the next read with packets
}

// read records a read at time at that took n packets; more reports that it
// took all it was allowed to.
func (r *ringEstimate) read(at clock.Time, n int, more bool) {
	if n > 0 {
		r.reads++
		if r.since != 0 {
			r.stalls.Add(int64(at - r.since))
		}
	}
	r.since = 0
	if more {
		r.since = at
	}
	r.run += uint64(n)
	if more {
		r.full++
		return
	}
	if r.run > 0 {
		r.runs.Add(int64(r.run))
	}
	r.run = 0
}
