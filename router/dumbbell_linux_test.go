package router

import (
	"testing"

	"wanlab/internal/roottest"
	"wanlab/link"
)

// TestDumbbellAccessDelays pings one server from two clients whose access
// links delay each way by 10 and 40 ms, across bottlenecks of 5 ms each
// way: each client's RTT is its own path's, and the ports' counters add
// up to the directions'.
func TestDumbbellAccessDelays(t *testing.T) {
	b := newDumbbell(t, dumbbellOptions{clients: 2, servers: 1, up: "netem delay 5ms", down: "netem delay 5ms",
		access: map[string][2]string{"c1": {"netem delay 10ms", "netem delay 10ms"}, "c2": {"netem delay 40ms", "netem delay 40ms"}}})
	const n = 10
	want := []float64{30, 90} // 2 × (access + bottleneck)
	roottest.Twice(t, "ping", func(r roottest.Reporter) {
		for i, c := range b.clients {
			rtts := b.pingRTTs(t, c, b.s.v4, n)
			if raceEnabled {
				if rtts[0] < want[i] {
					r.Errorf("c%d: %.3f ms, below the path's %g ms", i+1, rtts[0], want[i])
				}
				continue
			}
			roottest.JudgeRTT(r, "ping from c"+string(rune('1'+i)), rtts, want[i], want[i]/100, b.r.Snapshot().RoundTripLatenessP99())
		}
	})
	s := b.r.Snapshot()
	for _, d := range []DirSnapshot{s.Up, s.Down} {
		if len(d.Ports) != 3 {
			t.Fatalf("%s: %d ports, want 3 (two clients, one server): %+v", d.Name, len(d.Ports), d.Ports)
		}
		var in, out link.Counters
		nIn := 2 // the up direction's ingress hosts are the clients
		if d.Name == "down" {
			nIn = 1
		}
		for i, p := range d.Ports {
			wantPlace := "ingress"
			if i >= nIn {
				wantPlace = "egress"
			}
			if p.Place != wantPlace || p.If != tunName {
				t.Errorf("%s: port %d is %s %s on %q", d.Name, i, p.Host, p.Place, p.If)
			}
			c := &out
			if p.Place == "ingress" {
				c = &in
			}
			c.Sent += p.Counters.Sent
			c.Delivered += p.Counters.Delivered
			if p.Host[0] == 'c' {
				if p.Access == nil || p.Access.Delivered != p.Counters.Delivered {
					t.Errorf("%s: %s: access counters %+v, end to end %+v: every packet of the port crosses its access link", d.Name, p.Host, p.Access, p.Counters)
				}
				if wantChain := "netem limit 1000 delay " + map[string]string{"c1": "10ms", "c2": "40ms"}[p.Host]; p.Chain != wantChain {
					t.Errorf("%s: %s: chain %q, want %q", d.Name, p.Host, p.Chain, wantChain)
				}
			} else if p.Access != nil || p.Chain != "" {
				t.Errorf("%s: %s has no access link, but reports %+v, chain %q", d.Name, p.Host, p.Access, p.Chain)
			}
			if p.Counters.Delivered < n {
				t.Errorf("%s: %s: %d delivered, want at least %d", d.Name, p.Host, p.Counters.Delivered, n)
			}
		}
		if in.Sent != d.Counters.Sent || out.Sent != d.Counters.Sent || in.Delivered != d.Counters.Delivered || out.Delivered != d.Counters.Delivered {
			t.Errorf("%s: ports sent %d/%d and delivered %d/%d (ingress/egress); the direction sent %d and delivered %d",
				d.Name, in.Sent, out.Sent, in.Delivered, out.Delivered, d.Counters.Sent, d.Counters.Delivered)
		}
		if d.Counters.Delay.Min < 15e6 {
			t.Errorf("%s: a packet crossed in %.0f ns, less than the shortest path's 15 ms", d.Name, d.Counters.Delay.Min)
		}
		if d.Verdict == nil || d.Lateness.N < 2*n {
			t.Errorf("%s: verdict %v, %d lateness samples", d.Name, d.Verdict, d.Lateness.N)
		}
	}
}
