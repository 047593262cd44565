package testrun

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"wanlab/catalog"
	"wanlab/lab"
	"wanlab/link"
	"wanlab/profile"
	"wanlab/results"
	"wanlab/tfrc/tfrcudp"
	"wanlab/traffic/tfrcflow"
)

// Option is one option of a run, described once. The flags of `wanlab
// run`, the keys of an experiment file's test entries, docs/options.md and
// the checks of the options given (CheckGiven, and Prepare's refusal of an
// option that does nothing in the run) are all made from Registry: adding
// an option is adding its field to Options and its entry here.
type Option struct {
	// Key names the option in experiment files and in a results file's
	// run.options; Flag is its flag of `wanlab run` ("" for the test,
	// which is the command's argument), Short its one-letter form.
	Key, Flag, Short string
	// Default is what a run takes without the option, as help shows it
	// ("" when there is nothing to show).
	Default string
	// Help is the flag's usage line; docs/options.md's meaning starts with
	// the same words. Plain text: no backquotes, which pflag would take
	// for the name of the flag's value.
	Help string
	// Doc is the rest of the meaning, for docs/options.md alone (Markdown).
	Doc string
	// Recorded says where a results document records the option (Markdown).
	Recorded string
	// Experiment says how an experiment file gives the option.
	Experiment ExperimentUse
	// PerRun, for an output, is the suffix of the file each run of an
	// experiment writes beside its results file when its test entry gives
	// the option true (".pcap": RUN.pcap); in an experiment the option
	// takes true or false, not a file.
	PerRun string
	// ZeroFix is, for an option whose zero value stands for "not given"
	// in Options, the fix named when it is given that value all the same
	// (--streams 0): the user asked for something, and must not silently
	// get the default instead.
	ZeroFix string
	// NotFor says why the option does nothing in a run of test t with
	// options o (its test has no flow the option sets, its testbed is
	// not the run's own, ...), as the message that refuses it, naming the
	// fix; "" where it applies. nil: it applies to every run.
	NotFor func(t catalog.Test, o *Options) string

	field value
}

// ExperimentUse says how an experiment file gives an option.
type ExperimentUse uint8

const (
	// InEntry options are keys of a test entry, meaning what the flag
	// means.
	InEntry ExperimentUse = iota
	// ByExperiment options are set by the experiment itself: the entry's
	// test, the path, the seed derived for each run, the results file.
	ByExperiment
	// NotInExperiments options are not available in experiment files yet:
	// a test entry that gives one is refused.
	NotInExperiments
)

// Registry returns every option of a run, once, in the order of
// docs/options.md. The entries are shared: do not change them.
func Registry() []*Option { return registry }

// LookupOption returns the option whose experiment key is key, or nil.
func LookupOption(key string) *Option {
	i := slices.IndexFunc(registry, func(op *Option) bool { return op.Key == key })
	if i < 0 {
		return nil
	}
	return registry[i]
}

