package tfrc

import (
	"math"
	"testing"
	"time"

	"wanlab/clock"
)

const ms = clock.Time(time.Millisecond)

// feeder hands a receiver packets of 1000 bytes, packet seq arriving at
// seq ms, with the sender's RTT estimate rtt, skipping the lost ones.
type feeder struct {
	r   *Receiver
	rtt time.Duration
}

func (f feeder) arrive(seq uint64) {
	f.r.OnData(clock.Time(seq)*ms, DataHeader{Seq: seq, Timestamp: clock.Time(seq) * ms, RTT: f.rtt}, 1000)
}

// run delivers seqs from..to inclusive except those in lost.
func (f feeder) run(from, to uint64, lost ...uint64) {
	skip := map[uint64]bool{}
	for _, s := range lost {
		skip[s] = true
	}
	for s := from; s <= to; s++ {
		if !skip[s] {
			f.arrive(s)
		}
	}
}

func TestReorderingWithinNDupAckIsNotLoss(t *testing.T) {
	r := NewReceiver()
	f := feeder{r, 10 * time.Millisecond}
	f.run(0, 4)
	f.arrive(6)
	f.arrive(7)
	f.arrive(5) // two places late
	f.run(8, 20)
	if st := r.Stats(); st.Lost != 0 || st.LossEvents != 0 || st.Packets != 21 {
		t.Errorf("stats %+v, want 21 packets and no loss", st)
	}
	f.arrive(22)
	f.arrive(23)
	if r.Stats().Lost != 0 {
		t.Fatalf("21 declared lost after two later packets")
	}
	f.arrive(24)
	if st := r.Stats(); st.Lost != 1 || st.LossEvents != 1 {
		t.Errorf("after three later packets: %+v, want 1 lost in 1 loss event", st)
	}
	f.arrive(21) // too late: it stays lost in the history
	if st := r.Stats(); st.Late != 1 || st.Lost != 1 || st.Packets != 25 {
		t.Errorf("late arrival: %+v, want Late 1, Lost 1, Packets 25", st)
	}
	f.arrive(21)
	f.arrive(24)
	if st := r.Stats(); st.Duplicates != 2 || st.Packets != 25 {
		t.Errorf("duplicates: %+v, want Duplicates 2, Packets 25", st)
	}
}

// expectedFirstInterval is what §6.3.1 synthesises for the feeder's flow
// (1000-byte packets every ms: 1e6 bytes/s) and RTT 10 ms.
func expectedFirstInterval() float64 {
	return 1 / LossEventRateFor(1000, 10*time.Millisecond, 1e6)
}

// Losses at T_old + R belong to the current loss event, one later starts a
// new one (§5.2); the intervals run between the first losses of events.
func TestLossEventsAndIntervals(t *testing.T) {
	r := NewReceiver()
	f := feeder{r, 10 * time.Millisecond}
	// Events start at 100 (with 105 and 110 in it), 111, 300.
	f.run(0, 400, 100, 105, 110, 111, 120, 300, 301)
	st := r.Stats()
	if st.Lost != 7 || st.LossEvents != 3 {
		t.Fatalf("stats %+v, want 7 lost in 3 loss events", st)
	}
	// Packet 103 arrived at 103 ms having brought 103 packets since 0 ms:
	// X_recv = 1e6 bytes/s when the first loss was detected.
	first := expectedFirstInterval()
	if got := r.hist.closed[2]; math.Abs(got-first) > 1e-6*first {
		t.Errorf("synthesised first interval %g, want %g", got, first)
	}
	closed := []float64{300 - 111, 111 - 100, first}
	for i, want := range closed {
		if r.hist.closed[i] != want {
			t.Errorf("I_%d = %g, want %g", i+1, r.hist.closed[i], want)
		}
	}
	i0 := float64(400 - 300 + 1)
	if p, want := r.LossEventRate(), 1/MeanLossInterval(i0, closed); math.Abs(p-want) > 1e-12 {
		t.Errorf("p = %g, want %g", p, want)
	}
}

// A hole longer than an RTT holds several loss events: with T_loss = seq
// ms and R = 10 ms, losing 200..230 starts events at 200, 211 and 222.
func TestLongHoleSpansSeveralEvents(t *testing.T) {
	r := NewReceiver()
	f := feeder{r, 10 * time.Millisecond}
	var lost []uint64
	for s := uint64(200); s <= 230; s++ {
		lost = append(lost, s)
	}
	f.run(0, 240, lost...)
	st := r.Stats()
	if st.Lost != 31 || st.LossEvents != 3 {
		t.Fatalf("stats %+v, want 31 lost in 3 events", st)
	}
	if r.hist.openStart != 222 || r.hist.closed[0] != 11 || r.hist.closed[1] != 11 {
		t.Errorf("open interval starts at %d, closed %v; want 222 and [11 11 ...]", r.hist.openStart, r.hist.closed[:r.hist.nClosed])
	}
}

