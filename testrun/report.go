package testrun

import (
	"math"
	"slices"
	"sync"
	"time"

	"wanlab/fidelity"
	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/results"
	"wanlab/tcspec"
)

// routerStep is one reading of the router on the grid.
type routerStep struct {
	K    int
	View routerView
}

// routerRecord is what the run read from the router: a reading just before
// T0 (the base every count of the run is measured from) and one per grid
// point.
type routerRecord struct {
	mu   sync.Mutex // guards steps and changes
	base routerView
	// final is a reading after the traffic ended, when there is one:
	// what was still in flight at the last grid point has arrived.
	final    routerView
	hasFinal bool
	steps    []routerStep
	changes  []results.AppliedChange
	err      string // the first failed reading
}

// report builds the router's report of a run set up by s.
func (rec *routerRecord) report(s *Setup) *results.RouterReport {
	rep := &results.RouterReport{Mode: s.Mode, Testbed: s.Lab, Changes: rec.changes}
	if s.Mode == ModeDirect {
		rep.Note = "the hosts were joined by a plain veth pair: no router, no emulation, no verdict"
		return rep
	}
	if rec.err != "" {
		rep.Note = "reading the router failed: " + rec.err
	}
	if len(rec.steps) == 0 {
		return rep
	}
	last := rec.steps[len(rec.steps)-1].View
	if rec.hasFinal {
		last = rec.final
	}
	since := "run"
	if s.Mode == ModeLab {
		since = "testbed"
	}
	startUp, startDown := s.UpText, s.DownText
	up, down := s.Up, s.Down
	if s.Mode == ModeLab {
		// The testbed's chains as it reported them; one this wanlab cannot
		// read back (a distribution file it cannot find) counts as
		// configuring nothing.
		startUp, startDown = rec.base.Up.Chain, rec.base.Down.Chain
		up, _ = tcspec.ParseChain(startUp, tcspec.Options{})
		down, _ = tcspec.ParseChain(startDown, tcspec.Options{})
	}
	upChains, downChains := [][]qdisc.Spec{up}, [][]qdisc.Spec{down}
	for _, c := range s.Changes {
		for i, d := range c.Dirs {
			if d == "up" {
				upChains = append(upChains, c.Chains[i])
			} else {
				downChains = append(downChains, c.Chains[i])
			}
		}
	}
	minDelay := fidelity.MinDelay(append(upChains, downChains...)...)
	// The load as the router saw it, between the readings at its ends:
	// up to the last reading if the run was cut short.
	loadFrom, fromAt := rec.stepAt(s, s.Lead)
	loadTo, toAt := rec.stepAt(s, s.Lead+s.Duration)
	faithful := true
	for _, d := range []struct {
		name       string
		base, end  dirView
		chainStart string
		chain      []qdisc.Spec
		trace      *link.Trace
		from, to   dirView
	}{
		{name: "up", base: rec.base.Up, end: last.Up, chainStart: startUp, chain: up, trace: s.TraceUp, from: loadFrom.Up, to: loadTo.Up},
		{name: "down", base: rec.base.Down, end: last.Down, chainStart: startDown, chain: down, trace: s.TraceDown, from: loadFrom.Down, to: loadTo.Down},
	} {
		dr := results.DirectionReport{
			Name: d.name, ChainStart: d.chainStart, ChainEnd: d.end.Chain,
			ConfiguredRateBps: configuredRate(d.chain, d.trace), ConfiguredDelayNs: int64(fidelity.OneWayDelay(d.chain)),
			Sent: d.end.Sent - d.base.Sent, BytesIn: d.end.BytesIn - d.base.BytesIn,
			Delivered: d.end.Delivered - d.base.Delivered, BytesOut: d.end.BytesOut - d.base.BytesOut,
			Dropped: d.end.Dropped - d.base.Dropped, Marked: d.end.Marked - d.base.Marked,
			Duplicated: d.end.Duplicated - d.base.Duplicated, Reordered: d.end.Reordered - d.base.Reordered,
			DroppedByReason:  map[string]uint64{},
			PercentilesSince: since,
			RingDrops:        d.end.RingDrops - d.base.RingDrops,
			WriteDrops:       d.end.WriteDrops - d.base.WriteDrops,
			Lateness: results.LatenessReport{N: d.end.LatenessN - d.base.LatenessN,
				P50Ns: d.end.LatenessP50Ns, P99Ns: d.end.LatenessP99Ns, MaxNs: d.end.LatenessMax},
		}
		if w := d.end.RingWait; w != nil {
			n := w.N
			if b := d.base.RingWait; b != nil {
				n -= min(n, b.N)
			}
			dr.RingWait = &results.LatenessReport{N: n, P50Ns: w.P50Ns, P99Ns: w.P99Ns, MaxNs: w.MaxNs}
		}
		for k, n := range d.end.DroppedByReason {
			if n > d.base.DroppedByReason[k] {
				dr.DroppedByReason[k] = n - d.base.DroppedByReason[k]
			}
		}
		if span := toAt - fromAt; span > 0 {
			dr.LoadRateBps = float64(d.to.BytesOut-d.from.BytesOut) * 8 / span.Seconds()
		}
		n := d.end.DelayN - d.base.DelayN
		dr.Delay = results.DelayReport{N: n, MinNs: d.end.DelayMin, P50Ns: d.end.DelayP50, P99Ns: d.end.DelayP99, MaxNs: d.end.DelayMax}
		if n > 0 {
			dr.Delay.MeanNs = (d.end.DelaySum - d.base.DelaySum) / float64(n)
		}
		running, busy := time.Duration(d.end.LoopRunNs-d.base.LoopRunNs), time.Duration(d.end.LoopBusyNs-d.base.LoopBusyNs)
		held := time.Duration(d.end.LoopHeldNs - d.base.LoopHeldNs)
		if running > 0 {
			dr.LoopBusy = float64(busy) / float64(running)
			dr.LoopHeld = float64(held) / float64(running)
		}
		dr.Verdict = fidelity.Judge(fidelity.Direction{
			Name: d.name, Releases: dr.Lateness.N, LatenessP99: time.Duration(dr.Lateness.P99Ns), RingDrops: dr.RingDrops,
			Running: running, Busy: busy, Held: held,
		}, minDelay)
		dr.Qdiscs, dr.Classes = treeOverRun(d.base, d.end)
		dr.Ports, dr.NoRoute = portsOverRun(d.base, d.end), sub(d.end.NoRoute, d.base.NoRoute)
		faithful = faithful && dr.Verdict.Faithful
		rep.Directions = append(rep.Directions, dr)
	}
	rep.Faithful = &faithful
	rep.Steps = rec.columns(s)
	return rep
}

