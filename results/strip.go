package results

import "errors"

// WithoutSamples returns a copy of d that keeps everything but the
// samples: every series with its summary, window and unit, every flow with
// its series' summaries, the router's report without its per-step
// readings, the run and its provenance; Run.SamplesDropped is set. It is
// the compact form in which an experiment's results are kept and shipped
// (a few kilobytes a run instead of a few hundred), from which tables,
// sweep graphs and comparisons are made exactly as from the whole files.
// d is not changed.
func (d *Document) WithoutSamples() *Document {
	c := *d
	c.Run.SamplesDropped = true
	c.Series = dropSamples(d.Series)
	c.Flows = make([]Flow, len(d.Flows))
	for i, f := range d.Flows {
		f.Series = dropSamples(f.Series)
		c.Flows[i] = f
	}
	if d.Router != nil {
		r := *d.Router
		r.Steps = nil
		c.Router = &r
	}
	return &c
}

func dropSamples(ss []Series) []Series {
	if ss == nil {
		return nil
	}
	out := make([]Series, len(ss))
	for i, s := range ss {
		s.Samples = nil
		out[i] = s
	}
	return out
}

// ErrNoSamples is what a view that needs samples (a graph over time, a
// CDF, an export) says of a document whose samples were dropped.
var ErrNoSamples = errors.New("results: this is a summary of a run (wanlab experiment summarize dropped its samples): it gives tables, sweep graphs and comparisons; draw its series over time from the run's own results file")

// NeedSamples returns ErrNoSamples for a document whose samples were
// dropped, and nil otherwise.
func (d *Document) NeedSamples() error {
	if d.Run.SamplesDropped {
		return ErrNoSamples
	}
	return nil
}
