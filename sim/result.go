package sim

import (
	"wanlab/link"
	"wanlab/qdisc"
)

// Result is a simulation's outcome; it marshals to wanlab's JSON contract
// for `wanlab sim`.
type Result struct {
	DurationS float64      `json:"duration_s"`
	Seed      uint64       `json:"seed"`
	Up        DirResult    `json:"up"`
	Down      DirResult    `json:"down"`
	Flows     []FlowResult `json:"flows"`
}

// DirResult are the counters of a direction or of one flow in it. Every
// packet is accounted for once: sent + duplicated = delivered + dropped +
// queued.
type DirResult struct {
	Sent       uint64 `json:"sent"`
	Delivered  uint64 `json:"delivered"`
	Dropped    uint64 `json:"dropped"`
	Marked     uint64 `json:"marked"`
	Duplicated uint64 `json:"duplicated"`
	Reordered  uint64 `json:"reordered"`
	// ReorderedRatio is Reordered/Delivered (0 when nothing was delivered).
	ReorderedRatio float64 `json:"reordered_ratio"`
	// Queued counts packets still inside the direction at the end.
	Queued uint64 `json:"queued"`
	// ThroughputBps is the delivered IP bits over the whole duration.
	ThroughputBps float64 `json:"throughput_bps"`
	// DelayMs summarises the delay of delivered packets, exactly; it is
	// null when nothing was delivered.
	DelayMs *DelayMs `json:"delay_ms"`
	// DroppedByReason counts drops by qdisc.Reason name; reasons with no
	// drops are left out.
	DroppedByReason map[string]uint64 `json:"dropped_by_reason"`
}

// DelayMs is a delay summary in milliseconds; percentiles interpolate
// linearly between order statistics (numpy's default).
type DelayMs struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// FlowResult is one flow's counters in the direction it crosses.
type FlowResult struct {
	Flow int    `json:"flow"`
	Spec string `json:"spec"`
	Dir  string `json:"dir"`
	DirResult
}

func (r *runner) result() *Result {
	dur := r.cfg.Duration.Seconds()
	res := &Result{
		DurationS: dur,
		Seed:      r.cfg.Seed,
		Up:        dirResult(r.dirs[0].Counters(), dur),
		Down:      dirResult(r.dirs[1].Counters(), dur),
		Flows:     make([]FlowResult, len(r.cfg.Flows)),
	}
	fc := [2]map[int32]link.Counters{r.dirs[0].FlowCounters(), r.dirs[1].FlowCounters()}
	for i, f := range r.cfg.Flows {
		d := f.base().dir()
		res.Flows[i] = FlowResult{Flow: i, Spec: f.String(), Dir: r.names[d], DirResult: dirResult(fc[d][int32(i)], dur)}
	}
	return res
}

func dirResult(c link.Counters, dur float64) DirResult {
	d := DirResult{
		Sent:            c.Sent,
		Delivered:       c.Delivered,
		Dropped:         c.Dropped,
		Marked:          c.Marked,
		Duplicated:      c.Duplicated,
		Reordered:       c.Reordered,
		Queued:          c.Queued,
		ThroughputBps:   float64(c.BytesOut) * 8 / dur,
		DroppedByReason: map[string]uint64{},
	}
	if c.Delivered > 0 {
		d.ReorderedRatio = float64(c.Reordered) / float64(c.Delivered)
		d.DelayMs = &DelayMs{Min: c.Delay.Min / 1e6, Mean: c.Delay.Mean / 1e6, P50: c.Delay.P50 / 1e6,
			P90: c.Delay.P90 / 1e6, P99: c.Delay.P99 / 1e6, Max: c.Delay.Max / 1e6}
	}
	for r, n := range c.DroppedByReason {
		if n > 0 {
			d.DroppedByReason[qdisc.Reason(r).String()] = n
		}
	}
	return d
}
