package testrun

import (
	"fmt"
	"strings"
	"time"

	"wanlab/catalog"
	"wanlab/profile"
	"wanlab/tfrc/tfrcudp"
)

// Options describe one run. The zero value of a field keeps its default
// unless its comment says otherwise; Defaults returns the defaults of the
// fields whose zero value is a valid choice of its own (Step, Seed). The
// yaml keys are the keys of experiment files; Table says where each option
// is recorded in the results.
type Options struct {
	// Test is the test (catalog.Names): Flent's (ping, tcp_upload, rrul,
	// ...) or wanlab's own (tfrc_upload, quic_upload, custom, ...). Empty
	// runs the main job: rrul for 30 s on the default profile.
	Test string `yaml:"test"`
	// Duration is the length of the load; nil means Flent's 60 s (30 s
	// when Test is empty). Step is the sampling grid's step (200 ms).
	Duration *time.Duration `yaml:"duration"`
	Step     time.Duration  `yaml:"step"`
	// Lead and Tail are the probing before and after the load; nil means
	// Flent's 5 s each, or none for ping, which has no load.
	Lead *time.Duration `yaml:"lead"`
	Tail *time.Duration `yaml:"tail"`
	// Streams is the number of flows of tcp_nup and tcp_ndown (0: 4).
	Streams int `yaml:"streams"`
	// UDPRate is udp_flood's sending rate of UDP payload ("100mbit",
	// "20M", "500k"; empty: Flent's 100 Mbit/s) and UDPSize its packets'
	// UDP payload in bytes (0: iperf2's 1470, 1450 over IPv6).
	UDPRate string `yaml:"udp_rate"`
	UDPSize int    `yaml:"udp_size"`
	// TxQLen is the TFRC sender's transmit buffer in packets, as DCCP's
	// net.dccp.default.tx_qlen: nil means DCCP's default, 5; 0 means
	// unbounded (the socket's send buffer bounds it).
	TxQLen *int `yaml:"tx_qlen"`
	// Server and Client are the custom test's commands, run with sh -c
	// in the server and the client host after the placeholders @peer,
	// @peer6, @port and @duration are replaced. ServerWait bounds the
	// wait for the server to listen (nil: DefaultServerWait; 0: do not
	// wait).
	Server     string         `yaml:"server"`
	Client     string         `yaml:"client"`
	ServerWait *time.Duration `yaml:"server_wait"`
	// IPv6 runs the test over the hosts' IPv6 addresses.
	IPv6 bool `yaml:"ipv6"`
	// CC is the TCP congestion control of every flow ("cubic"), or per
	// direction of the data ("up=cubic,down=bbr"); empty keeps the hosts'
	// default.
	CC string `yaml:"cc"`
	// TOS marks the flows and probes the test leaves best effort: a DSCP
	// name (EF, CS1, AF41) or a TOS byte (0xb8, 184).
	TOS string `yaml:"tos"`
	// ECN turns on ECN for TCP in both hosts (net.ipv4.tcp_ecn=1) and sends
	// UDP floods as ECT(0).
	ECN bool `yaml:"ecn"`
	// SendBuffer and ReceiveBuffer are the TCP senders' SO_SNDBUF and the
	// receivers' SO_RCVBUF in bytes (0: the kernel's autotuning).
	SendBuffer    int `yaml:"sndbuf"`
	ReceiveBuffer int `yaml:"rcvbuf"`
	// TCPRmem and TCPWmem are net.ipv4.tcp_rmem and tcp_wmem of both
	// hosts ("4096 131072 33554432").
	TCPRmem string `yaml:"tcp_rmem"`
	TCPWmem string `yaml:"tcp_wmem"`
	// Sysctls are further per-host sysctls, each "[client:|server:]KEY=VALUE"
	// with KEY under net. (both hosts without a prefix).
	Sysctls []string `yaml:"sysctls"`
	// Seed seeds every random choice of the emulated path.
	Seed uint64 `yaml:"seed"`
	// Title labels the run in tables and plots.
	Title string `yaml:"title"`
	// Framing is what the emulated devices count in a packet's length:
	// "ethernet" (the default: the IP length plus 14, as an Ethernet
	// interface's qdiscs count) or "ip" (the IP length, as on a TUN).
	Framing string `yaml:"framing"`
	// Granularity is what the path's qdiscs take as one packet when the
	// kernel hands the router a GSO super-packet: "segment" (the default:
	// each wire segment, as on the link) or "gso" (the super-packet whole,
	// as tc on the sending host's egress).
	Granularity string `yaml:"granularity"`
	// Up, Down and Both are the path's chains in tc syntax (Both: the same
	// chain each way). With none of them and no Profile, the path is the
	// default profile's.
	Up   string `yaml:"up"`
	Down string `yaml:"down"`
	Both string `yaml:"both"`
	// TraceUp and TraceDown are mahimahi trace files limiting a
	// direction's capacity.
	TraceUp   string `yaml:"trace_up"`
	TraceDown string `yaml:"trace_down"`
	// At are chain changes at set times of the run, applied as `wanlab
	// set` applies them.
	At []Change `yaml:"at"`
	// Profile is a built-in path (profile.Names); AQM replaces the
	// bottleneck queue of the path's chains (profile.AQMs).
	Profile string `yaml:"profile"`
	AQM     string `yaml:"aqm"`
	// Direct runs over a plain veth pair between the two hosts, without
	// the router: the machine's own ceiling.
	Direct bool `yaml:"direct"`
	// Lab runs on the running testbed of that name instead of building one.
	Lab string `yaml:"lab"`
	// Pcap records every packet the router forwards to this file.
	Pcap string `yaml:"pcap"`
	// Output is the results file (default wanlab-TEST-YYYYmmdd-HHMMSS.json.gz
	// in the current directory); Flent is a Flent data file to write too.
	Output string `yaml:"output"`
	Flent  string `yaml:"flent"`
	// JSON prints the results document on stdout instead of the text
	// summary.
	JSON bool `yaml:"json"`
}

