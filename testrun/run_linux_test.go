package testrun

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/lab"
	"wanlab/results"
	"wanlab/tcspec"
)

// catalogPath is a 20 Mbit/s bottleneck with 10 ms each way: a round trip
// of 20 ms, and at most 50 ms of queue.
const catalogPath = "netem delay 10ms limit 10000; tbf rate 20mbit burst 32k latency 50ms"

// Every test of the catalog runs in namespaces, briefly, through the
// router, and its figures are those of the path: the probes' round trip
// is the path's 20 ms (more under load: up to 63 ms more in each loaded
// direction's queue),
// the load fills the 20 Mbit/s bottleneck (less its headers and slow
// start), and each flow carries its own series from both ends and the
// router.
func TestCatalogThroughTheRouter(t *testing.T) {
	const load = 2 * time.Second
	for _, c := range []struct {
		test  string
		mod   func(o *Options)
		check func(r roottest.Reporter, d *results.Document)
	}{
		{"ping", nil, func(r roottest.Reporter, d *results.Document) {
			for _, name := range []string{"Ping (ms) ICMP", "Ping (ms) UDP"} {
				s := series(t, d, name)
				within(r, name+" median", s.Summary.Median, 20, 22)
				if s.Lost != 0 || s.Summary.N < 9 {
					r.Errorf("%s", describe(s))
				}
			}
			within(r, "owd_up median", series(t, d, "Ping (ms) UDP::owd_up").Summary.Median, 10, 11)
			within(r, "owd_down median", series(t, d, "Ping (ms) UDP::owd_down").Summary.Median, 10, 11)
		}},
		{"tcp_upload", nil, func(r roottest.Reporter, d *results.Document) {
			up := series(t, d, "TCP upload")
			within(r, "TCP upload mean", up.Summary.Mean, 14, 19.6)
			within(r, "Ping (ms) ICMP median", series(t, d, "Ping (ms) ICMP").Summary.Median, 20, 90)
			if n := series(t, d, "TCP upload::tcp_cwnd").Summary.N; n != up.Summary.N {
				r.Errorf("tcp_cwnd has %d samples in the load, TCP upload %d", n, up.Summary.N)
			}
			checkRouterFlow(r, t, d, "TCP upload", 0.02)
			// The router's view: 10 ms of netem, then the bucket's queue.
			within(r, "router_queue_delay median", series(t, d, "TCP upload::router_queue_delay").Summary.Median, 10, 75)
		}},
		{"tcp_download", nil, func(r roottest.Reporter, d *results.Document) {
			within(r, "TCP download mean", series(t, d, "TCP download").Summary.Mean, 14, 19.6)
			within(r, "receiver_tcp_rcv_rtt median", series(t, d, "TCP download::receiver_tcp_rcv_rtt").Summary.Median, 20, 90)
			checkRouterFlow(r, t, d, "TCP download", 0.02)
		}},
		{"tcp_bidirectional", nil, func(r roottest.Reporter, d *results.Document) {
			within(r, "TCP upload mean", series(t, d, "TCP upload").Summary.Mean, 10, 19.6)
			within(r, "TCP download mean", series(t, d, "TCP download").Summary.Mean, 10, 19.6)
		}},
		{"tcp_nup", func(o *Options) { o.Streams = 3 }, func(r roottest.Reporter, d *results.Document) {
			for _, n := range []string{"TCP upload::1", "TCP upload::2", "TCP upload::3"} {
				within(r, n+" mean", series(t, d, n).Summary.Mean, 1, 19.6)
			}
			within(r, "TCP upload sum mean", series(t, d, "TCP upload sum").Summary.Mean, 14, 19.6)
			within(r, "TCP upload fairness mean", series(t, d, "TCP upload fairness").Summary.Mean, 0.5, 1)
		}},
		{"tcp_ndown", func(o *Options) { o.Streams = 2 }, func(r roottest.Reporter, d *results.Document) {
			within(r, "TCP download sum mean", series(t, d, "TCP download sum").Summary.Mean, 14, 19.6)
			if len(d.Flows) != 3 {
				r.Errorf("%d flows, want 2 downloads and the ping", len(d.Flows))
			}
		}},
		{"rrul", nil, func(r roottest.Reporter, d *results.Document) {
			within(r, "TCP upload sum mean", series(t, d, "TCP upload sum").Summary.Mean, 12, 19.6)
			within(r, "TCP download sum mean", series(t, d, "TCP download sum").Summary.Mean, 12, 19.6)
			within(r, "TCP totals mean", series(t, d, "TCP totals").Summary.Mean, 24, 39.2)
			// Both directions are loaded: a probe may wait in both queues.
			for _, n := range []string{"Ping (ms) UDP EF", "Ping (ms) UDP BK", "Ping (ms) UDP BE", "Ping (ms) ICMP"} {
				within(r, n+" median", series(t, d, n).Summary.Median, 20, 150)
			}
			tos := map[string]int{}
			for _, f := range d.Flows {
				tos[f.Label] = f.TOS
			}
			if tos["TCP upload EF"] != 0xb8 || tos["TCP download BK"] != 0x20 || tos["Ping (ms) UDP EF"] != 0xb8 || tos["TCP upload BE"] != 0 {
				r.Errorf("marks %v", tos)
			}
		}},
		{"rrul_be", nil, func(r roottest.Reporter, d *results.Document) {
			within(r, "TCP totals mean", series(t, d, "TCP totals").Summary.Mean, 24, 39.2)
			within(r, "Ping (ms) UDP BE3 median", series(t, d, "Ping (ms) UDP BE3").Summary.Median, 20, 150)
		}},
		{"udp_flood", func(o *Options) { o.UDPRate = "10mbit" }, func(r roottest.Reporter, d *results.Document) {
			within(r, "UDP upload mean", series(t, d, "UDP upload").Summary.Mean, 9.8, 10.05)
			within(r, "lost packets", sum(series(t, d, "UDP upload::lost_packets")), 0, 10)
			within(r, "owd median", series(t, d, "UDP upload::owd").Summary.Median, 10, 12)
			checkRouterFlow(r, t, d, "UDP upload", 0.01)
		}},
		{"tfrc_download", nil, func(r roottest.Reporter, d *results.Document) {
			// TFRC starts at a few packets per round trip and doubles
			// each one (RFC 5348 §4.3): 2 s is enough to get going.
			within(r, "TFRC download mean", series(t, d, "TFRC download").Summary.Mean, 5, 19.6)
			if n := series(t, d, "TFRC download::tfrc_rtt").Summary.N; n < 5 {
				r.Errorf("tfrc_rtt has %d samples in the load", n)
			}
			// The router counts UDP payload: the TFRC packets, header
			// and all, as the receiver's tfrc_recv_rate does.
			checkRouterBytes(r, t, d, "TFRC download", "TFRC download::tfrc_recv_rate", 0, 0.01)
		}},
		{"quic_download", nil, func(r roottest.Reporter, d *results.Document) {
			within(r, "QUIC download mean", series(t, d, "QUIC download").Summary.Mean, 8, 19.6)
			within(r, "quic_rtt median", series(t, d, "QUIC download::quic_rtt").Summary.Median, 20, 90)
			// The router counts UDP payload: QUIC's packet and frame
			// headers and its 16-byte AEAD tag come on top of the
			// stream's bytes, a few percent.
			checkRouterBytes(r, t, d, "QUIC download", "QUIC download", 0, 0.08)
		}},
	} {
		t.Run(c.test, func(t *testing.T) {
			roottest.Twice(t, c.test, func(r roottest.Reporter) {
				o := short(c.test, load)
				o.Both = catalogPath
				if c.mod != nil {
					c.mod(&o)
				}
				d := runDoc(t, o)
				for i := range d.Series {
					r.Logf("%s", describe(&d.Series[i]))
				}
				if d.Run.Test != c.test || d.Run.Partial || len(d.Flows) == 0 {
					r.Errorf("run %+v", d.Run)
				}
				rep := routerReport(t, d)
				if rep.Mode != results.RouterTestbed || len(rep.Directions) != 2 || rep.Directions[0].ChainStart == "" {
					r.Errorf("router report %+v", rep)
				}
				checkSeries(r, d)
				c.check(r, d)
			})
		})
	}
}

