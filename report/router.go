package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"wanlab/fidelity"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// The router's part of a results document (Document.Router) is written by
// `wanlab run` and its schema grows with the router. The report reads it
// tolerantly: it looks for the fidelity verdicts (package fidelity's
// Verdict objects, wherever they sit), for each direction's figures under
// the names docs/results-format.md gives them, and shows what it finds.
// A figure it cannot find is shown as unknown, never guessed.

// fidelityState is what the report can say about a run's fidelity.
type fidelityState string

const (
	// stateAbsent: the document has no router data.
	stateAbsent fidelityState = "absent"
	// stateUnknown: there is router data but no verdict in it (a run on a
	// plain veth pair, or a router that could not be read).
	stateUnknown fidelityState = "unknown"
	// stateFaithful: every verdict found says faithful.
	stateFaithful fidelityState = "faithful"
	// stateUnfaithful: at least one verdict says not faithful.
	stateUnfaithful fidelityState = "unfaithful"
)

// routerView is what the report found in a run's router data.
type routerView struct {
	State fidelityState
	// Directions are the per-direction figures, in the order found.
	Directions []directionFigures
	// Verdicts are every verdict found, in the order found.
	Verdicts []fidelity.Verdict
	// Notes are the router data's own explanations ("note", "mode") and
	// the report's, such as data that is not JSON.
	Notes []string
}

// directionFigures are one direction's figures. A nil pointer is a figure
// the router data does not give.
type directionFigures struct {
	Name string
	// Chain is the chain in tc syntax at the start of the run, ChainEnd at
	// its end when a timed change made it differ.
	Chain, ChainEnd string
	// AchievedRateBps is what the direction delivered during the load.
	AchievedRateBps *float64
	// Sent counts the packets offered to the chain; Dropped those it
	// dropped, LossDrops those netem's loss model dropped;
	// DroppedByReason all drops by reason.
	Sent, Dropped, LossDrops *float64
	DroppedByReason          map[string]float64
	// Delay through the chain, in ns.
	DelayMinNs, DelayP50Ns, DelayMeanNs, DelayP99Ns, DelayMaxNs *float64
	// Release lateness, in ns.
	LatenessN, LatenessP50Ns, LatenessP99Ns, LatenessMaxNs *float64
	// RingDrops are packets lost in the TUN ring in front of the router;
	// WriteDrops packets the egress device refused.
	RingDrops, WriteDrops *float64
	// Verdict is the direction's verdict, if the data has one.
	Verdict *fidelity.Verdict
}

// readRouter reads a document's router data.
func readRouter(raw json.RawMessage) routerView {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return routerView{State: stateAbsent}
	}
	var top any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil {
		return routerView{State: stateUnknown, Notes: []string{fmt.Sprintf("the router data is not readable JSON (%v)", err)}}
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return routerView{State: stateUnknown, Notes: []string{"the router data is not a JSON object"}}
	}
	v := routerView{}
	for _, key := range []string{"mode", "testbed"} {
		if s, ok := obj[key].(string); ok && s != "" {
			v.Notes = append(v.Notes, key+": "+s)
		}
	}
	if s, ok := obj["note"].(string); ok && s != "" {
		v.Notes = append(v.Notes, s)
	}

	for _, d := range directionObjects(obj) {
		v.Directions = append(v.Directions, readDirection(d))
	}
	walkVerdicts(obj, func(vd fidelity.Verdict) { v.Verdicts = append(v.Verdicts, vd) })
	// A direction's verdict is the first verdict found for its name.
	for i := range v.Directions {
		d := &v.Directions[i]
		for j := range v.Verdicts {
			if v.Verdicts[j].Direction == d.Name {
				d.Verdict = &v.Verdicts[j]
				break
			}
		}
	}

	overall, hasOverall := obj["faithful"].(bool)
	switch {
	case len(v.Verdicts) == 0 && !hasOverall:
		v.State = stateUnknown
	case hasOverall && !overall:
		v.State = stateUnfaithful
	default:
		v.State = stateFaithful
		for _, vd := range v.Verdicts {
			if !vd.Faithful {
				v.State = stateUnfaithful
			}
		}
	}
	return v
}

