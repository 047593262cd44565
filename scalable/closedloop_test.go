package scalable

import (
	"math"
	"slices"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

// The closed-loop tests run a Sender and a Receiver through a simple model
// of an L4S bottleneck on a virtual clock: a FIFO served at a fixed rate
// that marks CE on every ECT packet whose queueing delay exceeds a step
// threshold (as fq_codel's ce_threshold and DualPI2's L queue do), with a
// fixed one-way delay each way and a tail-drop limit. No real time passes.

const loopPacketSize = 1500 - 28 // a full-MTU UDP/IPv4 datagram's payload

type timed[T any] struct {
	at clock.Time
	v  T
}

// bottleneck is the model's path.
type bottleneck struct {
	rate      float64       // bits/s of IP packets
	owd       time.Duration // one-way delay each way, beyond the queue
	threshold time.Duration // CE when the queueing delay exceeds it
	limit     time.Duration // tail drop when the queueing delay would exceed it
	drop      func(seq uint64) bool
	ackEvery  int // the receiver's (0: every packet)
}

type loopStats struct {
	at        clock.Time
	delivered uint64 // bytes at the receiver
	packets   uint64
	ce        uint64
	snd       SenderStats
}

type loopRun struct {
	samples []loopStats
	qdelay  []time.Duration // each packet's queueing delay, from 5 s on
	drops   int
}

func (r *loopRun) at(t time.Duration) loopStats {
	for _, s := range r.samples {
		if s.at >= clock.Time(t) {
			return s
		}
	}
	return r.samples[len(r.samples)-1]
}

// throughput is the receiver's rate of IP bytes over [from, to], bits/s.
func (r *loopRun) throughput(from, to time.Duration) float64 {
	a, b := r.at(from), r.at(to)
	return float64(b.delivered-a.delivered+28*(b.packets-a.packets)) * 8 / b.at.Sub(a.at).Seconds()
}

// ceFraction is the fraction of packets received CE over [from, to].
func (r *loopRun) ceFraction(from, to time.Duration) float64 {
	a, b := r.at(from), r.at(to)
	return float64(b.ce-a.ce) / float64(b.packets-a.packets)
}

// meanAlpha averages α over the samples in [from, to].
func (r *loopRun) meanAlpha(from, to time.Duration) float64 {
	sum, n := 0.0, 0
	for _, s := range r.samples {
		if s.at >= clock.Time(from) && s.at <= clock.Time(to) {
			sum += s.snd.Alpha
			n++
		}
	}
	return sum / float64(n)
}

func (r *loopRun) meanQueueDelay() time.Duration {
	var sum time.Duration
	for _, d := range r.qdelay {
		sum += d
	}
	return sum / time.Duration(len(r.qdelay))
}

func (r *loopRun) quantileQueueDelay(q float64) time.Duration {
	c := slices.Clone(r.qdelay)
	slices.Sort(c)
	return c[min(len(c)-1, int(q*float64(len(c))))]
}

// runLoop runs a bulk transfer for dur through b, calling each(now, snd)
// after every step, and samples every 10 ms.
func runLoop(t testing.TB, b bottleneck, dur time.Duration, each func(clock.Time, *Sender)) *loopRun {
	t.Helper()
	snd, err := NewSender(SenderConfig{PacketSize: loopPacketSize}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rcv, err := NewReceiver(ReceiverConfig{AckEvery: b.ackEvery})
	if err != nil {
		t.Fatal(err)
	}
	type data struct {
		h   DataHeader
		ecn packet.ECN
	}
	var (
		now      clock.Time
		linkFree clock.Time
		toRcv    []timed[data]
		toSnd    []timed[[]byte]
		run      = &loopRun{}
		next     clock.Time
		wire     []byte
		stuck    int
	)
	ser := time.Duration(float64(loopPacketSize+28) * 8 / b.rate * 1e9)
	const sampleEvery = 10 * time.Millisecond
	for now <= clock.Time(dur) {
		for {
			h, ok := snd.Poll(now)
			if !ok {
				break
			}
			start := max(now, linkFree)
			wait := start.Sub(now)
			if wait > b.limit || (b.drop != nil && b.drop(h.Seq)) {
				run.drops++
				continue
			}
			linkFree = start.Add(ser)
			ecn := packet.ECT1
			if wait > b.threshold {
				ecn = packet.CE
			}
			if now >= clock.Time(5*time.Second) {
				run.qdelay = append(run.qdelay, wait)
			}
			toRcv = append(toRcv, timed[data]{linkFree.Add(b.owd), data{h, ecn}})
		}
		for len(toRcv) > 0 && toRcv[0].at <= now {
			d := toRcv[0].v
			toRcv = toRcv[1:]
			rcv.OnData(now, d.h, loopPacketSize, d.ecn)
		}
		for {
			a, ok := rcv.Poll(now)
			if !ok {
				break
			}
			wire = AppendAck(nil, a)
			toSnd = append(toSnd, timed[[]byte]{now.Add(b.owd), wire})
		}
		for len(toSnd) > 0 && toSnd[0].at <= now {
			a, err := ParseAck(toSnd[0].v)
			if err != nil {
				t.Fatal(err)
			}
			toSnd = toSnd[1:]
			snd.OnAck(now, a)
		}
		if each != nil {
			each(now, snd)
		}
		if now >= next {
			rs := rcv.Stats()
			run.samples = append(run.samples, loopStats{at: now, delivered: rs.Bytes, packets: rs.Packets, ce: rs.CEPackets, snd: snd.Stats()})
			next = next.Add(sampleEvery)
		}
		n := min(snd.Deadline(), rcv.Deadline(), next)
		if len(toRcv) > 0 {
			n = min(n, toRcv[0].at)
		}
		if len(toSnd) > 0 {
			n = min(n, toSnd[0].at)
		}
		if n <= now {
			// An ACK opened the window after this step's Poll.
			if stuck++; stuck > 100 {
				t.Fatalf("no progress at %v: sender %v, receiver %v", now, snd.Deadline(), rcv.Deadline())
			}
			continue
		}
		stuck = 0
		now = n
	}
	return run
}

// l4sPath is 10 Mbit/s, a 20 ms base RTT, step marking at 1.5 ms of
// queueing delay and a 50 ms tail-drop limit. (A 1500-byte packet takes
// 1.2 ms at 10 Mbit/s: a step below that marks every packet that waits
// behind another, as TestClosedLoopStepMarking shows.)
var l4sPath = bottleneck{rate: 10e6, owd: 10 * time.Millisecond, threshold: 1500 * time.Microsecond, limit: 50 * time.Millisecond}

// With step marking the flow fills the link while the queue stays near
// the threshold, and α tracks the fraction of packets marked. At 1 ms, a
// step shorter than one packet's transmission, no packet may wait behind
// another unmarked: DCTCP's window then swings below the path's product
// (its threshold is under the BDP/7 that RFC 8257's analysis asks), and
// the link is less full.
func TestClosedLoopStepMarking(t *testing.T) {
	for _, c := range []struct {
		threshold time.Duration
		minUse    float64
	}{{1500 * time.Microsecond, 0.9}, {2 * time.Millisecond, 0.95}, {time.Millisecond, 0.8}} {
		t.Run(c.threshold.String(), func(t *testing.T) {
			b := l4sPath
			b.threshold = c.threshold
			r := runLoop(t, b, 30*time.Second, nil)
			thr := r.throughput(5*time.Second, 30*time.Second)
			ce := r.ceFraction(5*time.Second, 30*time.Second)
			alpha := r.meanAlpha(5*time.Second, 30*time.Second)
			end := r.samples[len(r.samples)-1].snd
			t.Logf("throughput %.3f Mbit/s over 5-30 s; queue delay mean %v, p99 %v, max %v; CE fraction %.3f, mean α %.3f; cwnd %.1f, SRTT %v; %d CE reductions, %d loss reductions, %d drops",
				thr/1e6, r.meanQueueDelay(), r.quantileQueueDelay(0.99), r.quantileQueueDelay(1), ce, alpha, end.Cwnd, end.SRTT, end.CEReductions, end.LossReductions, r.drops)
			if thr < c.minUse*b.rate {
				t.Errorf("throughput %.3f Mbit/s, want over %.0f %% of 10 Mbit/s", thr/1e6, 100*c.minUse)
			}
			if d := r.meanQueueDelay(); d > b.threshold+time.Millisecond {
				t.Errorf("mean queueing delay %v, want near the %v threshold", d, b.threshold)
			}
			if d := r.quantileQueueDelay(0.99); d > 5*time.Millisecond {
				t.Errorf("99th percentile of the queueing delay %v, want a few ms at most", d)
			}
			if r.drops != 0 || end.LossReductions != 0 {
				t.Errorf("%d drops, %d loss reductions: marks alone should hold the queue", r.drops, end.LossReductions)
			}
			if ce <= 0 || math.Abs(alpha-ce) > 0.1*ce {
				t.Errorf("mean α %.3f, CE fraction %.3f: want α within 10 %% of the marking fraction", alpha, ce)
			}
		})
	}
}

// One lost packet in steady state halves the window, once.
func TestClosedLoopLossHalves(t *testing.T) {
	var dropSeq uint64 = math.MaxUint64
	var before, after float64
	var reductionsBefore uint64
	b := l4sPath
	b.drop = func(seq uint64) bool { return seq == dropSeq }
	r := runLoop(t, b, 12*time.Second, func(now clock.Time, s *Sender) {
		st := s.Stats()
		switch {
		case dropSeq == math.MaxUint64 && now >= clock.Time(10*time.Second) && !st.SlowStart:
			dropSeq = s.next
			reductionsBefore = st.LossReductions
		case dropSeq != math.MaxUint64 && after == 0 && st.LossReductions > reductionsBefore:
			after = st.Cwnd
		case dropSeq != math.MaxUint64 && after == 0:
			before = st.Cwnd
		}
	})
	end := r.samples[len(r.samples)-1].snd
	t.Logf("cwnd %.2f before the loss, %.2f after; %d loss reductions, %d lost", before, after, end.LossReductions, end.Lost)
	if end.LossReductions != 1 || end.Lost != 1 {
		t.Errorf("%d loss reductions, %d packets lost; want 1 and 1", end.LossReductions, end.Lost)
	}
	if math.Abs(after-before/2) > 0.01 {
		t.Errorf("cwnd %.2f after the loss, want half of %.2f", after, before)
	}
}

// A path that loses everything for a second: the retransmission timer
// fires (backing off), the window restarts from one packet, and the flow
// fills the link again within a few seconds of the path's return.
func TestClosedLoopBlackout(t *testing.T) {
	b := l4sPath
	var now clock.Time
	b.drop = func(uint64) bool { return now >= clock.Time(5*time.Second) && now < clock.Time(6*time.Second) }
	r := runLoop(t, b, 15*time.Second, func(n clock.Time, _ *Sender) { now = n })
	end := r.samples[len(r.samples)-1].snd
	thr := r.throughput(9*time.Second, 15*time.Second)
	t.Logf("%d timeouts, %d lost, %d loss reductions; %.3f Mbit/s over 9-15 s, cwnd %.1f", end.Timeouts, end.Lost, end.LossReductions, thr/1e6, end.Cwnd)
	if end.Timeouts == 0 || end.Lost == 0 {
		t.Errorf("%d timeouts, %d lost: want the blackout seen", end.Timeouts, end.Lost)
	}
	if thr < 0.9*l4sPath.rate {
		t.Errorf("%.3f Mbit/s after the blackout, want over 90 %% of the rate again", thr/1e6)
	}
}

// With an ACK for every second packet (and the 1 ms delayed ACK for a
// lone one) the counters still give α and the flow still fills the link.
func TestClosedLoopAckEverySecond(t *testing.T) {
	b := l4sPath
	b.ackEvery = 2
	r := runLoop(t, b, 20*time.Second, nil)
	thr := r.throughput(5*time.Second, 20*time.Second)
	ce := r.ceFraction(5*time.Second, 20*time.Second)
	alpha := r.meanAlpha(5*time.Second, 20*time.Second)
	t.Logf("throughput %.3f Mbit/s; queue delay mean %v, p99 %v; CE fraction %.3f, mean α %.3f", thr/1e6, r.meanQueueDelay(), r.quantileQueueDelay(0.99), ce, alpha)
	if thr < 0.9*b.rate {
		t.Errorf("throughput %.3f Mbit/s, want over 90 %% of 10 Mbit/s", thr/1e6)
	}
	if ce <= 0 || math.Abs(alpha-ce) > 0.25*ce {
		t.Errorf("mean α %.3f, CE fraction %.3f: want α within 25 %% of the marking fraction", alpha, ce)
	}
}