// checkRouterFlow compares what the router delivered of a load flow
// (its transport payload) with what the flow's receiver counted, over
// the whole run.
func checkRouterFlow(r roottest.Reporter, t *testing.T, d *results.Document, label string, tol float64) {
	main := series(t, d, label)
	received := sum(main) * d.Run.StepS * 1e6 / 8
	router := sum(series(t, d, label+"::router_delivered_bytes"))
	r.Logf("%s: the receiver read %.0f bytes, the router delivered %.0f bytes of payload", label, received, router)
	if received <= 0 || router < received*(1-tol) || router > received*(1+tol) {
		r.Errorf("%s: the router delivered %.0f bytes of payload, the receiver read %.0f: want within %g%%", label, router, received, tol*100)
	}
}

// checkRouterBytes compares the payload the router delivered of a flow
// with a rate series of the flow's bytes: the router's count must lie
// within [1-below, 1+above] times the series' total.
func checkRouterBytes(r roottest.Reporter, t *testing.T, d *results.Document, label, rate string, below, above float64) {
	counted := sum(series(t, d, rate)) * d.Run.StepS * 1e6 / 8
	router := sum(series(t, d, label+"::router_delivered_bytes"))
	r.Logf("%s: %s counts %.0f bytes, the router delivered %.0f bytes of payload", label, rate, counted, router)
	if counted <= 0 || router < counted*(1-below)-1 || router > counted*(1+above)+1 {
		r.Errorf("%s: the router delivered %.0f bytes of payload, %s counts %.0f: want from %g%% below to %g%% above", label, router, rate, counted, below*100, above*100)
	}
}

