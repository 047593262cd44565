// Package results defines the results document that `wanlab run` writes and
// every later view reads: the run's provenance, its time series with their
// summaries, the flows with their per-flow series, and the router's report.
// From a saved document the package writes Flent's data file (WriteFlent)
// and a text summary in the style of Flent's `-f stats` (WriteSummary).
//
// The package knows nothing of how samples were taken. A writer fills a
// Document with samples, calls AddComputed for the series Flent computes
// from others (sums, averages, fairness) and Summarize for the summaries,
// then Encode. docs/results-format.md describes every key.
package results

import (
	"math"
	"strings"
	"time"
)

// Format is the value of the document's "format" key.
const Format = "wanlab-results"

// Version is the document's major version, the value of its "version" key.
// Additions that an older reader can ignore keep it; Decode refuses a
// document whose version is higher than this one, and reads older ones as
// this version has them. Version 2 gives the router's delays in ns, as
// every other delay of the document's router part; version 1 gave them in
// ms.
const Version = 2

// Document is one run's results.
type Document struct {
	// Run is the provenance: everything needed to run it again and to read
	// it.
	Run Run `json:"run"`
	// Series are the run's time series under Flent's names: the flows'
	// throughput, the latency probes and the computed series.
	Series []Series `json:"series"`
	// Flows describe each flow and probe and hold its per-flow series
	// (TCP_INFO at both ends, the router's per-flow view, one-way delays).
	Flows []Flow `json:"flows"`
	// Fairness is how evenly each direction's load flows shared it, for
	// each direction with two or more (FlowFairness); Summarize records
	// it. Views compute it with FlowFairness, so that a document written
	// before it was recorded has it too.
	Fairness []Fairness `json:"fairness,omitempty"`
	// HostFairness is how evenly each direction's load was shared among
	// the hosts of the side with several (the servers of rtt_fair), for
	// each direction with two or more such hosts (Document.HostFairness);
	// Summarize records it.
	HostFairness []HostFairness `json:"host_fairness,omitempty"`
	// Router is the router's report of the run: its per-direction
	// counters and fidelity verdict; nil when the document has none.
	Router *RouterReport `json:"router,omitempty"`
	// Commands are the user's programs a custom run started, with how
	// each ended and what it printed.
	Commands []Command `json:"commands,omitempty"`
}

// Command is one of the user's programs that a custom run started in a
// host (`wanlab run custom --server CMD --client CMD`).
type Command struct {
	// Role is "server" or "client", the host it ran in.
	Role string `json:"role"`
	// Command is the command as given; Expanded is what ran, as
	// `sh -c Expanded`, with the placeholders (@peer, @peer6, @port,
	// @duration) replaced.
	Command  string `json:"command"`
	Expanded string `json:"expanded"`
	// Started says whether it started; StartS and EndS are when it
	// started and ended, in seconds from Run.Start (negative before T0).
	Started bool    `json:"started"`
	StartS  float64 `json:"start_s"`
	EndS    float64 `json:"end_s"`
	// ExitCode is its exit status as a shell gives it: the code, or 128
	// plus the number of the signal that ended it.
	ExitCode int `json:"exit_code"`
	// EndedByWanlab says wanlab ended it (SIGTERM to its process group,
	// SIGKILL two seconds later): a server at the end of the run, or a
	// command that outlived its time.
	EndedByWanlab bool `json:"ended_by_wanlab"`
	// DaemonPIDs are the processes a server command left running outside
	// its process group, holding the socket it listened on (a server that
	// daemonised, as iperf3 -s -D does); wanlab ended them at the end of
	// the run.
	DaemonPIDs []int `json:"daemon_pids,omitempty"`
	// Error says why the command failed the run (it could not start,
	// exited with a non-zero status, or ran past its time); empty if it
	// did not.
	Error string `json:"error,omitempty"`
	// Stdout and Stderr are what it printed: all of it up to 128 KiB per
	// stream, else the first and the last 64 KiB with a line between
	// them saying how many bytes were left out. StdoutBytes and
	// StderrBytes count everything it printed.
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
}

