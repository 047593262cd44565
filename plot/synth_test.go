package plot

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"wanlab/results"
)

// synthLoad lists the load flows of the Flent tests the tests draw, by
// series name, and their direction.
var synthLoad = map[string][]string{
	"ping":              nil,
	"tcp_upload":        {"TCP upload"},
	"tcp_download":      {"TCP download"},
	"tcp_bidirectional": {"TCP download", "TCP upload"},
	"tcp_nup":           {"TCP upload::1", "TCP upload::2", "TCP upload::3", "TCP upload::4"},
	"rrul": {"TCP upload BE", "TCP upload BK", "TCP upload CS5", "TCP upload EF",
		"TCP download BE", "TCP download BK", "TCP download CS5", "TCP download EF"},
}

// synthPings lists the latency probes of each test; every test has an
// ICMP ping as well.
var synthPings = map[string][]string{
	"ping": {"Ping (ms) UDP"},
	"rrul": {"Ping (ms) UDP EF", "Ping (ms) UDP BK", "Ping (ms) UDP BE"},
}

// synthPath is the path a synthetic run crossed: a bottleneck of rate
// Mbit/s, a base round trip, and the queueing delay the load builds.
type synthPath struct {
	rate, baseRTT, bloat float64
}

// synthRun builds a results document shaped like the ones `wanlab run`
// writes for a Flent test: 2 s of lead, 10 s of load and 2 s of tail
// sampled every 0.2 s; load series that are 0 outside the load and share
// the bottleneck inside it after a slow start; latency probes 13 ms after
// each grid point that see the base RTT plus the queue under load, about
// one in 40 lost; each TCP flow with its TCP_INFO at both ends (cwnd in a
// sawtooth, RTT following the queue) and the router's per-flow view
// (bytes delivered per step, queueing delay); the computed series and
// summaries added as wanlab run adds them.
func synthRun(test, title string, seed uint64, path synthPath) *results.Document {
	rng := rand.New(rand.NewPCG(seed, 11))
	lead, dur, tail, step := 2.0, 10.0, 2.0, 0.2
	if test == "ping" {
		lead, tail = 0, 0
	}
	d := &results.Document{Run: results.Run{
		WanlabVersion: "v0.0.0-test",
		Argv:          []string{"wanlab", "run", test},
		Test:          test,
		Title:         title,
		Start:         time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC).Add(time.Duration(seed) * time.Minute),
		DurationS:     dur, StepS: step, LeadS: lead, TailS: tail,
		Seed: seed, Framing: "ethernet", KernelRelease: "6.1.0-test",
		Path: results.Path{
			Up:   fmt.Sprintf("netem delay %gms; tbf rate %gmbit burst 32k latency 300ms", path.baseRTT/2, path.rate),
			Down: fmt.Sprintf("netem delay %gms; tbf rate %gmbit burst 32k latency 300ms", path.baseRTT/2, path.rate),
		},
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
		dir := synthDir(name)
		share := path.rate / float64(perDir[dir]) * (0.8 + 0.4*rng.Float64())
		s := results.Series{Name: name, Unit: "Mbits/s", Window: window}
		key := func(k string) string { return name + "::" + k }
		cwnd := results.Series{Name: key("tcp_cwnd"), Unit: "packets", Window: window}
		rtt := results.Series{Name: key("tcp_rtt"), Unit: "ms", Window: window}
		rcwnd := results.Series{Name: key("receiver_tcp_cwnd"), Unit: "packets", Window: window}
		rrtt := results.Series{Name: key("receiver_tcp_rtt"), Unit: "ms", Window: window}
		bytes := results.Series{Name: key("router_delivered_bytes"), Unit: "bytes", Window: window}
		qdelay := results.Series{Name: key("router_queue_delay"), Unit: "ms", Window: window}
		for k := 0; k < n; k++ {
			t := float64(k) * step
			v := 0.0
			if loaded(t) {
				v = share * (1 - math.Exp(-(t-lead)/0.8)) * (0.85 + 0.3*rng.Float64())
				saw := math.Mod(t-lead+float64(fi)*0.7, 3) / 3
				cwnd.Samples = append(cwnd.Samples, results.Sample{T: t, V: math.Round(10 + 90*saw)})
				rtt.Samples = append(rtt.Samples, results.Sample{T: t, V: path.baseRTT + path.bloat*saw})
				rcwnd.Samples = append(rcwnd.Samples, results.Sample{T: t, V: 10})
				rrtt.Samples = append(rrtt.Samples, results.Sample{T: t, V: path.baseRTT + 2*rng.Float64()})
				qdelay.Samples = append(qdelay.Samples, results.Sample{T: t, V: path.bloat * saw})
			}
			s.Samples = append(s.Samples, results.Sample{T: t, V: v})
			bytes.Samples = append(bytes.Samples, results.Sample{T: t, V: math.Round(v * 1e6 / 8 * step)})
		}
		d.Series = append(d.Series, s)
		id++
		d.Flows = append(d.Flows, results.Flow{ID: id, Label: name, Direction: dir, Protocol: "tcp",
			CongestionControl: "cubic", Series: []results.Series{cwnd, rtt, rcwnd, rrtt, bytes, qdelay}})
	}
	for _, name := range append([]string{"Ping (ms) ICMP"}, synthPings[test]...) {
		s := results.Series{Name: name, Unit: "ms", Window: window}
		up := results.Series{Name: name + "::owd_up", Unit: "ms", Window: window}
		down := results.Series{Name: name + "::owd_down", Unit: "ms", Window: window}
		for k := 0; k < n; k++ {
			t := float64(k)*step + 0.013
			v := path.baseRTT + rng.Float64()
			if loaded(t) && len(synthLoad[test]) > 0 {
				v += path.bloat * (0.6 + 0.4*rng.Float64())
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
		if strings.HasSuffix(name, "ICMP") {
			f.Protocol, f.Series = "icmp", nil
		}
		d.Flows = append(d.Flows, f)
	}
	if err := d.AddComputed(); err != nil {
		panic(fmt.Sprintf("synthRun(%s): %v", test, err))
	}
	d.Summarize()
	return d
}

// synthDir returns the direction of a load series by its Flent name.
func synthDir(name string) string {
	if strings.Contains(name, "download") {
		return "down"
	}
	return "up"
}