// The same test over IPv6, over a veth pair without the router, on a
// running testbed, with a capacity trace, and with a chain change during
// the load: each shows its own mark in the figures.
func TestRunVariants(t *testing.T) {
	t.Run("ipv6", func(t *testing.T) {
		roottest.Twice(t, "ipv6", func(r roottest.Reporter) {
			o := short("tcp_upload", 2*time.Second)
			o.Both, o.IPv6 = catalogPath, true
			d := runDoc(t, o)
			within(r, "TCP upload mean", series(t, d, "TCP upload").Summary.Mean, 14, 19.6)
			if d.Run.Options["ip_version"] != "6" {
				r.Errorf("options %v", d.Run.Options)
			}
			checkRouterFlow(r, t, d, "TCP upload", 0.02)
		})
	})
	t.Run("packet", func(t *testing.T) {
		roottest.NeedRealRoot(t, roottest.PacketPlaneNeedsRoot)
		roottest.Twice(t, "packet", func(r roottest.Reporter) {
			o := short("tcp_upload", 2*time.Second)
			o.Both, o.DataPlane = catalogPath, "packet"
			d := runDoc(t, o)
			within(r, "TCP upload mean", series(t, d, "TCP upload").Summary.Mean, 14, 19.6)
			checkRouterFlow(r, t, d, "TCP upload", 0.02)
			// The packet sockets stamp each packet's arrival: the
			// report has the ring's wait, the TUN plane's has none.
			if up := routerReport(t, d).Directions[0]; d.Run.Options["dataplane"] != "packet" || up.RingWait == nil || up.RingWait.N == 0 {
				r.Errorf("options %v, ring wait %+v", d.Run.Options, up.RingWait)
			}
		})
	})
	t.Run("ecn", func(t *testing.T) {
		// ECN end to end: the hosts negotiate it, fq_codel marks instead
		// of dropping, the router counts the flow's marks, the sender's
		// TCP_INFO counts the echoed CE and the receiver saw ECT.
		roottest.Twice(t, "ecn", func(r roottest.Reporter) {
			o := short("tcp_upload", 2*time.Second)
			o.Both, o.ECN = catalogPath+"; fq_codel", true
			d := runDoc(t, o)
			last := func(name string) float64 {
				s := series(t, d, name)
				if len(s.Samples) == 0 {
					return math.NaN()
				}
				return s.Samples[len(s.Samples)-1].V
			}
			var marks float64
			for _, p := range series(t, d, "TCP upload::router_marks").Samples {
				marks += p.V
			}
			if ecn, seen, ce := last("TCP upload::tcp_ecn"), last("TCP upload::receiver_tcp_ecn_seen"), last("TCP upload::tcp_delivered_ce"); ecn != 1 || seen != 1 || !(ce > 0) || !(marks > 0) {
				r.Errorf("tcp_ecn %v, receiver's ecn_seen %v, delivered_ce %v, router marks %v: want 1, 1 and marks counted at both", ecn, seen, ce, marks)
			} else {
				r.Logf("router marked %v, the sender counted %v echoed CE", marks, ce)
			}
			if s := d.FindSeries("TCP upload::router_drops_codel"); s != nil && s.Summary.Mean > 0 {
				r.Errorf("fq_codel dropped the ECN-capable flow's packets (%v a step) instead of marking them", s.Summary.Mean)
			}
		})
	})
	t.Run("cake", func(t *testing.T) {
		// --aqm cake in place of the tbf at 10 Mbit/s each way (as SQM
		// deploys it): RRUL's ping stays within 10 ms of the path's
		// round trip, where the tbf's deep FIFO would add its 50 ms.
		roottest.Twice(t, "rrul cake", func(r roottest.Reporter) {
			o := short("rrul", 3*time.Second)
			o.Both, o.AQM = "netem delay 10ms limit 10000; tbf rate 10mbit burst 32k latency 50ms", "cake"
			d := runDoc(t, o)
			if !strings.Contains(d.Run.Path.Up, "cake bandwidth 10Mbit") || strings.Contains(d.Run.Path.Up, "tbf") {
				r.Errorf("path %q: want cake in the tbf's place", d.Run.Path.Up)
			}
			within(r, "ICMP ping median under RRUL (ms)", series(t, d, "Ping (ms) ICMP").Summary.Median, 20, 30)
			var sum float64
			for _, name := range []string{"TCP upload BE", "TCP upload BK", "TCP upload CS5", "TCP upload EF"} {
				sum += series(t, d, name).Summary.Mean
			}
			within(r, "TCP uploads together (Mbit/s)", sum, 7, 10)
		})
	})
	t.Run("direct", func(t *testing.T) {
		o := short("tcp_upload", 2*time.Second)
		o.Direct = true
		d := runDoc(t, o)
		// A veth pair carries gigabits; the router's 20 Mbit/s is
		// nowhere.
		if m := series(t, d, "TCP upload").Summary.Mean; m < 200 {
			t.Errorf("TCP upload over the veth pair: %.1f Mbit/s, want hundreds", m)
		}
		if p := series(t, d, "Ping (ms) ICMP").Summary.Min; p > 1 {
			t.Errorf("ping over the veth pair: min %.3f ms, want well under 1 ms", p)
		}
		rep := routerReport(t, d)
		if rep.Mode != results.RouterDirect || rep.Faithful != nil || len(rep.Directions) != 0 || d.Run.Path.Up != "" || d.Run.Options["dataplane"] != "" {
			t.Errorf("direct report %+v, path %+v", rep, d.Run.Path)
		}
	})
	t.Run("lab", func(t *testing.T) {
		roottest.NeedRoot(t)
		name := fmt.Sprintf("trl%d", os.Getpid())
		chain, _ := tcspec.ParseChain("netem delay 15ms", tcspec.Options{})
		tb, err := lab.Up(context.Background(), lab.Options{Name: name, Up: chain, Down: chain, Seed: 42})
		if err != nil {
			t.Fatal(err)
		}
		defer tb.Close()
		o := short("ping", 2*time.Second)
		o.Lab = name
		o.Sysctls = []string{"client:net.ipv4.tcp_recovery=0"}
		o.At = []Change{{At: time.Second, Up: "netem delay 25ms"}}
		d := runDoc(t, o)
		rep := routerReport(t, d)
		if rep.Mode != results.RouterLab || rep.Testbed != name || d.Run.Seed != 42 || !strings.Contains(d.Run.Path.Up, "delay 15ms") ||
			rep.Directions[0].ConfiguredDelayNs != int64(15*time.Millisecond) || d.Run.Options["dataplane"] != "tun" || rep.Directions[0].RingWait != nil {
			t.Errorf("report %+v, seed %d, path %+v", rep, d.Run.Seed, d.Run.Path)
		}
		if d.Run.Sysctls["client"]["net.ipv4.tcp_recovery"] != "0" {
			t.Errorf("recorded sysctls %v", d.Run.Sysctls["client"])
		}
		// The testbed is given back as it was: its chain and sysctl.
		st := tb.Status()
		if v, _ := tb.Namespace(lab.Client).Sysctl("net.ipv4.tcp_recovery"); v == "0" || !strings.Contains(st.Up.Chain, "delay 15ms") {
			t.Errorf("after the run: tcp_recovery %s, up %q", v, st.Up.Chain)
		}
		// Before the change the round trip is 30 ms, after it 40 ms.
		s := series(t, d, "Ping (ms) UDP::owd_up")
		var before, after []float64
		for _, p := range s.Samples {
			switch {
			case p.T < 0.9:
				before = append(before, p.V)
			case p.T > 1.2:
				after = append(after, p.V)
			}
		}
		slices.Sort(before)
		slices.Sort(after)
		if len(before) < 3 || len(after) < 3 || before[len(before)/2] > 16 || after[len(after)/2] < 25 {
			t.Errorf("owd_up before the change %v, after %v: want 15 ms, then 25 ms", before, after)
		}
	})
	t.Run("trace and change", func(t *testing.T) {
		// One delivery opportunity per millisecond: 12 Mbit/s of
		// 1500-byte packets. At 2 s into the run the up direction drops
		// to a 4 Mbit/s token bucket behind the same trace.
		trace := filepath.Join(t.TempDir(), "12mbit.trace")
		if err := os.WriteFile(trace, []byte("1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		roottest.Twice(t, "trace", func(r roottest.Reporter) {
			o := short("tcp_upload", 3*time.Second)
			o.Up, o.Down, o.TraceUp = "netem delay 10ms limit 1000", "netem delay 10ms", trace
			o.At = []Change{{At: 2 * time.Second, Up: "netem delay 10ms limit 1000; tbf rate 4mbit burst 16k latency 50ms"}}
			d := runDoc(t, o)
			// What the router delivered of the flow, per step: the path's
			// own rate, which the receiver's reads blur when a lost
			// segment's retransmission releases a burst.
			up := series(t, d, "TCP upload::router_delivered_bytes")
			var first, last []float64
			for _, p := range up.Samples {
				mbps := p.V * 8 / d.Run.StepS / 1e6
				switch {
				case p.T > 0.8 && p.T <= 1.9:
					first = append(first, mbps)
				case p.T > 2.6 && p.T <= 3.4:
					last = append(last, mbps)
				}
			}
			within(r, "rate before the change (trace)", mean(first), 9, 11.8)
			within(r, "rate after the change (tbf)", mean(last), 3, 4.1)
			rep := routerReport(t, d)
			if len(rep.Changes) != 1 || rep.Changes[0].Error != "" || rep.Changes[0].AppliedS < 2 || rep.Changes[0].AppliedS > 2.2 ||
				!strings.Contains(rep.Changes[0].Effect, "tbf: added") {
				r.Errorf("changes %+v", rep.Changes)
			}
			if d.Run.Options["trace_up"] != trace || !strings.Contains(rep.Directions[0].ChainEnd, "tbf rate 4Mbit") {
				r.Errorf("options %v, chain at the end %q", d.Run.Options, rep.Directions[0].ChainEnd)
			}
		})
	})
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
