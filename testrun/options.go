package testrun

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"wanlab/catalog"
	"wanlab/profile"
	"wanlab/tfrc/tfrcudp"
)

// Options describe one run. The zero value of a field keeps its default
// unless its comment says otherwise; Defaults returns the defaults of the
// fields whose zero value is a valid choice of its own (Step, Seed).
// Registry describes every field as an option: its flag, its key in
// experiment files, its parser, where the results record it.
type Options struct {
	// Test is the test (catalog.Names): Flent's (ping, tcp_upload, rrul,
	// ...) or wanlab's own (tfrc_upload, quic_upload, custom, ...). Empty
	// runs the main job: rrul for 30 s on the default profile.
	Test string
	// Duration is the length of the load; nil means Flent's 60 s (30 s
	// when Test is empty). Step is the sampling grid's step (200 ms).
	Duration *time.Duration
	Step     time.Duration
	// Lead and Tail are the probing before and after the load; nil means
	// Flent's 5 s each, or none for ping, which has no load.
	Lead *time.Duration
	Tail *time.Duration
	// Streams is the number of flows of tcp_nup and tcp_ndown, and of
	// each direction of rrul_var (0: 4).
	Streams int
	// UploadStreams and DownloadStreams are the flows of each direction
	// of rrul_be_nflows (0: 4).
	UploadStreams, DownloadStreams int
	// Markings, CCAlgos, StreamDelays, Labels and PingLabels are Flent's
	// per-stream parameters (markings, cc_algos, stream_delays, labels,
	// ping_labels: catalog.PerStream) of the tests that take them
	// (catalog.StreamParams): entry i sets stream i. StreamDelays are
	// whole seconds, as Flent takes them.
	Markings, CCAlgos, Labels, PingLabels []string
	StreamDelays                          []time.Duration
	// Delay is Flent's DELAY of the tests whose flows start and stop on a
	// schedule of their own (catalog.ScheduledTests): nil means Flent's
	// 5 s. The other tests' DELAY is Lead and Tail.
	Delay *time.Duration
	// UDPRate is udp_flood's sending rate of UDP payload ("100mbit",
	// "20M", "500k"; empty: Flent's 100 Mbit/s) and UDPSize its packets'
	// UDP payload in bytes (0: iperf2's 1470, 1450 over IPv6).
	UDPRate string
	UDPSize int
	// TxQLen is the TFRC sender's transmit buffer in packets, as DCCP's
	// net.dccp.default.tx_qlen: nil means DCCP's default, 5; 0 means
	// unbounded (the socket's send buffer bounds it).
	TxQLen *int
	// Server and Client are the custom test's commands, run with sh -c
	// in the server and the client host after the placeholders @peer,
	// @peer6, @port and @duration are replaced. ServerWait bounds the
	// wait for the server to listen (nil: DefaultServerWait; 0: do not
	// wait).
	Server     string
	Client     string
	ServerWait *time.Duration
	// IPv6 runs the test over the hosts' IPv6 addresses.
	IPv6 bool
	// CC is the TCP congestion control of every flow ("cubic"), or per
	// direction of the data ("up=cubic,down=bbr"); empty keeps the hosts'
	// default.
	CC string
	// TOS marks the flows and probes the test leaves best effort: a DSCP
	// name (EF, CS1, AF41) or a TOS byte (0xb8, 184).
	TOS string
	// ECN turns on ECN for TCP in both hosts (net.ipv4.tcp_ecn=1) and sends
	// UDP floods as ECT(0).
	ECN bool
	// SendBuffer and ReceiveBuffer are the TCP senders' SO_SNDBUF and the
	// receivers' SO_RCVBUF in bytes (0: the kernel's autotuning).
	SendBuffer    int
	ReceiveBuffer int
	// TCPRmem and TCPWmem are net.ipv4.tcp_rmem and tcp_wmem of both
	// hosts ("4096 131072 33554432").
	TCPRmem string
	TCPWmem string
	// Sysctls are further per-host sysctls, each "[HOST:]KEY=VALUE" with
	// KEY under net. and HOST client, server, c2, s3, ... (every host of a
	// testbed the run builds without a prefix; the client and the server
	// of a borrowed one).
	Sysctls []string
	// Seed seeds every random choice of the emulated path.
	Seed uint64
	// Title labels the run in tables and plots.
	Title string
	// Framing is what the emulated devices count in a packet's length:
	// "ethernet" (the default: the IP length plus 14, as an Ethernet
	// interface's qdiscs count) or "ip" (the IP length, as on a TUN).
	Framing string
	// Granularity is what the path's qdiscs take as one packet when the
	// kernel hands the router a GSO super-packet: "segment" (the default:
	// each wire segment, as on the link) or "gso" (the super-packet whole,
	// as tc on the sending host's egress).
	Granularity string
	// DataPlane is how a testbed of the run's own joins its hosts to the
	// router: "tun" (the default: a TUN device in each host) or "packet"
	// (a veth pair from each host to the router's namespace, read through
	// packet sockets); see lab.DataPlane.
	DataPlane string
	// Clients and Servers are how many hosts each side of a testbed of
	// the run's own has (1 to 16; 0: as many as the test needs, at least
	// one). AccessUp and AccessDown are hosts' access links, each
	// HOST=CHAIN in tc syntax ("c2=netem delay 40ms"), and HostCC hosts'
	// congestion controls, each HOST=CC ("c2=bbr"); see lab.HostSpecs.
	Clients, Servers int
	AccessUp         []string
	AccessDown       []string
	HostCC           []string
	// Up, Down and Both are the path's chains in tc syntax (Both: the same
	// chain each way). With none of them and no Profile, the path is the
	// default profile's.
	Up   string
	Down string
	Both string
	// UpScript and DownScript are files of tc lines that make a
	// direction's path, on any one device each; Script is one file for
	// both directions, whose lines on UpDev make the up path and those on
	// DownDev the down one. ScriptVars are NAME=VALUE pairs, the values of
	// the scripts' variables.
	UpScript   string
	DownScript string
	Script     string
	UpDev      string
	DownDev    string
	ScriptVars []string
	// TraceUp and TraceDown are mahimahi trace files limiting a
	// direction's capacity.
	TraceUp   string
	TraceDown string
	// At are chain changes at set times of the run, applied as `wanlab
	// set` applies them.
	At []Change
	// Profile is a built-in path (profile.Names); AQM replaces the
	// bottleneck queue of the path's chains (profile.AQMs).
	Profile string
	AQM     string
	// Direct runs over a plain veth pair between the two hosts, without
	// the router: the machine's own ceiling.
	Direct bool
	// Lab runs on the running testbed of that name instead of building one.
	Lab string
	// Pcap records every packet the router forwards to this file.
	Pcap string
	// Output is the results file (default wanlab-TEST-YYYYmmdd-HHMMSS.json.gz
	// in the current directory); Flent is a Flent data file to write too.
	Output string
	Flent  string
	// JSON prints the results document on stdout instead of the text
	// summary.
	JSON bool
}