// registry is every option of a run, in the order of docs/options.md.
var registry = []*Option{
	{
		Key: "test", Recorded: "`run.test`", Experiment: ByExperiment,
		Doc: "Flent's test: " + strings.Join(flentTests(), ", ") + "; or wanlab's: tfrc_upload, tfrc_download (TFRC, RFC 5348 as DCCP's CCID-3, over UDP), " +
			"quic_upload, quic_download (quic-go, whose congestion control is " + catalog.QUICCongestionControl + "), " +
			"l4s_upload, l4s_download (wanlab's built-in L4S sender: DCTCP's response to CE marks over UDP, every packet ECT(1); not DCTCP), " +
			"l4s_cubic (that L4S upload beside a CUBIC upload), custom (your programs, `--server` and `--client`). " +
			"None: the main job, `" + DefaultTest + "` for 30 s on the `" + DefaultProfile + "` profile",
		field: text(func(o *Options) *string { return &o.Test }),
	},
	{
		Key: "duration", Flag: "duration", Default: helpDuration(DefaultDuration), Recorded: "`run.duration_s`",
		Help:  "length of the load (" + helpDuration(MainJobDuration) + " for the main job)",
		field: lengthOrNil(func(o *Options) **time.Duration { return &o.Duration }),
	},
	{
		Key: "step", Flag: "step", Default: helpDuration(Defaults().Step), Recorded: "`run.step_s`",
		Help:  "sampling step of every series",
		field: length(func(o *Options) *time.Duration { return &o.Step }),
	},
	{
		Key: "lead", Flag: "lead", Default: helpDuration(DefaultLeadTail), Recorded: "`run.lead_s`",
		Help:   "probing before the load (0 for ping)",
		NotFor: noLoad("--lead", func(o *Options) *time.Duration { return o.Lead }),
		field:  lengthOrNil(func(o *Options) **time.Duration { return &o.Lead }),
	},
	{
		Key: "tail", Flag: "tail", Default: helpDuration(DefaultLeadTail), Recorded: "`run.tail_s`",
		Help:   "probing after the load (0 for ping)",
		NotFor: noLoad("--tail", func(o *Options) *time.Duration { return o.Tail }),
		field:  lengthOrNil(func(o *Options) **time.Duration { return &o.Tail }),
	},
	{
		Key: "delay", Flag: "delay", Default: helpDuration(DefaultDelay), Recorded: "`run.delay_s`",
		Help: "Flent's DELAY of the tests whose flows start and stop on a schedule of their own (" + strings.Join(catalog.ScheduledTests, ", ") + "): their flows start and stop at multiples of it",
		Doc: "such a run has no lead or tail: it starts with its first flow and lasts Flent's `TOTAL_LENGTH` of the test " +
			"(tcp_2up_square: the larger of `--duration` and 6 × DELAY); `flows[].span` records each flow's times",
		NotFor: func(t catalog.Test, o *Options) string {
			if t.Scheduled() || o.Delay == nil {
				return ""
			}
			return fmt.Sprintf("--delay is the step of the schedule of %s; %s's flows run over the load, after --lead (Flent's DELAY before it) and before --tail: use those, and drop --delay",
				strings.Join(catalog.ScheduledTests, ", "), t.Name)
		},
		field: lengthOrNil(func(o *Options) **time.Duration { return &o.Delay }),
	},
	{
		Key: "streams", Flag: "streams", Default: "4", Recorded: "`run.options.streams`",
		Help:    "flows of tcp_nup and tcp_ndown, and of each direction of rrul_var (its bidir_streams)",
		ZeroFix: fmt.Sprintf("give 1 to %d flows, or leave it out for 4", catalog.MaxStreams),
		NotFor: func(t catalog.Test, _ *Options) string {
			if slices.Contains(streamsTests, t.Name) {
				return ""
			}
			if n, ok := fixedStreamsOf(t); ok {
				return fmt.Sprintf("--streams: %s has %d flows, as Flent's test does: drop --streams, or run tcp_nup or tcp_ndown with --streams", t.Name, n)
			}
			return fmt.Sprintf("--streams is for %s, not %s: drop it or run tcp_nup", strings.Join(streamsTests, ", "), t.Name)
		},
		field: whole(func(o *Options) *int { return &o.Streams }),
	},
	{
		Key: "upload_streams", Flag: "upload-streams", Default: "4", Recorded: "`run.options.upload_streams`",
		Help:    "upload flows of rrul_be_nflows (its upload_streams)",
		ZeroFix: fmt.Sprintf("give 1 to %d flows, or leave it out for 4", catalog.MaxStreams),
		NotFor:  nflowsOnly,
		field:   whole(func(o *Options) *int { return &o.UploadStreams }),
	},
	{
		Key: "download_streams", Flag: "download-streams", Default: "4", Recorded: "`run.options.download_streams`",
		Help:    "download flows of rrul_be_nflows (its download_streams)",
		ZeroFix: fmt.Sprintf("give 1 to %d flows, or leave it out for 4", catalog.MaxStreams),
		NotFor:  nflowsOnly,
		field:   whole(func(o *Options) *int { return &o.DownloadStreams }),
	},
	{
		Key: catalog.ParamMarkings, Flag: "markings", Recorded: "`run.options.markings`, `flows[].tos`",
		Help:    "Flent's markings: the DSCP name of each stream in turn, e.g. CS1,EF (entries split on , or ;)",
		Doc:     "a stream past the list's end keeps the test's own; DSCP names: " + catalog.DSCPNames,
		ZeroFix: "give a DSCP name per stream, e.g. --markings CS1,EF, or leave it out",
		NotFor:  streamParam("--markings", catalog.ParamMarkings),
		field:   texts(func(o *Options) *[]string { return &o.Markings }),
	},
	{
		Key: catalog.ParamCCAlgos, Flag: "cc-algos", Recorded: "`run.options.cc_algos`, `flows[].congestion_control`",
		Help:    "Flent's cc_algos: the TCP congestion control of each stream in turn, e.g. reno,cubic (entries split on , or ;)",
		Doc:     "each must be loaded in the kernel; with a `--cc` that sets the same flows, refused",
		ZeroFix: "give a congestion control per stream, e.g. --cc-algos reno,cubic, or leave it out",
		NotFor:  streamParam("--cc-algos", catalog.ParamCCAlgos),
		field:   texts(func(o *Options) *[]string { return &o.CCAlgos }),
	},
	{
		Key: catalog.ParamStreamDelays, Flag: "stream-delays", Recorded: "`run.options.stream_delays`, `flows[].span`",
		Help:    "Flent's stream_delays: how many whole seconds after the load's start each stream in turn starts, e.g. 0,10 (entries split on , or ;)",
		Doc:     "each stream still stops with the load, so a delay must be shorter than `--duration`",
		ZeroFix: "give whole seconds per stream, e.g. --stream-delays 0,10, or leave it out",
		NotFor:  streamParam("--stream-delays", catalog.ParamStreamDelays),
		field:   seconds(func(o *Options) *[]time.Duration { return &o.StreamDelays }),
	},
	{
		Key: catalog.ParamLabels, Flag: "labels", Recorded: "`run.options.labels`, the series' names",
		Help:    "Flent's labels: the name of each stream in turn in its series, e.g. a,b (entries split on , or ;)",
		Doc:     "rrul_var's series are `TCP upload::LABEL`, `TCP download::LABEL` and `Ping (ms)::UDP LABEL`, the rtt_fair_var tests' `TCP upload LABEL s1`; two streams of one label are refused",
		ZeroFix: "give a label per stream, e.g. --labels a,b, or leave it out",
		NotFor:  streamParam("--labels", catalog.ParamLabels),
		field:   texts(func(o *Options) *[]string { return &o.Labels }),
	},
	{
		Key: catalog.ParamPingLabels, Flag: "ping-labels", Recorded: "`run.options.ping_labels`, the series' names",
		Help:    "Flent's ping_labels: the name of each server's ping in turn in its series (Ping (ms) LABEL s1), e.g. near,far (entries split on , or ;)",
		ZeroFix: "give a label per ping, e.g. --ping-labels near,far, or leave it out",
		NotFor:  streamParam("--ping-labels", catalog.ParamPingLabels),
		field:   texts(func(o *Options) *[]string { return &o.PingLabels }),
	},
	{
		Key: "udp_rate", Flag: "udp-rate", Default: DefaultUDPRate, Recorded: "`run.options.udp_rate`",
		Help:   "udp_flood's rate of UDP payload, e.g. 20mbit or 20M",
		NotFor: udpFloodOnly,
		field:  text(func(o *Options) *string { return &o.UDPRate }),
	},
	{
		Key: "udp_size", Flag: "udp-size", Default: "1470, 1450 over IPv6", Recorded: "`run.options.udp_size`",
		Help:    "udp_flood's UDP payload per packet in bytes",
		ZeroFix: "give a UDP payload from 24 to 65507 bytes, or leave it out for 1470",
		NotFor:  udpFloodOnly,
		field:   whole(func(o *Options) *int { return &o.UDPSize }),
	},
	{
		Key: "tx_qlen", Flag: "tx-qlen", Default: strconv.Itoa(DefaultTxQLen), Recorded: "`run.options.tx_qlen`",
		Help: fmt.Sprintf("TFRC sender's transmit buffer in packets, as DCCP's net.dccp.default.tx_qlen (0: unbounded, bounded by the %d KiB send buffer; at most %d)",
			tfrcudp.DefaultSendBuffer>>10, tfrcflow.MaxTxQueueLen),
		NotFor: func(t catalog.Test, _ *Options) string {
			if hasFlow(t, catalog.TFRC) {
				return ""
			}
			return fmt.Sprintf("--tx-qlen is the TFRC sender's transmit buffer, and %s has no TFRC flow: drop it, or run tfrc_upload or tfrc_download", t.Name)
		},
		field: wholeOrNil(func(o *Options) **int { return &o.TxQLen }),
	},
	{
		Key: "server", Flag: "server", Recorded: "`run.options.server`, `commands[]`",
		Help:   "custom: the receiver's command, run with sh -c in the server host before the run (@peer, @peer6, @port, @duration are replaced)",
		Doc:    "`@peer` and `@peer6` are the client's addresses, `@port` a free port wanlab chose, `@duration` the load in seconds",
		NotFor: customOnly,
		field:  text(func(o *Options) *string { return &o.Server }),
	},
	{
		Key: "client", Flag: "client", Recorded: "`run.options.client`, `commands[]`",
		Help:   "custom: the sender's command, run with sh -c in the client host when the load starts",
		Doc:    fmt.Sprintf("it must exit within %v after the load; placeholders as `--server`", ClientGrace),
		NotFor: customOnly,
		field:  text(func(o *Options) *string { return &o.Client }),
	},
	{
		Key: "server_wait", Flag: "server-wait", Default: helpDuration(DefaultServerWait), Recorded: "`run.options.server_wait`",
		Help: "custom: how long to wait for --server to listen (0: do not wait)",
		Doc: "it waits on `@port` if the command names it, else on any new port, before the run starts; a server that daemonises (`iperf3 -s -D`) " +
			"may exit with status 0 first: its daemon gets the same time to listen, and the run ends it at its end (`commands[].daemon_pids`)",
		NotFor: customOnly,
		field:  lengthOrNil(func(o *Options) **time.Duration { return &o.ServerWait }),
	},
	{
		Key: "ipv6", Flag: "ipv6", Short: "6", Recorded: "`run.options.ip_version`",
		Help:  "run over the hosts' IPv6 addresses",
		field: boolean(func(o *Options) *bool { return &o.IPv6 }),
	},
	{
		Key: "cc", Flag: "cc", Recorded: "`run.options.cc`, `flows[].congestion_control`",
		Help:   "TCP congestion control of every flow (cubic), or per direction (up=cubic,down=bbr)",
		Doc:    "a direction that no TCP flow takes is refused",
		NotFor: ccNotFor,
		field:  text(func(o *Options) *string { return &o.CC }),
	},
	{
		Key: "tos", Flag: "tos", Recorded: "`run.options.tos`, `flows[].tos`",
		Help:  "mark of the best-effort flows and probes: a DSCP name (EF, CS1, AF41) or a TOS byte (0xb8)",
		field: text(func(o *Options) *string { return &o.TOS }),
	},
	{
		Key: "ecn", Flag: "ecn", Recorded: "`run.options.ecn`, `run.sysctls`",
		Help: "ECN for TCP in every host (net.ipv4.tcp_ecn=1) and ECT(0) on UDP floods",
		NotFor: func(t catalog.Test, _ *Options) string {
			if hasFlow(t, catalog.TCP) || hasFlow(t, catalog.UDPFlood) || t.Custom {
				return ""
			}
			load := loadOf(t)
			if hasFlow(t, catalog.QUIC) {
				load += ", whose ECN quic-go sets itself"
			}
			if hasFlow(t, catalog.Scalable) {
				load += ", whose packets are always ECT(1)"
			}
			return fmt.Sprintf("--ecn turns on ECN for TCP and marks UDP floods ECT(0), and %s has neither (%s): drop --ecn", t.Name, load)
		},
		field: boolean(func(o *Options) *bool { return &o.ECN }),
	},
	{
		Key: "sndbuf", Flag: "sndbuf", Default: "0, the kernel's autotuning", Recorded: "`run.options.sndbuf`",
		Help:   "SO_SNDBUF of every TCP sender in bytes",
		NotFor: wanlabTCPOnly("--sndbuf", "the send buffer"),
		field:  whole(func(o *Options) *int { return &o.SendBuffer }),
	},
	{
		Key: "rcvbuf", Flag: "rcvbuf", Default: "0, the kernel's autotuning", Recorded: "`run.options.rcvbuf`",
		Help:   "SO_RCVBUF of every TCP receiver in bytes",
		NotFor: wanlabTCPOnly("--rcvbuf", "the receive buffer"),
		field:  whole(func(o *Options) *int { return &o.ReceiveBuffer }),
	},
	{
		Key: "tcp_rmem", Flag: "tcp-rmem", Recorded: "`run.sysctls`",
		Help:   `net.ipv4.tcp_rmem of every host, e.g. "4096 131072 33554432"`,
		NotFor: tcpInHosts("--tcp-rmem", "net.ipv4.tcp_rmem"),
		field:  text(func(o *Options) *string { return &o.TCPRmem }),
	},
	{
		Key: "tcp_wmem", Flag: "tcp-wmem", Recorded: "`run.sysctls`",
		Help:   `net.ipv4.tcp_wmem of every host, e.g. "4096 16384 33554432"`,
		NotFor: tcpInHosts("--tcp-wmem", "net.ipv4.tcp_wmem"),
		field:  text(func(o *Options) *string { return &o.TCPWmem }),
	},
	{
		Key: "sysctls", Flag: "sysctl", Recorded: "`run.sysctls`",
		Help:  "[HOST:]KEY=VALUE, a sysctl under net. of one host (client, server, or a dumbbell's c2, s3, ...) or every host (repeatable), e.g. net.ipv4.tcp_recovery=0",
		field: list{func(o *Options) *[]string { return &o.Sysctls }},
	},
	{
		Key: "seed", Flag: "seed", Default: strconv.FormatUint(Defaults().Seed, 10), Recorded: "`run.seed`", Experiment: ByExperiment,
		Help: "seed of every random choice of the path",
		Doc:  "a testbed of `--lab` keeps the seed it was started with (`wanlab up --seed`)",
		NotFor: func(_ catalog.Test, o *Options) string {
			if o.Lab == "" {
				return ""
			}
			return fmt.Sprintf("--seed: --lab %s runs on that testbed, whose path draws from the seed it was started with: drop --seed, or start the testbed with `wanlab up --seed %d`", o.Lab, o.Seed)
		},
		field: natural(func(o *Options) *uint64 { return &o.Seed }),
	},
	{
		Key: "title", Flag: "title", Recorded: "`run.title`",
		Help:  "label of the run in tables and plots",
		field: text(func(o *Options) *string { return &o.Title }),
	},
	{
		Key: "framing", Flag: "framing", Default: "ethernet", Recorded: "`run.framing`",
		Help: "what the path's qdiscs count in a packet's length: ethernet (the IP length plus 14, as on an Ethernet interface) or ip (as on a TUN)",
		NotFor: func(_ catalog.Test, o *Options) string {
			if o.Lab == "" && !o.Direct {
				return ""
			}
			return "--framing is how a testbed the run builds counts bytes; with --lab or --direct there is none: drop --framing"
		},
		field: text(func(o *Options) *string { return &o.Framing }),
	},
	{
		Key: "granularity", Flag: "granularity", Default: "segment", Recorded: "`run.options.granularity`",
		Help:   "what the path's qdiscs take as one packet when the kernel hands the router a GSO super-packet: segment (each wire segment, as a link carrying them sees it) or gso (the super-packet whole, as tc on the sending host's own egress sees it)",
		NotFor: granularityNotFor,
		field:  text(func(o *Options) *string { return &o.Granularity }),
	},
	{
		Key: "dataplane", Flag: "dataplane", Default: lab.TUNPlane.String(), Recorded: "`run.options.dataplane`",
		Help: "how the router meets the hosts: tun (a TUN device in each host) or packet (a veth pair from each host to the router's namespace, read through packet sockets, which stamp each packet's arrival in the kernel)",
		Doc:  "recorded for every run with a router, given or not, and with `--lab` as the testbed's",
		NotFor: func(_ catalog.Test, o *Options) string {
			switch {
			case o.Lab != "":
				return fmt.Sprintf("--dataplane is how a testbed the run builds joins its hosts to the router; --lab %s runs on one that has its own (wanlab up --dataplane): drop --dataplane", o.Lab)
			case o.Direct:
				return "--dataplane is how the router meets the hosts, and --direct has no router: drop --dataplane"
			}
			return ""
		},
		field: text(func(o *Options) *string { return &o.DataPlane }),
	},
	{
		Key: "clients", Flag: "clients", Default: "as many as the test needs, at least 1", Recorded: "`run.options.clients`, `run.hosts`",
		Help:    fmt.Sprintf("client hosts c1..cN of the testbed (1 to %d): c1 is the client, the others share the path with it", link.MaxHosts),
		Doc:     "a test whose flows need more hosts gets them without it, and is refused with fewer; the README's section Many hosts: a dumbbell gives the hosts' names and addresses",
		ZeroFix: fmt.Sprintf("give 1 to %d hosts, or leave it out for as many as the test needs", link.MaxHosts),
		NotFor:  ownTestbedOnly("--clients"),
		field:   whole(func(o *Options) *int { return &o.Clients }),
	},
	{
		Key: "servers", Flag: "servers", Default: "as many as the test needs, at least 1", Recorded: "`run.options.servers`, `run.hosts`",
		Help:    fmt.Sprintf("server hosts s1..sM of the testbed (1 to %d): s1 is the server", link.MaxHosts),
		ZeroFix: fmt.Sprintf("give 1 to %d hosts, or leave it out for as many as the test needs", link.MaxHosts),
		NotFor:  ownTestbedOnly("--servers"),
		field:   whole(func(o *Options) *int { return &o.Servers }),
	},
	{
		Key: "access_up", Flag: "access-up", Recorded: "`run.options.access_up`, `run.hosts[].access_up`",
		Help:   `a host's access link for up packets (repeatable), HOST=CHAIN: "c2=netem delay 40ms" (the client's link into the bottleneck), "s1=..." (the server's out of it); an empty CHAIN is a direct link`,
		Doc:    "in an experiment file, a list of HOST=CHAIN whose values variables can fill (`access_up: [\"c2=netem delay ${rtt}\"]`); an entry that is empty once filled is left out",
		NotFor: ownTestbedOnly("--access-up"),
		field:  list{func(o *Options) *[]string { return &o.AccessUp }},
	},
	{
		Key: "access_down", Flag: "access-down", Recorded: "`run.options.access_down`, `run.hosts[].access_down`",
		Help:   "a host's access link for down packets (repeatable), HOST=CHAIN, as --access-up",
		NotFor: ownTestbedOnly("--access-down"),
		field:  list{func(o *Options) *[]string { return &o.AccessDown }},
	},
	{
		Key: "host_cc", Flag: "host-cc", Recorded: "`run.options.host_cc`, `run.hosts[].cc`",
		Help:   `a host's default TCP congestion control (repeatable), HOST=CC: "c2=bbr"; a flow's own (--cc) comes first`,
		NotFor: ownTestbedOnly("--host-cc"),
		field:  list{func(o *Options) *[]string { return &o.HostCC }},
	},
	{
		Key: "up", Flag: "up", Recorded: "`run.path.up`", Experiment: ByExperiment,
		Help:   `qdisc chain client→server in tc syntax, root first: "netem delay 20ms; tbf rate 10mbit burst 32k latency 50ms"`,
		NotFor: pathOption("--up", true),
		field:  chain{"up"},
	},
	{
		Key: "down", Flag: "down", Recorded: "`run.path.down`", Experiment: ByExperiment,
		Help:   "qdisc chain server→client, as --up",
		NotFor: pathOption("--down", true),
		field:  chain{"down"},
	},
	{
		Key: "both", Flag: "both", Recorded: "`run.path`", Experiment: ByExperiment,
		Help:   "the same chain in each direction",
		NotFor: pathOption("--both", true),
		field:  chain{"both"},
	},
	{
		Key: "up_script", Flag: "up-script", Recorded: "`run.options.up_script`, `run.path.up`",
		Help: "a file of tc lines that makes the client→server path on any one device (tc qdisc|class|filter add ... dev DEV ..., as a shaping script writes them)",
		Doc: "the lines are read as tc and this kernel take them, one after the other (`tc qdisc del ... root 2>/dev/null` first is fine); a line wanlab cannot take is refused with its number and the fix; " +
			"`$NAME` and `${NAME}` read `--set` (in an experiment, also the case's variables); `run.path.up` records the tree as the tc lines that make it again",
		NotFor: pathOption("--up-script", true),
		field:  text(func(o *Options) *string { return &o.UpScript }),
	},
	{
		Key: "down_script", Flag: "down-script", Recorded: "`run.options.down_script`, `run.path.down`",
		Help:   "a file of tc lines that makes the server→client path, as --up-script",
		NotFor: pathOption("--down-script", true),
		field:  text(func(o *Options) *string { return &o.DownScript }),
	},
	{
		Key: "script", Flag: "script", Recorded: "`run.options.script`, `run.path`",
		Help:   "a file of tc lines for both directions, by device name, as a router's script configures its two interfaces: the lines on --up-dev make the client→server path, those on --down-dev the other",
		Doc:    "a line on another device is refused; a direction whose device the script does not configure is a direct one, unless --up or --down gives it",
		NotFor: pathOption("--script", true),
		field:  text(func(o *Options) *string { return &o.Script }),
	},
	{
		Key: "up_dev", Flag: "up-dev", Recorded: "`run.options.up_dev`",
		Help:   "the device of --script whose lines make the client→server path, e.g. eth1",
		NotFor: pathOption("--up-dev", true),
		field:  text(func(o *Options) *string { return &o.UpDev }),
	},
	{
		Key: "down_dev", Flag: "down-dev", Recorded: "`run.options.down_dev`",
		Help:   "the device of --script whose lines make the server→client path, e.g. eth0",
		NotFor: pathOption("--down-dev", true),
		field:  text(func(o *Options) *string { return &o.DownDev }),
	},
	{
		Key: "set", Flag: "set", Recorded: "`run.options.set`",
		Help:   "NAME=VALUE: the value of the scripts' $NAME and ${NAME} (repeatable)",
		Doc:    "a script's own assignments (`RATE=${RATE:-10mbit}`) read it as the shell reads its environment",
		NotFor: pathOption("--set", true),
		field:  list{func(o *Options) *[]string { return &o.ScriptVars }},
	},
	{
		Key: "trace_up", Flag: "trace-up", Recorded: "`run.options.trace_up`",
		Help:   "mahimahi trace file limiting the up direction's capacity",
		NotFor: pathOption("--trace-up", true),
		field:  text(func(o *Options) *string { return &o.TraceUp }),
	},
	{
		Key: "trace_down", Flag: "trace-down", Recorded: "`run.options.trace_down`",
		Help:   "mahimahi trace file limiting the down direction's capacity",
		NotFor: pathOption("--trace-down", true),
		field:  text(func(o *Options) *string { return &o.TraceDown }),
	},
	{
		Key: "at", Flag: "at", Recorded: "`run.options.at`, `router.changes`", Experiment: NotInExperiments,
		Help: "--at T followed by --up/--down/--both: change the chains T into the run (repeatable)",
		// A running testbed's chains change as `wanlab set` changes
		// them: --at applies with --lab.
		NotFor: pathOption("--at", false),
		field:  changeAt{},
	},
	{
		Key: "profile", Flag: "profile", Default: DefaultProfile, Recorded: "`run.options.profile`, `run.path`",
		Help:   "built-in path: " + strings.Join(profile.Names(), ", "),
		NotFor: pathOption("--profile", true),
		field:  text(func(o *Options) *string { return &o.Profile }),
	},
	{
		Key: "aqm", Flag: "aqm", Recorded: "`run.options.aqm`, `run.path`",
		Help:   "replace the bottleneck queue with " + orList(profile.AQMs),
		NotFor: pathOption("--aqm", true),
		field:  text(func(o *Options) *string { return &o.AQM }),
	},
	{
		Key: "direct", Flag: "direct", Recorded: "`run.options.direct`, `router.mode`",
		Help: "join the hosts with a plain veth pair, without the router: the machine's own ceiling",
		NotFor: func(t catalog.Test, o *Options) string {
			switch {
			case o.Lab != "":
				return directAndLab
			case t.Custom:
				return "custom measures your programs' flows at the router, and --direct has none: drop --direct"
			}
			return ""
		},
		field: boolean(func(o *Options) *bool { return &o.Direct }),
	},
	{
		Key: "lab", Flag: "lab", Recorded: "`run.options.lab`, `router.mode`",
		Help: "run on this running testbed (wanlab up --name NAME) instead of building one",
		NotFor: func(_ catalog.Test, o *Options) string {
			if o.Direct {
				return directAndLab
			}
			return ""
		},
		field: text(func(o *Options) *string { return &o.Lab }),
	},
	{
		Key: "pcap", Flag: "pcap", Recorded: "`run.options.pcap`", PerRun: ".pcap",
		Help:    "record every packet the router forwards, both directions, to this pcap file",
		ZeroFix: "give a file name (- for stdout), or leave --pcap out",
		NotFor: func(_ catalog.Test, o *Options) string {
			switch {
			case o.Direct:
				return "--pcap records what the router forwards, and --direct has no router: drop --pcap, or capture with `ip netns exec` and tcpdump"
			case o.Lab != "":
				return fmt.Sprintf("--lab %s: the testbed records packets itself: start it with `wanlab up --pcap FILE`, and drop --pcap here", o.Lab)
			}
			return ""
		},
		field: text(func(o *Options) *string { return &o.Pcap }),
	},
	{
		Key: "output", Flag: "output", Short: "o", Default: "wanlab-TEST-YYYYmmdd-HHMMSS.json.gz", Recorded: "(the file itself)", Experiment: ByExperiment,
		Help:    "results file (- for stdout)",
		ZeroFix: "give a file name (- for stdout), or leave --output out",
		field:   text(func(o *Options) *string { return &o.Output }),
	},
	{
		Key: "flent", Flag: "flent", Recorded: "(the file itself)", PerRun: ".flent.gz",
		Help:    "also write Flent's data file, e.g. run.flent.gz",
		Doc:     "Flent loads a data file by running the test it names, so a run of one of wanlab's own tests goes under the Flent test whose series it shares (tfrc_upload, quic_upload and l4s_upload as tcp_upload, custom as tcp_bidirectional; docs/results-format.md)",
		ZeroFix: "give a file name (- for stdout), or leave --flent out",
		NotFor: func(t catalog.Test, _ *Options) string {
			if _, err := results.FlentLayout(t.Name); err != nil {
				return "--flent: " + err.Error() + ": drop --flent"
			}
			return ""
		},
		field: text(func(o *Options) *string { return &o.Flent }),
	},
	{
		Key: "json", Flag: "json", Recorded: "(the output itself)", Experiment: ByExperiment,
		Help:  "print the results document on stdout instead of the text summary",
		field: boolean(func(o *Options) *bool { return &o.JSON }),
	},
}

