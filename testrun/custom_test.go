package testrun

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"wanlab/lab"
	"wanlab/traffic"
)

// The placeholders are replaced as whole words, @peer and @peer6 as
// `wanlab exec` replaces them; others are left as written.
func TestExpandCommand(t *testing.T) {
	info := lab.InfoOf("x")
	peer4, peer6 := info.Server.Addr4.String(), info.Server.Addr6.String()
	for in, want := range map[string]string{
		"iperf3 -c @peer -p @port -t @duration":     "iperf3 -c " + peer4 + " -p 5201 -t 2.5",
		"ping -6 @peer6; echo @port@duration":       "ping -6 " + peer6 + "; echo 52012.5",
		"curl http://[@peer6]:@port/":               "curl http://[" + peer6 + "]:5201/",
		"echo @portal @durations @peerless $WANLAB": "echo @portal @durations @peerless $WANLAB",
		"echo @port_x @port.x":                      "echo @port_x 5201.x",
	} {
		if got := expandCommand(in, info, lab.Client, 5201, 2500*time.Millisecond); got != want {
			t.Errorf("expandCommand(%q) = %q, want %q", in, got, want)
		}
	}
	// In the server, @peer is the client.
	if got := expandCommand("@peer", info, lab.Server, 1, time.Second); got != info.Client.Addr4.String() {
		t.Errorf("@peer in the server is %s, want the client's %s", got, info.Client.Addr4)
	}
	if durationWord(10*time.Second) != "10" || !namesPort("x -p @port") || namesPort("x @portal") {
		t.Error("durationWord or namesPort")
	}
}

// The capture keeps a short output whole, and of a long one its first and
// last halves with the bytes between them counted, whatever the sizes of
// the writes.
func TestCapture(t *testing.T) {
	const limit = 16
	for _, sizes := range [][]int{{5}, {16}, {17}, {100}, {3, 4, 5, 6, 7, 8}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {8, 9}, {7, 50, 3}} {
		c := newCapture(limit)
		var all []byte
		n := byte('a')
		for _, sz := range sizes {
			p := make([]byte, sz)
			for i := range p {
				p[i] = n
				n++
				if n > 'z' {
					n = 'A'
				}
			}
			if k, err := c.Write(p); k != sz || err != nil {
				t.Fatalf("Write(%d bytes) = %d, %v", sz, k, err)
			}
			all = append(all, p...)
		}
		got, total := c.text()
		want := string(all)
		if len(all) > limit {
			want = string(all[:limit/2]) + fmt.Sprintf("\n[wanlab: %d bytes left out]\n", len(all)-limit) + string(all[len(all)-limit/2:])
		}
		if got != want || total != int64(len(all)) {
			t.Errorf("writes %v: got %q (%d bytes), want %q (%d)", sizes, got, total, want, len(all))
		}
	}
	// A megabyte in 4 KiB writes keeps 128 KiB and counts it all.
	c := newCapture(OutputLimit)
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 256)
	for range 256 {
		c.Write(chunk)
	}
	got, total := c.text()
	if total != 1<<20 || len(got) > OutputLimit+64 || !strings.Contains(got, "[wanlab: 917504 bytes left out]") {
		t.Errorf("1 MiB: %d bytes kept, total %d", len(got), total)
	}
	if lastLine("a\nb  \n\n") != "b" || len(lastLine(strings.Repeat("x", 400))) > 310 {
		t.Error("lastLine")
	}
}

// wanlab's probes are told from the user's flows: a UDP probe's recorded
// socket pair either way, an ICMP echo stream of a probe's identifier.
func TestOwnFlows(t *testing.T) {
	rec := &recNet{}
	c, s := netip.MustParseAddrPort("10.0.0.1:40000"), netip.MustParseAddrPort("10.0.0.2:50000")
	rec.conns = append(rec.conns, [2]netip.AddrPort{c, s})
	id := uint16(777)
	own := ownFlowsOf([]flowSpec{{label: "Ping (ms) UDP", sockets: rec}, {label: "Ping (ms) ICMP", icmpID: &id}, {label: "custom commands"}})
	icmp := func(p uint16) flowKey {
		return flowKey{"icmp", netip.AddrPortFrom(c.Addr(), p), netip.AddrPortFrom(s.Addr(), p)}
	}
	for k, want := range map[flowKey]bool{
		{"udp", c, s}: true, {"udp", s, c}: true, {"tcp", c, s}: false,
		{"udp", c, netip.MustParseAddrPort("10.0.0.2:50001")}: false,
		icmp(777): true, icmp(778): false,
	} {
		if own.mine(k) != want {
			t.Errorf("mine(%v) = %v, want %v", k, !want, want)
		}
	}
}