// Change is a chain change at a set time of the run: at At after the start
// of the run (the lead included), the chains given replace the current
// ones, as `wanlab set` would.
type Change struct {
	At   time.Duration
	Up   string
	Down string
	Both string
}

// String writes the change as its flags would give it.
func (c Change) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "--at %v", c.At)
	for _, f := range [][2]string{{"up", c.Up}, {"down", c.Down}, {"both", c.Both}} {
		if f[1] != "" {
			fmt.Fprintf(&b, " --%s %q", f[0], f[1])
		}
	}
	return b.String()
}

// Defaults returns the options of a run nobody configured: the main job.
func Defaults() Options {
	return Options{Step: 200 * time.Millisecond, Seed: 1}
}

// The defaults the options' comments name.
const (
	// DefaultTest is the test of the main job, run when no test is named.
	DefaultTest = "rrul"
	// DefaultProfile is the path of a run that names none.
	DefaultProfile = "home"
	// DefaultDuration is Flent's; MainJobDuration is the main job's.
	DefaultDuration = 60 * time.Second
	MainJobDuration = 30 * time.Second
	// DefaultLeadTail is Flent's DELAY, before and after the load.
	DefaultLeadTail = 5 * time.Second
	// DefaultDelay is Flent's DELAY (flent -d) of the tests with a
	// schedule of their own.
	DefaultDelay = 5 * time.Second
	// DefaultUDPRate is Flent's udp_flood rate (iperf -b 100M).
	DefaultUDPRate = "100mbit"
	// DefaultTxQLen is Linux DCCP's net.dccp.default.tx_qlen.
	DefaultTxQLen = tfrcudp.DefaultTxQueueLen
	// DefaultServerWait is how long the custom test waits for its server
	// command to listen.
	DefaultServerWait = 10 * time.Second
	// ClientGrace is how long after the load the custom test's client
	// command may still run before wanlab ends it as hung.
	ClientGrace = 5 * time.Second
	// OutputLimit is how much of each output stream of a custom command
	// the results keep: the first and the last half of it, with what
	// lies between left out and counted.
	OutputLimit = 128 << 10
)

