// Package resultstest builds synthetic results documents shaped like the
// ones `wanlab run` writes, and results directories shaped like the ones
// `wanlab experiment run` writes, for the tests of the views that read
// them (plot, report). It is for tests only.
package resultstest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"wanlab/results"
)

// LoadFlows lists the load flows of the tests Run builds, by the name of
// each flow's series.
var LoadFlows = map[string][]string{
	"ping":              nil,
	"tcp_upload":        {"TCP upload"},
	"tcp_download":      {"TCP download"},
	"tcp_bidirectional": {"TCP download", "TCP upload"},
	"tcp_nup":           {"TCP upload::1", "TCP upload::2", "TCP upload::3", "TCP upload::4"},
	"rrul": {"TCP upload BE", "TCP upload BK", "TCP upload CS5", "TCP upload EF",
		"TCP download BE", "TCP download BK", "TCP download CS5", "TCP download EF"},
	"udp_flood":     {"UDP upload"},
	"tfrc_upload":   {"TFRC upload"},
	"tfrc_download": {"TFRC download"},
	"quic_upload":   {"QUIC upload"},
	"quic_download": {"QUIC download"},
	"custom":        {"Custom upload::1", "Custom upload::2", "Custom download::1"},
}

// Pings lists each test's latency probes besides the ICMP ping every test
// has.
var Pings = map[string][]string{
	"ping":   {"Ping (ms) UDP"},
	"rrul":   {"Ping (ms) UDP EF", "Ping (ms) UDP BK", "Ping (ms) UDP BE"},
	"custom": {"Ping (ms) UDP"},
}

// Path is the path a synthetic run crosses: a bottleneck of RateMbit
// Mbit/s each way, a base round trip of BaseRTTMs, and the queueing delay
// the load builds, up to BloatMs.
type Path struct {
	RateMbit, BaseRTTMs, BloatMs float64
}

// DefaultPath is a home link: 10 Mbit/s, 40 ms, bloated by 60 ms.
var DefaultPath = Path{RateMbit: 10, BaseRTTMs: 40, BloatMs: 60}

// Chain is the path's chain each way, in tc syntax.
func (p Path) Chain() string {
	return fmt.Sprintf("netem delay %gms; tbf rate %gmbit burst 32k latency 300ms", p.BaseRTTMs/2, p.RateMbit)
}

// Dir returns the direction of a load flow by its series' name.
func Dir(name string) string {
	if strings.Contains(name, "download") {
		return "down"
	}
	return "up"
}

// Lengths are a run's lead, load and tail in seconds, and its step.
type Lengths struct{ Lead, Duration, Tail, Step float64 }

var (
	// Short is what Run builds: 2 s of lead, 10 s of load and 2 s of
	// tail, sampled every 0.2 s.
	Short = Lengths{Lead: 2, Duration: 10, Tail: 2, Step: 0.2}
	// MainJob is a run of the length an experiment's runs have: Flent's
	// 5 s of lead and of tail around 30 s of load, every 0.2 s.
	MainJob = Lengths{Lead: 5, Duration: 30, Tail: 5, Step: 0.2}
)

// Run builds the document of a run of test (one of LoadFlows' keys): 2 s
// of lead, 10 s of load and 2 s of tail (no lead or tail for ping)
// sampled every 0.2 s, as RunWith builds it with Short.
func Run(test, title string, seed uint64, path Path) *results.Document {
	return RunWith(test, title, seed, path, Short)
}

