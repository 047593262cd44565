package testrun

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wanlab/internal/rundir"
	"wanlab/lab"
	"wanlab/tcspec"
)

func dur(d time.Duration) *time.Duration { return &d }

func intp(n int) *int { return &n }

// Every bad input is a *BadOption whose one line names the problem and,
// after a colon, the fix; nothing is created on the way (Prepare creates
// nothing at all, so the test runs without root).
func TestPrepareBadInput(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "bad.trace")
	os.WriteFile(trace, []byte("0\n5\n3\n"), 0o644)
	for _, c := range []struct {
		name string
		mod  func(o *Options)
		want string // a fragment of the message
	}{
		{"unknown test", func(o *Options) { o.Test = "rrul_cs8" }, `test "rrul_cs8" is unknown: use one of ping,`},
		{"zero duration", func(o *Options) { o.Test = "ping"; o.Duration = dur(0) }, "--duration 0s: give a positive length"},
		{"negative duration", func(o *Options) { o.Duration = dur(-time.Second) }, "--duration -1s"},
		{"huge duration", func(o *Options) { o.Duration = dur(1000 * time.Hour) }, "keep it within 24h"},
		{"tiny step", func(o *Options) { o.Step = time.Millisecond }, "--step 1ms: give at least 10ms"},
		{"step longer than the load", func(o *Options) { o.Duration = dur(time.Second); o.Step = 2 * time.Second }, "longer than the load"},
		{"lead off the grid", func(o *Options) { o.Lead = dur(500 * time.Millisecond) }, "must each be a whole number of steps (--step 200ms)"},
		{"negative lead", func(o *Options) { o.Lead = dur(-time.Second) }, "give 0 or more"},
		{"lead for ping", func(o *Options) { o.Test = "ping"; o.Lead = dur(time.Second) }, "ping has none"},
		{"streams out of range", func(o *Options) { o.Test = "tcp_nup"; o.Streams = 1000 }, "--streams 1000 is out of range: use 1 to 256"},
		{"streams for rrul", func(o *Options) { o.Test = "rrul"; o.Streams = 2 }, "--streams is for tcp_nup, tcp_ndown, rrul_var, not rrul"},
		{"streams for tcp_4up", func(o *Options) { o.Test = "tcp_4up"; o.Streams = 2 }, "--streams: tcp_4up has 4 flows, as Flent's test does"},
		{"upload streams for rrul", func(o *Options) { o.Test = "rrul"; o.UploadStreams = 2 }, "--upload-streams and --download-streams are rrul_be_nflows's, not rrul's"},
		{"download streams out of range", func(o *Options) { o.Test = "rrul_be_nflows"; o.DownloadStreams = 300 }, "--download-streams 300 is out of range: use 1 to 256"},
		{"delay for rrul", func(o *Options) { o.Test = "rrul"; o.Delay = dur(time.Second) }, "--delay is the step of the schedule of tcp_2up_delay"},
		{"lead for a square wave", func(o *Options) { o.Test = "tcp_4up_squarewave"; o.Lead = dur(time.Second) }, "--lead: tcp_4up_squarewave starts with its first flow and lasts Flent's TOTAL_LENGTH of its schedule (LENGTH+DELAY*6)"},
		{"tail for a square wave", func(o *Options) { o.Test = "tcp_2up_delay"; o.Tail = dur(0) }, "(LENGTH+DELAY), with no lead or tail"},
		{"delay off the grid", func(o *Options) { o.Test = "tcp_4up_squarewave"; o.Delay = dur(250 * time.Millisecond) }, "--duration 1m0s and --delay 250ms must each be a whole number of steps"},
		{"zero delay", func(o *Options) { o.Test = "tcp_4up_squarewave"; o.Delay = dur(0) }, "--delay 0s: give a positive DELAY"},
		{"bad cc", func(o *Options) { o.CC = "cubic!" }, `--cc cubic!: "cubic!" is not a congestion control name`},
		{"cc not loaded", func(o *Options) { o.CC = "nosuchcc" }, "--cc nosuchcc: congestion control nosuchcc is not loaded (net.ipv4.tcp_available_congestion_control has "},
		{"cc bad direction", func(o *Options) { o.CC = "left=cubic" }, "--cc up=cubic,down=bbr"},
		{"cc direction twice", func(o *Options) { o.CC = "up=cubic,up=reno" }, `--cc "up=cubic,up=reno" gives up twice: give each direction once`},
		{"cc for quic", func(o *Options) { o.Test = "quic_upload"; o.CC = "cubic" }, "quic_upload has none (its flow is QUIC, whose congestion control is quic-go's NewReno): drop --cc"},
		{"cc for tfrc", func(o *Options) { o.Test = "tfrc_download"; o.CC = "cubic" }, "tfrc_download has none (its flow is TFRC"},
		{"cc for udp", func(o *Options) { o.Test = "udp_flood"; o.CC = "down=cubic" }, "udp_flood has none (its flow is a UDP flood"},
		{"cc for ping", func(o *Options) { o.Test = "ping"; o.CC = "reno" }, "ping has no load flow: drop --cc"},
		{"cc for custom", func(o *Options) { o.Test = "custom"; o.Client = "true"; o.CC = "reno" }, "custom's flows are your programs'"},
		{"cc for a direction without tcp", func(o *Options) { o.Test = "tcp_download"; o.CC = "up=cubic,down=reno" }, "--cc up=cubic,down=reno: tcp_download has no TCP flow whose data goes up: drop up=cubic"},
		{"bad tos", func(o *Options) { o.TOS = "CS9" }, "--tos: \"CS9\" is neither a DSCP name"},
		{"tos too big", func(o *Options) { o.TOS = "300" }, "TOS byte from 0 to 255"},
		{"unknown profile", func(o *Options) { o.Profile = "moon" }, `--profile: profile "moon" is unknown: use one of home, lte, geo, datacenter`},
		{"profile and chain", func(o *Options) { o.Profile = "lte"; o.Up = "netem delay 1ms" }, "--profile lte gives both chains"},
		{"unknown aqm", func(o *Options) { o.AQM = "choke" }, `--aqm "choke" is unknown`},
		{"aqm without tbf", func(o *Options) { o.Both = "netem delay 10ms"; o.AQM = "fq_codel" }, "needs a tbf in the chain"},
		{"bad chain", func(o *Options) { o.Up = "netem delay tenms" }, "--up:"},
		{"unknown data plane", func(o *Options) { o.DataPlane = "xdp" }, `--dataplane: data plane "xdp" is unknown: use tun or packet`},
		{"data plane with lab", func(o *Options) { o.DataPlane = "packet"; o.Lab = "x" }, "--lab x runs on one that has its own (wanlab up --dataplane): drop --dataplane"},
		{"both and up", func(o *Options) { o.Both = "netem delay 1ms"; o.Up = "netem delay 2ms" }, "give either --both"},
		{"bad trace", func(o *Options) { o.TraceUp = trace }, "--trace-up: " + trace + ":"},
		{"missing trace", func(o *Options) { o.TraceDown = filepath.Join(dir, "none") }, "--trace-down:"},
		{"change at 0", func(o *Options) { o.At = []Change{{At: 0, Up: "netem delay 1ms"}} }, "the time must lie inside the run"},
		{"change after the end", func(o *Options) { o.At = []Change{{At: time.Hour, Up: "netem delay 1ms"}} }, "before its end at 40s"},
		{"empty change", func(o *Options) { o.At = []Change{{At: time.Second}} }, "--at 1s changes nothing"},
		{"bad change chain", func(o *Options) { o.At = []Change{{At: time.Second, Down: "tbf rate"}} }, "--at 1s --down:"},
		{"changes out of order", func(o *Options) {
			o.At = []Change{{At: 2 * time.Second, Up: "netem delay 1ms"}, {At: time.Second, Up: "netem delay 2ms"}}
		}, "list the changes in time order"},
		{"direct with path", func(o *Options) { o.Direct = true; o.Up = "netem delay 1ms" }, "--direct joins the hosts with a plain veth pair"},
		{"direct with pcap", func(o *Options) { o.Direct = true; o.Pcap = filepath.Join(dir, "x.pcap") }, "--direct has no router"},
		{"direct and lab", func(o *Options) { o.Direct = true; o.Lab = "x" }, "exclude each other"},
		{"bad granularity", func(o *Options) { o.Granularity = "skb" }, `--granularity: granularity "skb" is unknown: use segment`},
		{"direct with granularity", func(o *Options) { o.Direct = true; o.Granularity = "gso" }, "--direct has no router: drop --granularity"},
		{"lab with granularity", func(o *Options) { o.Lab = "x"; o.Granularity = "gso" }, "(wanlab up --granularity): drop --granularity"},
		{"lab naming no testbed", func(o *Options) { o.Lab = "wl-nosuch-testbed" }, "--lab: testbed wl-nosuch-testbed is not running; start it with `wanlab up --name wl-nosuch-testbed`"},
		{"lab with a bad name", func(o *Options) { o.Lab = "Big Lab" }, "--lab: testbed name"},
		{"lab with a path", func(o *Options) { o.Lab = "x"; o.Both = "netem delay 1ms" }, "drop the path flags"},
		{"udp rate for tcp", func(o *Options) { o.Test = "tcp_upload"; o.UDPRate = "1M" }, "--udp-rate and --udp-size are for udp_flood"},
		{"bad udp rate", func(o *Options) { o.Test = "udp_flood"; o.UDPRate = "fast" }, `--udp-rate: bad rate "fast": use a number with a unit`},
		{"zero udp rate", func(o *Options) { o.Test = "udp_flood"; o.UDPRate = "0" }, "--udp-rate"},
		{"bad udp size", func(o *Options) { o.Test = "udp_flood"; o.UDPSize = 70000 }, "--udp-size 70000"},
		{"negative buffer", func(o *Options) { o.SendBuffer = -1 }, "--sndbuf -1"},
		{"bad tcp_rmem", func(o *Options) { o.TCPRmem = "4096 lots" }, `--tcp-rmem "4096 lots": give three byte counts`},
		{"sysctl outside net", func(o *Options) { o.Sysctls = []string{"kernel.panic=1"} }, "only keys under net. are per host"},
		{"sysctl escaping", func(o *Options) { o.Sysctls = []string{"net.ipv4/../../kernel/panic=1"} }, "only keys under net."},
		{"sysctl without value", func(o *Options) { o.Sysctls = []string{"net.ipv4.tcp_sack"} }, "give [HOST:]KEY=VALUE"},
		{"sysctl bad host", func(o *Options) { o.Sysctls = []string{"router:net.ipv4.tcp_sack=0"} }, `host "router" is unknown`},
		{"sysctl typo", func(o *Options) { o.Sysctls = []string{"net.ipv4.tcp_sackk=0"} }, "the kernel has no sysctl net.ipv4.tcp_sackk"},
		{"output is a directory", func(o *Options) { o.Output = dir }, "is a directory"},
		{"output in a missing directory", func(o *Options) { o.Output = filepath.Join(dir, "no", "x.json") }, "--output"},
		{"two outputs on stdout", func(o *Options) { o.Output = "-"; o.Flent = "-" }, "only one output can go to stdout"},
		{"two outputs in one file", func(o *Options) { o.Output = filepath.Join(dir, "x"); o.Flent = filepath.Join(dir, ".", "x") }, "--flent and --output name the same file"},
		{"json and stdout file", func(o *Options) { o.JSON = true; o.Flent = "-" }, "--json prints the results on stdout"},
		{"tx_qlen for tcp", func(o *Options) { o.Test = "tcp_upload"; o.TxQLen = intp(5) }, "--tx-qlen is the TFRC sender's transmit buffer, and tcp_upload has no TFRC flow"},
		{"negative tx_qlen", func(o *Options) { o.Test = "tfrc_upload"; o.TxQLen = intp(-1) }, "--tx-qlen -1: give 0 (unbounded"},
		{"huge tx_qlen", func(o *Options) { o.Test = "tfrc_download"; o.TxQLen = intp(1 << 40) }, "to 10000 packets"},
		{"server for tcp", func(o *Options) { o.Test = "tcp_upload"; o.Server = "iperf3 -s" }, "--server, --client and --server-wait are the custom test's"},
		{"client for the main job", func(o *Options) { o.Client = "iperf3 -c @peer" }, "run `wanlab run custom --server CMD --client CMD`"},
		{"custom without client", func(o *Options) { o.Test = "custom"; o.Server = "iperf3 -s" }, "custom runs your own sender: give it with --client"},
		{"custom with a blank client", func(o *Options) { o.Test = "custom"; o.Client = "  " }, "give it with --client"},
		{"custom direct", func(o *Options) { o.Test = "custom"; o.Client = "true"; o.Direct = true }, "--direct has none: drop --direct"},
		{"custom NUL", func(o *Options) { o.Test = "custom"; o.Client = "a\x00b" }, "--client: the command holds a NUL byte"},
		{"server wait without server", func(o *Options) { o.Test = "custom"; o.Client = "true"; o.ServerWait = dur(time.Second) }, "there is no --server: drop it"},
		{"negative server wait", func(o *Options) {
			o.Test = "custom"
			o.Client = "true"
			o.Server = "x"
			o.ServerWait = dur(-time.Second)
		}, "--server-wait -1s: give 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := Defaults()
			c.mod(&o)
			_, err := Prepare(o, tcspec.Options{})
			if err == nil {
				t.Fatalf("no error, want one containing %q", c.want)
			}
			if !IsBadOption(err) {
				t.Errorf("%T %v is not a *BadOption", err, err)
			}
			msg := err.Error()
			if rundir.Rootless() && c.name == "sysctl typo" {
				// A user namespace shows only its own keys: the check
				// cannot tell a typo from the machine's key, and says
				// both (TestPrepareRootless).
				c.want = "is not a sysctl of a network namespace"
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("error %q does not contain %q", msg, c.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q has more than one line", msg)
			}
		})
	}
}

