package testrun

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"wanlab/catalog"
	"wanlab/clock"
	"wanlab/lab"
	"wanlab/results"
	"wanlab/traffic"
	"wanlab/traffic/quicflow"
	"wanlab/traffic/scalableflow"
	"wanlab/traffic/tfrcflow"
)

// Provenance is what the document records about the run beyond its
// options: the command line, the version, the kernel, the hosts'
// sysctls and the path as it was.
type Provenance struct {
	Argv          []string
	Version       string
	KernelRelease string
	// KernelPreemption is the kernel's preemption mode (package
	// preempt), "" when it cannot be told.
	KernelPreemption string
	Sysctls          map[string]map[string]string
	// PathUp and PathDown are the chains at the start in tc syntax.
	PathUp, PathDown string
	Seed             uint64
	Framing          string
	// DataPlane is the testbed's data plane, "" without a router.
	DataPlane string
	// Rootless says the run was made without root, inside the user's
	// namespace (package rootless).
	Rootless bool
	// Hosts are the testbed's hosts when it has more than two, or access
	// links (runHosts).
	Hosts []results.RunHost
}

// runHosts describes the hosts all, with the congestion controls that
// sysctls (readSysctls) read in them, for a testbed of more than two
// hosts or with access links; none for one of two, whose results stay
// as they were.
func runHosts(all []lab.HostInfo, sysctls map[string]map[string]string) []results.RunHost {
	dumbbell := len(all) > 2
	for _, h := range all {
		dumbbell = dumbbell || h.AccessUp != "" || h.AccessDown != ""
	}
	if !dumbbell {
		return nil
	}
	out := make([]results.RunHost, len(all))
	for i, h := range all {
		out[i] = results.RunHost{Name: string(h.Name), Addr4: h.Addr4.String(), Addr6: h.Addr6.String(),
			AccessUp: h.AccessUp, AccessDown: h.AccessDown, CC: sysctls[string(h.Name)]["net.ipv4.tcp_congestion_control"]}
	}
	return out
}

