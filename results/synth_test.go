package results

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// synthSeries lists the series wanlab writes for each Flent test, by kind.
var synthSeries = map[string]struct{ tcp, udpPing []string }{
	"ping":              {udpPing: []string{"Ping (ms) UDP"}},
	"tcp_upload":        {tcp: []string{"TCP upload"}},
	"tcp_download":      {tcp: []string{"TCP download"}},
	"tcp_bidirectional": {tcp: []string{"TCP download", "TCP upload"}},
	"tcp_nup":           {tcp: []string{"TCP upload::1", "TCP upload::2", "TCP upload::3", "TCP upload::4"}},
	"tcp_ndown":         {tcp: []string{"TCP download::1", "TCP download::2", "TCP download::3"}},
	"udp_flood":         {tcp: []string{"UDP upload"}},
	"rrul": {
		tcp: []string{"TCP upload BE", "TCP upload BK", "TCP upload CS5", "TCP upload EF",
			"TCP download BE", "TCP download BK", "TCP download CS5", "TCP download EF"},
		udpPing: []string{"Ping (ms) UDP EF", "Ping (ms) UDP BK", "Ping (ms) UDP BE"},
	},
	"rrul_be": {
		tcp: []string{"TCP upload BE", "TCP upload BE2", "TCP upload BE3", "TCP upload BE4",
			"TCP download BE", "TCP download BE2", "TCP download BE3", "TCP download BE4"},
		udpPing: []string{"Ping (ms) UDP BE1", "Ping (ms) UDP BE2", "Ping (ms) UDP BE3"},
	},
}

// synthDoc builds a document for a Flent test as `wanlab run` would: load
// series sampled on the grid over the whole run, with values during the
// load and a conspicuous 999 in the lead and tail (outside the window, so a
// view that summarised them would be caught); latency probes sampled 13 ms
// after each grid point, with a few lost, 5 ms in the lead and tail; each
// flow with its own TCP_INFO or one-way-delay series. It adds the computed
// series and summarises.
func synthDoc(test string, seed uint64) *Document {
	rng := rand.New(rand.NewPCG(seed, 7))
	lead, dur, tail := 2.0, 10.0, 2.0
	if test == "ping" {
		lead, tail = 0, 0 // Flent's ping test has no lead or tail
	}
	d := &Document{Run: Run{
		WanlabVersion: "v0.0.0-test",
		Argv:          []string{"wanlab", "run", test, "--both", "netem delay 20ms"},
		Test:          test,
		Title:         "synthetic " + test,
		Start:         time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC),
		DurationS:     dur, StepS: 0.2, LeadS: lead, TailS: tail,
		Seed: seed, Framing: "ethernet", KernelRelease: "6.1.0-test",
		Path:    Path{Up: "netem delay 20ms", Down: "netem delay 20ms"},
		Sysctls: map[string]map[string]string{"client": {"net.ipv4.tcp_congestion_control": "cubic"}},
	}}
	window := [2]float64{lead, lead + dur}
	n := int(math.Round((lead+dur+tail)/d.Run.StepS)) + 1
	id := 0
	for _, name := range synthSeries[test].tcp {
		s := Series{Name: name, Unit: "Mbits/s", Window: window}
		cwnd := Series{Name: name + "::tcp_cwnd", Unit: "packets", Window: window}
		rtt := Series{Name: name + "::tcp_rtt", Unit: "ms", Window: window}
		base := 5 + 40*rng.Float64()
		for k := 0; k < n; k++ {
			t := float64(k) * d.Run.StepS
			v := 999.0
			if inWindow(window, t) {
				v = base * (0.5 + rng.Float64())
				cwnd.Samples = append(cwnd.Samples, Sample{t, float64(10 + rng.IntN(90))})
				rtt.Samples = append(rtt.Samples, Sample{t, 20 + 30*rng.Float64()})
			}
			s.Samples = append(s.Samples, Sample{t, v})
		}
		d.Series = append(d.Series, s)
		id++
		f := Flow{ID: id, Label: name, Direction: "up", Protocol: "tcp", CongestionControl: "cubic",
			Series: []Series{cwnd, rtt}}
		if name == "UDP upload" {
			f.Protocol, f.CongestionControl, f.Series = "udp", "", nil
		}
		d.Flows = append(d.Flows, f)
	}
	pings := append([]string{"Ping (ms) ICMP"}, synthSeries[test].udpPing...)
	for _, name := range pings {
		s := Series{Name: name, Unit: "ms", Window: window}
		up := Series{Name: name + "::owd_up", Unit: "ms", Window: window}
		down := Series{Name: name + "::owd_down", Unit: "ms", Window: window}
		for k := 0; k < n; k++ {
			t := float64(k)*d.Run.StepS + 0.013
			switch {
			case rng.IntN(30) == 0:
				s.Samples = append(s.Samples, Sample{t, math.NaN()})
			case inWindow(window, t):
				v := 20 + 60*rng.Float64()
				s.Samples = append(s.Samples, Sample{t, v})
				a := v * rng.Float64()
				up.Samples = append(up.Samples, Sample{t, a})
				down.Samples = append(down.Samples, Sample{t, v - a})
			default:
				s.Samples = append(s.Samples, Sample{t, 5})
			}
		}
		d.Series = append(d.Series, s)
		id++
		f := Flow{ID: id, Label: name, Direction: "both", Protocol: "udp", TOS: 0}
		if name == "Ping (ms) ICMP" {
			f.Protocol = "icmp"
		} else {
			f.Series = []Series{up, down}
		}
		d.Flows = append(d.Flows, f)
	}
	if err := d.AddComputed(); err != nil {
		panic(fmt.Sprintf("synthDoc(%s): %v", test, err))
	}
	d.Summarize()
	return d
}