// Without options, Prepare sets up the main job: rrul for 30 s on the home
// profile, Flent's lead, tail and step, a testbed of its own.
func TestPrepareMainJob(t *testing.T) {
	s, err := Prepare(Defaults(), tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Test.Name != "rrul" || s.Duration != 30*time.Second || s.Lead != 5*time.Second || s.Tail != 5*time.Second ||
		s.Step != 200*time.Millisecond || s.Mode != ModeTestbed || s.Length() != 40*time.Second {
		t.Errorf("main job: test %s, duration %v, lead %v, tail %v, step %v, mode %s", s.Test.Name, s.Duration, s.Lead, s.Tail, s.Step, s.Mode)
	}
	if !strings.Contains(s.UpText, "tbf rate 5Mbit") || !strings.Contains(s.DownText, "tbf rate 20Mbit") ||
		!strings.Contains(s.UpText, "pfifo limit 256") {
		t.Errorf("main job's path is not the home profile: up %q, down %q", s.UpText, s.DownText)
	}
	if s.CCUp != "" || s.TOS != -1 || len(s.Sysctls) != 0 {
		t.Errorf("main job changes the hosts: cc %q, tos %d, sysctls %v", s.CCUp, s.TOS, s.Sysctls)
	}

	o := Defaults()
	o.Test, o.AQM = "tcp_download", "fq_codel"
	s, err = Prepare(o, tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Duration != 60*time.Second || !strings.Contains(s.UpText, "; fq_codel ") || !strings.Contains(s.DownText, "; fq_codel ") ||
		strings.Contains(s.UpText, "pfifo") {
		t.Errorf("a named test with --aqm: duration %v, up %q, down %q", s.Duration, s.UpText, s.DownText)
	}

	o = Defaults()
	o.Test = "ping"
	if s, err = Prepare(o, tcspec.Options{}); err != nil || s.Lead != 0 || s.Tail != 0 || s.Duration != 60*time.Second {
		t.Errorf("ping: %v; lead %v, tail %v, duration %v: want no lead or tail, 60s", err, s.Lead, s.Tail, s.Duration)
	}
}

// The options that reach the traffic and the hosts are resolved as the
// flags say.
func TestPrepareResolves(t *testing.T) {
	o := Defaults()
	o.Test = "udp_flood"
	o.UDPRate = "20M"
	o.TOS = "af41"
	s, err := Prepare(o, tcspec.Options{})
	if err != nil || s.UDPRate != 20_000_000 || s.TOS != 34<<2 {
		t.Fatalf("%v: rate %d, tos %#x", err, s.UDPRate, s.TOS)
	}
	// TCP's sysctls for a test with TCP flows: udp_flood would refuse
	// --tcp-rmem, which nothing of it reads.
	o = Defaults()
	o.Test = "tcp_upload"
	o.ECN = true
	o.TCPRmem = "4096  87380 6291456"
	o.Sysctls = []string{"client:net.ipv4.tcp_recovery=0", "net.ipv4.tcp_sack=0"}
	o.Both = "netem delay 10ms"
	o.At = []Change{{At: 3 * time.Second, Up: "netem delay 20ms"}, {At: 4 * time.Second, Both: "netem delay 5ms"}}
	// In a user namespace the packet plane is refused (TestPrepareRootless).
	if !rundir.Rootless() {
		o.DataPlane = "packet"
	}
	if s, err = Prepare(o, tcspec.Options{}); err != nil {
		t.Fatal(err)
	}
	if s.DataPlane != lab.PacketPlane && !rundir.Rootless() {
		t.Errorf("--dataplane packet: %v", s.DataPlane)
	}
	for cc, want := range map[string][2]string{"up=reno,down=cubic": {"reno", "cubic"}, "down=cubic": {"", "cubic"}, "reno": {"reno", "reno"}} {
		o := Defaults()
		o.Test, o.CC = "tcp_bidirectional", cc
		s, err := Prepare(o, tcspec.Options{})
		if err != nil || s.CCUp != want[0] || s.CCDown != want[1] {
			t.Errorf("--cc %s: %v, cc %q/%q; want %q/%q", cc, err, s.CCUp, s.CCDown, want[0], want[1])
		}
	}
	var got []string
	for _, sc := range s.Sysctls {
		got = append(got, string(sc.Host)+":"+sc.Key+"="+sc.Value)
	}
	want := "client:net.ipv4.tcp_ecn=1 server:net.ipv4.tcp_ecn=1 client:net.ipv4.tcp_rmem=4096 87380 6291456 server:net.ipv4.tcp_rmem=4096 87380 6291456 " +
		"client:net.ipv4.tcp_recovery=0 client:net.ipv4.tcp_sack=0 server:net.ipv4.tcp_sack=0"
	if strings.Join(got, " ") != want {
		t.Errorf("sysctls\n %s\nwant\n %s", strings.Join(got, " "), want)
	}
	if len(s.Changes) != 2 || s.Changes[0].At != 3*time.Second || strings.Join(s.Changes[0].Dirs, ",") != "up" ||
		strings.Join(s.Changes[1].Dirs, ",") != "up,down" || s.Changes[1].Texts[1] != "netem limit 1000 delay 5ms" {
		t.Errorf("changes %+v", s.Changes)
	}
}

func TestParseTOSAndRate(t *testing.T) {
	for in, want := range map[string]int{"EF": 0xb8, "ef": 0xb8, "CS1": 0x20, "cs5": 0xa0, "BE": 0, "AF11": 0x28, "AF43": 0x98, "0xb8": 0xb8, "184": 184, "0": 0} {
		if got, err := ParseTOS(in); err != nil || got != want {
			t.Errorf("ParseTOS(%q) = %#x, %v; want %#x", in, got, err, want)
		}
	}
	for in, want := range map[string]int64{"100mbit": 100e6, "20M": 20e6, "500k": 500e3, "1.5gbit": 1.5e9, "64000": 64000, "10Mbit": 10e6,
		"10mbps": 80e6, "1mibit": 1 << 20, "1T": 1e12} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "-5M", "10", "NaN", "2000gbit", "2T", "20Mb"} {
		if _, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) accepted", in)
		}
	}
}

