package testrun

import (
	"net/netip"

	"wanlab/link"
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
	// Ports are the hosts' parts of the direction (router.PortSnapshot),
	// on a router of many hosts; NoRoute counts the packets to no host.
	Ports   []portView
	NoRoute uint64
}

// portView is one reading of one host's port of a direction: its
// packets end to end, its access link's own (nil without one), and the
// drops at its device.
type portView struct {
	Host, Place, If, Chain string
	End                    countView
	Access                 *countView
	RingDrops, WriteDrops  uint64
}

// countView is one reading of a port's or an access link's running
// totals, as dirView has the direction's.
type countView struct {
	Sent, BytesIn, Delivered, BytesOut, Dropped, Marked, Reordered uint64
	DroppedByReason                                                map[string]uint64
	DelayN                                                         uint64
	DelaySum, DelayMin, DelayP50, DelayP99, DelayMax               float64
}

// countOf converts a port's or an access link's counters.
func countOf(c link.Counters) countView {
	v := countView{Sent: c.Sent, BytesIn: c.BytesIn, Delivered: c.Delivered, BytesOut: c.BytesOut,
		Dropped: c.Dropped, Marked: c.Marked, Reordered: c.Reordered,
		DelayN: c.Delay.N, DelaySum: c.Delay.Mean * float64(c.Delay.N),
		DelayMin: c.Delay.Min, DelayP50: c.Delay.P50, DelayP99: c.Delay.P99, DelayMax: c.Delay.Max}
	for r, n := range c.DroppedByReason {
		if n > 0 {
			if v.DroppedByReason == nil {
				v.DroppedByReason = map[string]uint64{}
			}
			v.DroppedByReason[qdisc.Reason(r).String()] += n
		}
	}
	return v
}

// overRun returns a port's or an access link's counts between two
// readings, with the delay as DirectionReport's: its mean over the run,
// its percentiles from the end's reading.
func (end countView) overRun(base countView) (c countView, d results.DelayReport) {
	c = countView{Sent: sub(end.Sent, base.Sent), BytesIn: sub(end.BytesIn, base.BytesIn),
		Delivered: sub(end.Delivered, base.Delivered), BytesOut: sub(end.BytesOut, base.BytesOut),
		Dropped: sub(end.Dropped, base.Dropped), Marked: sub(end.Marked, base.Marked), Reordered: sub(end.Reordered, base.Reordered)}
	for k, n := range end.DroppedByReason {
		if n > base.DroppedByReason[k] {
			if c.DroppedByReason == nil {
				c.DroppedByReason = map[string]uint64{}
			}
			c.DroppedByReason[k] = n - base.DroppedByReason[k]
		}
	}
	n := sub(end.DelayN, base.DelayN)
	d = results.DelayReport{N: n, MinNs: end.DelayMin, P50Ns: end.DelayP50, P99Ns: end.DelayP99, MaxNs: end.DelayMax}
	if n > 0 {
		d.MeanNs = (end.DelaySum - base.DelaySum) / float64(n)
	}
	return c, d
}

// portsOverRun is the direction's ports at the end, each with its counts
// over the run: less what it had counted at the start (its reading in
// base, by host and place), as the direction's counts are.
func portsOverRun(base, end dirView) []results.PortReport {
	var out []results.PortReport
	for _, p := range end.Ports {
		var b portView
		for _, q := range base.Ports {
			if q.Host == p.Host && q.Place == p.Place {
				b = q
			}
		}
		c, delay := p.End.overRun(b.End)
		r := results.PortReport{Host: p.Host, Place: p.Place, If: p.If, Chain: p.Chain,
			Sent: c.Sent, BytesIn: c.BytesIn, Delivered: c.Delivered, BytesOut: c.BytesOut,
			Dropped: c.Dropped, DroppedByReason: c.DroppedByReason, Marked: c.Marked, Reordered: c.Reordered, Delay: delay,
			RingDrops: sub(p.RingDrops, b.RingDrops), WriteDrops: sub(p.WriteDrops, b.WriteDrops)}
		if p.Access != nil {
			var ba countView
			if b.Access != nil {
				ba = *b.Access
			}
			a, ad := p.Access.overRun(ba)
			r.Access = &results.AccessReport{Sent: a.Sent, Delivered: a.Delivered, Dropped: a.Dropped,
				DroppedByReason: a.DroppedByReason, Marked: a.Marked, Delay: ad}
		}
		out = append(out, r)
	}
	return out
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
	for _, p := range d.Ports {
		pv := portView{Host: p.Host, Place: p.Place, If: p.If, Chain: p.Chain, End: countOf(p.Counters),
			RingDrops: p.Ring.Drops, WriteDrops: p.WriteDrops}
		if p.Access != nil {
			a := countOf(*p.Access)
			pv.Access = &a
		}
		v.Ports = append(v.Ports, pv)
	}
	v.NoRoute = d.NoRoute
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