// Run is a run's provenance.
type Run struct {
	// WanlabVersion is the version of the wanlab that made the run.
	WanlabVersion string `json:"wanlab_version"`
	// Argv is the command line, program name first.
	Argv []string `json:"argv"`
	// Test is the Flent test name (rrul, tcp_nup, ping, ...).
	Test string `json:"test"`
	// Title is the user's title for the run; it may be empty.
	Title string `json:"title"`
	// Start is T0, the instant every sample's time counts from. Encode
	// writes it in UTC, RFC 3339 with up to nanosecond precision.
	Start time.Time `json:"start"`
	// DurationS is the load period's length in seconds (Flent's LENGTH).
	DurationS float64 `json:"duration_s"`
	// StepS is the sampling step in seconds (Flent's STEP_SIZE). Rate
	// series stand for one step per sample; see Series.
	StepS float64 `json:"step_s"`
	// LeadS and TailS are the seconds of probing before and after the load
	// (Flent's DELAY on each side): the load runs from LeadS to
	// LeadS+DurationS.
	LeadS float64 `json:"lead_s"`
	TailS float64 `json:"tail_s"`
	// DelayS is Flent's DELAY of a test whose flows start and stop on a
	// schedule of their own (tcp_2up_square: its flows start DELAY apart),
	// which has no lead and whose tail is the rest of the schedule after
	// the load; 0 for the other tests, whose DELAY is LeadS.
	DelayS float64 `json:"delay_s,omitempty"`
	// Seed is the seed of every random choice of the emulated path.
	Seed uint64 `json:"seed"`
	// Framing is how the emulated device counts a packet's bytes:
	// "ethernet" (the IP length plus 14) or "ip" (the IP length).
	Framing string `json:"framing"`
	// KernelRelease is the running kernel's release, as uname -r prints it.
	KernelRelease string `json:"kernel_release"`
	// KernelPreemption is the kernel's preemption mode: "none",
	// "voluntary", "full", "lazy" or "rt" (the kernel's preempt=
	// parameter); absent when it could not be told, and in files written
	// before it was recorded. In mode none a program or kernel thread
	// inside the kernel may hold the router's CPU for milliseconds.
	KernelPreemption string `json:"kernel_preemption,omitempty"`
	// Rootless says the run was made without root: inside a user
	// namespace in which the user was root (wanlab's rootless mode), with
	// its limits (socket buffers within net.core.wmem_max and rmem_max,
	// no real-time priority beyond RLIMIT_RTPRIO). False for a run made as
	// root, and in files written before it was recorded.
	Rootless bool `json:"rootless,omitempty"`
	// Path is each direction's qdisc chain in tc syntax.
	Path Path `json:"path"`
	// Sysctls holds the sysctls set or read in each host, by host name
	// ("client", "server") and then by sysctl name
	// ("net.ipv4.tcp_congestion_control").
	Sysctls map[string]map[string]string `json:"sysctls,omitempty"`
	// Options are the test's options as the user gave them, by name
	// (Flent's test parameters, e.g. "upload_streams": "4").
	Options map[string]string `json:"options,omitempty"`
	// Hosts are the testbed's hosts when it had more than two, or access
	// links, the clients first; none for a testbed of two hosts.
	Hosts []RunHost `json:"hosts,omitempty"`
	// Partial says the run did not complete; PartialReason says why.
	Partial       bool   `json:"partial"`
	PartialReason string `json:"partial_reason,omitempty"`
	// FailedOutputs are the outputs written beside the results that
	// failed during the run (a capture whose reader went away): the
	// measurements are whole, these outputs are not.
	FailedOutputs []FailedOutput `json:"failed_outputs,omitempty"`
	// SamplesDropped says the document is a summary of a run: its series'
	// samples and the router's per-step readings were dropped (see
	// WithoutSamples), and every summary, flow and the router's report
	// kept. Views that draw or summarise samples refuse such a document.
	SamplesDropped bool `json:"samples_dropped,omitempty"`
}