// wanlab's own tests resolve their options: TFRC's transmit buffer is
// DCCP's 5 unless given (0 stays 0, unbounded); custom waits 10 s for its
// server unless told otherwise.
func TestPrepareOwnTests(t *testing.T) {
	o := Defaults()
	o.Test = "tfrc_upload"
	s, err := Prepare(o, tcspec.Options{})
	if err != nil || s.TxQLen != 5 {
		t.Errorf("tfrc_upload: %v, tx_qlen %d; want 5", err, s.TxQLen)
	}
	o.TxQLen = intp(0)
	if s, err = Prepare(o, tcspec.Options{}); err != nil || s.TxQLen != 0 || s.recordedOptions("")["tx_qlen"] != "0" {
		t.Errorf("tfrc_upload --tx-qlen 0: %v, tx_qlen %d", err, s.TxQLen)
	}
	o = Defaults()
	o.Test, o.Client, o.Server = "custom", "iperf3 -c @peer -p @port", "iperf3 -s -p @port"
	if s, err = Prepare(o, tcspec.Options{}); err != nil || s.ServerWait != DefaultServerWait || s.Test.Flent {
		t.Errorf("custom: %v, server wait %v", err, s.ServerWait)
	}
	o.ServerWait = dur(0)
	if s, err = Prepare(o, tcspec.Options{}); err != nil || s.ServerWait != 0 {
		t.Errorf("custom --server-wait 0: %v, server wait %v", err, s.ServerWait)
	}
	for _, test := range []string{"quic_upload", "quic_download", "tfrc_download"} {
		o := Defaults()
		o.Test = test
		if _, err := Prepare(o, tcspec.Options{}); err != nil {
			t.Errorf("%s: %v", test, err)
		}
	}
	// Their runs write Flent's data file under the Flent test of their
	// layout (results.FlentLayout), as export does.
	dir := t.TempDir()
	for _, test := range []string{"tfrc_upload", "quic_download", "custom"} {
		o := Defaults()
		o.Test, o.Client, o.Flent = test, "", filepath.Join(dir, test+".flent.gz")
		if test == "custom" {
			o.Client = "true"
		}
		if _, err := Prepare(o, tcspec.Options{}); err != nil {
			t.Errorf("%s --flent: %v", test, err)
		}
	}
}

