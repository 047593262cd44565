package main

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"wanlab/fidelity"
	"wanlab/internal/preempt"
	"wanlab/internal/schematest"
	"wanlab/lab"
	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/results"
	"wanlab/router"
)

// Bad command lines fail before anything is built, with status 2 and one
// line that names the problem; they need neither root nor a testbed.
func TestTestbedCommandUsageErrors(t *testing.T) {
	checkUsageLine(t, nil, []usageCase{
		{[]string{"up", "--name", "Bad Name"}, "--name"},
		{[]string{"up", "--name", "café"}, `--name: testbed name "café": character 'é' (U+00E9) is not allowed`},
		{[]string{"up", "--name", strings.Repeat("x", 33)}, "--name"},
		{[]string{"up", "--both", "netem delay 1ms", "--up", "tbf"}, "--both"},
		{[]string{"up", "--up", "netem delay"}, "--up"},
		{[]string{"up", "--ecn", "3"}, "--ecn"},
		{[]string{"up", "--device", "tap"}, "--device"},
		{[]string{"up", "--rt-priority", "100"}, "--rt-priority"},
		{[]string{"up", "--cc", "no_such_cc"}, "--cc"},
		{[]string{"up", "extra"}, "unknown command"},
		{[]string{"up", "--dataplane", "xdp"}, `data plane "xdp" is unknown: use tun or packet`},
		{[]string{"up", "--trace-up", "/nonexistent/wl.trace"}, "--trace-up: "},
		{[]string{"bridge", "wl-a", "wl-b", "--trace-down", "/nonexistent/wl.trace"}, "--trace-down: "},
		{[]string{"up", "--dataplane", "packet", "--device", "raw"}, "--device chooses the TUN devices of the tun data plane, and --dataplane packet has none"},
		// A bridge's hosts are the machines on its ports.
		{[]string{"bridge", "wl-a"}, "accepts 2 arg(s)"},
		{[]string{"bridge", "wl-a", "wl-b", "--cc", "bbr"}, "--cc sets the TCP congestion control of a testbed's hosts, and a bridge has none"},
		{[]string{"bridge", "wl-a", "wl-b", "--tcp-rmem", "1 2 3"}, "--tcp-rmem sets net.ipv4.tcp_rmem of a testbed's hosts"},
		{[]string{"bridge", "wl-a", "wl-b", "--dataplane", "tun"}, "a bridge is always on the packet plane"},
		{[]string{"bridge", "wl-a", "wl-b", "--device", "raw"}, "--device chooses the TUN devices"},
		{[]string{"bridge", "wl-a", "wl-b", "--name", "Bad"}, "--name"},
		{[]string{"bridge", "wl-a", "wl-b", "--up", "netem delay"}, "--up"},
		{[]string{"exec", "ping"}, "after --"},
		{[]string{"exec", "a", "b", "--", "true"}, "at most one"},
		{[]string{"exec", "--"}, "no program"},
		{[]string{"exec", "--on", "router", "--", "true"}, "client or server"},
		{[]string{"set"}, "nothing to set"},
		{[]string{"set", "--both", "netem", "--up", "netem"}, "--both"},
		{[]string{"set", "--down", "fq_codel bogus"}, "--down"},
		{[]string{"down", "x", "--all"}, "not both"},
		{[]string{"status", "Bad"}, "not allowed"},
		{[]string{"shell", "--on", "x"}, "client or server"},
		{[]string{"calibrate", "--tests", "tcp,ping"}, "unknown"},
		{[]string{"calibrate", "--chain", "netem delay 1ms 1ms correlation kernel"}, "wanlab's own word"},
		{[]string{"calibrate", "--flows", "0"}, "at least one flow"},
		{[]string{"calibrate", "--runs", "0"}, "at least one run"},
		{[]string{"calibrate", "--flows", "100000"}, "give at most 256 flows"},
		{[]string{"calibrate", "--duration", "100000h"}, "would take over 24h0m0s: lower --runs or --duration"},
		{[]string{"calibrate", "--runs", "1000000", "--duration", "1m"}, "would take over 24h0m0s"},
		{[]string{"calibrate", "--runs", "9223372036854775807"}, "would take over 24h0m0s"},
		{[]string{"calibrate", "--duration", "1s"}, "warm-up"},
		// Refused before any namespace is built.
		{[]string{"calibrate", "--cc", "nosuch", "--tests", "tcp", "--duration", "3s", "--warmup", "1s"}, "--cc: congestion control nosuch is not loaded"},
		{[]string{"calibrate", "--cc", "Bad CC", "--tests", "tcp", "--duration", "3s", "--warmup", "1s"}, `--cc: "Bad CC" is not a congestion control name`},
		{[]string{"calibrate", "--udp-rate", "-1"}, `--udp-rate: bad rate "-1": out of range`},
		{[]string{"calibrate", "--udp-rate", "999", "--tests", "udp", "--duration", "3s", "--warmup", "1s"}, `--udp-rate: "999": give a rate from 1kbit to 1000gbit`},
		{[]string{"calibrate", "--udp-rate", "9223372036854775807", "--tests", "udp", "--duration", "3s", "--warmup", "1s"}, `--udp-rate: "9223372036854775807": give a rate from 1kbit to 1000gbit`},
		{[]string{"calibrate", "--udp-rate", "20mbits"}, `--udp-rate: bad rate "20mbits": unknown unit "mbits"`},
		{[]string{"calibrate", "--warmup", "-1s"}, "give positive times"},
		// A script that is no file of tc lines is not read.
		{[]string{"calibrate", "--script", "/dev/zero"}, "--script: /dev/zero is a character device, not a regular file: give a file of tc lines"},
		{[]string{"up", "--up-script", "/dev/zero"}, "--up-script: /dev/zero is a character device"},
		{[]string{"set", "--down-script", "/"}, "--down-script: / is a directory"},
		// A name that commands would read as an option is refused
		// where it is made, not only where it is used.
		{[]string{"up", "--name", "-x"}, `testbed name "-x" starts with '-'`},
		{[]string{"up", "--name=--all"}, "starts with '-'"},
		{[]string{"down", "--", "-x"}, "starts with '-'"},
		{[]string{"exec", "-x", "--", "true"}, "unknown shorthand"},
		// Chains that parse but that the router cannot build.
		{[]string{"up", "--up", "fq_codel; netem delay 1ms"}, "--up: "},
		{[]string{"up", "--down", "pie; tbf rate 1mbit burst 10k latency 1ms"}, "--down: "},
		{[]string{"up", "--both", "pfifo; pfifo"}, "--both: "},
		{[]string{"set", "--down", "pie; tbf rate 1mbit burst 10k latency 1ms"}, "--down: "},
		{[]string{"set", "--both", "codel; netem"}, "--both: "},
		{[]string{"up", "--up", "netem delay 1ms 1ms distribution wl-none.dist"}, "--up: "},
		{[]string{"set", "--up", "netem delay 1ms 1ms distribution wl-none.dist"}, "--up: "},
		// TCP buffer sizes the kernel would take without a word and keep
		// its own values for the rest.
		{[]string{"up", "--tcp-rmem", "1 2"}, `--tcp-rmem "1 2": 2 values`},
		{[]string{"up", "--tcp-wmem", "1 2 3 4"}, "--tcp-wmem"},
		{[]string{"up", "--tcp-rmem", "3 2 1"}, "not in order"},
		{[]string{"up", "--tcp-rmem", "0 1 2"}, `"0" is not a size`},
		{[]string{"up", "--tcp-wmem", "4096 x 6291456"}, `"x" is not a size`},
		{[]string{"up", "--tcp-wmem", "1 2 4294967296"}, "is not a size"},
	})
}