// RunWith builds the document of a run of test (one of LoadFlows' keys)
// of the lengths l (no lead or tail for ping): load series that are 0
// outside the load and share the bottleneck inside it after a slow start;
// latency probes 13 ms after each grid point that see the base RTT plus
// the queue under load, about one in 40 lost, the UDP ones with their
// one-way delays; each load flow with the router's per-flow view (bytes
// delivered per step, queueing delay), a TCP one also with its TCP_INFO
// at both ends (cwnd in a sawtooth, RTT following the queue); the custom
// test's sums; and the computed series and summaries added as `wanlab
// run` adds them. The document has no router report. seed draws the
// noise.
func RunWith(test, title string, seed uint64, path Path, l Lengths) *results.Document {
	rng := rand.New(rand.NewPCG(seed, 11))
	lead, dur, tail, step := l.Lead, l.Duration, l.Tail, l.Step
	if test == "ping" {
		lead, tail = 0, 0
	}
	chain := path.Chain()
	argv := []string{"wanlab", "run", test, "--both", chain}
	if title != "" {
		argv = append(argv, "--title", title)
	}
	d := &results.Document{Run: results.Run{
		WanlabVersion: "v0.0.0-test",
		Argv:          argv,
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
	for _, name := range LoadFlows[test] {
		perDir[Dir(name)]++
	}
	sums := map[string][]float64{"up": make([]float64, n), "down": make([]float64, n)}
	id := 0
	for fi, name := range LoadFlows[test] {
		dir := Dir(name)
		share := path.RateMbit / float64(perDir[dir]) * (0.8 + 0.4*rng.Float64())
		s := results.Series{Name: name, Unit: "Mbits/s", Window: window}
		key := func(k, unit string) results.Series {
			return results.Series{Name: name + "::" + k, Unit: unit, Window: window}
		}
		cwnd, rtt := key("tcp_cwnd", "packets"), key("tcp_rtt", "ms")
		rcwnd, rrtt := key("receiver_tcp_cwnd", "packets"), key("receiver_tcp_rtt", "ms")
		bytes, qdelay := key("router_delivered_bytes", "bytes"), key("router_queue_delay", "ms")
		for k := 0; k < n; k++ {
			t := results.GridTime(k, step)
			v := 0.0
			if loaded(t) {
				v = share * (1 - math.Exp(-(t-lead)/0.8)) * (0.85 + 0.3*rng.Float64())
				saw := math.Mod(t-lead+float64(fi)*0.7, 3) / 3
				cwnd.Samples = append(cwnd.Samples, results.Sample{T: t, V: math.Round(10 + 90*saw)})
				rtt.Samples = append(rtt.Samples, results.Sample{T: t, V: path.BaseRTTMs + path.BloatMs*saw})
				rcwnd.Samples = append(rcwnd.Samples, results.Sample{T: t, V: 10})
				rrtt.Samples = append(rrtt.Samples, results.Sample{T: t, V: path.BaseRTTMs + 2*rng.Float64()})
				qdelay.Samples = append(qdelay.Samples, results.Sample{T: t, V: path.BloatMs * saw})
			}
			s.Samples = append(s.Samples, results.Sample{T: t, V: v})
			bytes.Samples = append(bytes.Samples, results.Sample{T: t, V: math.Round(v * 1e6 / 8 * step)})
			sums[dir][k] += v
		}
		d.Series = append(d.Series, s)
		id++
		f := results.Flow{ID: id, Label: name, Direction: dir, Protocol: "udp", Series: []results.Series{bytes, qdelay}}
		switch {
		case strings.HasPrefix(name, "TCP "):
			f.Protocol, f.CongestionControl = "tcp", "cubic"
			f.Series = []results.Series{cwnd, rtt, rcwnd, rrtt, bytes, qdelay}
		case strings.HasPrefix(name, "TFRC "):
			f.CongestionControl = "tfrc"
		case strings.HasPrefix(name, "QUIC "):
			f.CongestionControl = "newreno"
		case strings.HasPrefix(name, "Custom "):
			f.Protocol = "tcp"
			f.FiveTuple = fmt.Sprintf("tcp 10.53.54.1:%d > 10.53.54.2:5201", 40000+fi)
		}
		d.Flows = append(d.Flows, f)
	}
	if test == "custom" {
		// What the user's flows delivered, summed each way and both ways,
		// as the custom test computes it.
		sum := func(name string, vals func(k int) float64) {
			s := results.Series{Name: name, Unit: "Mbits/s", Window: window}
			for k := 0; k < n; k++ {
				s.Samples = append(s.Samples, results.Sample{T: results.GridTime(k, step), V: vals(k)})
			}
			d.Series = append(d.Series, s)
		}
		sum("Custom upload", func(k int) float64 { return sums["up"][k] })
		sum("Custom download", func(k int) float64 { return sums["down"][k] })
		sum("Custom totals", func(k int) float64 { return sums["up"][k] + sums["down"][k] })
	}
	for _, name := range append([]string{results.ICMPPing}, Pings[test]...) {
		s := results.Series{Name: name, Unit: "ms", Window: window}
		up := results.Series{Name: name + "::owd_up", Unit: "ms", Window: window}
		down := results.Series{Name: name + "::owd_down", Unit: "ms", Window: window}
		for k := 0; k < n; k++ {
			t := float64(k)*step + 0.013
			v := path.BaseRTTMs + rng.Float64()
			if loaded(t) && len(LoadFlows[test]) > 0 {
				v += path.BloatMs * (0.6 + 0.4*rng.Float64())
			}
			if rng.IntN(40) == 0 {
				v = math.NaN()
			} else {
				up.Samples = append(up.Samples, results.Sample{T: t, V: v / 2})
				down.Samples = append(down.Samples, results.Sample{T: t, V: v / 2})
			}
			s.Samples = append(s.Samples, results.Sample{T: t, V: v})
		}
		d.Series = append(d.Series, s)
		id++
		f := results.Flow{ID: id, Label: name, Direction: "both", Protocol: "udp", Series: []results.Series{up, down}}
		if name == results.ICMPPing {
			f.Protocol, f.Series = "icmp", nil
		}
		d.Flows = append(d.Flows, f)
	}
	if err := d.AddComputed(); err != nil {
		panic(fmt.Sprintf("resultstest.RunWith(%s): %v", test, err))
	}
	d.Summarize()
	return d
}