// TestCheckGiven: what Options cannot tell from its defaults, the flags
// given can: an explicit zero, --seed with --lab, an empty file name.
func TestCheckGiven(t *testing.T) {
	for _, c := range []struct {
		flag string
		mod  func(o *Options)
		want string // "" for no error
	}{
		{"streams", func(o *Options) { o.Test = "tcp_nup" }, "--streams 0: give 1 to 256 flows, or leave it out for 4"},
		{"streams", func(o *Options) { o.Test = "tcp_nup"; o.Streams = 2 }, ""},
		{"udp-size", func(o *Options) { o.Test = "udp_flood" }, "--udp-size 0: give a UDP payload from 24 to 65507 bytes"},
		{"seed", func(o *Options) { o.Lab = "lab1"; o.Seed = 5 }, "--seed: --lab lab1 runs on that testbed, whose path draws from the seed it was started with: drop --seed, or start the testbed with `wanlab up --seed 5`"},
		{"seed", func(o *Options) { o.Seed = 5 }, ""},
		{"output", func(o *Options) {}, "--output is empty: give a file name (- for stdout), or leave --output out"},
		{"pcap", func(o *Options) {}, "--pcap is empty"},
		{"flent", func(o *Options) { o.Flent = "x.flent.gz" }, ""},
	} {
		o := Defaults()
		c.mod(&o)
		err := CheckGiven(o, func(f string) bool { return f == c.flag })
		switch {
		case c.want == "" && err != nil:
			t.Errorf("--%s, %+v: %v", c.flag, o, err)
		case c.want != "" && (err == nil || !IsBadOption(err) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("--%s: %v; want a *BadOption with %q", c.flag, err, c.want)
		}
	}
}

// A test whose flows need a congestion control the kernel has not loaded
// is refused before anything is made, naming the flow, the algorithm, the
// loaded ones and the fix; --cc that replaces it lets the test run.
func TestPrepareFlowCongestionControl(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil || strings.Contains(string(b), "westwood") {
		t.Skip("skipped: westwood is loaded, or there is no /proc to ask")
	}
	avail := strings.Join(strings.Fields(string(b)), ", ")
	o := Defaults()
	o.Test = "cubic_westwood"
	_, err = Prepare(o, tcspec.Options{})
	var bo *BadOption
	if !errors.As(err, &bo) || bo.Key != "test" || !strings.Contains(err.Error(), `cubic_westwood: its flow "TCP upload Westwood BE" runs westwood`) ||
		!strings.Contains(err.Error(), "has "+avail+")") || !strings.Contains(err.Error(), "modprobe tcp_westwood") || !strings.Contains(err.Error(), "--cc cubic") {
		t.Errorf("cubic_westwood: %v", err)
	}
	o.CC = "cubic"
	if _, err := Prepare(o, tcspec.Options{}); err != nil {
		t.Errorf("cubic_westwood --cc cubic: %v", err)
	}
	// A download's congestion control is the sender's, the server's: --cc
	// up=cubic leaves the downloads' westwood.
	o.CC = "up=cubic"
	if _, err := Prepare(o, tcspec.Options{}); err == nil || !strings.Contains(err.Error(), "TCP download Westwood BE") {
		t.Errorf("cubic_westwood --cc up=cubic: %v", err)
	}
}

// A test with a schedule of its own runs from its first flow to the end of
// its schedule: no lead, a tail that completes Flent's TOTAL_LENGTH.
func TestPrepareSchedule(t *testing.T) {
	o := Defaults()
	o.Test, o.Duration, o.Delay = "tcp_2up_square", dur(10*time.Second), dur(3*time.Second)
	o.CC = "cubic" // westwood may not be loaded
	s, err := Prepare(o, tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Lead != 0 || s.Delay != 3*time.Second || s.Length() != 18*time.Second {
		t.Errorf("tcp_2up_square, LENGTH 10 s, DELAY 3 s: lead %v, delay %v, length %v; want 0, 3s and DELAY*6", s.Lead, s.Delay, s.Length())
	}
	o.Test, o.CC, o.Delay = "tcp_2up_delay", "", nil
	if s, err = Prepare(o, tcspec.Options{}); err != nil || s.Length() != 15*time.Second || s.Tail != 5*time.Second {
		t.Errorf("tcp_2up_delay, LENGTH 10 s: %v, length %v, tail %v; want LENGTH+DELAY with Flent's DELAY of 5 s", err, s.Length(), s.Tail)
	}
	o.Test = "rrul"
	if s, err = Prepare(o, tcspec.Options{}); err != nil || s.Delay != s.Lead || s.Lead != DefaultLeadTail {
		t.Errorf("rrul: %v, delay %v, lead %v", err, s.Delay, s.Lead)
	}
}
