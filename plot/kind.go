package plot

import (
	"fmt"
	"io"
	"strings"

	"wanlab/results"
)

// Kind is a graph drawn from results documents by Draw. Its value is the
// name the command line uses; AllScaled and PingCDF are named after the
// Flent plots they follow.
type Kind string

// The kinds of graph Draw renders.
const (
	// AllScaled is Flent's all_scaled for one or more runs: download
	// throughput, upload throughput and latency in three panels over a
	// shared time axis, each run's load period marked, the y axes scaled
	// to the 5th–95th percentile as Flent's "scaled" plots are. Panels a
	// run has no series for are left out (tcp_upload has no download).
	// With one run every flow is drawn, plus its average where Flent
	// computes one (thicker), its legend entry naming the flow's median
	// RTT at the sender where the flow has TCP_INFO ("TCP cubic 2 (RTT
	// 41 ms)"); with several runs, a run with several flows in a direction
	// is drawn as that average, so that the overlay stays readable.
	AllScaled Kind = "all_scaled"
	// PingCDF is the cumulative distribution of every latency probe series
	// of one or more runs (not the computed average), over the samples
	// inside each run's load window, as Flent's ping_cdf.
	PingCDF Kind = "ping_cdf"
	// Box is a box plot of one series' samples inside the load window,
	// one box per run, labelled by the run, or one per group of runs
	// (Options.Groups: an experiment's case) over all their samples:
	// quartiles and median, whiskers to the furthest sample within 1.5
	// interquartile ranges, the samples beyond drawn as dots (matplotlib's
	// rule, which Flent's box plots use). Options.Series chooses the
	// series.
	Box Kind = "box"
	// TCPCwndRTT is the congestion window and the smoothed RTT of every
	// TCP flow of one run over time, at the sender (the flow's tcp_cwnd
	// and tcp_rtt series) and the receiver (receiver_tcp_cwnd,
	// receiver_tcp_rtt), in two panels over a shared time axis.
	TCPCwndRTT Kind = "tcp_cwnd_rtt"
	// RouterFlows is the router's view of every flow of one run over time:
	// the rate it delivered the flow at (from router_delivered_bytes, the
	// bytes delivered in each step) and the flow's queueing delay
	// (router_queue_delay), in two panels over a shared time axis.
	RouterFlows Kind = "router_flows"
	// SeriesKind is one series chosen by name (Options.Series, a top-level
	// series or a flow's LABEL::key such as "TFRC upload::tfrc_p") over
	// time, one line per run; several runs overlay.
	SeriesKind Kind = "series"
	// SweepKind is an experiment's table drawn as a graph (FromTable,
	// DrawSweep): a statistic against a swept variable, a group per value
	// of another. It is drawn from an experiment's results directory or
	// summary file, not from results documents: Draw refuses it.
	SweepKind Kind = "sweep"
)

// kindInfo is one row of the table of kinds.
type kindInfo struct {
	kind Kind
	// about is the one-line description help texts show.
	about string
	// manyRuns says the kind draws several documents in one graph.
	manyRuns bool
	// build makes the figure from checked documents and their labels;
	// nil for a kind drawn from an experiment's table.
	build func(docs []*results.Document, labels []string, o Options, t theme) (*figure, error)
}

// kinds is the table of kinds, in the order help texts list them.
var kinds = []kindInfo{
	{AllScaled, "download, upload and latency over time (Flent's all_scaled); several runs overlay", true, allScaled},
	{PingCDF, "CDF of every latency probe in the load window; several runs overlay", true, pingCDF},
	{Box, "box plot of a chosen series in the load window, one box per run (per case of an experiment)", true, boxPlot},
	{TCPCwndRTT, "TCP congestion window and RTT over time at sender and receiver, one run", false, tcpCwndRTT},
	{RouterFlows, "the router's per-flow delivered rate and queueing delay over time, one run", false, routerFlows},
	{SeriesKind, "a series chosen with --series (a flow's too, LABEL::key) over time; several runs overlay", true, seriesOverTime},
	{SweepKind, "an experiment's table as a graph: a statistic against a swept variable, a line or group per value of another", true, nil},
}

// Kinds lists the kinds of graph, in the order help texts show them.
func Kinds() []Kind {
	out := make([]Kind, len(kinds))
	for i, k := range kinds {
		out[i] = k.kind
	}
	return out
}

// ParseKind returns the kind named s; the error lists the kinds.
func ParseKind(s string) (Kind, error) {
	if k, ok := lookupKind(Kind(strings.TrimSpace(s))); ok {
		return k.kind, nil
	}
	return "", fmt.Errorf("plot: unknown graph %q: choose one of %s", s, kindList())
}

// Description returns a one-line description of the kind for help texts,
// or "" for an unknown kind.
func (k Kind) Description() string {
	info, _ := lookupKind(k)
	return info.about
}

// ManyRuns reports whether the kind draws several results documents in
// one graph (AllScaled, PingCDF, Box and SeriesKind do; the others draw
// one run).
func (k Kind) ManyRuns() bool {
	info, _ := lookupKind(k)
	return info.manyRuns
}

// FromTable reports whether the kind is drawn from an experiment's table
// (FromTable and DrawSweep) rather than by Draw from results documents.
func (k Kind) FromTable() bool {
	info, ok := lookupKind(k)
	return ok && info.build == nil
}

func lookupKind(k Kind) (kindInfo, bool) {
	for _, info := range kinds {
		if info.kind == k {
			return info, true
		}
	}
	return kindInfo{}, false
}

func kindList() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k.kind)
	}
	return strings.Join(names, ", ")
}

// Draw renders the graph of the given kind from the documents and writes
// it to w in o's format and size. A kind that draws one run (see ManyRuns)
// takes exactly one document. The documents must pass Validate. Nothing is
// written when Draw returns an error, which names what is missing when a
// document lacks the series the graph needs.
func Draw(w io.Writer, kind Kind, docs []*results.Document, o Options) error {
	_, err := drawKind(w, kind, docs, o)
	return err
}

// drawKind is Draw, returning the layout for tests.
func drawKind(w io.Writer, kind Kind, docs []*results.Document, o Options) (layout, error) {
	info, ok := lookupKind(kind)
	if !ok {
		return layout{}, fmt.Errorf("plot: unknown graph %q: choose one of %s", kind, kindList())
	}
	f, wpx, hpx, err := o.image()
	if err != nil {
		return layout{}, err
	}
	if err := checkDocs(docs); err != nil {
		return layout{}, err
	}
	if info.build == nil {
		return layout{}, fmt.Errorf("plot: %s is drawn from an experiment's table (FromTable, DrawSweep), not from results documents", kind)
	}
	if !info.manyRuns && len(docs) != 1 {
		return layout{}, fmt.Errorf("plot: %s draws one run, and %d results documents were given: draw each on its own", kind, len(docs))
	}
	labels, err := runLabels(docs, o)
	if err != nil {
		return layout{}, err
	}
	fig, err := info.build(docs, labels, o, newTheme(wpx, hpx))
	if err != nil {
		return layout{}, err
	}
	if o.Title != "" {
		fig.title = o.Title
	}
	if len(fig.missing) > 0 && o.Warnf != nil {
		o.Warnf("%d of the %d runs %s no %s, left out of the %s graph: %s", len(fig.missing), len(docs),
			map[bool]string{true: "has", false: "have"}[len(fig.missing) == 1], fig.missingWhat, kind, strings.Join(fig.missing, ", "))
	}
	return fig.write(w, f, wpx, hpx)
}