// The open interval raises the mean only once it is longer than the
// closed ones would make it (§5.4).
func TestOpenIntervalLowersP(t *testing.T) {
	r := NewReceiver()
	f := feeder{r, 10 * time.Millisecond}
	f.run(0, 200, 100, 150, 200)
	f.run(201, 210)
	pEarly := r.LossEventRate()
	closed := []float64{50, 50, expectedFirstInterval()}
	if want := 1 / MeanLossInterval(0, closed); math.Abs(pEarly-want) > 1e-12 {
		t.Errorf("p with a short open interval = %g, want %g (closed intervals only)", pEarly, want)
	}
	f.run(211, 5000)
	pLate := r.LossEventRate()
	if want := 1 / MeanLossInterval(5000-200+1, closed); math.Abs(pLate-want) > 1e-12 || pLate >= pEarly {
		t.Errorf("p with a long open interval = %g, want %g (< %g)", pLate, want, pEarly)
	}
}

func TestFeedbackSchedule(t *testing.T) {
	r := NewReceiver()
	rtt := 10 * time.Millisecond
	send := func(seq uint64, at clock.Time) {
		r.OnData(at, DataHeader{Seq: seq, Timestamp: at - 5*ms, RTT: rtt}, 1000)
	}
	send(0, 0)
	fb, ok := r.Poll(0)
	if !ok || fb.XRecv != 0 || fb.P != 0 || fb.Echo != -5*ms || fb.Delay != 0 || fb.Seq != 0 {
		t.Fatalf("first feedback %+v %v, want one at once with X_recv 0 (§6.3)", fb, ok)
	}
	if _, ok := r.Poll(0); ok {
		t.Fatal("a second feedback at once")
	}
	if d := r.Deadline(); d != clock.Never {
		t.Errorf("deadline without new data %v, want never", d)
	}
	for i := uint64(1); i <= 9; i++ {
		send(i, clock.Time(i)*ms)
	}
	if d := r.Deadline(); d != 10*ms {
		t.Errorf("deadline %v, want one RTT after the first feedback (10ms)", d)
	}
	if _, ok := r.Poll(10*ms - 1); ok {
		t.Fatal("feedback before the timer expired")
	}
	send(10, 10*ms)
	fb, ok = r.Poll(12 * ms)
	// 10 packets of 1000 bytes since the feedback at 0, over 12 ms.
	if !ok || math.Abs(fb.XRecv-10000/0.012) > 1e-6 || fb.Seq != 10 || fb.Delay != 2*time.Millisecond {
		t.Fatalf("periodic feedback %+v %v, want X_recv %g, echo of seq 10 held 2ms", fb, ok, 10000/0.012)
	}
	// The timer expires at 22 ms with no data: nothing is sent until the
	// next packet, which then gets feedback at once.
	if _, ok := r.Poll(30 * ms); ok {
		t.Fatal("feedback without new data")
	}
	send(11, 40*ms)
	if d := r.Deadline(); d > 40*ms {
		t.Errorf("deadline %v after data following an expired timer, want 40ms", d)
	}
	if _, ok := r.Poll(40 * ms); !ok {
		t.Fatal("no feedback for data after the timer expired")
	}
	// A new loss event gets feedback at once, with p > 0.
	for i := uint64(13); i <= 15; i++ {
		send(i, 40*ms+clock.Time(i))
	}
	fb, ok = r.Poll(41 * ms)
	if !ok || fb.P <= 0 {
		t.Fatalf("feedback on a loss event %+v %v, want one with p > 0", fb, ok)
	}
	if st := r.Stats(); st.Feedbacks != 4 || st.LossEvents != 1 {
		t.Errorf("stats %+v, want 4 feedbacks and 1 loss event", st)
	}
}

// A sequence number far ahead settles the ring's unresolved packets, and
// one implausibly far ahead is rejected.
func TestSequenceJumps(t *testing.T) {
	r := NewReceiver()
	f := feeder{r, 10 * time.Millisecond}
	f.run(0, 10)
	f.arrive(5000)
	if st := r.Stats(); st.Lost != 4989 || st.LossEvents == 0 {
		t.Errorf("after a jump to 5000: %+v, want 4989 lost", st)
	}
	f.run(5001, 5003)
	f.arrive(5003 + maxSeqJump + 1)
	if st := r.Stats(); st.Invalid != 1 || st.Packets != 15 {
		t.Errorf("after an implausible jump: %+v, want Invalid 1 and 15 packets", st)
	}
	f.arrive(2) // long forgotten
	if st := r.Stats(); st.Stale != 1 {
		t.Errorf("a packet older than the window: %+v, want Stale 1", st)
	}
}

func BenchmarkReceiverOnData(b *testing.B) {
	r := NewReceiver()
	b.ReportAllocs()
	for i := range b.N {
		seq := uint64(i)
		if seq%100 == 50 {
			continue // one loss in a hundred
		}
		now := clock.Time(i) * clock.Time(time.Microsecond)
		r.OnData(now, DataHeader{Seq: seq, Timestamp: now, RTT: time.Millisecond}, 1000)
		r.Poll(now)
	}
}