// The custom test's document: one flow per 5-tuple of the user's in each
// direction, numbered in order of first appearance, whose series is the
// payload the router delivered per step from T0; the sums per direction
// and in all; wanlab's probes left out; the commands as they ran.
func TestDocumentCustom(t *testing.T) {
	s := handSetup(t, "custom")
	s.Opts.Client, s.Opts.Server = "iperf3 -c @peer -p @port", "iperf3 -s -p @port"
	probe := netip.MustParseAddrPort("10.1.2.1:33333")
	data := flowKey{"tcp", cliAddr, srvAddr}
	ctrl := flowKey{"tcp", netip.MustParseAddrPort("10.1.2.1:39999"), srvAddr}
	acks := flowKey{"tcp", srvAddr, cliAddr}
	udpProbe := flowKey{"udp", probe, netip.MustParseAddrPort("10.1.2.2:7")}
	rec := &routerRecord{base: routerView{Up: dirView{Flows: map[flowKey]flowCount{}}, Down: dirView{Flows: map[flowKey]flowCount{}}}}
	// Readings at grid points 0 to 15; point 4 skipped. The control
	// connection appears at 5, the data at 6 with 25 000 bytes a step.
	for k := 0; k <= 15; k++ {
		if k == 4 {
			continue
		}
		v := routerView{Up: dirView{Flows: map[flowKey]flowCount{}}, Down: dirView{Flows: map[flowKey]flowCount{}}}
		v.Up.Flows[udpProbe] = flowCount{Payload: uint64(k) * 100}
		v.Up.Order = append(v.Up.Order, udpProbe)
		if k >= 5 {
			v.Up.Flows[ctrl] = flowCount{Payload: 37}
			v.Up.Order = append(v.Up.Order, ctrl)
		}
		if k >= 6 {
			v.Up.Flows[data] = flowCount{Payload: uint64(k-5) * 25_000, Dropped: uint64(k - 6), DelayN: 10, DelaySum: 10 * 30e6}
			v.Up.Order = append(v.Up.Order, data)
			v.Down.Flows[acks] = flowCount{Payload: 0, Packets: uint64(k)}
			v.Down.Order = append(v.Down.Order, acks)
		}
		rec.steps = append(rec.steps, routerStep{K: k, View: v})
	}
	udp := &recNet{}
	udp.conns = [][2]netip.AddrPort{{probe, netip.MustParseAddrPort("10.1.2.2:7")}}
	cmds := &commandsResult{FlowInfo: traffic.FlowInfo{Label: "custom commands", Kind: customKind}, Port: 5201}
	cmds.Commands = append(cmds.Commands, newUserCommand(lab.Client, s.Opts.Client, "iperf3 -c 10.1.2.2 -p 5201").record(t0))
	pr := &traffic.ProbeResult{FlowInfo: traffic.FlowInfo{Label: "Ping (ms) UDP", Kind: "udp_probe"}}
	res := &traffic.Result{T0: t0, Step: s.Step, Length: s.Length(), Flows: []traffic.FlowResult{cmds, pr}}
	specs := []flowSpec{{label: "custom commands"}, {label: "Ping (ms) UDP", dir: "both", protocol: "udp", sockets: udp}}
	doc, err := s.document(res, specs, rec, Provenance{Framing: "ip"}, "")
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, doc)
	var labels []string
	for _, f := range doc.Flows {
		labels = append(labels, fmt.Sprintf("%d %s %s %s", f.ID, f.Label, f.Direction, f.FiveTuple))
	}
	want := []string{"2 Ping (ms) UDP both ",
		"3 Custom upload::1 up tcp 10.1.2.1:39999 > 10.1.2.2:5001",
		"4 Custom upload::2 up tcp 10.1.2.1:40000 > 10.1.2.2:5001",
		"5 Custom download::1 down tcp 10.1.2.2:5001 > 10.1.2.1:40000"}
	if strings.Join(labels, "\n") != strings.Join(want, "\n") {
		t.Errorf("flows\n %s\nwant\n %s", strings.Join(labels, "\n "), strings.Join(want, "\n "))
	}
	zeros := func(n int) string { return strings.TrimSpace(strings.Repeat("0 ", n)) }
	values := func(ss string) string {
		var v []string
		for _, f := range strings.Fields(ss) {
			v = append(v, f[strings.IndexByte(f, ':')+1:])
		}
		return strings.Join(v, " ")
	}
	for name, want := range map[string]string{
		// Grid points 0 to 15; the ctrl connection's 37 bytes came by
		// point 5, shared with the skipped point 4.
		"Custom upload::1":   zeros(4) + " 0.00074 0.00074 " + zeros(10),
		"Custom upload::2":   zeros(6) + " 1 1 1 1 1 1 1 1 1 1",
		"Custom download::1": zeros(16),
		"Custom upload":      zeros(4) + " 0.00074 0.00074 1 1 1 1 1 1 1 1 1 1",
		"Custom download":    zeros(16),
		"Custom totals":      zeros(4) + " 0.00074 0.00074 1 1 1 1 1 1 1 1 1 1",
	} {
		if got := values(samplesOf(findSeries(t, doc.Series, name))); got != want {
			t.Errorf("%s\n %s\nwant\n %s", name, got, want)
		}
	}
	up2 := doc.Flows[2]
	if got := samplesOf(findSeries(t, up2.Series, "Custom upload::2::router_drops")); got != "1.2:0 1.4:1 1.6:1 1.8:1 2:1 2.2:1 2.4:1 2.6:1 2.8:1 3:1" {
		t.Errorf("router_drops %s", got)
	}
	if sum := findSeries(t, doc.Series, "Custom upload"); sum.Window != [2]float64{1, 2} || sum.Summary.N != 5 || sum.Summary.Mean != 1 {
		t.Errorf("Custom upload summary over %v: n %d, mean %v; want the load's 5 steps of 1 Mbit/s", sum.Window, sum.Summary.N, sum.Summary.Mean)
	}
	if len(doc.Commands) != 1 || doc.Commands[0].Role != "client" || doc.Run.Options["port"] != "5201" ||
		doc.Run.Options["client"] != s.Opts.Client || doc.Run.Options["server"] != s.Opts.Server {
		t.Errorf("commands %+v, options %v", doc.Commands, doc.Run.Options)
	}
}
