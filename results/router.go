package results

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"wanlab/fidelity"
)

// RouterMode is where a run's traffic crossed: the value of the router
// report's "mode" key.
type RouterMode string

const (
	// RouterTestbed: a testbed of the run's own.
	RouterTestbed RouterMode = "testbed"
	// RouterLab: a running testbed another process owns (--lab).
	RouterLab RouterMode = "lab"
	// RouterDirect: a veth pair, no router (--direct).
	RouterDirect RouterMode = "direct"
)

// RouterReport is the document's "router" object: what the router did
// during the run, per direction, with the fidelity verdict, the timed
// changes as applied, and per-step counters.
type RouterReport struct {
	// Mode says where the traffic crossed; with RouterDirect nothing
	// below is set but Testbed and Note.
	Mode RouterMode `json:"mode"`
	// Testbed names the testbed (or the veth pair's namespaces wl-NAME-c
	// and wl-NAME-s).
	Testbed string `json:"testbed"`
	// Faithful is true when every direction's verdict is; nil without a
	// router or without readings of it.
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
// Run.Framing). Delay and Lateness percentiles cover the router's life:
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
	// RingDrops counts packets the kernel dropped in the ring in front
	// of the router (the TUN's, or the packet socket's); WriteDrops
	// packets the egress device refused.
	RingDrops  uint64 `json:"ring_drops"`
	WriteDrops uint64 `json:"write_drops"`
	// RingWait is, on the packet plane, whose packet sockets stamp each
	// packet's arrival, how long packets waited in that ring before the
	// router read them: N over the run, percentiles as PercentilesSince
	// says. nil on the TUN plane, where a packet arrives when it is read.
	RingWait *LatenessReport `json:"ring_wait,omitempty"`
	// LoopBusy is the share of the run the direction's loop spent working
	// on packets (0 to 1), LoopHeld the share it spent holding reads back
	// so as to release on time what it had taken in: together near 1, it
	// was saturated.
	LoopBusy float64 `json:"loop_busy"`
	LoopHeld float64 `json:"loop_held"`
	// Verdict is fidelity.Judge's.
	Verdict fidelity.Verdict `json:"verdict"`
	// Qdiscs and Classes are the tree's qdiscs and classes at the end of
	// the run, as `tc -s qdisc show` and `tc -s class show` list them,
	// with their counts over the run; set only for a path with classes
	// (htb, prio), whose tc lines ChainEnd holds.
	Qdiscs  []QdiscReport `json:"qdiscs,omitempty"`
	Classes []ClassReport `json:"classes,omitempty"`
	// Ports are each host's part of the direction, on a testbed of more
	// than two hosts or with access links: the sending hosts' (ingress)
	// first, then the receiving hosts' (egress), as the router lists
	// them; none on one of a client and a server. NoRoute counts packets
	// whose destination was no host's, dropped as they entered.
	Ports   []PortReport `json:"ports,omitempty"`
	NoRoute uint64       `json:"no_route,omitempty"`
}

// PortReport is one host's part of a direction over the run: the packets
// that entered the direction from the host (Place "ingress") or left it
// to the host (Place "egress"), counted end to end as the direction's
// are, and the host's access link there.
type PortReport struct {
	// Host is the host's name in the router (c1, s2), Place "ingress" or
	// "egress", If the host's interface on the router.
	Host  string `json:"host"`
	Place string `json:"place"`
	If    string `json:"if,omitempty"`
	// Chain is the access link's chain in tc syntax at the end of the
	// run, "" for none or a direct link.
	Chain string `json:"chain"`
	// Sent … Reordered and Delay are the port's packets end to end
	// (through its access link and the bottleneck), over the run, as
	// DirectionReport's are for all.
	Sent            uint64            `json:"sent"`
	BytesIn         uint64            `json:"bytes_in"`
	Delivered       uint64            `json:"delivered"`
	BytesOut        uint64            `json:"bytes_out"`
	Dropped         uint64            `json:"dropped"`
	DroppedByReason map[string]uint64 `json:"dropped_by_reason,omitempty"`
	Marked          uint64            `json:"marked"`
	Reordered       uint64            `json:"reordered"`
	Delay           DelayReport       `json:"delay"`
	// Access are the access link's own counts over the run, nil for a
	// host without one.
	Access *AccessReport `json:"access,omitempty"`
	// RingDrops counts what the kernel dropped in the ring in front of an
	// ingress port's device; WriteDrops the segments an egress port's
	// device refused.
	RingDrops  uint64 `json:"ring_drops"`
	WriteDrops uint64 `json:"write_drops"`
}