// document turns a run's measurements into a results document: the
// test's series, each flow with its own series, the computed series, the
// summaries and the router's report.
func (s *Setup) document(res *traffic.Result, specs []flowSpec, rec *routerRecord, prov Provenance, partial string) (*results.Document, error) {
	d := &results.Document{Run: results.Run{
		WanlabVersion:    prov.Version,
		Argv:             prov.Argv,
		Test:             s.Test.Name,
		Title:            s.Opts.Title,
		Start:            res.Start,
		DurationS:        s.Duration.Seconds(),
		StepS:            s.Step.Seconds(),
		LeadS:            s.Lead.Seconds(),
		TailS:            s.Tail.Seconds(),
		DelayS:           s.scheduleDelay().Seconds(),
		Seed:             prov.Seed,
		Framing:          prov.Framing,
		KernelRelease:    prov.KernelRelease,
		KernelPreemption: prov.KernelPreemption,
		Rootless:         prov.Rootless,
		Path:             results.Path{Up: prov.PathUp, Down: prov.PathDown},
		Sysctls:          prov.Sysctls,
		Options:          s.recordedOptions(prov.DataPlane),
		Hosts:            prov.Hosts,
		Partial:          partial != "",
		PartialReason:    partial,
	}}
	b := &docBuilder{s: s, t0: res.T0, end: math.Inf(1)}
	if res.Partial {
		b.end = b.at(res.Stopped)
	}
	loadWindow := b.clip([2]float64{s.Lead.Seconds(), (s.Lead + s.Duration).Seconds()})
	b.window = loadWindow
	for i, fr := range res.Flows {
		spec := specs[i]
		if r, ok := fr.(*commandsResult); ok {
			d.Commands = r.Commands
			d.Run.Options["port"] = strconv.Itoa(r.Port)
			continue
		}
		info := fr.Info()
		flow := results.Flow{ID: i + 1, Label: spec.label, Direction: spec.dir, Protocol: spec.protocol, TOS: spec.tos,
			Client: spec.client, Server: spec.server, Error: info.Error, Span: &[2]float64{info.Start.Seconds(), info.Stop.Seconds()}}
		// A load flow's series are summarised over when it ran: the load,
		// or its own span in the test's schedule.
		b.window = loadWindow
		if spec.dir != "both" {
			b.window = b.clip(*flow.Span)
		}
		var main results.Series
		switch r := fr.(type) {
		case *traffic.TCPResult:
			main, flow.Series = b.tcp(r)
			flow.CongestionControl = r.Sender.CC
			if flow.CongestionControl == "" {
				flow.CongestionControl = spec.cc
			}
			if r.Connected {
				flow.Series = append(flow.Series, b.router(spec.label, rec, r.Dir.String(), "tcp", r.Sender.Local, r.Sender.Remote)...)
			}
		case *traffic.FloodResult:
			main, flow.Series = b.flood(r)
			for _, c := range spec.sockets.connected() {
				flow.Series = append(flow.Series, b.router(spec.label, rec, r.Dir.String(), "udp", c[0], c[1])...)
			}
		case *tfrcflow.Result:
			main, flow.Series = b.tfrc(r)
			flow.CongestionControl = spec.cc
			flow.Series = append(flow.Series, b.router(spec.label, rec, r.Dir.String(), "udp", r.Sender, r.Receiver)...)
		case *scalableflow.Result:
			main, flow.Series = b.scalable(r)
			flow.CongestionControl = spec.cc
			flow.Series = append(flow.Series, b.router(spec.label, rec, r.Dir.String(), "udp", r.Sender, r.Receiver)...)
		case *quicflow.Result:
			main, flow.Series = b.quic(r)
			flow.CongestionControl = r.CC
			if r.Connected {
				flow.Series = append(flow.Series, b.router(spec.label, rec, r.Dir.String(), "udp", r.Sender.Local, r.Sender.Remote)...)
			}
		case *traffic.ProbeResult:
			main, flow.Series = b.probe(r)
		default:
			return nil, fmt.Errorf("testrun: flow %q: no document mapping for %T", spec.label, fr)
		}
		d.Series = append(d.Series, main)
		d.Flows = append(d.Flows, flow)
	}
	b.window = loadWindow
	if s.Test.Custom {
		flows, series := b.customSeries(rec, ownFlowsOf(specs), len(res.Flows)+1)
		d.Flows = append(d.Flows, flows...)
		d.Series = append(d.Series, series...)
	}
	if err := d.AddComputed(); err != nil {
		return nil, err
	}
	d.Summarize()
	d.Router = rec.report(s)
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("testrun: the document came out invalid (a wanlab bug): %w", err)
	}
	return d, nil
}

