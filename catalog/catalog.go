// Package catalog describes the tests `wanlab run` knows: Flent's, as Flent
// defines them (flent/tests/*.conf), and wanlab's own in the same style
// (other transports, and the user's programs): which load flows go which
// way with which DSCP mark, which latency probes run beside them, and the
// names of their series (the contract that Flent's plots and wanlab's
// results share). The series Flent computes from these (sums, averages,
// totals, fairness) are the results package's.
//
// It is data and small pure functions: the traffic is made elsewhere.
package catalog

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"wanlab/link"
)

// Direction is which way a flow's data goes.
type Direction uint8

const (
	// Up is client to server (Flent's TCP_STREAM, an upload).
	Up Direction = iota
	// Down is server to client (TCP_MAERTS, a download).
	Down
)

// String returns "up" or "down".
func (d Direction) String() string {
	if d == Down {
		return "down"
	}
	return "up"
}

// Transport is what a load flow carries.
type Transport uint8

// Transports of load flows.
const (
	TCP Transport = iota
	// UDPFlood is a constant-rate UDP stream (Flent's udp_flood, iperf -u).
	UDPFlood
	// TFRC is TCP-Friendly Rate Control (RFC 5348, with DCCP CCID-3's
	// profile) over UDP: wanlab's rate-based transport.
	TFRC
	// QUIC is one QUIC stream (quic-go).
	QUIC
	// Scalable is wanlab's built-in L4S sender over UDP: a window-based
	// scalable congestion controller with DCTCP's response to CE marks
	// (RFC 8257), every packet ECT(1) (RFC 9331). It is not DCTCP: it is
	// what drives an L4S queue where the kernel has no DCTCP or Prague
	// that sends ECT(1).
	Scalable
)

// String returns the transport's name: "tcp", "udp", "tfrc", "quic" or
// "scalable".
func (t Transport) String() string {
	switch t {
	case UDPFlood:
		return "udp"
	case TFRC:
		return "tfrc"
	case QUIC:
		return "quic"
	case Scalable:
		return "scalable"
	}
	return "tcp"
}

// ProbeKind is how a latency probe measures.
type ProbeKind uint8

// Probe kinds.
const (
	// ICMP is an echo request answered by the server host's kernel (ping).
	ICMP ProbeKind = iota
	// UDP is a request answered by wanlab's echo server, with one-way delays
	// (Flent's udp_rtt, irtt).
	UDP
)

// String returns "icmp" or "udp".
func (k ProbeKind) String() string {
	if k == UDP {
		return "udp"
	}
	return "icmp"
}

// Mark is a DSCP class by its name, as Flent's "marking" gives it.
type Mark string

// The marks Flent's tests use.
const (
	BE  Mark = "CS0" // best effort
	BK  Mark = "CS1" // background
	CS5 Mark = "CS5"
	CS6 Mark = "CS6"
	EF  Mark = "EF" // expedited forwarding
)

// TOS returns the IPv4 TOS byte (IPv6 traffic class) of the mark: the
// DSCP in its six high bits, ECN bits clear.
func (m Mark) TOS() uint8 {
	d, _ := DSCP(string(m))
	return d << 2
}

// Flow is one load flow of a test.
type Flow struct {
	// Series is the Flent series its throughput is recorded under.
	Series    string
	Dir       Direction
	Transport Transport
	Mark      Mark
	// CC is a TCP flow's congestion control where --cc sets none ("":
	// the hosts' default), as Flent's test sets it ('cong_control').
	CC string
	// Start and Stop are when the flow runs: Flent's 'delay' of its data
	// set, and that plus its 'length'. Lookup sets them for every flow:
	// LoadStart and LoadStop unless the test has a schedule of its own.
	Start, Stop Time
	// Client and Server are the hosts the flow runs between, by number
	// (client 2 is c2), 0 for the first (c1, s1): the rtt_fair tests run
	// each pair of flows to a server of its own.
	Client, Server int
}

// Hosts returns the hosts the flow runs between.
func (f Flow) Hosts() (client, server link.Host) { return hostPair(f.Client, f.Server) }

// hostPair returns client host c and server host s, 0 read as 1.
func hostPair(c, s int) (link.Host, link.Host) {
	return link.Host{N: max(c, 1)}, link.Host{Server: true, N: max(s, 1)}
}