// helpDuration writes a duration as help shows it: whole seconds as such
// (60s, where time.Duration writes 1m0s).
func helpDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// flentTests are the tests Flent has.
func flentTests() []string {
	var names []string
	for _, n := range catalog.Names() {
		if t, err := catalog.Lookup(n, catalog.Options{}); err == nil && t.Flent {
			names = append(names, n)
		}
	}
	return names
}

// directAndLab refuses --direct with --lab.
const directAndLab = "--direct and --lab exclude each other: --direct joins the hosts without a router, --lab uses a running testbed's: drop one"

// hasFlow reports whether test t has a load flow of transport tr.
func hasFlow(t catalog.Test, tr catalog.Transport) bool {
	return slices.ContainsFunc(t.Flows, func(f catalog.Flow) bool { return f.Transport == tr })
}

// loadOf says what test t's load is, for a message saying why an option
// does nothing in it.
func loadOf(t catalog.Test) string {
	switch {
	case t.Custom:
		return "its load is your programs'"
	case len(t.Flows) == 0:
		return "it has no load flow"
	}
	return "its flow is " + map[catalog.Transport]string{
		catalog.TCP:      "TCP",
		catalog.UDPFlood: "a UDP flood",
		catalog.TFRC:     "TFRC, over UDP",
		catalog.QUIC:     "QUIC, over UDP",
		catalog.Scalable: "wanlab's built-in L4S sender, over UDP",
	}[t.Flows[0].Transport]
}

