package testrun

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"wanlab/fidelity"
	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/results"
	"wanlab/tcspec"
)

// RouterReport is the results document's "router" object: what the router
// did during the run, per direction, with the fidelity verdict, the timed
// changes as applied, and per-step counters. docs/results-format.md
// describes every key.
type RouterReport struct {
	// Mode is "testbed" (a testbed of the run's own), "lab" (a running
	// testbed) or "direct" (a veth pair, no router: nothing below is set).
	Mode Mode `json:"mode"`
	// Testbed names the testbed (or the veth pair's namespaces wl-NAME-c
	// and wl-NAME-s).
	Testbed string `json:"testbed"`
	// Faithful is true when every direction's verdict is; null without a
	// router.
	Faithful *bool `json:"faithful"`
	// Directions are "up" and "down".
	Directions []DirectionReport `json:"directions,omitempty"`
	// Changes are the timed chain changes, with when they took effect.
	Changes []AppliedChange `json:"changes,omitempty"`
	// Steps are the router's counters on the run's grid.
	Steps *RouterSteps `json:"steps,omitempty"`
	// Note explains a report without a router, or a gap in it.
	Note string `json:"note,omitempty"`
}

// DirectionReport is one direction's figures over the run. Counts are
// differences between the router's readings just before the run and at
// its end, in wire segments and bytes as the router counts them (see
// run.framing). Delay and Lateness percentiles cover the router's life:
// the run itself for a testbed of the run's own, the testbed's whole life
// with --lab (PercentilesSince says which).
type DirectionReport struct {
	Name string `json:"name"`
	// ChainStart and ChainEnd are the chain in tc syntax at the start and
	// the end of the run (they differ after a timed change).
	ChainStart string `json:"chain_start"`
	ChainEnd   string `json:"chain_end"`
	// ConfiguredRateBps is the smallest rate the starting chain sets (tbf
	// or netem rate) or its trace's mean rate, in bit/s, 0 if none;
	// ConfiguredDelayNs the sum of its netem delays.
	ConfiguredRateBps uint64 `json:"configured_rate_bps"`
	ConfiguredDelayNs int64  `json:"configured_delay_ns"`
	// LoadRateBps is what the direction delivered during the load (up to
	// the last reading, if the run was cut short), in bit/s of the
	// router's bytes.
	LoadRateBps float64 `json:"load_rate_bps"`
	// Packets entering (sent to the chain), delivered, dropped (with
	// the reasons), CE-marked, duplicated and reordered.
	Sent            uint64            `json:"sent"`
	BytesIn         uint64            `json:"bytes_in"`
	Delivered       uint64            `json:"delivered"`
	BytesOut        uint64            `json:"bytes_out"`
	Dropped         uint64            `json:"dropped"`
	DroppedByReason map[string]uint64 `json:"dropped_by_reason,omitempty"`
	Marked          uint64            `json:"marked"`
	Duplicated      uint64            `json:"duplicated"`
	Reordered       uint64            `json:"reordered"`
	// Delay is the delay through the chain of delivered packets: its mean
	// over the run, and percentiles as PercentilesSince says.
	Delay DelayReport `json:"delay"`
	// Lateness is how late the router released packets against their
	// due time.
	Lateness LatenessReport `json:"lateness"`
	// PercentilesSince is "run" or "testbed".
	PercentilesSince string `json:"percentiles_since"`
	// RingDrops counts packets the kernel dropped in the TUN ring in
	// front of the router; WriteDrops packets the egress device refused.
	RingDrops  uint64 `json:"ring_drops"`
	WriteDrops uint64 `json:"write_drops"`
	// LoopBusy is the share of the run the direction's loop spent working
	// on packets (0 to 1), LoopHeld the share it spent holding reads back
	// so as to release on time what it had taken in: together near 1, it
	// was saturated.
	LoopBusy float64 `json:"loop_busy"`
	LoopHeld float64 `json:"loop_held"`
	// Verdict is fidelity.Judge's.
	Verdict fidelity.Verdict `json:"verdict"`
}