// Time is an instant of a test's schedule as Flent's test files write it:
// Delays times Flent's DELAY plus Lengths times its LENGTH, from the start
// of the run (tcp_2up_square's third flow starts at DELAY*3), plus Offset
// (a stream's own delay, Flent's stream_delays).
type Time struct {
	Delays, Lengths int
	Offset          time.Duration
}

// At returns the instant for Flent's DELAY and LENGTH.
func (t Time) At(delay, length time.Duration) time.Duration {
	return time.Duration(t.Delays)*delay + time.Duration(t.Lengths)*length + t.Offset
}

// String writes the instant as Flent's test files do: "DELAY*3",
// "LENGTH+DELAY", "0".
func (t Time) String() string {
	var parts []string
	term := func(n int, name string) {
		switch n {
		case 0:
		case 1:
			parts = append(parts, name)
		default:
			parts = append(parts, fmt.Sprintf("%s*%d", name, n))
		}
	}
	term(t.Lengths, "LENGTH")
	term(t.Delays, "DELAY")
	if t.Offset != 0 {
		parts = append(parts, t.Offset.String())
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, "+")
}

// LoadStart and LoadStop are when the flows of a test without a schedule
// of its own run: for LENGTH after DELAY, which are wanlab's --duration
// and --lead.
var (
	LoadStart = Time{Delays: 1}
	LoadStop  = Time{Delays: 1, Lengths: 1}
)

// Probe is one latency probe stream of a test.
type Probe struct {
	// Series is the Flent series its round-trip times are recorded under.
	Series string
	Kind   ProbeKind
	Mark   Mark
	// Client and Server are the hosts the probe runs between, as a
	// Flow's.
	Client, Server int
}

// Hosts returns the hosts the probe runs between.
func (p Probe) Hosts() (client, server link.Host) { return hostPair(p.Client, p.Server) }

// Test is one of the tests: Flent's, or wanlab's own in Flent's style.
type Test struct {
	Name        string
	Description string
	Flows       []Flow
	Probes      []Probe
	// NoLoad marks a test without load flows (ping), which Flent runs for
	// LENGTH alone: no lead or tail.
	NoLoad bool
	// Custom marks the test whose load is the user's own programs (a
	// server and a client command) rather than Flows: wanlab measures
	// their traffic at the router.
	Custom bool
	// Flent says whether Flent has the test itself. (Flent runs the test
	// a data file names to load it, so the data file of a run of one of
	// wanlab's own names the Flent test of its layout: results.FlentLayout.)
	Flent bool
	// Plot is Flent's default plot for the test.
	Plot string
	// Schedule is, for a test whose flows start and stop on a schedule of
	// their own (tcp_2up_square), the run's length: the largest of these
	// instants (Flent's TOTAL_LENGTH of the test). Such a run starts with
	// its first flow, without a lead or a tail, and its DELAY is a
	// parameter of its own. nil for the others, whose flows run over the
	// load, between a lead and a tail.
	Schedule []Time
	// Clients and Servers are how many hosts of each side the test needs
	// at least (0: one), as its flows' and probes' hosts say.
	Clients, Servers int
}

// Scheduled reports whether the test's flows start and stop on a schedule
// of their own (Schedule).
func (t Test) Scheduled() bool { return len(t.Schedule) > 0 }

// Length returns a scheduled test's length for Flent's DELAY and LENGTH
// (its TOTAL_LENGTH), 0 for another test.
func (t Test) Length(delay, length time.Duration) time.Duration {
	var l time.Duration
	for _, at := range t.Schedule {
		l = max(l, at.At(delay, length))
	}
	return l
}

// CongestionControls returns the congestion controls the test's TCP flows
// set themselves, each once, in the order of the flows.
func (t Test) CongestionControls() []string {
	var ccs []string
	for _, f := range t.Flows {
		if f.Transport == TCP && f.CC != "" && !slices.Contains(ccs, f.CC) {
			ccs = append(ccs, f.CC)
		}
	}
	return ccs
}

