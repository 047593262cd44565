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
	// Up and Down are each direction end to end: from the sender's
	// access link into the bottleneck and out of the receiver's.
	Up    DirResult    `json:"up"`
	Down  DirResult    `json:"down"`
	Flows []FlowResult `json:"flows"`
	// UpBottleneck, DownBottleneck and Hosts are there only for a
	// dumbbell of more than two hosts or with access links (with two
	// hosts and none, each direction is its bottleneck): the
	// bottlenecks' own counters, and each host's.
	UpBottleneck   *DirResult   `json:"up_bottleneck,omitempty"`
	DownBottleneck *DirResult   `json:"down_bottleneck,omitempty"`
	Hosts          []HostResult `json:"hosts,omitempty"`
}

// HostResult is what crossed one host's paths.
type HostResult struct {
	// Host is the host's name, c1..c16 or s1..s16.
	Host string `json:"host"`
	// Up and Down are the end-to-end counters of the packets the host
	// sent (a client's up, a server's down) or received in each
	// direction; their delays come from histograms.
	Up   DirResult `json:"up"`
	Down DirResult `json:"down"`
	// UpAccess and DownAccess are the counters of the host's access link
	// in each direction, if it has one.
	UpAccess   *DirResult `json:"up_access,omitempty"`
	DownAccess *DirResult `json:"down_access,omitempty"`
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
		Up:        dirResult(r.paths[0].Counters(), dur),
		Down:      dirResult(r.paths[1].Counters(), dur),
		Flows:     make([]FlowResult, len(r.cfg.Flows)),
	}
	fc := [2]map[int32]link.Counters{r.paths[0].FlowCounters(), r.paths[1].FlowCounters()}
	for i, f := range r.cfg.Flows {
		d := f.base().dir()
		res.Flows[i] = FlowResult{Flow: i, Spec: f.String(), Dir: r.names[d], DirResult: dirResult(fc[d][int32(i)], dur)}
	}
	if r.hosts {
		r.hostResults(res, dur)
	}
	return res
}

// hostResults fills in the bottlenecks' and the hosts' counters.
func (r *runner) hostResults(res *Result, dur float64) {
	of := func(d *link.Direction) *DirResult {
		if d == nil {
			return nil
		}
		x := dirResult(d.Counters(), dur)
		return &x
	}
	res.UpBottleneck = of(r.paths[0].Link(link.Stage{Place: link.Bottleneck}))
	res.DownBottleneck = of(r.paths[1].Link(link.Stage{Place: link.Bottleneck}))
	for _, server := range []bool{false, true} {
		n := r.cfg.Clients
		// A client enters the up path and leaves the down one.
		up, down := link.Ingress, link.Egress
		if server {
			n, up, down = r.cfg.Servers, link.Egress, link.Ingress
		}
		for k := 1; k <= n; k++ {
			h := link.Host{Server: server, N: k}
			res.Hosts = append(res.Hosts, HostResult{
				Host:       h.String(),
				Up:         dirResult(r.paths[0].PortCounters(up, h.Port()), dur),
				Down:       dirResult(r.paths[1].PortCounters(down, h.Port()), dur),
				UpAccess:   of(r.paths[0].Link(link.Stage{Place: up, Port: h.Port()})),
				DownAccess: of(r.paths[1].Link(link.Stage{Place: down, Port: h.Port()})),
			})
		}
	}
}

func dirResult(c link.Counters, dur float64) DirResult {
	d := DirResult{Counters: c, ThroughputBps: float64(c.BytesOut) * 8 / dur}
	if c.Delivered > 0 {
		d.ReorderedRatio = float64(c.Reordered) / float64(c.Delivered)
	}
	return d
}