// AccessReport is a host's access link's own counts over the run:
// packets that entered it, it delivered and dropped (by reason), and the
// delay through it.
type AccessReport struct {
	Sent            uint64            `json:"sent"`
	Delivered       uint64            `json:"delivered"`
	Dropped         uint64            `json:"dropped"`
	DroppedByReason map[string]uint64 `json:"dropped_by_reason,omitempty"`
	Marked          uint64            `json:"marked"`
	Delay           DelayReport       `json:"delay"`
}

// QdiscReport is one qdisc of a tree at the end of the run: its place and
// options as tc prints them, and its counts over the run (packets and
// framed bytes it sent, its drops with those of the qdiscs under it, as
// tc shows them, its overlimits and requeues), what it held at the end,
// and for htb the packets of its direct queue.
type QdiscReport struct {
	Kind          string `json:"kind"`
	Handle        string `json:"handle"`
	Parent        string `json:"parent"`
	Options       string `json:"options"`
	Packets       uint64 `json:"packets"`
	Bytes         uint64 `json:"bytes"`
	Dropped       uint64 `json:"dropped"`
	Overlimits    uint64 `json:"overlimits"`
	Requeues      uint64 `json:"requeues"`
	Qlen          int    `json:"qlen"`
	Backlog       int    `json:"backlog_bytes"`
	DirectPackets uint64 `json:"direct_packets,omitempty"`
}

// ClassReport is one class of a tree at the end of the run, as `tc -s
// class show` lists it: an htb class (Options its options in tc syntax,
// Level its level, 0 for a leaf), a prio band, or the class a netem's or
// tbf's child hangs on; its counts over the run (packets and framed bytes
// sent, drops, overlimits, lends and borrows of an htb class) and what
// its leaf held at the end.
type ClassReport struct {
	Kind       string `json:"kind"`
	ClassID    string `json:"classid"`
	Parent     string `json:"parent"`
	Leaf       string `json:"leaf,omitempty"`
	Options    string `json:"options,omitempty"`
	Level      int    `json:"level"`
	Packets    uint64 `json:"packets"`
	Bytes      uint64 `json:"bytes"`
	Dropped    uint64 `json:"dropped"`
	Overlimits uint64 `json:"overlimits"`
	Lends      uint64 `json:"lends"`
	Borrows    uint64 `json:"borrows"`
	Qlen       int    `json:"qlen"`
	Backlog    int    `json:"backlog_bytes"`
	// TokensNs and CTokensNs are an htb class's credit at the end, in
	// its rate's and its ceil's bucket, in ns (negative in debt).
	TokensNs  int64 `json:"tokens_ns"`
	CTokensNs int64 `json:"ctokens_ns"`
}

// DelayReport summarises the delays of N packets, in ns; every figure is
// 0 when N is 0.
type DelayReport struct {
	N      uint64  `json:"n"`
	MeanNs float64 `json:"mean_ns"`
	MinNs  float64 `json:"min_ns"`
	P50Ns  float64 `json:"p50_ns"`
	P99Ns  float64 `json:"p99_ns"`
	MaxNs  float64 `json:"max_ns"`
}

// LatenessReport summarises the release lateness of N packets, in ns.
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
// the mean delay through the chain of the packets delivered (nil if none),
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
	DelayMeanNs    []*float64 `json:"delay_mean_ns"`
	Queued         []uint64   `json:"queued"`
}