// Options are the parameters some tests take.
type Options struct {
	// Streams is the number of flows of tcp_nup and tcp_ndown (Flent's
	// upload_streams/download_streams), and of each direction of rrul_var
	// (bidir_streams); 0 means 4.
	Streams int
	// UploadStreams and DownloadStreams are the flows of each direction
	// of rrul_be_nflows (Flent's upload_streams and download_streams); 0
	// means 4.
	UploadStreams, DownloadStreams int
	// PerStream are Flent's per-stream parameters (markings, cc_algos,
	// stream_delays, labels, ping_labels) of the tests that take them.
	PerStream PerStream
	// Servers is the number of servers of the rtt_fair_var tests
	// (VarServers: Flent's HOSTS list), each with its own flows and
	// ping; 0 means DefaultServers. The other tests have a number of
	// their own (Test.Servers).
	Servers int
}

// MaxStreams bounds Options.Streams.
const MaxStreams = 256

// flentNames are Flent's tests; names adds wanlab's own.
var (
	flentNames = slices.Concat([]string{"ping", "tcp_upload", "tcp_download", "tcp_bidirectional", "tcp_nup", "tcp_ndown", "rrul", "rrul_be", "udp_flood"}, mixingNames(), RTTFairTests)
	names      = slices.Concat(flentNames, []string{"tfrc_upload", "tfrc_download", "quic_upload", "quic_download", "l4s_upload", "l4s_download", "l4s_cubic", "custom"})
)

// L4SSeries begins the series name of a flow of wanlab's built-in scalable
// sender ("L4S scalable UDP upload"): what it is, an L4S flow of a
// scalable congestion controller over UDP, and not TCP's DCTCP.
const L4SSeries = "L4S scalable UDP"

// QUICCongestionControl names the congestion control of the QUIC tests:
// quic-go's only one (see package quicflow).
const QUICCongestionControl = "NewReno"

// Names returns the tests Lookup knows, in a stable order.
func Names() []string { return append([]string(nil), names...) }

// Lookup returns the test called name.
func Lookup(name string, o Options) (Test, error) {
	t, err := lookup(name, o)
	if err != nil {
		return Test{}, err
	}
	t.Flent = slices.Contains(flentNames, name)
	for i := range t.Flows {
		if f := &t.Flows[i]; f.Stop == (Time{}) {
			f.Start, f.Stop = LoadStart, LoadStop
		}
	}
	return t, nil
}

// streams returns a count of flows as given (0: 4), or an error that names
// the flag.
func streams(flag string, n int) (int, error) {
	if n == 0 {
		return 4, nil
	}
	if n < 1 || n > MaxStreams {
		return 0, fmt.Errorf("%s %d is out of range: use 1 to %d", flag, n, MaxStreams)
	}
	return n, nil
}