// FailedOutput is an output of a run that could not be written in full.
type FailedOutput struct {
	// Output is the option that named it ("--pcap"), Path its file.
	Output string `json:"output"`
	Path   string `json:"path"`
	// Error says why it failed, in a message that names the output.
	Error string `json:"error"`
}

// TotalS is the run's whole length in seconds: lead, load and tail.
func (r Run) TotalS() float64 { return r.LeadS + r.DurationS + r.TailS }

// FlentDelay is the run's DELAY as Flent's test files use it: DelayS for a
// test with a schedule of its own, else the lead.
func (r Run) FlentDelay() float64 {
	if r.DelayS > 0 {
		return r.DelayS
	}
	return r.LeadS
}

// Path is a path's qdisc chain per direction, in tc syntax, root first
// (`tbf rate 10mbit burst 32k latency 400ms; fq_codel`). Up is client to
// server.
type Path struct {
	Up   string `json:"up"`
	Down string `json:"down"`
}

// Series is one named time series.
//
// Samples are (t, value) pairs in ascending time, t in seconds from
// Run.Start. A value of NaN is a lost probe: an explicit gap, written as
// null. A sample of a rate series (a unit ending in "/s") is the mean rate
// over the step ending at t.
//
// Summary and Lost describe the samples inside Window only: those with
// Window[0] < t <= Window[1]. Samples outside it (the lead and tail around
// a load series) are kept for plots but not summarised.
type Series struct {
	// Name is Flent's series name: "TCP upload BE", "Ping (ms) ICMP",
	// "TCP upload::3". A flow's own series are named after the flow's
	// label and a key, joined by "::" ("TCP upload BE::tcp_cwnd").
	Name string `json:"name"`
	// Unit is the samples' unit: "Mbits/s", "ms", "packets", "bytes",
	// "%", "events", "probes", "Idx" (a fairness index) or "flag" (1 when
	// a state holds, 0 when not).
	Unit string `json:"unit"`
	// Summary describes the samples in Window; Summarize fills it.
	Summary Summary `json:"summary"`
	// Window is the [start, end] of the summarised samples, in seconds
	// from Run.Start; a sample is inside when start < t <= end.
	Window [2]float64 `json:"window"`
	// Lost is the number of lost probes (NaN samples) in Window.
	Lost int `json:"lost"`
	// Samples are the (t, value) pairs.
	Samples Samples `json:"samples"`
}

// IsRate reports whether the series' unit is a rate (ends in "/s"), whose
// integral over time is its Summary.Total.
func (s *Series) IsRate() bool { return isRate(s.Unit) }

func isRate(unit string) bool { return strings.HasSuffix(unit, "/s") }

// TotalUnit is the unit of Summary.Total: the rate unit without "/s"
// ("Mbits" for "Mbits/s"). It is empty for a series that is not a rate.
func (s *Series) TotalUnit() string {
	if !s.IsRate() {
		return ""
	}
	return strings.TrimSuffix(s.Unit, "/s")
}

// inWindow reports whether time t is inside the window w.
func inWindow(w [2]float64, t float64) bool { return t > w[0] && t <= w[1] }

// Sample is one point of a series: T seconds from Run.Start and the value
// V, NaN for a lost probe.
type Sample struct {
	T, V float64
}

// Lost reports whether the sample is a lost probe.
func (s Sample) Lost() bool { return math.IsNaN(s.V) }

