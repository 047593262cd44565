package report

import (
	"time"

	"wanlab/fidelity"
	"wanlab/qdisc"
	"wanlab/results"
	"wanlab/tcspec"
)

// fidelityState is what the report can say about a run's fidelity.
type fidelityState string

const (
	// stateAbsent: the document has no router report.
	stateAbsent fidelityState = "absent"
	// stateUnknown: there is a router report but no verdict in it (a run
	// on a plain veth pair, or a router that could not be read).
	stateUnknown fidelityState = "unknown"
	// stateFaithful: every verdict says faithful.
	stateFaithful fidelityState = "faithful"
	// stateUnfaithful: at least one verdict says not faithful.
	stateUnfaithful fidelityState = "unfaithful"
)

// stateOf judges a run by its router report: a direction's verdict that
// is not faithful makes the run unfaithful, whatever the overall figure
// says.
func stateOf(r *results.RouterReport) fidelityState {
	switch {
	case r == nil:
		return stateAbsent
	case r.Faithful == nil:
		return stateUnknown
	case !*r.Faithful:
		return stateUnfaithful
	}
	for _, d := range r.Directions {
		if !d.Verdict.Faithful {
			return stateUnfaithful
		}
	}
	return stateFaithful
}

// verdictOf returns a direction's verdict; nil when the report judged
// nothing (no router, no readings).
func verdictOf(r *results.RouterReport, d *results.DirectionReport) *fidelity.Verdict {
	if r == nil || r.Faithful == nil || d == nil {
		return nil
	}
	return &d.Verdict
}

// routerNotes are the router report's own explanations: where the run's
// traffic crossed, and its note.
func routerNotes(r *results.RouterReport) []string {
	if r == nil {
		return nil
	}
	var notes []string
	if r.Mode != "" {
		notes = append(notes, "mode: "+string(r.Mode))
	}
	if r.Testbed != "" {
		notes = append(notes, "testbed: "+r.Testbed)
	}
	if r.Note != "" {
		notes = append(notes, r.Note)
	}
	return notes
}

// configured is what a direction was set to do: the figures the achieved
// ones are compared with.
type configured struct {
	// RateBps is the smallest rate the chain sets (tbf's or netem's) or
	// its trace's mean rate, 0 for none.
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
// the report then shows nothing rather than a guess. The rate and delay
// it finds stand in for the router report's only when a run has none;
// the loss, which the report does not record, comes from here alone.
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