func TestPrintStatus(t *testing.T) {
	st := lab.Status{
		Info:      lab.InfoOf("lab"),
		Owner:     42,
		Created:   time.Now().Add(-time.Minute),
		CC:        "cubic",
		DataPlane: "tun",
		Device:    "offload",
		Changed:   []string{`a run (pid 7) could not set back client net.ipv4.tcp_ecn="2": no such file`},
	}
	st.Up = router.DirSnapshot{
		Name:  "up",
		Chain: "netem limit 1000 delay 25ms; tbf rate 100Mbit burst 32Kb lat 50ms",
		Qdiscs: []router.QdiscSnapshot{
			{Kind: "netem", Handle: "1:", Parent: "root", Options: "limit 1000 delay 25ms",
				Counters: link.QdiscCounters{Bytes: 3000, Packets: 2, Qlen: 1, Backlog: 1500}},
			// tbf's own drops include its default bfifo's, which tc does
			// not list.
			{Kind: "tbf", Handle: "2:", Parent: "1:1", Options: "rate 100Mbit burst 32Kb lat 50ms",
				Counters: link.QdiscCounters{Bytes: 1500, Packets: 1, Dropped: 5, Overlimits: 7}},
		},
		Flows: []router.FlowSnapshot{{
			Flow:    router.FlowKey{Proto: 6, Src: netip.MustParseAddrPort("10.0.0.1:1"), Dst: netip.MustParseAddrPort("10.0.0.2:2")},
			Packets: 9, Bytes: 900, Payload: 432,
		}},
		FlowsTotal:         3,
		WriteDrops:         2,
		WriteDropsByReason: map[string]uint64{"enobufs": 2},
		Ring: router.RingSnapshot{Size: 500, Drops: 4, Waiting: router.WaitingSummary{N: 10, P50: 1, P99: 8, Max: 12},
			Stall: router.Lateness{N: 3, P50Ns: 4000, P99Ns: 2500000, MaxNs: 3000000}},
	}
	st.Up.Counters.Delivered = 5
	st.Up.Counters.Dropped = 3
	st.Up.Counters.DroppedByReason[qdisc.ReasonLimit] = 3
	st.Up.Lateness = router.Lateness{N: 5, P50Ns: 1000, P99Ns: 5000, MaxNs: 9000}
	v := fidelity.Judge(st.Up.Fidelity(), 25*time.Millisecond)
	st.Up.Verdict = &v
	var b strings.Builder
	printStatus(&b, st)
	out := b.String()
	for _, want := range []string{
		"testbed lab: owner pid 42, up 1m0s, cc cubic, seed 0, dataplane tun, device offload, framing ethernet, granularity segment",
		"up (client → server): netem limit 1000 delay 25ms; tbf rate 100Mbit burst 32Kb lat 50ms",
		"\nqdisc netem 1: root refcnt 2 limit 1000 delay 25ms\n Sent 3000 bytes 2 pkt (dropped 5, overlimits 0 requeues 0) \n backlog 1500b 1p requeues 0\n",
		"\nqdisc tbf 2: parent 1:1 rate 100Mbit burst 32Kb lat 50ms \n Sent 1500 bytes 1 pkt (dropped 5, overlimits 7 requeues 0) \n",
		"dropped 3 (limit 3)",
		"GSO super-packets split into segments before the link (0 so far)",
		" NOT FAITHFUL (ring_drops): the kernel dropped 4 packets",
		"release lateness µs: p50 1.0 p99 5.0 max 9.0 (5 releases)",
		"tcp  10.0.0.1:1 > 10.0.0.2:2  9 pkt 900 bytes (payload 432), dropped 0, reordered 0\n  ... 2 more (see --flows 0)",
		"ring at wl-lab-c0: dropped 4 (holds 500); waiting at a wake-up p50 1 p99 8 max 12 packets; stalls µs p50 4.0 p99 2500.0 max 3000.0\n",
		"refused writes 2 (enobufs 2), malformed 0",
		"down (server → client): direct (no qdisc)",
		"\n  CHANGED: a run (pid 7) could not set back client net.ipv4.tcp_ecn=\"2\": no such file\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	// tbf's default bfifo is not part of the chain: tc does not list it.
	if strings.Contains(out, "bfifo") {
		t.Errorf("status lists tbf's default child:\n%s", out)
	}
}

// TestPrintStatusLateReleasesNote: late releases are followed by the note
// on the kernel's preemption mode when this machine's kernel runs in mode
// none, and by nothing else; a faithful testbed gets no note.
func TestPrintStatusLateReleasesNote(t *testing.T) {
	for _, late := range []bool{true, false} {
		st := lab.Status{Info: lab.InfoOf("lab"), Owner: 42, Created: time.Now(), CC: "cubic", DataPlane: "tun"}
		st.Up.Lateness = router.Lateness{N: 1000, P50Ns: 1000, P99Ns: 100_000, MaxNs: 200_000}
		if late {
			st.Up.Lateness.P99Ns = 5_000_000
		}
		v := fidelity.Judge(st.Up.Fidelity(), 25*time.Millisecond)
		st.Up.Verdict = &v
		var b strings.Builder
		printStatus(&b, st)
		want := late && preempt.Mode() == preempt.None
		if got := strings.Contains(b.String(), "NOTE: "+results.LateReleasesHint+"\n"); got != want {
			t.Errorf("late releases %v, kernel in mode %q: the note printed %v, want %v:\n%s", late, preempt.Mode(), got, want, b.String())
		}
		if late != strings.Contains(b.String(), "NOT FAITHFUL (late_releases)") {
			t.Errorf("late releases %v: the verdict says otherwise:\n%s", late, b.String())
		}
	}
}

// TestPrintStatusOfPacketPlaneAndBridge: a testbed on the packet plane
// shows its router's namespace and reads its rings at the router's ends of
// the veth pairs; a bridge shows its ports instead of hosts, and its
// directions by them, with the frames that crossed outside the chains.
func TestPrintStatusOfPacketPlaneAndBridge(t *testing.T) {
	st := lab.Status{Info: lab.InfoOf("lab"), Owner: 42, Created: time.Now(), CC: "cubic", DataPlane: "packet"}
	st.RouterNS, st.Client.RouterIf, st.Server.RouterIf = "wl-lab-r", "wl-lab-rc", "wl-lab-rs"
	st.Up.Ring.Wait = &router.Lateness{N: 4, P50Ns: 2000, P99Ns: 90000, MaxNs: 100000}
	var b strings.Builder
	printStatus(&b, st)
	checkHas(t, "status", b.String(),
		"testbed lab: owner pid 42, up 0s, cc cubic, seed 0, dataplane packet, framing",
		"  router  netns wl-lab-r        dev wl-lab-rc, wl-lab-rs (packet sockets)\n",
		"ring at wl-lab-rc: dropped 0; wait µs (kernel's arrival to read) p50 2.0 p99 90.0 max 100.0\n",
		"ring at wl-lab-rs: dropped 0\n")

	br := lab.Status{Info: lab.Info{Name: "br", Ports: []lab.PortInfo{
		{IfName: "eth1", MAC: "02:00:00:00:00:01", MTU: 1500, Promiscuity: 1},
		{IfName: "eth2", Err: "no such device"},
	}}, Owner: 7, Created: time.Now(), DataPlane: "packet"}
	br.Down.NonIP = &router.NonIPSnapshot{Frames: 3, Bytes: 180}
	b.Reset()
	printStatus(&b, br)
	checkHas(t, "a bridge's status", b.String(),
		"bridge br between eth1 and eth2: owner pid 7, up 0s, seed 0, dataplane packet, framing",
		"  port    eth1             mac 02:00:00:00:00:01  mtu 1500  promiscuity 1, one held by wanlab's packet socket (up reads it, down writes it)\n",
		"  port    eth2             no such device (down reads it, up writes it)\n",
		"up (eth1 → eth2): direct (no qdisc)",
		"ring at eth2: dropped 0",
		"frames that are not IP (ARP, ...), crossed unshaped: 3, 180 bytes, refused 0\n")
	if strings.Contains(b.String(), "cc ") || strings.Contains(b.String(), "client") {
		t.Errorf("a bridge's status names hosts:\n%s", b.String())
	}
}

// checkHas reports each of want that got, what's output, lacks.
func checkHas(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// TestStatusJSONDocumented checks that every key of `wanlab status --json`
// is snake_case and described in docs/results-format.md.
func TestStatusJSONDocumented(t *testing.T) {
	st := lab.Status{Info: lab.InfoOf("lab"), Pcap: "/tmp/x.pcap", PcapError: "broken pipe", Changed: []string{"a run (pid 1) could not set back ..."}}
	// A testbed on the packet plane, and a bridge's ports.
	st.RouterNS, st.Client.RouterIf, st.DataPlane = "wl-lab-r", "wl-lab-rc", "packet"
	st.Ports = []lab.PortInfo{{IfName: "eth1", MAC: "02:00:00:00:00:01", MTU: 1500, Promiscuity: 1, Err: "gone"}}
	// A tree's qdiscs and classes.
	st.Up.Qdiscs = []router.QdiscSnapshot{{Kind: "htb", DirectPackets: 1}}
	st.Up.Classes = []router.ClassSnapshot{{Kind: "htb", Leaf: "10:", Options: "htb rate 1Mbit"}}
	st.Up.Flows = []router.FlowSnapshot{{}}
	st.Up.WriteDropsByReason = map[string]uint64{"eagain": 1}
	st.Up.Ring.Err = "no such device"
	schematest.CheckKeys(t, st)
	// A dumbbell's hosts, with access links, and its ports.
	info := lab.InfoOf("lab")
	info.Hosts = []lab.HostInfo{{Name: "c2", NS: "wl-lab-c2", IfName: "wl-lab-c2", AccessUp: "netem delay 10ms", AccessDown: "direct", CC: "bbr"}}
	st = lab.Status{Info: info}
	st.Up.Ports = []router.PortSnapshot{{Host: "c2", Access: &link.Counters{}}}
	st.Up.NoRoute = 1
	schematest.CheckKeys(t, st)
}

// TestBothErrorsSayBoth: a chain given with --both is reported as --both,
// in each of the ways it can be wrong, and never as --up or --down.
func TestBothErrorsSayBoth(t *testing.T) {
	for _, args := range [][]string{
		{"up", "--both", "netem delay"},
		{"up", "--both", "fq_codel; netem delay 1ms"},
		{"sim", "--both", "netem delay"},
		{"sim", "--both", "tbf rate 1mbit"},
		{"set", "--both", "netem delay"},
		{"set", "--both", "fq_codel; netem delay 1ms"},
	} {
		_, errOut, code := runWanlab(t, args...)
		if code != exitUsage || !strings.HasPrefix(errOut, "wanlab: --both: ") || strings.Contains(errOut, "--up") || strings.Contains(errOut, "--down") {
			t.Errorf("wanlab %q: exit %d, %q; want 2 and a message about --both alone", args, code, errOut)
		}
	}
}

// TestAccessNote: a host's line in up and status names its access links
// and its own congestion control, each only where it has one.
func TestAccessNote(t *testing.T) {
	for _, c := range []struct {
		h    lab.HostInfo
		want string
	}{
		{lab.HostInfo{}, ""},
		{lab.HostInfo{CC: "reno"}, "  cc reno"},
		{lab.HostInfo{AccessUp: "netem delay 1ms"}, "  access up: netem delay 1ms; down: none"},
		{lab.HostInfo{AccessDown: "direct", CC: "bbr"}, "  access up: none; down: direct  cc bbr"},
	} {
		if got := accessNote(c.h); got != c.want {
			t.Errorf("accessNote(%+v) = %q, want %q", c.h, got, c.want)
		}
	}
}
