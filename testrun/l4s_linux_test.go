package testrun

import (
	"testing"
	"time"

	"wanlab/catalog"
	"wanlab/internal/roottest"
	"wanlab/results"
)

// The L4S lab checks run wanlab's built-in scalable sender (l4s_upload,
// l4s_cubic) through an L4S bottleneck. l4sBottleneck is the queue under
// test: today fq_codel's ce_threshold, which marks every ECT packet whose
// sojourn exceeds 1 ms, as DualPI2's L queue's step does; when DualPI2
// lands, changing this chain (and l4sChecks' bounds) is all it takes.
const (
	l4sBottleneck = "tbf rate 10mbit burst 32k latency 50ms; fq_codel ce_threshold 1ms ecn"
	l4sOneWay     = 10 * time.Millisecond
	l4sRateMbit   = 10.0
)

// l4sChecks are the bounds the runs must meet.
var l4sChecks = struct {
	// minShare is the L4S flow's least throughput alone, as a fraction of
	// the rate; maxQueueMs the most its mean queueing delay (SRTT above
	// the least RTT) may be alone, in ms.
	minShare, maxQueueMs float64
	// minShareBeside is the least share of the link each flow of
	// l4s_cubic gets.
	minShareBeside float64
}{minShare: 0.8, maxQueueMs: 5, minShareBeside: 0.05}

func l4sOptions(test string) Options {
	o := short(test, 3*time.Second)
	delay := "netem delay " + l4sOneWay.String()
	o.Up = delay + "; " + l4sBottleneck
	o.Down = delay
	return o
}

// lastValue is the last sample of a running total.
func lastValue(t *testing.T, d *results.Document, name string) float64 {
	t.Helper()
	s := series(t, d, name)
	if len(s.Samples) == 0 {
		t.Fatalf("%s has no samples", name)
	}
	return s.Samples[len(s.Samples)-1].V
}

// meanFrom averages a series' samples from t on, up to the end of the
// load.
func meanFrom(d *results.Document, s *results.Series, from float64) float64 {
	sum, n := 0.0, 0
	end := d.Run.LeadS + d.Run.DurationS
	for _, p := range s.Samples {
		if p.T > from && p.T <= end && !p.Lost() {
			sum += p.V
			n++
		}
	}
	return sum / float64(n)
}

// queueDelayMs is the mean of SRTT less the least RTT over the load after
// its first second: the queueing delay the flow sees, both ways.
func queueDelayMs(t *testing.T, d *results.Document, label string) float64 {
	t.Helper()
	from := d.Run.LeadS + 1
	srtt := meanFrom(d, series(t, d, label+"::l4s_srtt"), from)
	return srtt - lastValue(t, d, label+"::l4s_min_rtt")
}

// l4s_upload through an L4S bottleneck: every packet leaves ECT(1) and
// arrives ECT(1) or CE (some CE), the flow fills the link, and its queue
// stays near the marking threshold. A busy machine delays the router and
// the sender's pacing, so the figures get a second attempt (and are only
// logged under the race detector).
func TestL4SUploadThroughCEThreshold(t *testing.T) {
	roottest.Twice(t, "l4s_upload", func(r roottest.Reporter) {
		d := runDoc(t, l4sOptions("l4s_upload"))
		label := catalog.L4SSeries + " upload"
		main := series(t, d, label)
		ect1 := lastValue(t, d, label+"::l4s_ect1_packets")
		ce := lastValue(t, d, label+"::l4s_ce_packets")
		other := lastValue(t, d, label+"::l4s_not_ect_packets")
		q := queueDelayMs(t, d, label)
		alpha := meanFrom(d, series(t, d, label+"::l4s_alpha"), d.Run.LeadS+1)
		ceFrac := meanFrom(d, series(t, d, label+"::l4s_ce_fraction"), d.Run.LeadS+1)
		router := series(t, d, label+"::router_queue_delay").Summary
		r.Logf("%s: %.3f Mbit/s mean over the load; %g packets arrived ECT(1), %g CE, %g other; queueing delay %.2f ms (SRTT above the least RTT; the router's delay less the path's %v: median %.2f ms, 99th %% %.2f ms); mean α %.1f %%, CE %.1f %% of packets; %g loss reductions",
			label, main.Summary.Mean, ect1, ce, other, q, l4sOneWay, router.Median-ms(l4sOneWay), router.P99-ms(l4sOneWay), alpha, ceFrac, lastValue(t, d, label+"::l4s_loss_reductions"))
		var flow *results.Flow
		for i := range d.Flows {
			if d.Flows[i].Label == label {
				flow = &d.Flows[i]
			}
		}
		if flow == nil || flow.CongestionControl != "scalable" || flow.TOS&3 != 1 {
			r.Errorf("flow %+v: want congestion control scalable and TOS with ECT(1)", flow)
		}
		if ce == 0 || ect1 == 0 || other != 0 {
			r.Errorf("%g packets arrived ECT(1), %g CE, %g Not-ECT or ECT(0): want ECT(1) and some CE, nothing else", ect1, ce, other)
		}
		if raceEnabled {
			r.Logf("under the race detector: throughput and queueing delay not judged")
			return
		}
		within(r, "throughput (Mbit/s)", main.Summary.Mean, l4sChecks.minShare*l4sRateMbit, l4sRateMbit)
		within(r, "queueing delay (ms)", q, 0, l4sChecks.maxQueueMs)
	})
}

// l4s_cubic through DualPI2 (RFC 9332), the coupled AQM L4S was made
// for: the L4S flow and CUBIC share the link within a factor of 2, and
// the L4S flow's packets wait under 2 ms in the router (their delay
// through it less the path's one-way delay). At 40 Mbit/s a classic
// packet's serialisation (0.3 ms) stays under the step threshold of 1 ms;
// at 10 Mbit/s (1.2 ms) every classic packet ahead of an L packet marks it
// by the step, and the L4S flow gets less than half of CUBIC's rate
// (measured 3.4 against 6.2 Mbit/s), as with Linux's dualpi2 at its
// default step_thresh.
func TestL4SBesideCUBICThroughDualPI2(t *testing.T) {
	const rate = 40.0
	roottest.Twice(t, "l4s_cubic dualpi2", func(r roottest.Reporter) {
		o := short("l4s_cubic", 3*time.Second)
		delay := "netem delay " + l4sOneWay.String()
		o.Up = delay + "; tbf rate 40mbit burst 64k latency 50ms; dualpi2"
		o.Down = delay
		d := runDoc(t, o)
		label := catalog.L4SSeries + " upload"
		l4s, tcp := series(t, d, label).Summary.Mean, series(t, d, "TCP upload").Summary.Mean
		queue := series(t, d, label+"::router_queue_delay").Summary.Median - ms(l4sOneWay)
		r.Logf("L4S %.3f Mbit/s, TCP (%s) %.3f Mbit/s; the L4S flow's queueing in the router: median %.2f ms", l4s, d.Flows[1].CongestionControl, tcp, queue)
		if raceEnabled {
			r.Logf("under the race detector: shares and delay not judged")
			return
		}
		within(r, "L4S / TCP rate", l4s/tcp, 0.5, 2)
		within(r, "together, share of the link", (l4s+tcp)/rate, 0.8, 1)
		within(r, "L4S queueing delay in the router (ms)", queue, 0, 2)
	})
}