func lookup(name string, o Options) (Test, error) {
	n, err := streams("--streams", o.Streams)
	if err != nil {
		return Test{}, err
	}
	if err := o.PerStream.check(); err != nil {
		return Test{}, err
	}
	icmp := Probe{Series: "Ping (ms) ICMP", Kind: ICMP, Mark: BE}
	if t, ok, err := mixing(name, o, n, icmp); ok || err != nil {
		return t, err
	}
	if t, ok, err := rttFairTest(name, o); ok || err != nil {
		return t, err
	}
	switch name {
	case "ping":
		return Test{Name: name, Description: "ICMP and UDP round-trip times, no load", NoLoad: true, Plot: "ping",
			Probes: []Probe{icmp, {Series: "Ping (ms) UDP", Kind: UDP, Mark: BE}}}, nil
	case "tcp_upload":
		return Test{Name: name, Description: "one TCP upload with ping", Plot: "totals",
			Flows:  []Flow{{Series: "TCP upload", Dir: Up}},
			Probes: []Probe{icmp}}, nil
	case "tcp_download":
		return Test{Name: name, Description: "one TCP download with ping", Plot: "totals",
			Flows:  []Flow{{Series: "TCP download", Dir: Down}},
			Probes: []Probe{icmp}}, nil
	case "tcp_bidirectional":
		return Test{Name: name, Description: "one TCP flow each way with ping", Plot: "totals",
			Flows:  []Flow{{Series: "TCP download", Dir: Down}, {Series: "TCP upload", Dir: Up}},
			Probes: []Probe{icmp}}, nil
	case "tcp_nup", "tcp_ndown":
		dir, word := Up, "upload"
		if name == "tcp_ndown" {
			dir, word = Down, "download"
		}
		t := Test{Name: name, Description: fmt.Sprintf("%d TCP %ss with ping", n, word), Plot: "totals",
			Probes: []Probe{icmp}}
		for i := 0; i < n; i++ {
			t.Flows = append(t.Flows, o.PerStream.flow(i, fmt.Sprintf("TCP %s::%d", word, i+1), dir, BE))
		}
		return t, nil
	case "rrul":
		return rrul(name, "Realtime Response Under Load: 4 TCP flows each way in four classes, with UDP and ICMP probes",
			[]string{"BE", "BK", "CS5", "EF"}, []Mark{BE, BK, CS5, EF},
			[]Probe{{Series: "Ping (ms) UDP EF", Kind: UDP, Mark: EF}, {Series: "Ping (ms) UDP BK", Kind: UDP, Mark: BK},
				{Series: "Ping (ms) UDP BE", Kind: UDP, Mark: BE}, icmp}), nil
	case "rrul_be":
		return rrul(name, "Realtime Response Under Load, all best effort: 4 TCP flows each way, with UDP and ICMP probes",
			[]string{"BE", "BE2", "BE3", "BE4"}, []Mark{BE, BE, BE, BE},
			[]Probe{{Series: "Ping (ms) UDP BE1", Kind: UDP, Mark: BE}, {Series: "Ping (ms) UDP BE2", Kind: UDP, Mark: BE},
				{Series: "Ping (ms) UDP BE3", Kind: UDP, Mark: BE}, icmp}), nil
	case "udp_flood":
		return Test{Name: name, Description: "a constant-rate UDP upload with ping", Plot: "totals",
			Flows:  []Flow{{Series: "UDP upload", Dir: Up, Transport: UDPFlood}},
			Probes: []Probe{icmp}}, nil
	case "tfrc_upload", "tfrc_download":
		dir, word := direction(name)
		return Test{Name: name, Description: "one TFRC " + word + " (RFC 5348 rate control over UDP, as DCCP's CCID-3) with ping", Plot: "totals",
			Flows:  []Flow{{Series: "TFRC " + word, Dir: dir, Transport: TFRC}},
			Probes: []Probe{icmp}}, nil
	case "quic_upload", "quic_download":
		dir, word := direction(name)
		return Test{Name: name, Description: "one QUIC " + word + " (quic-go; congestion control " + QUICCongestionControl + ") with ping", Plot: "totals",
			Flows:  []Flow{{Series: "QUIC " + word, Dir: dir, Transport: QUIC}},
			Probes: []Probe{icmp}}, nil
	case "l4s_upload", "l4s_download":
		dir, word := direction(name)
		return Test{Name: name, Description: "one L4S " + word + " with ping: wanlab's built-in scalable sender over UDP (DCTCP's response to CE marks, RFC 8257, every packet ECT(1)), not the kernel's DCTCP", Plot: "totals",
			Flows:  []Flow{{Series: L4SSeries + " " + word, Dir: dir, Transport: Scalable}},
			Probes: []Probe{icmp}}, nil
	case "l4s_cubic":
		return Test{Name: name, Description: "one L4S upload of wanlab's built-in scalable UDP sender (not DCTCP) beside one TCP upload (CUBIC, or --cc's), with ping", Plot: "totals",
			Flows:  []Flow{{Series: L4SSeries + " upload", Dir: Up, Transport: Scalable}, {Series: "TCP upload", Dir: Up, CC: "cubic"}},
			Probes: []Probe{icmp}}, nil
	case "custom":
		return Test{Name: name, Description: "your own server and client programs, measured per flow at the router, with ICMP and UDP probes",
			Plot: "all_scaled", Custom: true,
			Probes: []Probe{icmp, {Series: "Ping (ms) UDP", Kind: UDP, Mark: BE}}}, nil
	}
	return Test{}, fmt.Errorf("test %q is unknown: use one of %s", name, strings.Join(names, ", "))
}

// direction returns the direction of a test named ..._upload or
// ..._download, and the word.
func direction(name string) (Direction, string) {
	if strings.HasSuffix(name, "_download") {
		return Down, "download"
	}
	return Up, "upload"
}

func rrul(name, desc string, ids []string, marks []Mark, probes []Probe) Test {
	t := Test{Name: name, Description: desc, Plot: "all_scaled", Probes: probes}
	for _, word := range []string{"upload", "download"} {
		dir := Up
		if word == "download" {
			dir = Down
		}
		for i, id := range ids {
			t.Flows = append(t.Flows, Flow{Series: fmt.Sprintf("TCP %s %s", word, id), Dir: dir, Mark: marks[i]})
		}
	}
	return t
}