// Summary describes the samples in a series' window with Flent's
// definitions (see package stats): population standard deviation and
// variance, percentiles interpolated linearly as numpy does. Lost probes
// are left out. Every figure is NaN (written null) when N is 0.
type Summary struct {
	// N is the number of samples summarised (lost probes not counted).
	N int
	// Total is, for a rate series, its integral over the window: the sum
	// of value × Run.StepS over the summarised samples, in the series'
	// TotalUnit (Mbits for Mbits/s). It is NaN for other series.
	Total float64
	// Mean, Median, Min and Max are the usual figures; P90 and P99 are the
	// 90th and 99th percentiles.
	Mean, Median, Min, Max, P90, P99 float64
	// StdDev and Variance are the population figures (divided by N).
	StdDev, Variance float64
}

// Flow describes one flow or probe of the run.
type Flow struct {
	// ID is the flow's number, unique in the document.
	ID int `json:"id"`
	// Label is the Flent series name of the flow's main series ("TCP
	// upload BE", "Ping (ms) UDP BE"); that series is in Document.Series.
	Label string `json:"label"`
	// Direction is "up" (client to server), "down", or "both" for a
	// round-trip probe.
	Direction string `json:"direction"`
	// Protocol is the IP protocol: "tcp", "udp", "icmp", "icmpv6", or its
	// number for others (a user's flow of the custom test).
	Protocol string `json:"protocol"`
	// FiveTuple is a flow of the custom test as the router keyed it:
	// "tcp 10.53.54.1:40000 > 10.53.54.2:5201" (ICMP echo: the
	// identifier as both ports); empty for wanlab's own flows.
	FiveTuple string `json:"five_tuple,omitempty"`
	// TOS is the IP TOS (IPv6 traffic class) byte the flow's packets
	// carry: the DSCP shifted left by two, plus the ECN bits.
	TOS int `json:"tos"`
	// CongestionControl is a TCP flow's congestion control ("cubic"), a
	// QUIC flow's ("newreno"), or "tfrc" for a TFRC flow; empty for
	// others.
	CongestionControl string `json:"congestion_control,omitempty"`
	// Client and Server are the hosts the flow or probe ran between, by
	// the testbed's names ("c1", "s2"); empty for a custom run's flows
	// and in documents written before they were recorded, which ran
	// between the one client and the one server.
	Client string `json:"client,omitempty"`
	Server string `json:"server,omitempty"`
	// Span is when the flow was to run, [start, stop] in seconds from
	// Run.Start, as the test's schedule set it (Flent's 'delay' of the
	// flow, and that plus its 'length'): the load for most tests, its own
	// times for the square-wave ones. A TCP flow connects at start and
	// its sender stops at stop; a probe sends its first probe at start.
	// Absent for the flows of the custom test's programs.
	Span *[2]float64 `json:"span,omitempty"`
	// Error, if not empty, is the first error that ended or hampered the
	// flow during the run (a refused connection, a reset, a send the
	// kernel refused): its samples are what it recorded until then.
	Error string `json:"error,omitempty"`
	// Series are the flow's own series, each named Label + "::" + key.
	// Keys in use: the sender's TCP_INFO under Flent's names and units
	// (tcp_cwnd in packets, tcp_rtt and tcp_rtt_var in ms,
	// tcp_pacing_rate and tcp_delivery_rate in Mbits/s), the
	// receiver's as receiver_... (receiver_tcp_rtt), the router's view as
	// router_... (router_delivered_bytes, router_wire_bytes,
	// router_drops_<reason>, router_marks, router_queue_delay), and a
	// probe's one-way delays as owd_up and owd_down. New keys need no
	// schema change.
	Series []Series `json:"series,omitempty"`
}

// Kernel describes the run's kernel: its release, and its preemption
// mode when recorded ("6.1.0-31-amd64 (preemption voluntary)"); "" when
// neither is.
func (r *Run) Kernel() string {
	if r.KernelPreemption == "" {
		return r.KernelRelease
	}
	return strings.TrimSpace(r.KernelRelease + " (preemption " + r.KernelPreemption + ")")
}