func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// noLoad refuses a lead or a tail for a test without a load (ping), which
// Flent runs for its length alone, and for a test whose flows follow a
// schedule of their own, which starts with its first flow and ends with
// its schedule.
func noLoad(flag string, field func(*Options) *time.Duration) func(catalog.Test, *Options) string {
	return func(t catalog.Test, o *Options) string {
		d := field(o)
		switch {
		case d == nil:
			return ""
		case t.Scheduled():
			return fmt.Sprintf("%s: %s starts with its first flow and lasts Flent's TOTAL_LENGTH of its schedule (%s), with no lead or tail: set DELAY with --delay and LENGTH with --duration, and drop %s",
				flag, t.Name, totalText(t), flag)
		case !t.NoLoad || *d == 0:
			return ""
		}
		return fmt.Sprintf("--lead and --tail surround a load, and %s has none: drop them and set the length with --duration", t.Name)
	}
}

// totalText writes a scheduled test's length as Flent's test file does:
// "max(LENGTH, DELAY*6)".
func totalText(t catalog.Test) string {
	parts := make([]string, len(t.Schedule))
	for i, at := range t.Schedule {
		parts[i] = at.String()
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "max(" + strings.Join(parts, ", ") + ")"
}

// streamsTests are the tests --streams sets the flows of.
var streamsTests = []string{"tcp_nup", "tcp_ndown", "rrul_var"}

// fixedStreamsOf says whether t is one of Flent's tcp_Nup or tcp_Ndown
// tests of a fixed count, and the count.
func fixedStreamsOf(t catalog.Test) (int, bool) {
	var n int
	var dir string
	if _, err := fmt.Sscanf(t.Name, "tcp_%d%s", &n, &dir); err != nil || (dir != "up" && dir != "down") {
		return 0, false
	}
	return n, true
}

// streamParam refuses Flent's per-stream parameter param (its flag) for a
// test that does not take it (catalog.StreamParams), naming those that do.
func streamParam(flag, param string) func(catalog.Test, *Options) string {
	return func(t catalog.Test, _ *Options) string {
		takes := catalog.StreamParams(t.Name)
		if slices.Contains(takes, param) {
			return ""
		}
		var tests []string
		for _, n := range catalog.Names() {
			if slices.Contains(catalog.StreamParams(n), param) {
				tests = append(tests, n)
			}
		}
		why := "takes none of Flent's per-stream parameters"
		if len(takes) > 0 {
			why = "takes only " + strings.Join(takes, ", ")
		}
		if fixedOwn[param] && slices.Contains(catalog.RTTFairTests, t.Name) {
			why = "sets its own " + param + ", as Flent's test does"
		}
		return fmt.Sprintf("%s is Flent's %s, which %s take; %s %s: drop %s", flag, param, strings.Join(tests, ", "), t.Name, why, flag)
	}
}

// fixedOwn are the per-stream parameters that Flent's rtt_fair tests of a
// fixed number of servers set themselves.
var fixedOwn = map[string]bool{catalog.ParamMarkings: true, catalog.ParamLabels: true, catalog.ParamPingLabels: true}

func nflowsOnly(t catalog.Test, _ *Options) string {
	if t.Name == "rrul_be_nflows" {
		return ""
	}
	return fmt.Sprintf("--upload-streams and --download-streams are rrul_be_nflows's, not %s's: drop them, or run rrul_be_nflows", t.Name)
}

func udpFloodOnly(t catalog.Test, _ *Options) string {
	if hasFlow(t, catalog.UDPFlood) {
		return ""
	}
	return fmt.Sprintf("--udp-rate and --udp-size are for udp_flood, not %s: drop them", t.Name)
}

func customOnly(t catalog.Test, _ *Options) string {
	if t.Custom {
		return ""
	}
	return fmt.Sprintf("--server, --client and --server-wait are the custom test's, not %s's: run `wanlab run custom --server CMD --client CMD`, or drop them", t.Name)
}

// ccNotFor refuses --cc where no TCP flow of wanlab's takes it: the results
// would otherwise record a congestion control that nothing used. (A
// direction that --cc names and no TCP flow takes is refused with the
// value, in Prepare.)
func ccNotFor(t catalog.Test, _ *Options) string {
	switch {
	case t.Custom:
		return "--cc sets wanlab's own TCP flows, and custom's flows are your programs': choose their congestion control in the commands (e.g. iperf3 -C cubic), and drop --cc"
	case hasFlow(t, catalog.TCP):
		return ""
	case len(t.Flows) == 0:
		return fmt.Sprintf("--cc sets the TCP flows' congestion control, and %s has no load flow: drop --cc", t.Name)
	}
	kind := map[catalog.Transport]string{
		catalog.UDPFlood: "a UDP flood at a set rate",
		catalog.TFRC:     "TFRC, whose rate control is its own",
		catalog.QUIC:     "QUIC, whose congestion control is quic-go's " + catalog.QUICCongestionControl,
		catalog.Scalable: "wanlab's built-in L4S sender, whose congestion control is its own",
	}[t.Flows[0].Transport]
	return fmt.Sprintf("--cc sets the TCP flows' congestion control, and %s has none (its flow is %s): drop --cc", t.Name, kind)
}

// wanlabTCPOnly refuses a socket option of wanlab's own TCP flows for a
// test that has none.
func wanlabTCPOnly(flag, what string) func(catalog.Test, *Options) string {
	return func(t catalog.Test, _ *Options) string {
		switch {
		case hasFlow(t, catalog.TCP):
			return ""
		case t.Custom:
			return fmt.Sprintf("%s sets %s of wanlab's own TCP flows, and custom's flows are your programs': set it in the commands (e.g. iperf3 -w), and drop %s", flag, what, flag)
		}
		return fmt.Sprintf("%s sets %s of wanlab's TCP flows, and %s has none (%s): drop %s", flag, what, t.Name, loadOf(t), flag)
	}
}

// tcpInHosts refuses a TCP sysctl of the hosts for a test in which nothing
// speaks TCP: custom's programs may, and keep it.
func tcpInHosts(flag, sysctl string) func(catalog.Test, *Options) string {
	return func(t catalog.Test, _ *Options) string {
		if hasFlow(t, catalog.TCP) || t.Custom {
			return ""
		}
		return fmt.Sprintf("%s sets %s, which only TCP reads, and %s has no TCP flow (%s): drop %s", flag, sysctl, t.Name, loadOf(t), flag)
	}
}

// granularityNotFor refuses --granularity where no testbed of the run's own
// has a router, and for a test whose packets are never GSO super-packets:
// its flows send one datagram per packet (UDP floods, TFRC, the built-in
// L4S sender) and its probes
// are single packets, so segment and gso are the same.
func granularityNotFor(t catalog.Test, o *Options) string {
	switch {
	case o.Lab != "":
		return fmt.Sprintf("--granularity is how a testbed the run builds takes GSO super-packets; --lab %s runs on one that has its own (wanlab up --granularity): drop --granularity", o.Lab)
	case o.Direct:
		return "--granularity is how the router's qdiscs take GSO super-packets, and --direct has no router: drop --granularity"
	case t.Custom || hasFlow(t, catalog.TCP) || hasFlow(t, catalog.QUIC):
		return ""
	}
	return fmt.Sprintf("--granularity is how the router's qdiscs take GSO super-packets, and %s sends none (no TCP or QUIC flow: its packets go one at a time): drop --granularity", t.Name)
}

// ownTestbedOnly refuses an option of the hosts of a testbed the run
// builds with --lab, whose testbed has its own, and with --direct, which
// has two hosts and no router.
func ownTestbedOnly(flag string) func(catalog.Test, *Options) string {
	return func(_ catalog.Test, o *Options) string {
		switch {
		case o.Direct:
			return fmt.Sprintf("%s sets the hosts of a testbed the run builds, and --direct joins two hosts without a router: drop %s", flag, flag)
		case o.Lab != "":
			return fmt.Sprintf("%s sets the hosts of a testbed the run builds; --lab %s runs on one that has its own (wanlab up %s): drop %s", flag, o.Lab, flag, flag)
		}
		return ""
	}
}

// pathOption refuses the path option flag with --direct, which has no
// path, and, when withLab, with --lab, whose testbed has its own.
func pathOption(flag string, withLab bool) func(catalog.Test, *Options) string {
	return func(_ catalog.Test, o *Options) string {
		switch {
		case o.Direct:
			return fmt.Sprintf("--direct joins the hosts with a plain veth pair, without a router, so %s has no path to shape: drop the path flags (--up, --down, --both, --up-script, --down-script, --script, --profile, --aqm, --trace-*, --at)", flag)
		case withLab && o.Lab != "":
			return fmt.Sprintf("--lab %s runs on that testbed's path, which %s would replace: drop the path flags, or change its chains first with `wanlab set %s`", o.Lab, flag, o.Lab)
		}
		return ""
	}
}