// recordedOptions are run.options: the options that shape the traffic and
// the path, as given, by their experiment keys, and the data plane the
// path was on (dataPlane, "" without a router), given or not, since the
// default may change.
func (s *Setup) recordedOptions(dataPlane string) map[string]string {
	o := s.Opts
	m := map[string]string{"ip_version": "4"}
	if o.IPv6 {
		m["ip_version"] = "6"
	}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	switch s.Test.Name {
	case "tcp_nup", "tcp_ndown":
		m["streams"] = strconv.Itoa(len(s.Test.Flows))
	case "rrul_var":
		m["streams"] = strconv.Itoa(len(s.Test.Flows) / 2)
	case "rrul_be_nflows":
		n := map[catalog.Direction]int{}
		for _, f := range s.Test.Flows {
			n[f.Dir]++
		}
		m["upload_streams"], m["download_streams"] = strconv.Itoa(n[catalog.Up]), strconv.Itoa(n[catalog.Down])
	}
	if len(s.Test.Flows) > 0 && s.Test.Flows[0].Transport == catalog.TFRC {
		m["tx_qlen"] = strconv.Itoa(s.TxQLen)
	}
	if s.Test.Custom {
		set("server", o.Server)
		set("client", o.Client)
		if o.ServerWait != nil {
			m["server_wait"] = o.ServerWait.String()
		}
	}
	if s.Test.Name == "udp_flood" {
		m["udp_rate"] = strconv.FormatInt(s.UDPRate, 10)
		if o.UDPSize != 0 {
			m["udp_size"] = strconv.Itoa(o.UDPSize)
		}
	}
	recordStreams(m, &o)
	set("cc", o.CC)
	set("granularity", o.Granularity)
	set("dataplane", dataPlane)
	set("tos", o.TOS)
	if o.ECN {
		m["ecn"] = "true"
	}
	if o.SendBuffer != 0 {
		m["sndbuf"] = strconv.Itoa(o.SendBuffer)
	}
	if o.ReceiveBuffer != 0 {
		m["rcvbuf"] = strconv.Itoa(o.ReceiveBuffer)
	}
	set("up_script", o.UpScript)
	set("down_script", o.DownScript)
	set("script", o.Script)
	set("up_dev", o.UpDev)
	set("down_dev", o.DownDev)
	set("set", strings.Join(o.ScriptVars, " "))
	set("trace_up", o.TraceUp)
	set("trace_down", o.TraceDown)
	if s.Mode == ModeTestbed && o.Up == "" && o.Down == "" && o.Both == "" && o.UpScript == "" && o.DownScript == "" && o.Script == "" {
		p := o.Profile
		if p == "" {
			p = DefaultProfile
		}
		m["profile"] = p
	}
	set("aqm", o.AQM)
	// The hosts, as the testbed had them: a count beyond one (the test's
	// need, or the option's), the access links and congestion controls
	// as given (run.hosts has each host's).
	if s.Hosts.Clients > 1 || s.Hosts.Servers > 1 {
		m["clients"], m["servers"] = strconv.Itoa(max(s.Hosts.Clients, 1)), strconv.Itoa(max(s.Hosts.Servers, 1))
	}
	set("access_up", strings.Join(o.AccessUp, ", "))
	set("access_down", strings.Join(o.AccessDown, ", "))
	set("host_cc", strings.Join(o.HostCC, ","))
	if o.Direct {
		m["direct"] = "true"
	}
	set("lab", o.Lab)
	set("pcap", o.Pcap)
	if len(o.At) > 0 {
		parts := make([]string, len(o.At))
		for i, c := range o.At {
			parts[i] = c.String()
		}
		m["at"] = strings.Join(parts, " ")
	}
	return m
}

// scheduleDelay is Flent's DELAY of a test with a schedule of its own, 0
// for another (whose DELAY is its lead).
func (s *Setup) scheduleDelay() time.Duration {
	if s.Test.Scheduled() {
		return s.Delay
	}
	return 0
}

// docBuilder makes series on the run's grid.
type docBuilder struct {
	s  *Setup
	t0 clock.Time
	// end is when the run stopped, in seconds from T0, if it was cut
	// short (+Inf if not); window is the load's, cut at end.
	end    float64
	window [2]float64
}

// clip cuts a window at the end of a run cut short: what is summarised,
// and printed as the window, is what the run had, not what it was to
// have (a window past the end would print a span no sample covers).
func (b *docBuilder) clip(w [2]float64) [2]float64 {
	w[1] = min(w[1], b.end)
	w[0] = min(w[0], w[1])
	return w
}

func (b *docBuilder) series(name, unit string) results.Series {
	return results.Series{Name: name, Unit: unit, Window: b.window}
}

// gridTime is the time of grid point k in seconds from T0.
func (b *docBuilder) gridTime(k int) float64 { return results.GridTime(k, b.s.Step.Seconds()) }

// at returns a time on the run's clock in seconds from T0.
func (b *docBuilder) at(t clock.Time) float64 { return t.Sub(b.t0).Seconds() }

// mbps is a byte count over n steps in Mbit/s.
func (b *docBuilder) mbps(bytes int64, n int) float64 {
	return float64(bytes) * 8 / (float64(n) * b.s.Step.Seconds()) / 1e6
}

// rateSteps appends to ser the rate samples of a running byte count read
// at grid points: each step between two readings gets the mean rate over
// them (a grid point the sampler skipped shares its neighbour's bytes), so
// that the series' total is the bytes counted.
func (b *docBuilder) rateSteps(ser *results.Series, k0 int, ks []int, counts []int64) {
	prevK, prev := k0, int64(0)
	for i, k := range ks {
		if k <= prevK {
			continue
		}
		n := k - prevK
		v := b.mbps(counts[i]-prev, n)
		for j := prevK + 1; j <= k; j++ {
			ser.Samples = append(ser.Samples, results.Sample{T: b.gridTime(j), V: v})
		}
		prevK, prev = k, counts[i]
	}
}

