package testrun

import (
	"encoding/json"
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"wanlab/catalog"
	"wanlab/clock"
	"wanlab/results"
	"wanlab/traffic"
)

// A setup for documents made by hand: tcp_upload with a 1 s lead, 1 s of
// load and a 1 s tail on a 200 ms grid.
func handSetup(t *testing.T, test string) *Setup {
	t.Helper()
	tc, err := catalog.Lookup(test, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &Setup{Opts: Defaults(), Test: tc, Mode: ModeTestbed, Duration: time.Second, Step: 200 * time.Millisecond,
		Lead: time.Second, Tail: time.Second, TOS: -1, Lab: "hand"}
}

const t0 = clock.Time(1_000_000_000_000)

func at(d time.Duration) clock.Time { return t0.Add(d) }

func findSeries(t *testing.T, ss []results.Series, name string) *results.Series {
	t.Helper()
	for i := range ss {
		if ss[i].Name == name {
			return &ss[i]
		}
	}
	t.Fatalf("no series %q", name)
	return nil
}

// wantSamples checks the samples, as samplesOf writes them, of each
// series of ss that want names.
func wantSamples(t *testing.T, ss []results.Series, want map[string]string) {
	t.Helper()
	for name, w := range want {
		if got := samplesOf(findSeries(t, ss, name)); got != w {
			t.Errorf("%s\n %s\nwant\n %s", name, got, w)
		}
	}
}

func samplesOf(s *results.Series) string {
	var b strings.Builder
	for _, p := range s.Samples {
		if p.Lost() {
			b.WriteString(" " + ftoa(p.T) + ":lost")
			continue
		}
		b.WriteString(" " + ftoa(p.T) + ":" + ftoa(p.V))
	}
	return strings.TrimSpace(b.String())
}

func ftoa(f float64) string {
	b, _ := json.Marshal(math.Round(f*1e6) / 1e6)
	return string(b)
}

var (
	cliAddr = netip.MustParseAddrPort("10.1.2.1:40000")
	srvAddr = netip.MustParseAddrPort("10.1.2.2:5001")
)

// A TCP flow's throughput is the receiver's bytes per step over the step;
// a grid point the sampler skipped shares the bytes of the step after it,
// so the total over the load is exactly the bytes read in it. The flow's
// own series carry both ends' TCP_INFO and the router's view of its
// 5-tuple, per step.
func TestDocumentTCP(t *testing.T) {
	s := handSetup(t, "tcp_upload")
	step := s.Step
	tcp := &traffic.TCPResult{
		FlowInfo:    traffic.FlowInfo{Label: "TCP upload", Kind: "tcp", Start: time.Second, Stop: 2 * time.Second},
		Dir:         traffic.Up,
		Sender:      traffic.SocketInfo{Local: cliAddr, Remote: srvAddr, CC: "cubic"},
		BulkOutcome: traffic.BulkOutcome{Connected: true},
	}
	// Grid points 5 (the start: 0 bytes) to 11; point 7 was skipped.
	bytes := map[int]int64{5: 0, 6: 25_000, 8: 75_000, 9: 100_000, 10: 125_000, 11: 130_000}
	for _, k := range []int{5, 6, 8, 9, 10, 11} {
		tcp.Samples = append(tcp.Samples, traffic.TCPSample{K: k, T: at(time.Duration(k) * step), Connected: true,
			ReceivedBytes: bytes[k], SentBytes: bytes[k] + 1000,
			Sender:   traffic.TCPInfo{SndCwnd: uint32(10 + k), SRTT: 50 * time.Millisecond, PacingRate: 1_250_000},
			Receiver: traffic.TCPInfo{RcvRTT: 51 * time.Millisecond}})
	}
	icmp := &traffic.ProbeResult{FlowInfo: traffic.FlowInfo{Label: "Ping (ms) ICMP", Kind: "icmp_probe"}}
	for i := range 15 {
		icmp.Probes = append(icmp.Probes, traffic.Probe{Seq: uint32(i), Sent: at(time.Duration(i)*step + time.Millisecond), RTT: 50 * time.Millisecond})
	}
	res := &traffic.Result{T0: t0, Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Step: step, Length: s.Length(),
		Flows: []traffic.FlowResult{tcp, icmp}}
	key := flowKey{"tcp", cliAddr, srvAddr}
	rec := &routerRecord{}
	for _, k := range []int{0, 5, 6, 7, 8} {
		v := routerView{Up: dirView{Flows: map[flowKey]flowCount{}}, Down: dirView{Flows: map[flowKey]flowCount{}}}
		if k >= 6 {
			v.Up.Flows[key] = flowCount{Payload: uint64(k-5) * 25_000, Bytes: uint64(k-5) * 26_000, Dropped: uint64(k - 6),
				DroppedByReason: map[string]uint64{"limit": uint64(k - 6)}, Marked: uint64(2 * (k - 5)),
				DelayN: uint64(k-5) * 10, DelaySum: float64(k-5) * 10 * 30e6}
		}
		rec.steps = append(rec.steps, routerStep{K: k, View: v})
	}
	specs := []flowSpec{{label: "TCP upload", dir: "up", protocol: "tcp", client: "c1", server: "s1", sockets: &recNet{}}, {label: "Ping (ms) ICMP", dir: "both", protocol: "icmp", sockets: &recNet{}}}
	doc, err := s.document(res, specs, rec, Provenance{Framing: "ip", Seed: 7, PathUp: "netem limit 1000 delay 25ms", Rootless: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Run.Rootless {
		t.Error("run.rootless is false for a rootless run")
	}
	checkSeries(t, doc)
	main := findSeries(t, doc.Series, "TCP upload")
	if got, want := samplesOf(main), "1.2:1 1.4:1 1.6:1 1.8:1 2:1 2.2:0.2"; got != want {
		t.Errorf("TCP upload samples\n %s\nwant\n %s", got, want)
	}
	if main.Window != [2]float64{1, 2} || main.Summary.N != 5 || math.Abs(main.Summary.Total-125_000*8/1e6) > 1e-9 {
		t.Errorf("window %v, n %d, total %v Mbits; want (1, 2], 5, 1 Mbits", main.Window, main.Summary.N, main.Summary.Total)
	}
	f := doc.Flows[0]
	if f.Label != "TCP upload" || f.Direction != "up" || f.Protocol != "tcp" || f.CongestionControl != "cubic" || f.Client != "c1" || f.Server != "s1" {
		t.Errorf("flow %+v", f)
	}
	wantSamples(t, f.Series, map[string]string{
		"TCP upload::tcp_cwnd":               "1:15 1.2:16 1.6:18 1.8:19 2:20 2.2:21",
		"TCP upload::tcp_rtt":                "1:50 1.2:50 1.6:50 1.8:50 2:50 2.2:50",
		"TCP upload::tcp_pacing_rate":        "1:10 1.2:10 1.6:10 1.8:10 2:10 2.2:10",
		"TCP upload::receiver_tcp_rcv_rtt":   "1:51 1.2:51 1.6:51 1.8:51 2:51 2.2:51",
		"TCP upload::router_delivered_bytes": "1.2:25000 1.4:25000 1.6:25000",
		"TCP upload::router_wire_bytes":      "1.2:26000 1.4:26000 1.6:26000",
		"TCP upload::router_drops":           "1.2:0 1.4:1 1.6:1",
		"TCP upload::router_drops_limit":     "1.2:0 1.4:1 1.6:1",
		"TCP upload::router_marks":           "1.2:2 1.4:2 1.6:2",
		"TCP upload::router_queue_delay":     "1.2:30 1.4:30 1.6:30",
	})
	if doc.Run.Test != "tcp_upload" || doc.Run.Seed != 7 || doc.Run.LeadS != 1 || doc.Run.Options["ip_version"] != "4" ||
		doc.Run.Options["profile"] != "home" || doc.Run.Partial {
		t.Errorf("run %+v", doc.Run)
	}
	ping := findSeries(t, doc.Series, "Ping (ms) ICMP")
	if ping.Summary.N != 5 || ping.Summary.Median != 50 {
		t.Errorf("ping: n %d, median %v; want the 5 probes sent during the load, 50 ms", ping.Summary.N, ping.Summary.Median)
	}
}

// A UDP probe stream gives the RTT, a gap for each lost probe, one-way
// delays each way, and the lost probes as events by direction; a probe
// still unanswered at the end is left out.
func TestDocumentProbes(t *testing.T) {
	s := handSetup(t, "ping")
	s.Lead, s.Tail = 0, 0
	p := &traffic.ProbeResult{FlowInfo: traffic.FlowInfo{Label: "Ping (ms) UDP", Kind: "udp_probe"}, OneWay: true}
	add := func(ms int, pr traffic.Probe) {
		pr.Seq = uint32(len(p.Probes))
		pr.Sent = at(time.Duration(ms) * time.Millisecond)
		p.Probes = append(p.Probes, pr)
	}
	add(100, traffic.Probe{RTT: 40 * time.Millisecond, OWDUp: 30 * time.Millisecond, OWDDown: 10 * time.Millisecond})
	add(300, traffic.Probe{Lost: true, LostDir: traffic.LostUp})
	add(500, traffic.Probe{Lost: true, LostDir: traffic.LostDown})
	add(700, traffic.Probe{RTT: 41 * time.Millisecond, OWDUp: 31 * time.Millisecond, OWDDown: 10 * time.Millisecond})
	add(900, traffic.Probe{Lost: true, LostDir: traffic.LostUnknown, LostAtEnd: true})
	res := &traffic.Result{T0: t0, Step: s.Step, Length: s.Length(), Flows: []traffic.FlowResult{p}}
	doc, err := s.document(res, []flowSpec{{label: "Ping (ms) UDP", dir: "both", protocol: "udp", sockets: &recNet{}}}, &routerRecord{}, Provenance{Framing: "ip"}, "cancelled")
	if err != nil {
		t.Fatal(err)
	}
	if doc.Run.Rootless {
		t.Error("run.rootless is true for a run as root")
	}
	checkSeries(t, doc)
	main := findSeries(t, doc.Series, "Ping (ms) UDP")
	if got, want := samplesOf(main), "0.1:40 0.3:lost 0.5:lost 0.7:41"; got != want {
		t.Errorf("samples %s, want %s", got, want)
	}
	if main.Lost != 2 || main.Summary.N != 2 || main.Window != [2]float64{0, 1} {
		t.Errorf("lost %d, n %d, window %v; want 2, 2, [0 1]", main.Lost, main.Summary.N, main.Window)
	}
	own := doc.Flows[0].Series
	wantSamples(t, own, map[string]string{
		"Ping (ms) UDP::owd_up":    "0.1:30 0.3:lost 0.5:lost 0.7:31",
		"Ping (ms) UDP::owd_down":  "0.1:10 0.3:lost 0.5:lost 0.7:10",
		"Ping (ms) UDP::lost_up":   "0.3:1",
		"Ping (ms) UDP::lost_down": "0.5:1",
	})
	if !doc.Run.Partial || doc.Run.PartialReason != "cancelled" {
		t.Errorf("partial %v %q", doc.Run.Partial, doc.Run.PartialReason)
	}
}

// A run cut short at 2.8 s of a load from 1 s to 6 s has the window
// [1, 2.8]: the summary prints it and its statistics cover it, for the
// load's series, the probes, the computed series and the router's load
// rate alike; a ping run cut short keeps its window from 0 to the stop.
func TestDocumentPartialWindow(t *testing.T) {
	s := handSetup(t, "tcp_nup")
	s.Duration = 5 * time.Second
	stopped := at(2800 * time.Millisecond)
	var flows []traffic.FlowResult
	var specs []flowSpec
	for i, label := range []string{"TCP upload::1", "TCP upload::2"} {
		tcp := &traffic.TCPResult{
			FlowInfo:    traffic.FlowInfo{Label: label, Kind: "tcp", Start: time.Second, Stop: 6 * time.Second},
			Dir:         traffic.Up,
			Sender:      traffic.SocketInfo{Local: netip.AddrPortFrom(cliAddr.Addr(), uint16(40000+i)), Remote: srvAddr},
			BulkOutcome: traffic.BulkOutcome{Connected: true},
		}
		// 25 kB a step, 1 Mbit/s, from k=5 (1 s) to k=13 (2.6 s), the
		// last grid point before the stop.
		for k := 5; k <= 13; k++ {
			n := int64(k-5) * 25_000
			tcp.Samples = append(tcp.Samples, traffic.TCPSample{K: k, T: at(time.Duration(k) * s.Step), Connected: true,
				ReceivedBytes: n, SentBytes: n})
		}
		flows = append(flows, tcp)
		specs = append(specs, flowSpec{label: label, dir: "up", protocol: "tcp", sockets: &recNet{}})
	}
	ping := &traffic.ProbeResult{FlowInfo: traffic.FlowInfo{Label: "Ping (ms) ICMP", Kind: "icmp_probe"}}
	for i := range 14 {
		// Probes every 200 ms from 0.1 s to 2.7 s: 40 ms each, but
		// the 1.1 s one took 100 ms.
		rtt := 40 * time.Millisecond
		if i == 5 {
			rtt = 100 * time.Millisecond
		}
		ping.Probes = append(ping.Probes, traffic.Probe{Seq: uint32(i), Sent: at(time.Duration(i)*s.Step + 100*time.Millisecond), RTT: rtt})
	}
	flows = append(flows, ping)
	specs = append(specs, flowSpec{label: "Ping (ms) ICMP", dir: "both", protocol: "icmp", sockets: &recNet{}})
	res := &traffic.Result{T0: t0, Step: s.Step, Length: s.Length(), Partial: true, Stopped: stopped, Flows: flows}
	rec := &routerRecord{}
	for k := 0; k <= 13; k++ {
		d := dirView{BytesOut: uint64(k) * 50_000}
		rec.steps = append(rec.steps, routerStep{K: k, View: routerView{Up: d, Down: d}})
	}
	doc, err := s.document(res, specs, rec, Provenance{Framing: "ip"}, "stopped 2.8s into the run of 7s: interrupt")
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, doc)
	want := [2]float64{1, 2.8}
	for _, name := range []string{"TCP upload::1", "TCP upload sum", "Ping (ms) ICMP"} {
		if w := findSeries(t, doc.Series, name).Window; w != want {
			t.Errorf("%s: window %v, want %v", name, w, want)
		}
	}
	if sm := findSeries(t, doc.Series, "TCP upload::1").Summary; sm.N != 8 || sm.Mean != 1 {
		t.Errorf("TCP upload::1: n %d, mean %v; want the 8 steps from 1.2 to 2.6 s at 1 Mbit/s", sm.N, sm.Mean)
	}
	if sm := findSeries(t, doc.Series, "Ping (ms) ICMP").Summary; sm.N != 9 || sm.Max != 100 {
		t.Errorf("ping: n %d, max %v; want the 9 probes from 1.1 to 2.7 s, the slow one among them", sm.N, sm.Max)
	}
	var text strings.Builder
	if err := results.WriteSummary(&text, doc, false); err != nil {
		t.Fatal(err)
	}
	if out := text.String(); !strings.Contains(out, "Window:      1 to 2.8 s") || strings.Contains(out, "to 6 s") {
		t.Errorf("summary:\n%s\nwant every window from 1 to 2.8 s", out)
	}
	// The router's load rate: 50 kB a step from 1 s to 2.6 s.
	if rep := doc.Router; rep.Directions[0].LoadRateBps != 2e6 {
		t.Errorf("load rate %v bit/s, want 2e6 (50 kB a step over the load the run had)", rep.Directions[0].LoadRateBps)
	}

	s = handSetup(t, "ping")
	s.Lead, s.Tail, s.Duration = 0, 0, 10*time.Second
	ping = &traffic.ProbeResult{FlowInfo: traffic.FlowInfo{Label: "Ping (ms) ICMP", Kind: "icmp_probe"}}
	res = &traffic.Result{T0: t0, Step: s.Step, Length: s.Length(), Partial: true, Stopped: at(1500 * time.Millisecond), Flows: []traffic.FlowResult{ping}}
	doc, err = s.document(res, []flowSpec{{label: "Ping (ms) ICMP", dir: "both", protocol: "icmp", sockets: &recNet{}}}, &routerRecord{}, Provenance{Framing: "ip"}, "interrupt")
	if err != nil {
		t.Fatal(err)
	}
	if w := findSeries(t, doc.Series, "Ping (ms) ICMP").Window; w != [2]float64{0, 1.5} {
		t.Errorf("ping cut short: window %v, want [0 1.5]", w)
	}
}

// A UDP flood's rate is its received payload per step; its own series
// carry the step's loss, jitter and one-way delay.
func TestDocumentFlood(t *testing.T) {
	s := handSetup(t, "udp_flood")
	f := &traffic.FloodResult{FlowInfo: traffic.FlowInfo{Label: "UDP upload", Kind: "udp_flood", Start: time.Second, Stop: 2 * time.Second}, Dir: traffic.Up}
	for k := 5; k <= 10; k++ {
		st := traffic.FloodStep{K: k, T: at(time.Duration(k) * s.Step)}
		if k > 5 {
			st.SentPackets, st.ReceivedPackets, st.LostPackets, st.ReceivedBytes = 20, 18, 2, 25_000
			st.Jitter, st.OWDMean = time.Millisecond, 12*time.Millisecond
		}
		f.Steps = append(f.Steps, st)
	}
	res := &traffic.Result{T0: t0, Step: s.Step, Length: s.Length(), Flows: []traffic.FlowResult{f}}
	doc, err := s.document(res, []flowSpec{{label: "UDP upload", dir: "up", protocol: "udp", sockets: &recNet{}}}, &routerRecord{}, Provenance{Framing: "ip"}, "")
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, doc)
	if got, want := samplesOf(findSeries(t, doc.Series, "UDP upload")), "1.2:1 1.4:1 1.6:1 1.8:1 2:1"; got != want {
		t.Errorf("UDP upload %s, want %s", got, want)
	}
	own := doc.Flows[0].Series
	if got := samplesOf(findSeries(t, own, "UDP upload::loss")); got != "1.2:10 1.4:10 1.6:10 1.8:10 2:10" {
		t.Errorf("loss %s", got)
	}
	if got := samplesOf(findSeries(t, own, "UDP upload::owd")); got != "1.2:12 1.4:12 1.6:12 1.8:12 2:12" {
		t.Errorf("owd %s", got)
	}
}

// seriesUnits are the units a run's series come in.
var seriesUnits = map[string]bool{"Mbits/s": true, "ms": true, "packets": true, "bytes": true, "%": true,
	"events": true, "probes": true, "Idx": true, "flag": true}

// checkSeries checks every series of d, its flows' included: a known
// unit, and no negative sample, for none of them can be (rates, counts,
// delays, states; a gap is NaN). Where units can be checked against each
// other, they are: a flow's sender cannot have written less than its
// receiver read, both in Mbits/s per step.
func checkSeries(r interface{ Errorf(string, ...any) }, d *results.Document) {
	check := func(s *results.Series) {
		if !seriesUnits[s.Unit] {
			r.Errorf("%s: unit %q", s.Name, s.Unit)
		}
		for _, p := range s.Samples {
			if p.V < 0 {
				r.Errorf("%s: %g %s at %g s", s.Name, p.V, s.Unit, p.T)
			}
		}
	}
	total := func(s *results.Series) (x float64) {
		for _, p := range s.Samples {
			if !math.IsNaN(p.V) {
				x += p.V
			}
		}
		return x
	}
	for i := range d.Series {
		check(&d.Series[i])
	}
	for _, f := range d.Flows {
		for i := range f.Series {
			check(&f.Series[i])
		}
		sent, main := d.FindSeries(f.Label+"::sent_rate"), d.FindSeries(f.Label)
		if sent == nil || main == nil {
			continue
		}
		if sent.Unit != main.Unit || total(sent) < total(main)-1e-6 {
			r.Errorf("%s: sent %g %s in all, received %g %s", f.Label, total(sent), sent.Unit, total(main), main.Unit)
		}
	}
}
