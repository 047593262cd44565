package testrun

import (
	"strings"
	"testing"
	"time"

	"wanlab/catalog"
	"wanlab/traffic"
	"wanlab/traffic/quicflow"
	"wanlab/traffic/scalableflow"
	"wanlab/traffic/tfrcflow"
)

// A TFRC flow's throughput is the application data received per step; its
// own series are the data sent per step, the TFRC packets' rates each
// way, RFC 5348's variables at each grid point (X_calc only where the
// equation bounds the rate, the RTT once measured, p in percent), and the
// router's view of its data.
func TestDocumentTFRC(t *testing.T) {
	s := handSetup(t, "tfrc_upload")
	s.TxQLen = 0
	r := &tfrcflow.Result{
		FlowInfo: traffic.FlowInfo{Label: "TFRC upload", Kind: tfrcflow.Kind, Start: time.Second, Stop: 2 * time.Second},
		Dir:      traffic.Up, Sender: cliAddr, Receiver: srvAddr,
	}
	for k := 5; k <= 10; k++ {
		n := uint64(k - 5)
		smp := tfrcflow.Sample{K: k, T: at(time.Duration(k) * s.Step),
			SentPayload: n * 25_000, ReceivedPayload: n * 25_000, SentBytes: n * 25_000 * 1472 / 1448, ReceivedBytes: n * 25_000,
			X: 125_000, XRecv: 62_500, P: 0.005, Queued: 3, Lost: n, LossEvents: n / 2}
		if k >= 7 {
			smp.RTT, smp.XCalc = 40*time.Millisecond, 250_000
		}
		r.Samples = append(r.Samples, smp)
	}
	rec := &routerRecord{}
	key := flowKey{"udp", cliAddr, srvAddr}
	for k := 5; k <= 10; k++ {
		v := routerView{Up: dirView{Flows: map[flowKey]flowCount{key: {Payload: uint64(k-5) * 25_000}}}}
		rec.steps = append(rec.steps, routerStep{K: k, View: v})
	}
	res := &traffic.Result{T0: t0, Step: s.Step, Length: s.Length(), Flows: []traffic.FlowResult{r}}
	doc, err := s.document(res, []flowSpec{{label: "TFRC upload", dir: "up", protocol: "udp", cc: "tfrc", sockets: &recNet{}}}, rec, Provenance{Framing: "ip"}, "")
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, doc)
	if got := samplesOf(findSeries(t, doc.Series, "TFRC upload")); got != "1.2:1 1.4:1 1.6:1 1.8:1 2:1" {
		t.Errorf("TFRC upload %s", got)
	}
	f := doc.Flows[0]
	if f.CongestionControl != "tfrc" || f.Protocol != "udp" || doc.Run.Options["tx_qlen"] != "0" {
		t.Errorf("flow %+v, options %v", f, doc.Run.Options)
	}
	wantSamples(t, f.Series, map[string]string{
		"TFRC upload::sent_rate":              "1.2:1 1.4:1 1.6:1 1.8:1 2:1",
		"TFRC upload::tfrc_x":                 "1:1 1.2:1 1.4:1 1.6:1 1.8:1 2:1",
		"TFRC upload::tfrc_x_recv":            "1:0.5 1.2:0.5 1.4:0.5 1.6:0.5 1.8:0.5 2:0.5",
		"TFRC upload::tfrc_x_calc":            "1.4:2 1.6:2 1.8:2 2:2",
		"TFRC upload::tfrc_rtt":               "1.4:40 1.6:40 1.8:40 2:40",
		"TFRC upload::tfrc_p":                 "1:0.5 1.2:0.5 1.4:0.5 1.6:0.5 1.8:0.5 2:0.5",
		"TFRC upload::tfrc_queued":            "1:3 1.2:3 1.4:3 1.6:3 1.8:3 2:3",
		"TFRC upload::tfrc_lost":              "1:0 1.2:1 1.4:2 1.6:3 1.8:4 2:5",
		"TFRC upload::tfrc_loss_events":       "1:0 1.2:0 1.4:1 1.6:1 1.8:2 2:2",
		"TFRC upload::router_delivered_bytes": "1:0 1.2:25000 1.4:25000 1.6:25000 1.8:25000 2:25000",
	})
	if got := samplesOf(findSeries(t, f.Series, "TFRC upload::tfrc_send_rate")); !strings.HasPrefix(got, "1.2:1.016") {
		t.Errorf("tfrc_send_rate %s: want the packets' 1472 bytes for each 1448 of data", got)
	}
}

