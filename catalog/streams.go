package catalog

import (
	"fmt"
	"time"
)

// PerStream are Flent's per-stream test parameters (for_stream_config in
// flent/testenv.py), which tcp_nup, tcp_ndown (and tcp_4up and its kin),
// rrul_var and the rtt_fair tests take: entry i sets stream i's (a flow,
// or rrul_var's and rtt_fair's flow pair and ping). A stream past the end
// of a list, or whose entry is empty, keeps the test's own; entries past
// the last stream are left unused, as Flent leaves them.
type PerStream struct {
	// Markings are the streams' DSCP marks by name ("CS1", "EF"): Flent's
	// "markings". rtt_fair, rtt_fair4be, rtt_fair6be and rtt_fair_up set
	// their own, as Flent's files do.
	Markings []string
	// CCAlgos are the streams' TCP congestion controls: Flent's
	// "cc_algos".
	CCAlgos []string
	// Delays are how much later than the load each stream starts, each
	// still stopping with the load: Flent's "stream_delays" (whole
	// seconds there).
	Delays []time.Duration
	// Labels name rrul_var's and the rtt_fair_var tests' streams in their
	// series: Flent's "labels" ("TCP upload::LABEL"; rtt_fair's
	// "TCP upload LABEL s1").
	Labels []string
	// PingLabels name the rtt_fair_var tests' pings ("Ping (ms) LABEL
	// s1"): Flent's "ping_labels".
	PingLabels []string
}

// check says what is wrong with the parameters, naming Flent's parameter.
func (p PerStream) check() error {
	for _, m := range p.Markings {
		if _, ok := DSCP(m); m != "" && !ok {
			return fmt.Errorf("markings: %q is no DSCP name: use %s", m, DSCPNames)
		}
	}
	for _, d := range p.Delays {
		if d < 0 {
			return fmt.Errorf("stream_delays: %v is negative: a stream starts with the load (0) or later", d)
		}
	}
	return nil
}

// stream is stream i's parameters, the test's defaults where the lists
// set none.
type stream struct {
	mark        Mark
	cc          string
	start, stop Time
}

// stream returns stream i's mark (def if none), congestion control and
// span: the load, or from its delay after the load's start to the load's
// end.
func (p PerStream) stream(i int, def Mark) stream {
	s := stream{mark: Mark(item(p.Markings, i, string(def))), cc: item(p.CCAlgos, i, ""), start: LoadStart, stop: LoadStop}
	if i < len(p.Delays) {
		s.start.Offset = p.Delays[i]
	}
	return s
}

// flow returns a flow of stream i with its parameters.
func (p PerStream) flow(i int, series string, dir Direction, def Mark) Flow {
	s := p.stream(i, def)
	return Flow{Series: series, Dir: dir, Mark: s.mark, CC: s.cc, Start: s.start, Stop: s.stop}
}

// Flent's names of the per-stream parameters, as its TEST_PARAMETERS and
// a results document's run.options hold them.
const (
	ParamMarkings     = "markings"
	ParamCCAlgos      = "cc_algos"
	ParamStreamDelays = "stream_delays"
	ParamLabels       = "labels"
	ParamPingLabels   = "ping_labels"
)

// StreamParams returns the per-stream parameters, by Flent's names, that
// the test called name takes: those its Flent file reads and does not set
// itself (rtt_fair's fixed tests set their markings and labels,
// tcp_nup's streams take no label); none for a test that takes none.
func StreamParams(name string) []string {
	flows := []string{ParamMarkings, ParamCCAlgos, ParamStreamDelays}
	switch {
	case name == "tcp_nup" || name == "tcp_ndown" || fixedStreamsTest(name):
		return flows
	case name == "rrul_var":
		return append(flows, ParamLabels)
	case VarServers(name):
		return append(flows, ParamLabels, ParamPingLabels)
	}
	if _, ok := rttFairs[name]; ok {
		return []string{ParamCCAlgos, ParamStreamDelays}
	}
	return nil
}

// fixedStreamsTest reports whether name is one of Flent's tcp_Nup and
// tcp_Ndown tests of a fixed count (tcp_4up).
func fixedStreamsTest(name string) bool {
	for _, k := range fixedStreams {
		if name == fmt.Sprintf("tcp_%dup", k) || name == fmt.Sprintf("tcp_%ddown", k) {
			return true
		}
	}
	return false
}
