package testrun

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/results"
)

// These are the figures the dumbbell (issue 22: many hosts on one
// bottleneck) is done by, each measured here through the router with real
// kernel TCP.

// rttFairAccess gives servers s1..s4 round trips of 10, 20, 40 and 80 ms
// on their access links, half each way, as the rtt_fair tests' servers
// at different distances from the client. The access links' netem holds
// what a slow start sends (tc's default limit of 1000 packets would drop
// there), so that the bottleneck's queue is the one that decides.
func rttFairAccess(o *Options) {
	o.AccessUp, o.AccessDown = nil, nil
	for i, rtt := range []int{10, 20, 40, 80} {
		h := fmt.Sprintf("s%d=netem delay %dms limit 10000", i+1, rtt/2)
		o.AccessUp = append(o.AccessUp, h)
		o.AccessDown = append(o.AccessDown, h)
	}
}

// hostFairness returns the document's fairness over hosts in direction
// dir, failing the test when it has none.
func hostFairness(t *testing.T, d *results.Document, dir string) results.HostFairness {
	t.Helper()
	for _, hf := range d.FairnessOverHosts() {
		if hf.Direction == dir {
			return hf
		}
	}
	t.Fatalf("no fairness over hosts for %s (flows: %d)", dir, len(d.Flows))
	return results.HostFairness{}
}

// hostShare returns host's share in hf.
func hostShare(t *testing.T, hf results.HostFairness, host string) float64 {
	t.Helper()
	for _, h := range hf.Hosts {
		if h.Host == host {
			return h.Share
		}
	}
	t.Fatalf("%s: no host %s among %v", hf.Direction, host, hf.Hosts)
	return 0
}

// rtt_fair4be with servers 10, 20, 40 and 80 ms away through a 20 Mbit/s
// bottleneck each way: fq_codel shares it evenly among the four servers
// whatever their RTT (Jain's index over the hosts at least 0.9), while
// Reno flows through a 100-packet FIFO share it by their RTT, the nearest
// server's flows getting at least 1.5 times the farthest's.
func TestAcceptanceRTTFair(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: 22 s of traffic")
	}
	const bottleneck = "tbf rate 20mbit burst 32k latency 100ms; "
	run := func(qdisc, cc string) *results.Document {
		o := short("rtt_fair4be", 10*time.Second)
		o.Up, o.Down = bottleneck+qdisc, bottleneck+qdisc
		o.CC = cc
		rttFairAccess(&o)
		return runDoc(t, o)
	}
	t.Run("fq_codel", func(t *testing.T) {
		roottest.Twice(t, "rtt_fair4be fq_codel", func(r roottest.Reporter) {
			d := run("fq_codel", "")
			if n := len(d.Run.Hosts); n != 5 {
				r.Errorf("the run recorded %d hosts, want 5 (c1, s1..s4)", n)
			}
			for _, dir := range []string{"up", "down"} {
				hf := hostFairness(t, d, dir)
				if len(hf.Hosts) != 4 {
					r.Errorf("%s: %d hosts counted, want 4", dir, len(hf.Hosts))
				}
				within(r, dir+": Jain's index over the servers", hf.Jain, 0.9, 1)
			}
		})
	})
	t.Run("reno_fifo", func(t *testing.T) {
		roottest.Twice(t, "rtt_fair4be reno pfifo", func(r roottest.Reporter) {
			d := run("pfifo limit 100", "reno")
			for _, dir := range []string{"up", "down"} {
				hf := hostFairness(t, d, dir)
				near, far := hostShare(t, hf, "s1"), hostShare(t, hf, "s4")
				r.Logf("%s: shares %v", dir, hf.Hosts)
				within(r, dir+": the 10 ms server's share over the 80 ms one's", near/far, 1.5, 1e9)
			}
		})
	})
	t.Run("cubic_bbr", func(t *testing.T) {
		o := short("cubic_bbr", 4*time.Second)
		o.Up = "tbf rate 20mbit burst 32k latency 50ms; pfifo limit 100"
		o.Down = o.Up
		d := runDoc(t, o)
		for _, name := range []string{"TCP upload Cubic BE", "TCP upload BBR BE", "TCP download Cubic BE", "TCP download BBR BE"} {
			s := series(t, d, name)
			if s.Summary.N == 0 || !(s.Summary.Mean > 0) {
				t.Errorf("%s: %d samples, mean %v: want a flow that carried data", name, s.Summary.N, s.Summary.Mean)
			}
		}
		var ccs []string
		for _, f := range d.Flows {
			ccs = append(ccs, f.CongestionControl)
		}
		if got := strings.Join(ccs, " "); !strings.Contains(got, "bbr") || !strings.Contains(got, "cubic") {
			t.Errorf("flows' congestion controls %q: want cubic and bbr", got)
		}
	})
}