// directionObjects returns the objects that describe a direction: the
// elements of a "directions" array, and the "up" and "down" objects of the
// top level (the router snapshot's layout).
func directionObjects(obj map[string]any) []map[string]any {
	var out []map[string]any
	if arr, ok := obj["directions"].([]any); ok {
		for _, e := range arr {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	for _, name := range []string{"up", "down"} {
		if m, ok := obj[name].(map[string]any); ok {
			if _, named := m["name"]; !named {
				m = withName(m, name)
			}
			out = append(out, m)
		}
	}
	return out
}

// withName returns a copy of m with "name" set.
func withName(m map[string]any, name string) map[string]any {
	c := make(map[string]any, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	c["name"] = name
	return c
}

// readDirection reads one direction's figures under the names results'
// router report and the router's snapshot give them.
func readDirection(m map[string]any) directionFigures {
	d := directionFigures{}
	d.Name, _ = m["name"].(string)
	d.Chain = firstString(m, "chain_start", "chain")
	if end := firstString(m, "chain_end"); end != d.Chain {
		d.ChainEnd = end
	}
	d.AchievedRateBps = lookup(m, "load_rate_bps")
	d.Sent = lookup(m, "sent", "counters.sent")
	d.Dropped = lookup(m, "dropped", "counters.dropped")
	d.LossDrops = lookup(m, "dropped_by_reason.loss", "counters.dropped_by_reason.loss")
	for _, path := range []string{"dropped_by_reason", "counters.dropped_by_reason"} {
		if r, ok := at(m, path).(map[string]any); ok {
			d.DroppedByReason = map[string]float64{}
			for k, v := range r {
				if f, ok := number(v); ok {
					d.DroppedByReason[k] = f
				}
			}
			break
		}
	}
	if d.LossDrops == nil && d.Dropped != nil && (*d.Dropped == 0 || d.DroppedByReason != nil) {
		// Reasons with no drops are left out: loss dropped nothing.
		zero := 0.0
		d.LossDrops = &zero
	}
	delay := func(stat string) *float64 {
		if v := lookup(m, "delay."+stat+"_ns", "counters.delay."+stat+"_ns"); v != nil {
			return v
		}
		if v := lookup(m, "delay."+stat+"_ms", "counters.delay."+stat+"_ms"); v != nil {
			ns := *v * 1e6
			return &ns
		}
		return nil
	}
	d.DelayMinNs, d.DelayP50Ns, d.DelayMeanNs, d.DelayP99Ns, d.DelayMaxNs =
		delay("min"), delay("p50"), delay("mean"), delay("p99"), delay("max")
	if n := lookup(m, "delay.n", "counters.delay.n"); n != nil && *n == 0 {
		// No packet was delivered: the figures are zeros, not delays.
		d.DelayMinNs, d.DelayP50Ns, d.DelayMeanNs, d.DelayP99Ns, d.DelayMaxNs = nil, nil, nil, nil, nil
	}
	d.LatenessN = lookup(m, "lateness.n")
	d.LatenessP50Ns = lookup(m, "lateness.p50_ns")
	d.LatenessP99Ns = lookup(m, "lateness.p99_ns")
	d.LatenessMaxNs = lookup(m, "lateness.max_ns")
	d.RingDrops = lookup(m, "ring_drops", "ring.drops")
	d.WriteDrops = lookup(m, "write_drops")
	return d
}

// walkVerdicts calls f for every object in the tree shaped like a
// fidelity.Verdict: a "direction" string and a "faithful" boolean.
func walkVerdicts(v any, f func(fidelity.Verdict)) {
	switch x := v.(type) {
	case map[string]any:
		dir, okDir := x["direction"].(string)
		faithful, okF := x["faithful"].(bool)
		if okDir && okF {
			vd := fidelity.Verdict{Direction: dir, Faithful: faithful}
			if tol, ok := number(x["tolerance_ns"]); ok {
				vd.ToleranceNs = int64(tol)
			}
			if causes, ok := x["causes"].([]any); ok {
				for _, c := range causes {
					if cm, ok := c.(map[string]any); ok {
						code, _ := cm["code"].(string)
						text, _ := cm["text"].(string)
						vd.Causes = append(vd.Causes, fidelity.Cause{Code: code, Text: text})
					}
				}
			}
			f(vd)
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		// JSON objects are unordered; the document's order of directions
		// is kept by the arrays, and keys are visited in a fixed order.
		sort.Strings(keys)
		for _, k := range keys {
			walkVerdicts(x[k], f)
		}
	case []any:
		for _, e := range x {
			walkVerdicts(e, f)
		}
	}
}

// at returns the value at a dotted path of object keys, or nil.
func at(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[k]
	}
	return v
}

// lookup returns the number at the first of the paths that holds one.
func lookup(m map[string]any, paths ...string) *float64 {
	for _, p := range paths {
		if f, ok := number(at(m, p)); ok {
			return &f
		}
	}
	return nil
}

// firstString returns the string at the first of the keys that holds one.
func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return s
		}
	}
	return ""
}

// number reads a JSON number (decoded with UseNumber) as a finite float.
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// configured is what a direction's chain, as the run recorded it in tc
// syntax, asks for: the figures the achieved ones are compared with.
type configured struct {
	// RateBps is the smallest rate the chain sets (tbf's or netem's), 0
	// for none.
	RateBps uint64
	// Delay is the sum of its netems' delays (fidelity.OneWayDelay).
	Delay time.Duration
	// Loss is the probability that netem's random loss drops a packet,
	// all netems of the chain together; LossModel names a loss model
	// whose probability is not a single figure ("state", "gemodel").
	Loss      float64
	LossModel string
}

// readConfigured parses a chain in tc syntax. A chain that does not parse
// here (a distribution table that is not built in, say) gives ok false:
// the report then shows nothing rather than a guess.
func readConfigured(chain string) (c configured, ok bool) {
	specs, err := tcspec.ParseChain(chain, tcspec.Options{})
	if err != nil {
		return configured{}, false
	}
	c.Delay = fidelity.OneWayDelay(specs)
	c.RateBps = fidelity.BottleneckRate(specs).BitsPerSecond()
	pass := 1.0
	for _, s := range specs {
		q, ok := s.(qdisc.NetemConfig)
		if !ok {
			continue
		}
		switch q.Loss.Kind {
		case qdisc.LossRandom:
			pass *= 1 - q.Loss.P
		case qdisc.LossState:
			c.LossModel = "state"
		case qdisc.LossGEModel:
			c.LossModel = "gemodel"
		}
	}
	c.Loss = 1 - pass
	return c, true
}