// stepAt returns the reading at the grid point of time d (or the last one
// before it, or the base, read at T0) and the time of its grid point.
func (rec *routerRecord) stepAt(s *Setup, d time.Duration) (routerView, time.Duration) {
	k := int(d / s.Step)
	v, at := rec.base, time.Duration(0)
	for _, st := range rec.steps {
		if st.K > k {
			break
		}
		v, at = st.View, time.Duration(st.K)*s.Step
	}
	return v, at
}

// columns lays the steps out per direction.
func (rec *routerRecord) columns(s *Setup) *results.RouterSteps {
	out := &results.RouterSteps{}
	prev := rec.base
	for _, st := range rec.steps {
		out.TS = append(out.TS, results.GridTime(st.K, s.Step.Seconds()))
		for _, c := range []struct {
			col  *results.RouterStepsColumns
			p, v dirView
		}{{&out.Up, prev.Up, st.View.Up}, {&out.Down, prev.Down, st.View.Down}} {
			c.col.DeliveredBytes = append(c.col.DeliveredBytes, sub(c.v.BytesOut, c.p.BytesOut))
			c.col.Dropped = append(c.col.Dropped, sub(c.v.Dropped, c.p.Dropped))
			c.col.Marked = append(c.col.Marked, sub(c.v.Marked, c.p.Marked))
			c.col.Queued = append(c.col.Queued, c.v.Queued)
			var mean *float64
			if n := sub(c.v.DelayN, c.p.DelayN); n > 0 {
				m := (c.v.DelaySum - c.p.DelaySum) / float64(n)
				mean = &m
			}
			c.col.DelayMeanNs = append(c.col.DelayMeanNs, mean)
		}
		prev = st.View
	}
	return out
}

// sub is a-b for running totals, 0 if a counter went backwards (a
// testbed restarted under --lab).
func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// configuredRate returns the smallest rate a chain and a trace set, in
// bit/s, a trace counting at its mean rate; 0 if neither sets one.
func configuredRate(chain []qdisc.Spec, trace *link.Trace) uint64 {
	var r uint64
	if trace != nil && trace.Period() > 0 {
		r = uint64(float64(trace.Len()) * link.OpportunityBytes * 8 / time.Duration(trace.Period()).Seconds())
	}
	if b := fidelity.BottleneckRate(chain).BitsPerSecond(); b > 0 && (r == 0 || b < r) {
		r = b
	}
	return r
}

func nan() float64 { return math.NaN() }

// treeOverRun is the tree's qdiscs and classes at the end, each with its
// counts over the run: less what it had counted at the start, when it was
// there then (a testbed of --lab), as the direction's counts are.
func treeOverRun(base, end dirView) ([]results.QdiscReport, []results.ClassReport) {
	qs := slices.Clone(end.Qdiscs)
	for i := range qs {
		q := &qs[i]
		for _, b := range base.Qdiscs {
			if b.Handle == q.Handle && b.Kind == q.Kind && b.Packets <= q.Packets && b.Dropped <= q.Dropped {
				q.Packets, q.Bytes, q.Dropped = q.Packets-b.Packets, q.Bytes-b.Bytes, q.Dropped-b.Dropped
				q.Overlimits, q.Requeues = q.Overlimits-min(b.Overlimits, q.Overlimits), q.Requeues-min(b.Requeues, q.Requeues)
				q.DirectPackets -= min(b.DirectPackets, q.DirectPackets)
			}
		}
	}
	cs := slices.Clone(end.Classes)
	for i := range cs {
		c := &cs[i]
		for _, b := range base.Classes {
			if b.ClassID == c.ClassID && b.Kind == c.Kind && b.Packets <= c.Packets && b.Dropped <= c.Dropped {
				c.Packets, c.Bytes, c.Dropped = c.Packets-b.Packets, c.Bytes-b.Bytes, c.Dropped-b.Dropped
				c.Overlimits -= min(b.Overlimits, c.Overlimits)
				c.Lends -= min(b.Lends, c.Lends)
				c.Borrows -= min(b.Borrows, c.Borrows)
			}
		}
	}
	return qs, cs
}