// Markdown returns docs/options.md: the registry, then the built-in
// profiles with their chains and sources.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Options of wanlab run\n\n")
	b.WriteString("Every option of `wanlab run`, once: its flag, its key in experiment files,\n")
	b.WriteString("its value and where the results document (docs/results-format.md) records it;\n")
	b.WriteString("then the built-in paths that --profile names, with their chains and sources.\n")
	b.WriteString("An option given where it does nothing (the test has no flow it sets, the\n")
	b.WriteString("testbed is not the run's own) is refused, naming why and the fix.\n")
	b.WriteString("Generated from `testrun.Registry`, as the flags of `wanlab run` and the keys\n")
	b.WriteString("of experiment files are; a test fails when this file and the registry disagree\n")
	b.WriteString("(regenerate with `go test ./testrun -run TestOptionsDoc -update`).\n\n")
	b.WriteString("| flag | experiment key | value | recorded in | meaning |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, op := range registry {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s |\n", op.flagCell(), op.Key, op.valueCell(), op.Recorded, op.Meaning())
	}
	b.WriteString("\n## Built-in paths (`--profile`)\n\n")
	b.WriteString("Each profile is a chain per direction: netem for the propagation delay, a\n")
	b.WriteString("tbf for the rate, and a FIFO as the tbf's child, the bottleneck queue that\n")
	fmt.Fprintf(&b, "`--aqm` replaces (%s;\n`--aqm cake` replaces the tbf and its child, shaping at the tbf's rate).\nWithout a path, a run uses `%s`.\n", strings.Join(profile.AQMs, ", "), DefaultProfile)
	for _, p := range profile.All() {
		fmt.Fprintf(&b, "\n### %s\n\n%s.\n\n", p.Name, capitalize(p.Summary))
		fmt.Fprintf(&b, "- up: `%s`\n- down: `%s`\n\n%s\n", p.Up, p.Down, p.Why)
	}
	return b.String()
}

// flagCell is the option's flag in docs/options.md.
func (op *Option) flagCell() string {
	if op.Flag == "" {
		return "`TEST` (argument)"
	}
	cell := "`--" + op.Flag + "`"
	if op.Short != "" {
		cell = "`-" + op.Short + "`, " + cell
	}
	if op.Repeatable() {
		cell += " (repeatable)"
	}
	return cell
}

// valueCell is the option's value in docs/options.md.
func (op *Option) valueCell() string {
	if op.PerRun != "" {
		return "file; `true` or `false` in an experiment"
	}
	return map[string]string{"duration": "duration", "int": "integer", "uint64": "integer", "bool": "`true` or `false`",
		"string": "text", "stringArray": "text", "chain": "tc chain",
		"strings": "list of text (`,` or `;` between entries)", "seconds": "list of whole seconds (`,` or `;` between entries)"}[op.Type()]
}

// Meaning is the option's meaning in docs/options.md, in Markdown: the
// usage line of its flag, the rest of its meaning, and where it is
// refused because it would do nothing.
func (op *Option) Meaning() string {
	var parts []string
	if u := op.Usage(); u != "" {
		parts = append(parts, MarkdownText(u))
	}
	if op.Doc != "" {
		parts = append(parts, op.Doc)
	}
	if op.PerRun != "" {
		parts = append(parts, fmt.Sprintf("in an experiment file `true` writes each run's own beside its results file (RUN%s)", op.PerRun))
	}
	if tests, with := op.refused(); len(tests)+len(with) > 0 {
		var where []string
		if len(tests) > len(catalog.Names())/2 {
			// Name the few that take it.
			var only []string
			for _, n := range catalog.Names() {
				if !slices.Contains(tests, n) {
					only = append(only, n)
				}
			}
			where = append(where, "for every test but "+strings.Join(only, ", "))
		} else if len(tests) > 0 {
			where = append(where, "for "+strings.Join(tests, ", "))
		}
		if len(with) > 0 {
			where = append(where, "with "+strings.Join(with, " or "))
		}
		parts = append(parts, "refused "+strings.Join(where, " and "))
	}
	return strings.Join(parts, "; ")
}

// MarkdownText is plain text as a Markdown table cell shows it: a | would
// end the cell.
func MarkdownText(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// refused lists where the option is refused because it would do nothing:
// the tests (with the defaults otherwise), and the modes (--direct, --lab)
// that refuse it in a test that takes it.
func (op *Option) refused() (tests, with []string) {
	if op.NotFor == nil {
		return nil, nil
	}
	var applies []catalog.Test
	for _, name := range catalog.Names() {
		t, err := catalog.Lookup(name, catalog.Options{})
		o := Defaults()
		switch {
		case err != nil:
		case op.NotFor(t, &o) != "":
			tests = append(tests, name)
		default:
			applies = append(applies, t)
		}
	}
	for _, m := range []struct {
		flag string
		set  func(o *Options)
	}{{"--direct", func(o *Options) { o.Direct = true }}, {"--lab", func(o *Options) { o.Lab = "NAME" }}} {
		o := Defaults()
		m.set(&o)
		if slices.ContainsFunc(applies, func(t catalog.Test) bool { return op.NotFor(t, &o) != "" }) {
			with = append(with, "`"+m.flag+"`")
		}
	}
	return tests, with
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
