package quicflow

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/roottest"
	"wanlab/internal/traffictest"
	"wanlab/lab"
	"wanlab/qdisc"
	"wanlab/tcspec"
	"wanlab/traffic"
)

// upTestbed starts a testbed with the given chains and removes it when the
// test ends.
func upTestbed(t *testing.T, up, down string) *lab.Testbed {
	t.Helper()
	roottest.NeedRoot(t)
	parse := func(s string) []qdisc.Spec {
		specs, err := tcspec.ParseChain(s, tcspec.Options{})
		if err != nil {
			t.Fatalf("ParseChain(%q): %v", s, err)
		}
		return specs
	}
	tb, err := lab.Up(context.Background(), lab.Options{Name: fmt.Sprintf("tq%06x", rand.Uint32()&0xffffff), Up: parse(up), Down: parse(down)})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return tb
}

// A 10 s QUIC upload through a 20 Mbit/s token bucket with 20 ms of delay
// each way reaches at least 85 % of the rate in goodput. A full-sized
// QUIC packet is at most 1452 bytes of UDP payload, some 1415 of them
// stream data, in 1480 bytes of IPv4 packet; the router's tbf counts 14
// bytes of Ethernet header more, so the goodput ceiling is about 0.95 of
// the rate. The RTT quic-go measures is the path's 40 ms plus the
// bucket's queue, and the congestion window holds at least the goodput's
// bandwidth-delay product.
func TestUploadThroughTestbed(t *testing.T) {
	const (
		rate   = 20e6
		length = 10 * time.Second
		step   = 100 * time.Millisecond
		path   = 40 * time.Millisecond
	)
	tb := upTestbed(t, "netem delay 20ms; tbf rate 20mbit burst 32k latency 50ms", "netem delay 20ms")
	noFlowLeaks(t)
	i := tb.Info()
	client := traffic.Host{Net: traffic.InNamespace(tb.Namespace(lab.Client)), Addr: i.Client.Addr4}
	server := traffic.Host{Net: traffic.InNamespace(tb.Namespace(lab.Server)), Addr: i.Server.Addr4}
	roottest.Twice(t, "QUIC upload", func(rep roottest.Reporter) {
		before := tb.Snapshot().Up.Counters
		f := traffictest.Must(t, New, Config{Label: "QUIC upload", Client: client, Server: server, Dir: traffic.Up, Stop: length})
		// The run lasts a little longer than the flow, for the receiver
		// to read what is still queued when the sender stops.
		res, err := traffic.Run(context.Background(), traffic.Plan{Step: step, Length: length + 500*time.Millisecond, Flows: []traffic.Flow{f}})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Flows[0].(*Result)
		if r.Error != "" || !r.Connected || !r.Complete || r.ReceivedBytes != r.SentBytes {
			t.Fatalf("error %q, connected %v, complete %v, sent %d, received %d", r.Error, r.Connected, r.Complete, r.SentBytes, r.ReceivedBytes)
		}
		// Goodput over the flow's window: what the receiver had read by
		// the grid point at Stop, over the time from Start to it.
		var atStop Sample
		for _, s := range r.Samples {
			if s.K == int(length/step) {
				atStop = s
			}
		}
		if atStop.K == 0 {
			t.Fatalf("no sample at the flow's stop (k=%d)", length/step)
		}
		goodput := float64(atStop.ReceivedBytes) * 8 / atStop.T.Sub(res.T0).Seconds()
		up := tb.Snapshot().Up.Counters
		last := r.Samples[len(r.Samples)-1].Sender
		// The bucket's drops are the path's only losses: quic-go declares
		// lost some of them, all but those that carried acknowledgements
		// alone, which are not acknowledged in turn (RFC 9002 §6).
		if dropped := up.Dropped - before.Dropped; last.PacketsLost > dropped || (dropped > 0) != (last.PacketsLost > 0) {
			t.Errorf("quic-go declared %d packets lost, the router dropped %d", last.PacketsLost, dropped)
		}
		rep.Logf("goodput %.2f Mbit/s (%.1f %% of the rate) over %v; %d packets lost (%d spurious), %d stream bytes retransmitted; router: %d packets delivered, %d dropped; max UDP payload %d, GSO %v",
			goodput/1e6, 100*goodput/rate, atStop.T.Sub(res.T0).Round(time.Millisecond), last.PacketsLost, last.SpuriousLosses, last.BytesRetrans,
			up.Delivered-before.Delivered, up.Dropped-before.Dropped, last.MaxUDPPayload, r.Sender.GSO)
		if goodput < 0.85*rate {
			rep.Errorf("goodput %.2f Mbit/s, want at least 85 %% of %.0f Mbit/s", goodput/1e6, rate/1e6)
		}
		checkPathStats(rep, r, res.T0, length, path, goodput)
	})
}

// checkPathStats judges the sender's recovery state through the testbed
// over the second half of the transfer, once slow start is long over: the
// minimum RTT is the path's, the smoothed RTT the path's plus the bucket's
// queue, which holds at most 50 ms of latency and a 32 kB burst at
// 20 Mbit/s, some 63 ms (single samples can see more, when a host's thread
// waits for a CPU), and by Little's law the bytes in flight over the
// smoothed RTT carry the goodput (plus packet overhead, at most a tenth
// more).
func checkPathStats(rep roottest.Reporter, r *Result, t0 clock.Time, length, path time.Duration, goodput float64) {
	var n int
	var srtt time.Duration
	var inFlight, cwnd float64
	for _, s := range r.Samples {
		at := s.T.Sub(t0)
		if at < length/2 || at > length {
			continue
		}
		e := s.Sender
		if e.MinRTT < path || e.MinRTT > path+5*time.Millisecond {
			rep.Errorf("%v: min_rtt %v, want the path's %v (+5 ms)", at, e.MinRTT, path)
		}
		if e.SRTT < path {
			rep.Errorf("%v: srtt %v, below the path's %v", at, e.SRTT, path)
		}
		n++
		srtt += e.SRTT
		inFlight += float64(e.BytesInFlight)
		cwnd += float64(e.Cwnd)
	}
	if n < 40 {
		rep.Errorf("%d samples in the second half of the transfer", n)
		return
	}
	srtt /= time.Duration(n)
	inFlight /= float64(n)
	cwnd /= float64(n)
	carried := inFlight * 8 / srtt.Seconds()
	rep.Logf("second half, sender means: srtt %v, cwnd %.0f bytes, %.0f bytes in flight, which carry %.2f Mbit/s over the srtt", srtt.Round(100*time.Microsecond), cwnd, inFlight, carried/1e6)
	if srtt > path+70*time.Millisecond {
		rep.Errorf("mean srtt %v, want the path's %v plus at most 70 ms of queue", srtt, path)
	}
	if carried < 0.9*goodput || carried > 1.25*goodput {
		rep.Errorf("bytes in flight over srtt carry %.2f Mbit/s, the goodput is %.2f Mbit/s", carried/1e6, goodput/1e6)
	}
	// quic-go sends while the bytes in flight are below the window, so
	// the last packet sent can take them past it by up to one packet.
	onePacket := float64(r.Samples[len(r.Samples)-1].Sender.MaxUDPPayload)
	if cwnd+onePacket < inFlight {
		rep.Errorf("mean cwnd %.0f bytes below the mean bytes in flight, %.0f, by more than one packet (%.0f bytes)", cwnd, inFlight, onePacket)
	}
}
