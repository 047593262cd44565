package testrun

import (
	"net/netip"

	"wanlab/qdisc"
	"wanlab/results"
	"wanlab/router"
)

// This file is the one place that knows the router's snapshot types: it
// turns a router.Snapshot into the run's own view of one reading (dirView),
// which the rest of the package uses.

// dirView is one reading of one direction of the router: running totals
// since the router started, and the current state.
type dirView struct {
	Chain string
	// Running totals, in wire segments and IP bytes (as the router counts).
	Sent, BytesIn, Delivered, BytesOut uint64
	Dropped, Marked, Duplicated        uint64
	Reordered, Queued                  uint64
	DroppedByReason                    map[string]uint64
	// Delay is the delay of delivered packets through the chain, in ns:
	// DelayN packets, their exact sum, and percentiles since the start.
	DelayN                                    uint64
	DelaySum                                  float64
	DelayMin, DelayP50, DelayP99, DelayMax    float64
	LatenessN                                 uint64
	LatenessP50Ns, LatenessP99Ns, LatenessMax int64
	// RingDrops counts what the kernel dropped in the ring in front of
	// the direction's loop; WriteDrops what the egress device refused.
	RingDrops, WriteDrops uint64
	// RingWait is how long packets waited in that ring, where the device
	// stamps arrivals (a packet socket); nil otherwise.
	RingWait *router.Lateness
	// LoopRunNs is how long the direction's loop has run, LoopBusyNs how
	// much of that it spent on packets, LoopHeldNs holding reads back.
	LoopRunNs, LoopBusyNs, LoopHeldNs int64
	Flows                             map[flowKey]flowCount
	// Qdiscs and Classes are the tree's qdiscs and classes, with running
	// totals, as tc lists them; none for a chain without classes.
	Qdiscs  []results.QdiscReport
	Classes []results.ClassReport
	// Order lists Flows' keys as the router lists them: in order of first
	// appearance.
	Order []flowKey
}

// flowKey names a 5-tuple: the protocol's name ("tcp", "udp") and the
// two endpoints.
type flowKey struct {
	proto    string
	src, dst netip.AddrPort
}

// flowCount is one flow's running totals in one direction: packets
// delivered, their bytes and payload, drops (by the chain's reasons too),
// CE marks, reordering, and the delay through the router of DelayN
// buffers delivered, DelaySum ns in all.
type flowCount struct {
	Packets, Bytes, Payload, Dropped, Reordered, Marked uint64
	DroppedByReason                                     map[string]uint64
	DelayN                                              uint64
	DelaySum                                            float64
}

// viewOf converts one direction of a router snapshot.
func viewOf(d router.DirSnapshot) dirView {
	c := d.Counters
	v := dirView{
		Chain: d.Chain,
		Sent:  c.Sent, BytesIn: c.BytesIn, Delivered: c.Delivered, BytesOut: c.BytesOut,
		Dropped: c.Dropped, Marked: c.Marked, Duplicated: c.Duplicated,
		Reordered: c.Reordered, Queued: c.Queued,
		DroppedByReason: map[string]uint64{},
		DelayN:          c.Delay.N, DelaySum: c.Delay.Mean * float64(c.Delay.N),
		DelayMin: c.Delay.Min, DelayP50: c.Delay.P50, DelayP99: c.Delay.P99, DelayMax: c.Delay.Max,
		LatenessN: d.Lateness.N, LatenessP50Ns: d.Lateness.P50Ns, LatenessP99Ns: d.Lateness.P99Ns, LatenessMax: d.Lateness.MaxNs,
		RingDrops: d.Ring.Drops, WriteDrops: d.WriteDrops, RingWait: d.Ring.Wait,
		LoopRunNs: d.Loop.RunNs, LoopBusyNs: d.Loop.BusyNs, LoopHeldNs: d.Loop.HeldNs,
		Flows: make(map[flowKey]flowCount, len(d.Flows)),
	}
	for r, n := range c.DroppedByReason {
		if n > 0 {
			v.DroppedByReason[qdisc.Reason(r).String()] += n
		}
	}
	if len(d.Classes) > 0 {
		drops := d.TCDrops()
		for i, q := range d.Qdiscs {
			c := q.Counters
			v.Qdiscs = append(v.Qdiscs, results.QdiscReport{Kind: q.Kind, Handle: q.Handle, Parent: q.Parent, Options: q.Options,
				Packets: c.Packets, Bytes: c.Bytes, Dropped: drops[i], Overlimits: c.Overlimits, Requeues: c.Requeues,
				Qlen: c.Qlen, Backlog: c.Backlog, DirectPackets: q.DirectPackets})
		}
		for _, c := range d.Classes {
			k := c.Counters
			v.Classes = append(v.Classes, results.ClassReport{Kind: c.Kind, ClassID: c.ClassID, Parent: c.Parent, Leaf: c.Leaf,
				Options: c.Options, Level: c.Level, Packets: k.Packets, Bytes: k.Bytes, Dropped: k.Dropped, Overlimits: k.Overlimits,
				Lends: c.Lends, Borrows: c.Borrows, Qlen: k.Qlen, Backlog: k.Backlog, TokensNs: c.TokensNs, CTokensNs: c.CTokens})
		}
	}
	for _, f := range d.Flows {
		fc := flowCount{
			Packets: f.Packets, Bytes: f.Bytes, Payload: f.Payload, Dropped: f.Dropped, Reordered: f.Reordered,
			Marked: f.Marked, DelayN: f.Delay.N, DelaySum: f.Delay.MeanNs * float64(f.Delay.N),
		}
		for r, n := range f.DroppedByReason {
			if n > 0 {
				if fc.DroppedByReason == nil {
					fc.DroppedByReason = map[string]uint64{}
				}
				fc.DroppedByReason[qdisc.Reason(r).String()] = n
			}
		}
		k := flowKey{f.Flow.Proto.String(), f.Flow.Src, f.Flow.Dst}
		v.Flows[k] = fc
		v.Order = append(v.Order, k)
	}
	return v
}

// routerView is one reading of both directions.
type routerView struct{ Up, Down dirView }

func viewOfSnapshot(s router.Snapshot) routerView {
	return routerView{Up: viewOf(s.Up), Down: viewOf(s.Down)}
}
