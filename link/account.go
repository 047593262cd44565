package link

import (
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/stats"
)

// account keeps the counters of what crossed a direction or a whole path:
// in total and, with perFlow, per packet.Flow, with the exact delays kept
// up to a bound (Config.KeepDelays, MaxKeptDelays). Direction and Path
// both count through it, so that a path's end-to-end figures mean what a
// direction's do.
type account struct {
	total   acc
	perFlow bool
	keep    bool
	kept    int // delays kept, while keep
	maxKept int
	flows   []*acc
	flowMap map[int32]*acc
	reorder []stats.Reorder // per flow, for the reordering count
	reorMap map[int32]*stats.Reorder
}

// init sets the account up as cfg asks.
func (a *account) init(perFlow, keep bool, maxKept int) {
	a.perFlow, a.keep, a.maxKept = perFlow, keep, maxKept
	if a.maxKept <= 0 {
		a.maxKept = DefaultMaxKeptDelays
	}
	a.total.keep = keep
}

// sent counts p, of n framed bytes, as offered.
func (a *account) sent(p *packet.Packet, n int) {
	segs := uint64(p.Segments())
	a.total.c.Sent += segs
	a.total.c.BytesIn += uint64(n)
	if a.perFlow {
		f := a.flow(p.Flow)
		f.c.Sent += segs
		f.c.BytesIn += uint64(n)
	}
}

// duplicated counts p as a duplicate the path made.
func (a *account) duplicated(p *packet.Packet) {
	segs := uint64(p.Segments())
	a.total.c.Duplicated += segs
	if a.perFlow {
		a.flow(p.Flow).c.Duplicated += segs
	}
}

// delivered counts p, of n framed bytes, as leaving after delay ns, and
// reports whether it left out of order in its flow.
func (a *account) delivered(p *packet.Packet, n int, delay int64) bool {
	segs := p.Segments()
	a.total.delivered(segs, n, delay)
	reordered := p.Flow >= 0 && a.reordered(p.Flow, p.Seq)
	if reordered {
		a.total.c.Reordered++
	}
	if a.perFlow {
		f := a.flow(p.Flow)
		f.delivered(segs, n, delay)
		if reordered {
			f.c.Reordered++
		}
	}
	if a.keep {
		a.kept++
		if a.perFlow {
			a.kept++
		}
		if a.kept >= a.maxKept {
			a.stopKeeping()
		}
	}
	return reordered
}

// dropped counts p as dropped for why.
func (a *account) dropped(p *packet.Packet, why qdisc.Reason) {
	segs := uint64(p.Segments())
	a.total.dropped(segs, why)
	if a.perFlow {
		a.flow(p.Flow).dropped(segs, why)
	}
}

// marked counts a CE mark on p.
func (a *account) marked(p *packet.Packet) {
	segs := uint64(p.Segments())
	a.total.c.Marked += segs
	if a.perFlow {
		a.flow(p.Flow).c.Marked += segs
	}
}

// stopKeeping moves every kept delay into its accumulator's histogram and
// keeps none from now on: the bound of Config.MaxKeptDelays.
func (a *account) stopKeeping() {
	a.keep = false
	a.total.stopKeeping()
	for _, f := range a.flows {
		if f != nil {
			f.stopKeeping()
		}
	}
	for _, f := range a.flowMap {
		f.stopKeeping()
	}
}

// reordered applies RFC 4737's definition (stats.Reorder) to flow f.
func (a *account) reordered(f int32, seq int64) bool {
	if f < denseFlows {
		if int(f) >= len(a.reorder) {
			a.reorder = append(a.reorder, make([]stats.Reorder, int(f)+1-len(a.reorder))...)
		}
		return a.reorder[f].Arrive(seq)
	}
	if a.reorMap == nil {
		a.reorMap = map[int32]*stats.Reorder{}
	}
	r := a.reorMap[f]
	if r == nil {
		r = new(stats.Reorder)
		a.reorMap[f] = r
	}
	return r.Arrive(seq)
}

// flow returns flow f's accumulator, making it on first use.
func (a *account) flow(f int32) *acc {
	if f >= 0 && f < denseFlows {
		for int(f) >= len(a.flows) {
			a.flows = append(a.flows, nil)
		}
		if x := a.flows[f]; x != nil {
			return x
		}
		x := &acc{keep: a.keep}
		a.flows[f] = x
		return x
	}
	if a.flowMap == nil {
		a.flowMap = map[int32]*acc{}
	}
	x := a.flowMap[f]
	if x == nil {
		x = &acc{keep: a.keep}
		a.flowMap[f] = x
	}
	return x
}

// flowCounters returns a snapshot of every flow's counters, or nil
// without perFlow.
func (a *account) flowCounters() map[int32]Counters {
	if !a.perFlow {
		return nil
	}
	m := make(map[int32]Counters, len(a.flows)+len(a.flowMap))
	for f, x := range a.flows {
		if x != nil {
			m[int32(f)] = x.snapshot()
		}
	}
	for f, x := range a.flowMap {
		m[f] = x.snapshot()
	}
	return m
}

// reserve is Direction.ReserveDelays.
func (a *account) reserve(n int, perFlow map[int32]int) {
	if !a.keep {
		return
	}
	a.total.reserve(min(n, a.maxKept-a.kept))
	if a.perFlow {
		for f, k := range perFlow {
			a.flow(f).reserve(min(k, a.maxKept-a.kept))
		}
	}
}
