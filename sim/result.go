package sim

import (
	"wanlab/link"
	"wanlab/qdisc"
)

// Result is a simulation's outcome; it marshals to wanlab's JSON contract
// for `wanlab sim` (docs/results-format.md), whose counters are those of
// `wanlab status` and the router's snapshot.
type Result struct {
	DurationS float64 `json:"duration_s"`
	Seed      uint64  `json:"seed"`
	// Framing is what the emulated interfaces counted in each packet's
	// length ("ethernet" or "ip"), as the up direction's Env says.
	Framing qdisc.Framing `json:"framing"`
	Up      DirResult     `json:"up"`
	Down    DirResult     `json:"down"`
	Flows   []FlowResult  `json:"flows"`
}

// DirResult are the counters of a direction or of one flow in it
// (link.Counters: every packet is accounted for once, sent + duplicated =
// delivered + dropped + queued; bytes are framed bytes; the delay in ns),
// and two figures derived from them.
type DirResult struct {
	link.Counters
	// ReorderedRatio is Reordered/Delivered (0 when nothing was delivered).
	ReorderedRatio float64 `json:"reordered_ratio"`
	// ThroughputBps is the delivered framed bits over the whole duration.
	ThroughputBps float64 `json:"throughput_bps"`
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
		Framing:   r.cfg.Up.Env.Framing,
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
	d := DirResult{Counters: c, ThroughputBps: float64(c.BytesOut) * 8 / dur}
	if c.Delivered > 0 {
		d.ReorderedRatio = float64(c.Reordered) / float64(c.Delivered)
	}
	return d
}