// A QUIC flow's throughput is the stream bytes read per step; its own
// series are the bytes written per step and the sender's recovery state
// while connected; the router's view is of its sender's socket pair.
func TestDocumentQUIC(t *testing.T) {
	s := handSetup(t, "quic_download")
	r := &quicflow.Result{
		FlowInfo: traffic.FlowInfo{Label: "QUIC download", Kind: quicflow.Kind, Start: time.Second, Stop: 2 * time.Second},
		Dir:      traffic.Down, CC: quicflow.CongestionControl, BulkOutcome: traffic.BulkOutcome{Connected: true},
		Sender: quicflow.EndInfo{Local: srvAddr, Remote: cliAddr},
	}
	for k := 5; k <= 10; k++ {
		smp := quicflow.Sample{K: k, T: at(time.Duration(k) * s.Step), Connected: k >= 6,
			SentBytes: int64(k-5) * 30_000, ReceivedBytes: int64(k-5) * 25_000}
		if smp.Connected {
			smp.Sender = quicflow.EndStats{SRTT: 42 * time.Millisecond, Cwnd: uint64(k) * 1000, PacketsLost: uint64(k)}
		}
		r.Samples = append(r.Samples, smp)
	}
	rec := &routerRecord{}
	key := flowKey{"udp", srvAddr, cliAddr}
	for k := 6; k <= 7; k++ {
		rec.steps = append(rec.steps, routerStep{K: k, View: routerView{Down: dirView{Flows: map[flowKey]flowCount{key: {Payload: uint64(k) * 1000}}}}})
	}
	res := &traffic.Result{T0: t0, Step: s.Step, Length: s.Length(), Flows: []traffic.FlowResult{r}}
	doc, err := s.document(res, []flowSpec{{label: "QUIC download", dir: "down", protocol: "udp", sockets: &recNet{}}}, rec, Provenance{Framing: "ip"}, "")
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, doc)
	f := doc.Flows[0]
	if f.CongestionControl != "newreno" {
		t.Errorf("cc %q", f.CongestionControl)
	}
	wantSamples(t, f.Series, map[string]string{
		"QUIC download::sent_rate":              "1.2:1.2 1.4:1.2 1.6:1.2 1.8:1.2 2:1.2",
		"QUIC download::quic_rtt":               "1.2:42 1.4:42 1.6:42 1.8:42 2:42",
		"QUIC download::quic_cwnd":              "1.2:6000 1.4:7000 1.6:8000 1.8:9000 2:10000",
		"QUIC download::quic_packets_lost":      "1.2:6 1.4:7 1.6:8 1.8:9 2:10",
		"QUIC download::router_delivered_bytes": "1.2:6000 1.4:1000",
	})
	if got := samplesOf(findSeries(t, doc.Series, "QUIC download")); got != "1.2:1 1.4:1 1.6:1 1.8:1 2:1" {
		t.Errorf("QUIC download %s", got)
	}
}

// The QUIC tests and docs/options.md say which congestion control quic-go
// has.
func TestQUICCongestionControlNamed(t *testing.T) {
	if !strings.EqualFold(catalog.QUICCongestionControl, quicflow.CongestionControl) {
		t.Errorf("catalog says %s, quicflow %s", catalog.QUICCongestionControl, quicflow.CongestionControl)
	}
	tt, _ := catalog.Lookup("quic_upload", catalog.Options{})
	if !strings.Contains(tt.Description, catalog.QUICCongestionControl) || !strings.Contains(Markdown(), "congestion control is "+catalog.QUICCongestionControl) {
		t.Errorf("the description %q or docs/options.md does not name the congestion control", tt.Description)
	}
}

// A flow of the built-in L4S sender: its throughput is the application
// data received per step; its own series are the data sent per step, the
// packets' bytes received per step, the CE fraction of each step's
// packets, and the sender's state; the flow is named for what it is.
func TestDocumentScalable(t *testing.T) {
	s := handSetup(t, "l4s_upload")
	label := catalog.L4SSeries + " upload"
	r := &scalableflow.Result{
		FlowInfo: traffic.FlowInfo{Label: label, Kind: scalableflow.Kind, Start: time.Second, Stop: 2 * time.Second},
		Dir:      traffic.Up, TOS: 1, Sender: cliAddr, Receiver: srvAddr,
	}
	for k := 5; k <= 10; k++ {
		n := uint64(k - 5)
		smp := scalableflow.Sample{K: k, T: at(time.Duration(k) * s.Step),
			SentPayload: n * 25_000, ReceivedPayload: n * 25_000, ReceivedBytes: n * 25_000 * 1472 / 1452,
			ReceivedPackets: n * 20, CEPackets: n * 5, ECT1Packets: n * 15,
			Cwnd: 17.5, Alpha: 0.25, F: 0.2, CEReductions: n}
		if k >= 7 {
			smp.SRTT, smp.MinRTT = 21*time.Millisecond, 20*time.Millisecond
		}
		r.Samples = append(r.Samples, smp)
	}
	res := &traffic.Result{T0: t0, Step: s.Step, Length: s.Length(), Flows: []traffic.FlowResult{r}}
	doc, err := s.document(res, []flowSpec{{label: label, dir: "up", protocol: "udp", tos: 1, cc: scalableflow.CongestionControl, sockets: &recNet{}}}, &routerRecord{}, Provenance{Framing: "ip"}, "")
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, doc)
	if got := samplesOf(findSeries(t, doc.Series, label)); got != "1.2:1 1.4:1 1.6:1 1.8:1 2:1" {
		t.Errorf("%s %s", label, got)
	}
	f := doc.Flows[0]
	if f.CongestionControl != "scalable" || f.Protocol != "udp" || f.TOS != 1 {
		t.Errorf("flow %+v", f)
	}
	wantSamples(t, f.Series, map[string]string{
		label + "::sent_rate":         "1.2:1 1.4:1 1.6:1 1.8:1 2:1",
		label + "::l4s_ce_fraction":   "1.2:25 1.4:25 1.6:25 1.8:25 2:25",
		label + "::l4s_cwnd":          "1:17.5 1.2:17.5 1.4:17.5 1.6:17.5 1.8:17.5 2:17.5",
		label + "::l4s_alpha":         "1:25 1.2:25 1.4:25 1.6:25 1.8:25 2:25",
		label + "::l4s_srtt":          "1.4:21 1.6:21 1.8:21 2:21",
		label + "::l4s_ce_reductions": "1:0 1.2:1 1.4:2 1.6:3 1.8:4 2:5",
	})
	if got := samplesOf(findSeries(t, f.Series, label+"::l4s_recv_rate")); !strings.HasPrefix(got, "1.2:1.01") {
		t.Errorf("l4s_recv_rate %s: want the packets' 1472 bytes for each 1452 of data", got)
	}
}