// DelayReport summarises delays, in ms.
type DelayReport struct {
	N      uint64  `json:"n"`
	MeanMs float64 `json:"mean_ms"`
	MinMs  float64 `json:"min_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// LatenessReport summarises release lateness, in ns.
type LatenessReport struct {
	N     uint64 `json:"n"`
	P50Ns int64  `json:"p50_ns"`
	P99Ns int64  `json:"p99_ns"`
	MaxNs int64  `json:"max_ns"`
}

// AppliedChange is one timed change as it happened.
type AppliedChange struct {
	// AtS is when it was due and AppliedS when it took effect, in seconds
	// from T0.
	AtS      float64 `json:"at_s"`
	AppliedS float64 `json:"applied_s"`
	// Direction and Chain are what was set; Effect says what that did,
	// position by position, as `wanlab set` prints it ("2 tbf: changed").
	Direction string `json:"direction"`
	Chain     string `json:"chain"`
	Effect    string `json:"effect,omitempty"`
	// Error is why it failed, if it did.
	Error string `json:"error,omitempty"`
}

// RouterSteps are per-step router counters, in columns: TS[i] is the time
// of step i in seconds from T0, and each direction's columns hold, for the
// step ending then, the bytes delivered, the packets dropped and marked,
// the mean delay through the chain of the packets delivered (null if none),
// and the packets queued at its end.
type RouterSteps struct {
	TS   []float64          `json:"t_s"`
	Up   RouterStepsColumns `json:"up"`
	Down RouterStepsColumns `json:"down"`
}

// RouterStepsColumns are one direction's per-step columns.
type RouterStepsColumns struct {
	DeliveredBytes []uint64   `json:"delivered_bytes"`
	Dropped        []uint64   `json:"dropped"`
	Marked         []uint64   `json:"marked"`
	DelayMeanMs    []*float64 `json:"delay_mean_ms"`
	Queued         []uint64   `json:"queued"`
}

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
	changes  []AppliedChange
	err      string // the first failed reading
}

// report builds the router's report of a run set up by s.
func (rec *routerRecord) report(s *Setup) *RouterReport {
	rep := &RouterReport{Mode: s.Mode, Testbed: s.Lab, Changes: rec.changes}
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
		dr := DirectionReport{
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
			Lateness: LatenessReport{N: d.end.LatenessN - d.base.LatenessN,
				P50Ns: d.end.LatenessP50Ns, P99Ns: d.end.LatenessP99Ns, MaxNs: d.end.LatenessMax},
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
		dr.Delay = DelayReport{N: n, MinMs: d.end.DelayMin / 1e6, P50Ms: d.end.DelayP50 / 1e6, P99Ms: d.end.DelayP99 / 1e6, MaxMs: d.end.DelayMax / 1e6}
		if n > 0 {
			dr.Delay.MeanMs = (d.end.DelaySum - d.base.DelaySum) / float64(n) / 1e6
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
func (rec *routerRecord) columns(s *Setup) *RouterSteps {
	out := &RouterSteps{}
	prev := rec.base
	for _, st := range rec.steps {
		out.TS = append(out.TS, gridSeconds(st.K, s.Step))
		for _, c := range []struct {
			col  *RouterStepsColumns
			p, v dirView
		}{{&out.Up, prev.Up, st.View.Up}, {&out.Down, prev.Down, st.View.Down}} {
			c.col.DeliveredBytes = append(c.col.DeliveredBytes, sub(c.v.BytesOut, c.p.BytesOut))
			c.col.Dropped = append(c.col.Dropped, sub(c.v.Dropped, c.p.Dropped))
			c.col.Marked = append(c.col.Marked, sub(c.v.Marked, c.p.Marked))
			c.col.Queued = append(c.col.Queued, c.v.Queued)
			var mean *float64
			if n := sub(c.v.DelayN, c.p.DelayN); n > 0 {
				m := (c.v.DelaySum - c.p.DelaySum) / float64(n) / 1e6
				mean = &m
			}
			c.col.DelayMeanMs = append(c.col.DelayMeanMs, mean)
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

// gridSeconds is the time of grid point k in seconds from T0, rounded to
// the nanosecond as results' grid is.
func gridSeconds(k int, step time.Duration) float64 {
	return math.Round(float64(k)*step.Seconds()*1e9) / 1e9
}

// PrintRouter prints the router part of a document: the verdict first,
// then each direction's fidelity line. It is the results.RouterPrinter of
// wanlab's summaries.
func PrintRouter(w io.Writer, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var rep RouterReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		return fmt.Errorf("the document's router part: %w", err)
	}
	ew := &errWriter{w: w}
	switch {
	case rep.Mode == ModeDirect:
		ew.printf("Router: none (%s)\n", rep.Note)
		return ew.err
	case rep.Faithful == nil:
		ew.printf("Router: no readings (%s)\n", rep.Note)
		return ew.err
	case *rep.Faithful:
		ew.printf("Verdict: faithful: the router released every packet on time, lost none in front of the chains and kept up\n")
	default:
		ew.printf("Verdict: NOT FAITHFUL\n")
		for _, d := range rep.Directions {
			for _, c := range d.Verdict.Causes {
				ew.printf("  %s: %s\n", d.Name, c.Text)
			}
		}
	}
	where := "testbed " + rep.Testbed
	if rep.Mode == ModeLab {
		where = "running " + where
	}
	ew.printf("\nRouter (%s):\n", where)
	for _, d := range rep.Directions {
		ew.printf(" %-4s %s\n", d.Name, orNone(d.ChainStart))
		if d.ChainEnd != d.ChainStart {
			ew.printf("      at the end: %s\n", orNone(d.ChainEnd))
		}
		rate := "unlimited"
		if d.ConfiguredRateBps > 0 {
			rate = fmt.Sprintf("%.3f Mbit/s", float64(d.ConfiguredRateBps)/1e6)
		}
		ew.printf("      configured: rate %s, delay %.3f ms\n", rate, float64(d.ConfiguredDelayNs)/1e6)
		ew.printf("      achieved:   %.3f Mbit/s during the load, delay mean %.3f ms, median %.3f, 99th %% %.3f, max %.3f ms\n",
			d.LoadRateBps/1e6, d.Delay.MeanMs, d.Delay.P50Ms, d.Delay.P99Ms, d.Delay.MaxMs)
		ew.printf("      packets:    %d in, %d delivered, %d dropped%s, %d marked, %d duplicated, %d reordered\n",
			d.Sent, d.Delivered, d.Dropped, results.DropReasons(d.DroppedByReason), d.Marked, d.Duplicated, d.Reordered)
		ew.printf("      router:     lateness median %s, 99th %% %s, max %s (tolerance %s); ring drops %d, write drops %d; loop busy %.0f%%, held %.0f%%\n",
			time.Duration(d.Lateness.P50Ns), time.Duration(d.Lateness.P99Ns), time.Duration(d.Lateness.MaxNs),
			time.Duration(d.Verdict.ToleranceNs), d.RingDrops, d.WriteDrops, 100*d.LoopBusy, 100*d.LoopHeld)
	}
	for _, c := range rep.Changes {
		if c.Error != "" {
			ew.printf(" change at %gs: %s to %q FAILED: %s\n", c.AtS, c.Direction, c.Chain, c.Error)
		} else {
			ew.printf(" change at %gs (applied at %.3fs): %s to %s\n", c.AtS, c.AppliedS, c.Direction, orNone(c.Chain))
			if c.Effect != "" {
				ew.printf("      %s\n", c.Effect)
			}
		}
	}
	if rep.Note != "" {
		ew.printf(" note: %s\n", rep.Note)
	}
	return ew.err
}

func orNone(chain string) string {
	if chain == "" {
		return "(no qdisc)"
	}
	return chain
}

// errWriter keeps the first write error, so that printing can go on and
// report it once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func nan() float64 { return math.NaN() }