// startK is the first grid point at or after a flow's start: where its
// byte counts are 0.
func (b *docBuilder) startK(start time.Duration) int {
	return int((start + b.s.Step - 1) / b.s.Step)
}

// tcpField is one TCP_INFO field as a per-flow series.
type tcpField struct {
	key, unit string
	get       func(*traffic.TCPInfo) float64
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// senderFields are the sender's TCP_INFO series: Flent's names and units
// first (tcp_cwnd, tcp_rtt, tcp_rtt_var, tcp_pacing_rate,
// tcp_delivery_rate), then tcp_ and the kernel's field name.
var senderFields = []tcpField{
	{"tcp_cwnd", "packets", func(i *traffic.TCPInfo) float64 { return float64(i.SndCwnd) }},
	{"tcp_rtt", "ms", func(i *traffic.TCPInfo) float64 { return ms(i.SRTT) }},
	{"tcp_rtt_var", "ms", func(i *traffic.TCPInfo) float64 { return ms(i.RTTVar) }},
	{"tcp_pacing_rate", "Mbits/s", func(i *traffic.TCPInfo) float64 { return float64(i.PacingRate) * 8 / 1e6 }},
	{"tcp_delivery_rate", "Mbits/s", func(i *traffic.TCPInfo) float64 { return float64(i.DeliveryRate) * 8 / 1e6 }},
	{"tcp_total_retrans", "packets", func(i *traffic.TCPInfo) float64 { return float64(i.TotalRetrans) }},
	{"tcp_lost", "packets", func(i *traffic.TCPInfo) float64 { return float64(i.Lost) }},
	{"tcp_reordering", "packets", func(i *traffic.TCPInfo) float64 { return float64(i.Reordering) }},
	{"tcp_reord_seen", "events", func(i *traffic.TCPInfo) float64 { return float64(i.ReordSeen) }},
	{"tcp_bytes_acked", "bytes", func(i *traffic.TCPInfo) float64 { return float64(i.BytesAcked) }},
	{"tcp_bytes_retrans", "bytes", func(i *traffic.TCPInfo) float64 { return float64(i.BytesRetrans) }},
	{"tcp_delivered_ce", "packets", func(i *traffic.TCPInfo) float64 { return float64(i.DeliveredCE) }},
	{"tcp_ecn", "flag", func(i *traffic.TCPInfo) float64 { return optionBit(i.ECN) }},
	{"tcp_notsent_bytes", "bytes", func(i *traffic.TCPInfo) float64 { return float64(i.NotsentBytes) }},
}

// receiverFields are the receiver's, each key prefixed "receiver_".
var receiverFields = []tcpField{
	{"tcp_rcv_rtt", "ms", func(i *traffic.TCPInfo) float64 { return ms(i.RcvRTT) }},
	{"tcp_rcv_space", "bytes", func(i *traffic.TCPInfo) float64 { return float64(i.RcvSpace) }},
	{"tcp_rcv_wnd", "bytes", func(i *traffic.TCPInfo) float64 { return float64(i.RcvWnd) }},
	{"tcp_bytes_received", "bytes", func(i *traffic.TCPInfo) float64 { return float64(i.BytesReceived) }},
	{"tcp_rcv_ooopack", "packets", func(i *traffic.TCPInfo) float64 { return float64(i.RcvOOOPack) }},
	{"tcp_ecn_seen", "flag", func(i *traffic.TCPInfo) float64 { return optionBit(i.ECNSeen) }},
}

// optionBit is a TCP_INFO option bit as a series' value: 1 when set, 0 when
// not.
func optionBit(on bool) float64 {
	if on {
		return 1
	}
	return 0
}

// tcp makes a TCP flow's throughput series (the receiver's bytes per step)
// and its own series: what the sender wrote per step and both ends'
// TCP_INFO at each grid point while connected.
func (b *docBuilder) tcp(r *traffic.TCPResult) (results.Series, []results.Series) {
	main := b.series(r.Label, "Mbits/s")
	sent := b.series(r.Label+"::sent_rate", "Mbits/s")
	ks := make([]int, len(r.Samples))
	rcvd, wrote := make([]int64, len(r.Samples)), make([]int64, len(r.Samples))
	for i, smp := range r.Samples {
		ks[i], rcvd[i], wrote[i] = smp.K, smp.ReceivedBytes, smp.SentBytes
	}
	k0 := b.startK(r.Start)
	b.rateSteps(&main, k0, ks, rcvd)
	b.rateSteps(&sent, k0, ks, wrote)
	own := []results.Series{sent}
	for _, side := range []struct {
		prefix string
		fields []tcpField
		get    func(*traffic.TCPSample) *traffic.TCPInfo
	}{
		{"", senderFields, func(s *traffic.TCPSample) *traffic.TCPInfo { return &s.Sender }},
		{"receiver_", receiverFields, func(s *traffic.TCPSample) *traffic.TCPInfo { return &s.Receiver }},
	} {
		for _, f := range side.fields {
			ser := b.series(r.Label+"::"+side.prefix+f.key, f.unit)
			for i := range r.Samples {
				smp := &r.Samples[i]
				if !smp.Connected {
					continue
				}
				ser.Samples = append(ser.Samples, results.Sample{T: b.gridTime(smp.K), V: f.get(side.get(smp))})
			}
			own = append(own, ser)
		}
	}
	return main, own
}

// flood makes a UDP flood's received-rate series and its own series per
// step: packets sent, received and lost (a loss is charged to the step the
// packet was sent in), the loss in percent of the packets sent, RFC 3550
// jitter, RFC 4737 reordering, CE marks and the mean one-way delay.
func (b *docBuilder) flood(r *traffic.FloodResult) (results.Series, []results.Series) {
	main := b.series(r.Label, "Mbits/s")
	ks := make([]int, len(r.Steps))
	counts := make([]int64, len(r.Steps))
	var total int64
	for i, st := range r.Steps {
		total += int64(st.ReceivedBytes)
		ks[i], counts[i] = st.K, total
	}
	b.rateSteps(&main, b.startK(r.Start), ks, counts)
	names := []struct{ key, unit string }{
		{"sent_packets", "packets"}, {"received_packets", "packets"}, {"lost_packets", "packets"},
		{"loss", "%"}, {"jitter", "ms"}, {"reordered", "packets"}, {"duplicates", "packets"},
		{"ce_marked", "packets"}, {"owd", "ms"},
	}
	own := make([]results.Series, len(names))
	for i, n := range names {
		own[i] = b.series(r.Label+"::"+n.key, n.unit)
	}
	for _, st := range r.Steps {
		t := b.gridTime(st.K)
		loss := math.NaN()
		if st.SentPackets > 0 {
			loss = 100 * float64(st.LostPackets) / float64(st.SentPackets)
		}
		owd := math.NaN()
		if st.ReceivedPackets > 0 {
			owd = ms(st.OWDMean)
		}
		vals := []float64{float64(st.SentPackets), float64(st.ReceivedPackets), float64(st.LostPackets),
			loss, ms(st.Jitter), float64(st.Reordered), float64(st.Duplicates), float64(st.CEMarked), owd}
		for i, v := range vals {
			if math.IsNaN(v) && (names[i].key == "loss" || names[i].key == "owd") {
				// Nothing sent or received in the step: no figure, and
				// not a lost probe either.
				continue
			}
			own[i].Samples = append(own[i].Samples, results.Sample{T: t, V: v})
		}
	}
	return main, own
}

// probe makes a probe stream's round-trip series, sampled when each probe
// was sent, a lost probe as a gap; for UDP probes also the one-way delays
// each way and, as events of value 1 at their send time, the probes lost
// on the way up and on the way down. Probes still unanswered when the run
// ended are left out: they may have been on their way.
func (b *docBuilder) probe(r *traffic.ProbeResult) (results.Series, []results.Series) {
	main := b.series(r.Label, "ms")
	var own []results.Series
	up, down := b.series(r.Label+"::owd_up", "ms"), b.series(r.Label+"::owd_down", "ms")
	lostUp, lostDown := b.series(r.Label+"::lost_up", "probes"), b.series(r.Label+"::lost_down", "probes")
	for _, p := range r.Probes {
		if p.LostAtEnd {
			continue
		}
		t := b.at(p.Sent)
		if t < 0 {
			continue
		}
		if p.Lost {
			main.Samples = append(main.Samples, results.Sample{T: t, V: math.NaN()})
			if r.OneWay {
				up.Samples = append(up.Samples, results.Sample{T: t, V: math.NaN()})
				down.Samples = append(down.Samples, results.Sample{T: t, V: math.NaN()})
				switch p.LostDir {
				case traffic.LostUp:
					lostUp.Samples = append(lostUp.Samples, results.Sample{T: t, V: 1})
				case traffic.LostDown:
					lostDown.Samples = append(lostDown.Samples, results.Sample{T: t, V: 1})
				}
			}
			continue
		}
		main.Samples = append(main.Samples, results.Sample{T: t, V: ms(p.RTT)})
		if r.OneWay {
			up.Samples = append(up.Samples, results.Sample{T: t, V: ms(p.OWDUp)})
			down.Samples = append(down.Samples, results.Sample{T: t, V: ms(p.OWDDown)})
		}
	}
	if r.OneWay {
		own = append(own, up, down, lostUp, lostDown)
	}
	if s := b.s; s.Test.NoLoad {
		// ping has no load: its window is the whole run.
		main.Window = b.clip([2]float64{0, s.Duration.Seconds()})
		for i := range own {
			own[i].Window = main.Window
		}
	}
	return main, own
}

// router makes a flow's router series from the readings of its 5-tuple
// src → dst in direction dir, per step: the transport payload and the
// bytes the router delivered, the packets it dropped (in all, and by each
// reason the chain dropped any for), marked and reordered, and the mean
// delay through the router of what it delivered (no sample for a step in
// which it delivered nothing).
func (b *docBuilder) router(label string, rec *routerRecord, dir, proto string, src, dst netip.AddrPort) []results.Series {
	if rec == nil || len(rec.steps) == 0 {
		return nil
	}
	key := flowKey{proto, src, dst}
	pick := func(v routerView) (flowCount, bool) {
		d := v.Up
		if dir == "down" {
			d = v.Down
		}
		c, ok := d.Flows[key]
		return c, ok
	}
	// The reasons this flow was dropped for, by the end of the run.
	var reasons []string
	for _, st := range rec.steps {
		c, _ := pick(st.View)
		for r := range c.DroppedByReason {
			if !slices.Contains(reasons, r) {
				reasons = append(reasons, r)
			}
		}
	}
	slices.Sort(reasons)
	named := func(key, unit string) results.Series { return b.series(label+"::"+key, unit) }
	delivered, wire := named("router_delivered_bytes", "bytes"), named("router_wire_bytes", "bytes")
	drops, marks, reordered := named("router_drops", "packets"), named("router_marks", "packets"), named("router_reordered", "packets")
	delay := named("router_queue_delay", "ms")
	byReason := make([]results.Series, len(reasons))
	for i, r := range reasons {
		byReason[i] = named("router_drops_"+r, "packets")
	}
	prev, _ := pick(rec.base)
	seen := false
	for _, st := range rec.steps {
		c, ok := pick(st.View)
		if !ok {
			continue
		}
		seen = true
		t := b.gridTime(st.K)
		add := func(s *results.Series, v float64) { s.Samples = append(s.Samples, results.Sample{T: t, V: v}) }
		add(&delivered, float64(sub(c.Payload, prev.Payload)))
		add(&wire, float64(sub(c.Bytes, prev.Bytes)))
		add(&drops, float64(sub(c.Dropped, prev.Dropped)))
		add(&marks, float64(sub(c.Marked, prev.Marked)))
		add(&reordered, float64(sub(c.Reordered, prev.Reordered)))
		for i, r := range reasons {
			add(&byReason[i], float64(sub(c.DroppedByReason[r], prev.DroppedByReason[r])))
		}
		if n := sub(c.DelayN, prev.DelayN); n > 0 {
			add(&delay, (c.DelaySum-prev.DelaySum)/float64(n)/1e6)
		}
		prev = c
	}
	if !seen {
		return nil
	}
	return append([]results.Series{delivered, wire, drops, marks, reordered, delay}, byReason...)
}
