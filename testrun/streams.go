package testrun

import (
	"slices"

	"wanlab/catalog"
)

// streamKeys are the options of Flent's per-stream parameters, by their
// keys: Flent's names, under which run.options records them.
var streamKeys = []string{catalog.ParamMarkings, catalog.ParamCCAlgos, catalog.ParamStreamDelays, catalog.ParamLabels, catalog.ParamPingLabels}

// checkStreamDelays refuses a stream delay that leaves its stream no time
// in the load, as Flent's stream of LENGTH minus its delay would have
// none, and one off the sampling grid: a stream starts on it.
func (s *Setup) checkStreamDelays(o Options) error {
	for _, d := range o.StreamDelays {
		switch {
		case d >= s.Duration:
			return bad(catalog.ParamStreamDelays, "--stream-delays: a stream %v after the load's start has no time in the load (--duration %v) before it stops: give delays shorter than the load, or lengthen --duration",
				d, s.Duration)
		case d%s.Step != 0:
			return bad(catalog.ParamStreamDelays, "--stream-delays: %v is not a whole number of steps (--step %v), so its stream would not start on the sampling grid: choose a step that divides it", d, s.Step)
		}
	}
	return nil
}

// checkCCAlgos checks the congestion controls of --cc-algos that the
// test's flows take (entries past the last stream are unused, as in
// Flent) by name against the kernel's, and refuses them with a --cc that
// sets the same flows, over them.
func (s *Setup) checkCCAlgos(algs []string) error {
	for _, f := range s.Test.Flows {
		if f.Transport != catalog.TCP || f.CC == "" || !slices.Contains(algs, f.CC) {
			continue
		}
		if f.Dir == catalog.Up && s.CCUp != "" || f.Dir == catalog.Down && s.CCDown != "" {
			return bad(catalog.ParamCCAlgos, "--cc %s sets the congestion control of every %s flow, over --cc-algos %s: drop one of them",
				s.Opts.CC, f.Dir, LookupOption(catalog.ParamCCAlgos).Texts(&s.Opts)[0])
		}
		if err := checkCC(catalog.ParamCCAlgos, f.CC); err != nil {
			return err
		}
	}
	return nil
}

// recordStreams records in m (run.options) the per-stream parameters
// given, under Flent's names and as Flent's TEST_PARAMETERS take them
// (entries joined by ","): the Flent export passes them on, and Flent
// rebuilds the streams' series from them.
func recordStreams(m map[string]string, o *Options) {
	for _, k := range streamKeys {
		if t := LookupOption(k).Texts(o); len(t) > 0 {
			m[k] = t[0]
		}
	}
}
