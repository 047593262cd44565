package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"wanlab/fidelity"
	"wanlab/results"
)

// synthLoad lists the load flows of the tests the report tests use.
var synthLoad = map[string][]string{
	"ping":              nil,
	"tcp_upload":        {"TCP upload"},
	"tcp_bidirectional": {"TCP download", "TCP upload"},
	"tcp_nup":           {"TCP upload::1", "TCP upload::2", "TCP upload::3"},
	"rrul": {"TCP upload BE", "TCP upload BK", "TCP upload CS5", "TCP upload EF",
		"TCP download BE", "TCP download BK", "TCP download CS5", "TCP download EF"},
}

// synthPings lists each test's latency probes besides the ICMP ping.
var synthPings = map[string][]string{
	"ping": {"Ping (ms) UDP"},
	"rrul": {"Ping (ms) UDP EF", "Ping (ms) UDP BK", "Ping (ms) UDP BE"},
}

// fidelityCase is what a synthetic run's router report says.
type fidelityCase int

const (
	noRouter fidelityCase = iota
	faithfulRun
	lateUp          // the up direction released packets late
	ringDropsDown   // the down direction lost packets in the TUN ring
	directNoVerdict // a run on a veth pair: a router report without a verdict
)

// synthRun builds a results document shaped like those `wanlab run`
// writes: 2 s of lead, 10 s of load and 2 s of tail every 0.2 s; load
// series sharing a 10 Mbit/s bottleneck; pings 13 ms after each grid point
// with a few lost; each TCP flow with its TCP_INFO at both ends and the
// router's per-flow view; the computed series and summaries; and a router
// report per fc.
func synthRun(test, title string, seed uint64, fc fidelityCase) *results.Document {
	rng := rand.New(rand.NewPCG(seed, 5))
	lead, dur, tail, step := 2.0, 10.0, 2.0, 0.2
	rate, baseRTT, bloat := 10.0, 40.0, 60.0
	chain := "netem delay 20ms; tbf rate 10mbit burst 32k latency 300ms"
	d := &results.Document{Run: results.Run{
		WanlabVersion: "v0.0.0-test",
		Argv:          []string{"wanlab", "run", test, "--both", chain, "--title", title},
		Test:          test,
		Title:         title,
		Start:         time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC).Add(time.Duration(seed) * time.Minute),
		DurationS:     dur, StepS: step, LeadS: lead, TailS: tail,
		Seed: seed, Framing: "ethernet", KernelRelease: "6.1.0-test",
		Path:    results.Path{Up: chain, Down: chain},
		Sysctls: map[string]map[string]string{"client": {"net.ipv4.tcp_congestion_control": "cubic"}, "server": {"net.ipv4.tcp_congestion_control": "cubic"}},
		Options: map[string]string{"ping_interval": "0.2"},
	}}
	window := [2]float64{lead, lead + dur}
	n := int(math.Round((lead+dur+tail)/step)) + 1
	loaded := func(t float64) bool { return t > lead && t <= lead+dur }
	perDir := map[string]int{}
	for _, name := range synthLoad[test] {
		perDir[synthDir(name)]++
	}
	id := 0
	for fi, name := range synthLoad[test] {
		share := rate / float64(perDir[synthDir(name)]) * (0.8 + 0.4*rng.Float64())
		s := results.Series{Name: name, Unit: "Mbits/s", Window: window}
		key := func(k, unit string) results.Series {
			return results.Series{Name: name + "::" + k, Unit: unit, Window: window}
		}
		cwnd, rtt := key("tcp_cwnd", "packets"), key("tcp_rtt", "ms")
		rcwnd, rrtt := key("receiver_tcp_cwnd", "packets"), key("receiver_tcp_rtt", "ms")
		bytes, qdelay := key("router_delivered_bytes", "bytes"), key("router_queue_delay", "ms")
		for k := 0; k < n; k++ {
			t := float64(k) * step
			v := 0.0
			if loaded(t) {
				v = share * (1 - math.Exp(-(t-lead)/0.8)) * (0.85 + 0.3*rng.Float64())
				saw := math.Mod(t-lead+float64(fi)*0.7, 3) / 3
				cwnd.Samples = append(cwnd.Samples, results.Sample{T: t, V: math.Round(10 + 90*saw)})
				rtt.Samples = append(rtt.Samples, results.Sample{T: t, V: baseRTT + bloat*saw})
				rcwnd.Samples = append(rcwnd.Samples, results.Sample{T: t, V: 10})
				rrtt.Samples = append(rrtt.Samples, results.Sample{T: t, V: baseRTT + 2*rng.Float64()})
				qdelay.Samples = append(qdelay.Samples, results.Sample{T: t, V: bloat * saw})
			}
			s.Samples = append(s.Samples, results.Sample{T: t, V: v})
			bytes.Samples = append(bytes.Samples, results.Sample{T: t, V: math.Round(v * 1e6 / 8 * step)})
		}
		d.Series = append(d.Series, s)
		id++
		d.Flows = append(d.Flows, results.Flow{ID: id, Label: name, Direction: synthDir(name), Protocol: "tcp",
			CongestionControl: "cubic", Series: []results.Series{cwnd, rtt, rcwnd, rrtt, bytes, qdelay}})
	}
	for _, name := range append([]string{"Ping (ms) ICMP"}, synthPings[test]...) {
		s := results.Series{Name: name, Unit: "ms", Window: window}
		for k := 0; k < n; k++ {
			t := float64(k)*step + 0.013
			v := baseRTT + rng.Float64()
			if loaded(t) && len(synthLoad[test]) > 0 {
				v += bloat * (0.6 + 0.4*rng.Float64())
			}
			if rng.IntN(40) == 0 {
				v = math.NaN()
			}
			s.Samples = append(s.Samples, results.Sample{T: t, V: v})
		}
		d.Series = append(d.Series, s)
		id++
		proto := "udp"
		if strings.HasSuffix(name, "ICMP") {
			proto = "icmp"
		}
		d.Flows = append(d.Flows, results.Flow{ID: id, Label: name, Direction: "both", Protocol: proto})
	}
	if err := d.AddComputed(); err != nil {
		panic(fmt.Sprintf("synthRun(%s): %v", test, err))
	}
	d.Summarize()
	d.Router = synthRouter(fc, chain)
	return d
}