// decodeRouter reads a document's "router" object as the document's
// version wrote it. Version 1 gave the delays through the chain in ms
// (delay's mean_ms … max_ms, the steps' delay_mean_ms); they are read
// into the ns figures of later versions.
func decodeRouter(raw json.RawMessage, version int) (*RouterReport, error) {
	var r *RouterReport
	if err := json.Unmarshal(raw, &r); err != nil || r == nil || version >= 2 {
		return r, err
	}
	var v1 struct {
		Directions []struct {
			Delay struct {
				MeanMs float64 `json:"mean_ms"`
				MinMs  float64 `json:"min_ms"`
				P50Ms  float64 `json:"p50_ms"`
				P99Ms  float64 `json:"p99_ms"`
				MaxMs  float64 `json:"max_ms"`
			} `json:"delay"`
		} `json:"directions"`
		Steps *struct {
			Up struct {
				DelayMeanMs []*float64 `json:"delay_mean_ms"`
			} `json:"up"`
			Down struct {
				DelayMeanMs []*float64 `json:"delay_mean_ms"`
			} `json:"down"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(raw, &v1); err != nil {
		return nil, err
	}
	for i, d := range v1.Directions {
		r.Directions[i].Delay = DelayReport{N: r.Directions[i].Delay.N,
			MeanNs: d.Delay.MeanMs * 1e6, MinNs: d.Delay.MinMs * 1e6, P50Ns: d.Delay.P50Ms * 1e6,
			P99Ns: d.Delay.P99Ms * 1e6, MaxNs: d.Delay.MaxMs * 1e6}
	}
	if v1.Steps != nil && r.Steps != nil {
		r.Steps.Up.DelayMeanNs = msToNs(v1.Steps.Up.DelayMeanMs)
		r.Steps.Down.DelayMeanNs = msToNs(v1.Steps.Down.DelayMeanMs)
	}
	return r, nil
}

// msToNs converts a column of delays in ms, nil for none, to ns.
func msToNs(col []*float64) []*float64 {
	if col == nil {
		return nil
	}
	out := make([]*float64, len(col))
	for i, v := range col {
		if v != nil {
			ns := *v * 1e6
			out[i] = &ns
		}
	}
	return out
}

// The router's figures of a direction over the run are series that views
// choose by name, as they choose a flow's own ("TCP upload::tcp_cwnd"):
// "router up::delay" is the delay through the up chain of the packets it
// delivered (mean, median, min, p99, max), "router up::lateness" how late
// the router released them against their due time (median, p99, max),
// both in ms. They have a summary and no samples: a table, a sweep graph
// or a comparison reads them from a whole results file or a summary alike.
// The statistics the router does not record are NaN, which views show as
// missing.
const (
	routerSeriesPrefix = "router "
	routerDelayKey     = "delay"
	routerLatenessKey  = "lateness"
)

// RouterSeriesNames lists the names of the router's series of a run that
// crossed a router, for messages that name what a choice could have been.
func (r *RouterReport) RouterSeriesNames() []string {
	if r == nil {
		return nil
	}
	var names []string
	for _, d := range r.Directions {
		for _, key := range []string{routerDelayKey, routerLatenessKey} {
			names = append(names, routerSeriesPrefix+d.Name+"::"+key)
		}
	}
	return names
}

// series returns the router's series of that name ("router up::delay"),
// or nil: for another name, a direction the report does not have, or a
// direction that delivered no packet.
func (r *RouterReport) series(name string) *Series {
	rest, ok := strings.CutPrefix(name, routerSeriesPrefix)
	if r == nil || !ok {
		return nil
	}
	dir, key, ok := strings.Cut(rest, "::")
	if !ok {
		return nil
	}
	i := slices.IndexFunc(r.Directions, func(d DirectionReport) bool { return d.Name == dir })
	if i < 0 {
		return nil
	}
	d := r.Directions[i]
	nan := math.NaN()
	sum := Summary{Total: nan, P90: nan, StdDev: nan, Variance: nan}
	switch key {
	case routerDelayKey:
		if d.Delay.N == 0 {
			return nil
		}
		sum.N = int(d.Delay.N)
		sum.Mean, sum.Median, sum.Min, sum.P99, sum.Max = d.Delay.MeanNs/1e6, d.Delay.P50Ns/1e6, d.Delay.MinNs/1e6, d.Delay.P99Ns/1e6, d.Delay.MaxNs/1e6
	case routerLatenessKey:
		if d.Lateness.N == 0 {
			return nil
		}
		sum.N = int(d.Lateness.N)
		sum.Mean, sum.Min = nan, nan
		sum.Median, sum.P99, sum.Max = float64(d.Lateness.P50Ns)/1e6, float64(d.Lateness.P99Ns)/1e6, float64(d.Lateness.MaxNs)/1e6
	default:
		return nil
	}
	return &Series{Name: name, Unit: "ms", Summary: sum}
}

// LateReleasesNote returns LateReleasesHint when one of verdicts names
// late releases and the kernel's preemption mode (Run.KernelPreemption,
// or the running kernel's for a testbed's status) is none; else "".
func LateReleasesNote(preemption string, verdicts ...fidelity.Verdict) string {
	if preemption != "none" {
		return ""
	}
	for _, v := range verdicts {
		if v.Has(fidelity.CauseLateReleases) {
			return LateReleasesHint
		}
	}
	return ""
}

// LateReleasesHint is what LateReleasesNote says.
const LateReleasesHint = "this kernel runs in preemption mode none: a program or kernel thread inside the kernel keeps the router's loop from its CPU for as long as it runs there, milliseconds at times, whatever the loop's priority; a kernel in mode voluntary or full (preempt=full on its command line) lets the loop in sooner"
