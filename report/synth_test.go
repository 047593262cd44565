package report

import (
	"encoding/json"
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

// fidelityCase is what a synthetic run's router data says.
type fidelityCase int

const (
	noRouter fidelityCase = iota
	faithfulRun
	lateUp          // the up direction released packets late
	ringDropsDown   // the down direction lost packets in the TUN ring
	directNoVerdict // a run on a veth pair: router data without a verdict
)

// synthRun builds a results document shaped like those `wanlab run`
// writes: 2 s of lead, 10 s of load and 2 s of tail every 0.2 s; load
// series sharing a 10 Mbit/s bottleneck; pings 13 ms after each grid point
// with a few lost; each TCP flow with its TCP_INFO at both ends and the
// router's per-flow view; the computed series and summaries; and router
// data in the layout of `wanlab run`'s report, per fc.
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

// synthRouter returns router data in the layout of `wanlab run`'s report:
// the overall verdict, and per direction its chain, counters, delay,
// lateness, ring drops and fidelity.Verdict, made by fidelity.Judge.
func synthRouter(fc fidelityCase, chain string) json.RawMessage {
	if fc == noRouter {
		return nil
	}
	if fc == directNoVerdict {
		return mustJSON(map[string]any{"mode": "direct", "testbed": "wl-x", "faithful": nil,
			"note": "the hosts were joined by a plain veth pair: no router, no emulation, no verdict"})
	}
	faithful := true
	var dirs []any
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
		dirs = append(dirs, map[string]any{
			"name": name, "chain_start": chain, "chain_end": chain,
			"configured_rate_bps": 10_000_000, "configured_delay_ns": 20_000_000,
			"load_rate_bps": 9_561_000.0,
			"sent":          10_000, "bytes_in": 15_000_000, "delivered": 9_880, "bytes_out": 14_820_000,
			"dropped": 120, "dropped_by_reason": map[string]any{"limit": 120},
			"marked": 0, "duplicated": 0, "reordered": 0,
			"delay":             map[string]any{"n": 9_880, "mean_ms": 48.2, "min_ms": 20.01, "p50_ms": 47.5, "p99_ms": 79.9, "max_ms": 81.3},
			"lateness":          map[string]any{"n": 9_000, "p50_ns": 12_000, "p99_ns": late.Nanoseconds(), "max_ns": late.Nanoseconds() * 2},
			"percentiles_since": "run",
			"ring_drops":        ring, "write_drops": 0,
			"verdict": v,
		})
	}
	return mustJSON(map[string]any{"mode": "testbed", "testbed": "wl-run-1", "faithful": faithful, "directions": dirs})
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// synthDir returns the direction of a load series by its Flent name.
func synthDir(name string) string {
	if strings.Contains(name, "download") {
		return "down"
	}
	return "up"
}