// synthRouter returns a router report as `wanlab run` makes it: the
// overall verdict, and per direction its chain, counters, delay,
// lateness, ring drops and fidelity.Verdict, made by fidelity.Judge.
func synthRouter(fc fidelityCase, chain string) *results.RouterReport {
	switch fc {
	case noRouter:
		return nil
	case directNoVerdict:
		return &results.RouterReport{Mode: results.RouterDirect, Testbed: "wl-x",
			Note: "the hosts were joined by a plain veth pair: no router, no emulation, no verdict"}
	}
	faithful := true
	rep := &results.RouterReport{Mode: results.RouterTestbed, Testbed: "wl-run-1", Faithful: &faithful}
	for _, name := range []string{"up", "down"} {
		late, ring := 40*time.Microsecond, uint64(0)
		if fc == lateUp && name == "up" {
			late = 3 * time.Millisecond
		}
		if fc == ringDropsDown && name == "down" {
			ring = 17
		}
		v := fidelity.Judge(fidelity.Direction{Name: name, Releases: 9000, LatenessP99: late, RingDrops: ring}, 20*time.Millisecond)
		faithful = faithful && v.Faithful
		rep.Directions = append(rep.Directions, results.DirectionReport{
			Name: name, ChainStart: chain, ChainEnd: chain,
			ConfiguredRateBps: 10_000_000, ConfiguredDelayNs: 20_000_000,
			LoadRateBps: 9_561_000,
			Sent:        10_000, BytesIn: 15_000_000, Delivered: 9_880, BytesOut: 14_820_000,
			Dropped: 120, DroppedByReason: map[string]uint64{"limit": 120},
			Delay:            results.DelayReport{N: 9_880, MeanNs: 48.2e6, MinNs: 20.01e6, P50Ns: 47.5e6, P99Ns: 79.9e6, MaxNs: 81.3e6},
			Lateness:         results.LatenessReport{N: 9_000, P50Ns: 12_000, P99Ns: late.Nanoseconds(), MaxNs: late.Nanoseconds() * 2},
			PercentilesSince: "run",
			RingDrops:        ring,
			Verdict:          v,
		})
	}
	return rep
}

// synthDir returns the direction of a load series by its Flent name.
func synthDir(name string) string {
	if strings.Contains(name, "download") {
		return "down"
	}
	return "up"
}
