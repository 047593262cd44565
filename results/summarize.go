package results

import (
	"fmt"
	"math"
	"strings"

	"wanlab/stats"
)

// Summarize sets the series' Summary and Lost from its samples inside its
// Window (start < t <= end). Lost probes are counted in Lost and left out
// of the figures. Total is Σ value·stepS over the summarised samples for a
// rate series, NaN otherwise.
func (s *Series) Summarize(stepS float64) {
	vals := make([]float64, 0, len(s.Samples))
	lost := 0
	for _, p := range s.Samples {
		if !inWindow(s.Window, p.T) {
			continue
		}
		if p.Lost() {
			lost++
			continue
		}
		vals = append(vals, p.V)
	}
	st := stats.Summarize(vals)
	s.Lost = lost
	s.Summary = Summary{
		N: st.N, Mean: st.Mean, Median: st.Median, Min: st.Min, Max: st.Max,
		P90: st.P90, P99: st.P99, StdDev: st.StdDev, Variance: st.Variance,
		Total: math.NaN(),
	}
	if s.IsRate() && st.N > 0 {
		// Each sample stands for one step, so the integral is the sum of
		// value × step (Flent's Σ val·dur with dur = step).
		s.Summary.Total = st.Total * stepS
	}
}

// Summarize summarises every series of the document, the flows' own series
// included, with the run's step, and records the fairness of the load
// flows (FlowFairness) and of their hosts (FairnessOverHosts) from those
// summaries.
func (d *Document) Summarize() {
	for i := range d.Series {
		d.Series[i].Summarize(d.Run.StepS)
	}
	for i := range d.Flows {
		for j := range d.Flows[i].Series {
			d.Flows[i].Series[j].Summarize(d.Run.StepS)
		}
	}
	d.Fairness = d.FlowFairness()
	d.HostFairness = d.FairnessOverHosts()
}

// Validate checks what the views rely on: a test name, a positive step,
// non-negative lengths, a known framing, unique non-empty series names,
// samples in ascending time from T0 on and not beyond ten times the run's
// length, windows that are intervals, and flow series named after their
// flow. The error names the first problem.
func (d *Document) Validate() error {
	r := d.Run
	switch {
	case r.Test == "":
		return fmt.Errorf("results: run.test is empty; it names the Flent test (rrul, tcp_nup, ...)")
	case !(r.StepS > 0) || math.IsInf(r.StepS, 0):
		return fmt.Errorf("results: run.step_s is %v; it must be a positive number of seconds", r.StepS)
	case !(r.DurationS >= 0) || !(r.LeadS >= 0) || !(r.TailS >= 0) ||
		math.IsInf(r.TotalS(), 0):
		return fmt.Errorf("results: run.duration_s, lead_s and tail_s (%v, %v, %v) must be non-negative numbers of seconds",
			r.DurationS, r.LeadS, r.TailS)
	case r.Framing != "ethernet" && r.Framing != "ip":
		return fmt.Errorf("results: run.framing is %q; want \"ethernet\" or \"ip\"", r.Framing)
	}
	// Flent warns about data ten times longer than the run; a grid that
	// long is a mistake in the sample times, and would be huge.
	latest := 10 * (r.TotalS() + r.StepS)
	names := make(map[string]bool)
	check := func(s *Series) error {
		if s.Name == "" {
			return fmt.Errorf("results: a series has no name")
		}
		if names[s.Name] {
			return fmt.Errorf("results: two series are named %q", s.Name)
		}
		names[s.Name] = true
		if !(s.Window[0] <= s.Window[1]) {
			return fmt.Errorf("results: series %q: window [%v, %v] is not an interval", s.Name, s.Window[0], s.Window[1])
		}
		prev := 0.0
		for i, p := range s.Samples {
			if !(p.T >= prev) || math.IsInf(p.T, 0) {
				return fmt.Errorf("results: series %q: sample %d at %vs is before its predecessor or before T0; samples must be in ascending time from 0",
					s.Name, i, p.T)
			}
			if p.T > latest {
				return fmt.Errorf("results: series %q: sample %d at %vs is far past the run's end at %vs; check the sample times",
					s.Name, i, p.T, r.TotalS())
			}
			if math.IsInf(p.V, 0) {
				return fmt.Errorf("results: series %q: sample %d at %vs is infinite", s.Name, i, p.T)
			}
			prev = p.T
		}
		return nil
	}
	for i := range d.Series {
		if err := check(&d.Series[i]); err != nil {
			return err
		}
	}
	ids := make(map[int]bool)
	for i := range d.Flows {
		f := &d.Flows[i]
		if ids[f.ID] {
			return fmt.Errorf("results: two flows have id %d", f.ID)
		}
		ids[f.ID] = true
		if f.Label == "" {
			return fmt.Errorf("results: flow %d has no label; it names the flow's main series", f.ID)
		}
		for j := range f.Series {
			s := &f.Series[j]
			if !strings.HasPrefix(s.Name, f.Label+"::") || len(s.Name) == len(f.Label)+2 {
				return fmt.Errorf("results: flow %d (%q): series %q must be named %q followed by a key", f.ID, f.Label, s.Name, f.Label+"::")
			}
			if err := check(s); err != nil {
				return err
			}
		}
	}
	return nil
}