// Change is a chain change at a set time of the run: at At after the start
// of the run (the lead included), the chains given replace the current
// ones, as `wanlab set` would.
type Change struct {
	At   time.Duration `yaml:"at"`
	Up   string        `yaml:"up"`
	Down string        `yaml:"down"`
	Both string        `yaml:"both"`
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

// Option describes one option for docs/options.md.
type Option struct {
	// Flag is the CLI flag (with its short form), Key the experiment file
	// key, Recorded where the results document records it, and Meaning
	// what it does.
	Flag, Key, Recorded, Meaning string
}

// Table lists every option once. docs/options.md is generated from it, and
// tests check it against Options' yaml keys and the command's flags.
var Table = []Option{
	{"`TEST` (argument)", "test", "`run.test`", "Flent's test: ping, tcp_upload, tcp_download, tcp_bidirectional, tcp_nup, tcp_ndown, rrul, rrul_be, udp_flood; or wanlab's: tfrc_upload, tfrc_download (TFRC, RFC 5348 as DCCP's CCID-3, over UDP), quic_upload, quic_download (quic-go, whose congestion control is " + catalog.QUICCongestionControl + "), custom (your programs, `--server` and `--client`). None: the main job, `rrul` for 30 s on the `home` profile"},
	{"`--duration`", "duration", "`run.duration_s`", "length of the load (default 60s; 30s for the main job)"},
	{"`--step`", "step", "`run.step_s`", "sampling step of every series (default 200ms)"},
	{"`--lead`", "lead", "`run.lead_s`", "probing before the load (default 5s; 0 for ping)"},
	{"`--tail`", "tail", "`run.tail_s`", "probing after the load (default 5s; 0 for ping)"},
	{"`--streams`", "streams", "`run.options.streams`", "flows of tcp_nup and tcp_ndown (default 4)"},
	{"`--udp-rate`", "udp_rate", "`run.options.udp_rate`", "udp_flood's rate of UDP payload, e.g. 20mbit or 20M (default 100mbit)"},
	{"`--udp-size`", "udp_size", "`run.options.udp_size`", "udp_flood's UDP payload per packet in bytes (default 1470; 1450 over IPv6)"},
	{"`--tx-qlen`", "tx_qlen", "`run.options.tx_qlen`", "TFRC sender's transmit buffer in packets, as DCCP's net.dccp.default.tx_qlen (default 5; 0: unbounded, bounded by the 208 KiB send buffer; at most 10000)"},
	{"`--server`", "server", "`run.options.server`, `commands[]`", "custom: the receiver's command, run with `sh -c` in the server host before the run; `@peer`, `@peer6`, `@port` (a free port wanlab chose) and `@duration` (the load in seconds) are replaced"},
	{"`--client`", "client", "`run.options.client`, `commands[]`", "custom: the sender's command, run with `sh -c` in the client host when the load starts; it must exit within 5 s after the load; placeholders as `--server`"},
	{"`--server-wait`", "server_wait", "`run.options.server_wait`", "custom: how long to wait for the server command to listen (on `@port` if it names it, else on any new port) before the run starts (default 10s; 0: do not wait). A server that daemonises (`iperf3 -s -D`) may exit with status 0 first: its daemon gets the same time to listen, and the run ends it at its end (`commands[].daemon_pids`)"},
	{"`-6`, `--ipv6`", "ipv6", "`run.options.ip_version`", "run over the hosts' IPv6 addresses"},
	{"`--cc`", "cc", "`run.options.cc`, `flows[].congestion_control`", "TCP congestion control of every flow (cubic), or per direction (up=cubic,down=bbr); refused for a test without TCP flows of wanlab's (ping, udp_flood, tfrc_*, quic_*, custom) or a direction without one"},
	{"`--tos`", "tos", "`run.options.tos`, `flows[].tos`", "mark of the best-effort flows and probes: a DSCP name (EF, CS1, AF41) or a TOS byte (0xb8)"},
	{"`--ecn`", "ecn", "`run.options.ecn`, `run.sysctls`", "ECN for TCP in both hosts (net.ipv4.tcp_ecn=1) and ECT(0) on UDP floods"},
	{"`--sndbuf`", "sndbuf", "`run.options.sndbuf`", "SO_SNDBUF of every TCP sender in bytes (default: autotuning)"},
	{"`--rcvbuf`", "rcvbuf", "`run.options.rcvbuf`", "SO_RCVBUF of every TCP receiver in bytes (default: autotuning)"},
	{"`--tcp-rmem`", "tcp_rmem", "`run.sysctls`", "net.ipv4.tcp_rmem of both hosts"},
	{"`--tcp-wmem`", "tcp_wmem", "`run.sysctls`", "net.ipv4.tcp_wmem of both hosts"},
	{"`--sysctl` (repeatable)", "sysctls", "`run.sysctls`", "`[client:\\|server:]KEY=VALUE`, KEY under net.; both hosts without a prefix"},
	{"`--seed`", "seed", "`run.seed`", "seed of every random choice of the path (default 1); refused with `--lab`, whose testbed keeps the seed it was started with (`wanlab up --seed`)"},
	{"`--title`", "title", "`run.title`", "label of the run in tables and plots"},
	{"`--framing`", "framing", "`run.framing`", "what the path's qdiscs count in a packet's length: ethernet (default; the IP length plus 14) or ip"},
	{"`--granularity`", "granularity", "`run.options.granularity`", "what the path's qdiscs take as one packet of a GSO super-packet: segment (default; each wire segment, as on the link) or gso (the whole, as tc on the sender's egress)"},
	{"`--up`", "up", "`run.path.up`", "chain client→server in tc syntax, root first"},
	{"`--down`", "down", "`run.path.down`", "chain server→client"},
	{"`--both`", "both", "`run.path`", "the same chain in each direction"},
	{"`--trace-up`", "trace_up", "`run.options.trace_up`", "mahimahi trace file limiting the up direction's capacity"},
	{"`--trace-down`", "trace_down", "`run.options.trace_down`", "mahimahi trace file limiting the down direction's capacity"},
	{"`--at` (repeatable)", "at", "`run.options.at`, `router.changes`", "`--at 20s --up CHAIN`: the path flags after it change the chains at that time of the run"},
	{"`--profile`", "profile", "`run.options.profile`, `run.path`", "built-in path: home (default), lte, geo, datacenter"},
	{"`--aqm`", "aqm", "`run.options.aqm`, `run.path`", "replace the bottleneck queue with fq_codel, codel, pie, pfifo, bfifo or pfifo_fast"},
	{"`--direct`", "direct", "`run.options.direct`, `router.mode`", "hosts joined by a plain veth pair, no router: the machine's own ceiling"},
	{"`--lab`", "lab", "`run.options.lab`, `router.mode`", "run on this running testbed (`wanlab up --name NAME`) instead of building one"},
	{"`--pcap`", "pcap", "`run.options.pcap`", "record every packet the router forwards to this pcap file; in an experiment file `true`: each run's capture beside its results file (RUN.pcap)"},
	{"`-o`, `--output`", "output", "(the file itself)", "results file (default wanlab-TEST-YYYYmmdd-HHMMSS.json.gz)"},
	{"`--flent`", "flent", "(the file itself)", "also write Flent's data file (FILE.flent.gz); Flent's tests only, since Flent loads a file by running its test; in an experiment file `true`: each run's Flent file beside its results file (RUN.flent.gz)"},
	{"`--json`", "json", "(the output itself)", "print the results document on stdout instead of the text summary"},
}

// Markdown returns docs/options.md: Table, then the built-in profiles
// with their chains and sources.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Options of wanlab run\n\n")
	b.WriteString("Every option of `wanlab run`, once: its flag, its key in experiment files\n")
	b.WriteString("and where the results document (docs/results-format.md) records it;\n")
	b.WriteString("then the built-in paths that --profile names, with their chains and sources.\n")
	b.WriteString("Generated from `testrun.Table`; a test fails when the two disagree\n")
	b.WriteString("(regenerate with `go test ./testrun -run TestOptionsDoc -update`).\n\n")
	b.WriteString("| flag | experiment key | recorded in | meaning |\n")
	b.WriteString("|---|---|---|---|\n")
	for _, o := range Table {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", o.Flag, o.Key, o.Recorded, o.Meaning)
	}
	b.WriteString("\n## Built-in paths (`--profile`)\n\n")
	b.WriteString("Each profile is a chain per direction: netem for the propagation delay, a\n")
	b.WriteString("tbf for the rate, and a FIFO as the tbf's child, the bottleneck queue that\n")
	fmt.Fprintf(&b, "`--aqm` replaces (%s).\nWithout a path, a run uses `%s`.\n", strings.Join(profile.AQMs, ", "), DefaultProfile)
	for _, p := range profile.All() {
		fmt.Fprintf(&b, "\n### %s\n\n%s.\n\n", p.Name, capitalize(p.Summary))
		fmt.Fprintf(&b, "- up: `%s`\n- down: `%s`\n\n%s\n", p.Up, p.Down, p.Why)
	}
	return b.String()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
