package tfrc

import (
	"math"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
)

func newSender(t *testing.T, cfg SenderConfig) *Sender {
	t.Helper()
	if cfg.PacketSize == 0 {
		cfg.PacketSize = 1000
	}
	s, err := NewSender(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Abs(want) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

// feedback makes feedback arriving at now for the packet sent at echo,
// held delay at the receiver.
func feedback(echo clock.Time, delay time.Duration, xRecv, p float64) Feedback {
	return Feedback{Echo: echo, Delay: delay, XRecv: xRecv, P: p}
}

// busySender returns a sender with a long queue (never data-limited)
// whose first packet left at 0.
func busySender(t *testing.T) *Sender {
	s := newSender(t, SenderConfig{})
	for range 10000 {
		s.Enqueue(0)
	}
	s.Poll(0)
	return s
}

// fedSender is a busySender that had its first feedback, of no loss, at
// 40 ms: R = 40 ms and X = 100000 B/s.
func fedSender(t *testing.T) *Sender {
	s := busySender(t)
	s.OnFeedback(40*ms, feedback(0, 0, 0, 0))
	return s
}

// A data-limited sender keeps its largest X_recv instead of letting it age
// out, and on a loss halves it and takes 0.85 of the new report (§4.3).
func TestDataLimitedFeedback(t *testing.T) {
	s := newSender(t, SenderConfig{})
	s.Enqueue(0)
	s.Poll(0) // the application has nothing more to send
	s.OnFeedback(40*ms, feedback(0, 0, 0, 0))
	s.OnFeedback(100*ms, feedback(60*ms, 0, 80000, 0))
	near(t, "X", s.Rate(), 160000)
	s.OnFeedback(300*ms, feedback(260*ms, 0, 1000, 0))
	// A busy sender would now be bounded by 2·1000 (floored at W_init/R =
	// 100000); the data-limited one keeps 80000 and doubles to 2·80000.
	near(t, "X of a data-limited sender", s.Rate(), 160000)
	if xr := s.Stats().XRecv; xr != 80000 {
		t.Errorf("X_recv_set keeps %g, want 80000", xr)
	}
	s.OnFeedback(400*ms, feedback(360*ms, 0, 60000, 0.001))
	// max(80000/2, 0.85·60000) = 51000, not doubled.
	near(t, "X after a loss while data-limited", s.Rate(), 51000)
}

func TestSenderConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  SenderConfig
		want string
	}{
		{SenderConfig{PacketSize: 24}, "must exceed the 24-byte header"},
		{SenderConfig{PacketSize: 1000, TxQueueLen: -1}, "use 0 for an unbounded queue"},
		{SenderConfig{PacketSize: 1000, TimerGranularity: -1}, "use 0 for the default"},
		{SenderConfig{PacketSize: 1000, InitialRTT: -1}, "use 0 if none"},
	} {
		if _, err := NewSender(c.cfg, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewSender(%+v): %v, want an error saying %q", c.cfg, err, c.want)
		}
	}
}

func TestTransmitQueue(t *testing.T) {
	s := newSender(t, SenderConfig{TxQueueLen: 5})
	for i := range 5 {
		if !s.Enqueue(0) {
			t.Fatalf("Enqueue %d refused below the limit", i)
		}
	}
	if s.Enqueue(0) || !s.Full() || s.Queued() != 5 {
		t.Fatalf("a sixth packet: accepted or queue not full (%d queued)", s.Queued())
	}
	if _, ok := s.Poll(0); !ok {
		t.Fatal("the first packet does not leave at once")
	}
	if !s.Enqueue(0) {
		t.Error("Enqueue refused after a packet left")
	}
	u := newSender(t, SenderConfig{TxQueueLen: 0})
	for i := range 100000 {
		if !u.Enqueue(0) {
			t.Fatalf("unbounded queue refused packet %d", i)
		}
	}
}

// §4.2: one packet per second until the first RTT sample, then W_init/R.
func TestInitialRate(t *testing.T) {
	s := newSender(t, SenderConfig{TxQueueLen: 0})
	for range 10 {
		s.Enqueue(0)
	}
	h, ok := s.Poll(0)
	if !ok || h.Seq != 0 || h.RTT != 0 {
		t.Fatalf("first packet %+v %v, want seq 0 at once without an RTT", h, ok)
	}
	if _, ok := s.Poll(500 * ms); ok {
		t.Fatal("a second packet within the first second")
	}
	// t_ipi = 1 s, delta = min(t_ipi, t_gran)/2 = 0.5 ms.
	if d := s.Deadline(); d != clock.Time(time.Second)-ms/2 {
		t.Errorf("deadline %v, want 999.5ms", d)
	}
	// Feedback at 50 ms for the packet sent at 0, held 10 ms: R = 40 ms.
	s.OnFeedback(50*ms, feedback(0, 10*time.Millisecond, 0, 0))
	st := s.Stats()
	if st.RTT != 40*time.Millisecond {
		t.Errorf("RTT %v, want 40ms", st.RTT)
	}
	// W_init = min(4·1000, max(2·1000, 4380)) = 4000 bytes.
	near(t, "X after the first feedback", st.X, 4000/0.04)
	// t_ipi is now 10 ms: the second packet is due 10 ms after the first.
	if _, ok := s.Poll(50 * ms); !ok {
		t.Error("no packet at the new rate")
	}
	if h, _ := s.Poll(50 * ms); h.RTT != 0 {
		t.Errorf("header RTT %v", h.RTT)
	}
	if h, ok := s.Poll(60 * ms); !ok || h.RTT != 40*time.Millisecond {
		t.Errorf("packet at 60ms: %+v %v, want one carrying R = 40ms", h, ok)
	}
}

// Slow start doubles X once per RTT, bounded by 2·max(X_recv_set) and
// never below W_init/R (§4.3 step 4).
func TestSlowStartBoundedByTwiceXRecv(t *testing.T) {
	s := busySender(t)
	s.OnFeedback(40*ms, feedback(0, 0, 0, 0)) // R = 40 ms, X = 100000
	// At 100 ms the initial infinite entry is more than 2R old and gone:
	// recv_limit = 2·80000.
	s.OnFeedback(100*ms, feedback(60*ms, 0, 80000, 0))
	near(t, "X bounded by 2·X_recv", s.Rate(), 160000)
	// At 150 ms X_recv_set = {80000@100ms, 150000@150ms}: recv_limit
	// 300000 < 2·160000.
	s.OnFeedback(150*ms, feedback(110*ms, 0, 150000, 0))
	near(t, "X bounded by 2·max(X_recv_set)", s.Rate(), 300000)
	// Less than an RTT since the last doubling: no change.
	s.OnFeedback(160*ms, feedback(120*ms, 0, 1e9, 0))
	near(t, "X within an RTT of the last doubling", s.Rate(), 300000)
	// A large X_recv lets it double.
	s.OnFeedback(200*ms, feedback(160*ms, 0, 1e9, 0))
	near(t, "X doubled", s.Rate(), 600000)
	// A small X_recv cannot take it below W_init/R.
	s = busySender(t)
	s.OnFeedback(40*ms, feedback(0, 0, 0, 0))
	s.OnFeedback(100*ms, feedback(60*ms, 0, 1000, 0))
	near(t, "X floored at the initial rate", s.Rate(), 100000)
}

// With p > 0, X = max(min(X_calc, 2·max(X_recv_set)), s/t_mbi).
func TestRateFromTheEquation(t *testing.T) {
	s := busySender(t)
	s.OnFeedback(40*ms, feedback(0, 0, 0, 0))
	// R stays 40 ms: every sample is 40 ms.
	s.OnFeedback(100*ms, feedback(60*ms, 0, 1e7, 0.01))
	near(t, "X = X_calc", s.Rate(), Throughput(1000, 40*time.Millisecond, 0.01))
	s = busySender(t)
	s.OnFeedback(40*ms, feedback(0, 0, 0, 0))
	// X_calc(p = 1e-4) is about 3.06e6 bytes/s.
	s.OnFeedback(100*ms, feedback(60*ms, 0, 1e6, 1e-4))
	near(t, "X = 2·X_recv", s.Rate(), 2e6)
	s.OnFeedback(140*ms, feedback(100*ms, 0, 1000, 1e-4))
	near(t, "X = 2·max(X_recv_set), an older report still in it", s.Rate(), 2e6)
	// (At 300 ms the nofeedback timer set at 140 ms would expire first.)
	s.OnFeedback(290*ms, feedback(250*ms, 0, 1000, 1e-4))
	near(t, "X = 2·X_recv once older reports are gone", s.Rate(), 2000)
	s.OnFeedback(400*ms, feedback(360*ms, 0, 0, 1))
	near(t, "X floor s/t_mbi", s.Rate(), 1000/64.0)
}

// RTT samples are smoothed with q = 0.9.
func TestRTTEstimate(t *testing.T) {
	s := newSender(t, SenderConfig{})
	s.Enqueue(0)
	s.Poll(0)
	s.OnFeedback(100*ms, feedback(0, 20*time.Millisecond, 0, 0)) // 80 ms
	s.OnFeedback(300*ms, feedback(200*ms, 0, 1e6, 0))            // 100 ms
	if want := time.Duration(0.9*80e6 + 0.1*100e6); s.RTT() != want {
		t.Errorf("R = %v, want %v", s.RTT(), want)
	}
	bad := s.Stats().BadFeedback
	s.OnFeedback(310*ms, feedback(320*ms, 0, 1e6, 0))                   // echo in the future
	s.OnFeedback(310*ms, feedback(300*ms, 20*time.Millisecond, 1e6, 0)) // negative sample
	if got := s.Stats().BadFeedback - bad; got != 2 {
		t.Errorf("%d bad feedbacks counted, want 2", got)
	}
}

// The nofeedback timer halves X at each expiry and restarts after
// max(4R, 2s/X) (§4.4).
func TestNoFeedbackTimerHalves(t *testing.T) {
	s := fedSender(t) // R = 40 ms, X = 100000 B/s
	// The timer runs from the feedback: RTO = max(4R, 2s/X) = 160 ms.
	at := 40 * ms
	x := s.Rate()
	rto := max(160*time.Millisecond, time.Duration(2*1000/x*1e9))
	if s.Stats().RTO != rto {
		t.Fatalf("RTO %v, want %v", s.Stats().RTO, rto)
	}
	for i := range 13 {
		at = at.Add(rto)
		// The sender keeps sending (it is not idle), so every expiry
		// halves X (p = 0: X = max(X/2, s/t_mbi)).
		for now := at - clock.Time(rto) + ms; now < at; now += 5 * ms {
			for ok := true; ok; _, ok = s.Poll(now) {
			}
		}
		if s.Rate() != x {
			t.Fatalf("expiry %d: X changed before the timer expired", i)
		}
		s.Poll(at)
		if s.Stats().NoFeedback != uint64(i+1) {
			t.Fatalf("expiry %d at %v: %d expiries counted", i, at, s.Stats().NoFeedback)
		}
		x = max(x/2, 1000/64.0)
		near(t, "X after an expiry", s.Rate(), x)
		rto = max(160*time.Millisecond, time.Duration(2*1000/x*float64(time.Second)))
	}
	// After 13 halvings X is at its floor of one packet per 64 s, and the
	// timer waits 2s/X = 128 s.
	near(t, "X at the floor", s.Rate(), 1000/64.0)
	if d := s.Deadline(); d < at.Add(128*time.Second)-ms && s.Queued() == 0 {
		t.Errorf("deadline %v, want the timer 128s after %v", d, at)
	}
}

// An idle sender whose rate is already below twice the recover rate keeps
// it (§4.4); one that was sending halves.
func TestNoFeedbackTimerIdle(t *testing.T) {
	s := newSender(t, SenderConfig{})
	s.Enqueue(0)
	s.Poll(0)
	s.OnFeedback(40*ms, feedback(0, 0, 0, 0)) // X = W_init/R = recover rate
	s.Poll(40*ms + 160*ms)                    // expiry, idle since the feedback
	if st := s.Stats(); st.NoFeedback != 1 || st.X != 100000 {
		t.Errorf("idle expiry: %+v, want X kept at 100000", st)
	}
	s.Enqueue(200 * ms)
	s.Poll(200 * ms) // sends: no longer idle
	s.Poll(200*ms + 160*ms)
	if st := s.Stats(); st.NoFeedback != 2 || st.X != 50000 {
		t.Errorf("busy expiry: %+v, want X halved to 50000", st)
	}
}

// With p > 0 an expiry halves whichever limited X: 2·X_recv or X_calc.
func TestNoFeedbackTimerAfterLoss(t *testing.T) {
	s := fedSender(t)
	s.OnFeedback(100*ms, feedback(60*ms, 0, 20000, 0.01))
	// X_calc(1000 B, 40 ms, 0.01) ≈ 0.6 MB/s > 2·X_recv: X = 40000.
	near(t, "X", s.Rate(), 40000)
	rto := s.Stats().RTO
	s.Poll(100*ms + 1)
	s.Poll(100*ms + clock.Time(rto))
	near(t, "X after the expiry (X_recv)", s.Rate(), 20000)
	s2 := fedSender(t)
	s2.OnFeedback(100*ms, feedback(60*ms, 0, 1e9, 0.1))
	xc := Throughput(1000, 40*time.Millisecond, 0.1)
	near(t, "X = X_calc", s2.Rate(), xc)
	s2.Poll(100*ms + 1)
	s2.Poll(100*ms + clock.Time(s2.Stats().RTO))
	near(t, "X after the expiry (X_calc/2)", s2.Rate(), xc/2)
}

// Packets leave t_ipi = s/X apart, up to delta early; a sender woken late
// catches up with a burst of at most maxLag's worth.
func TestPacing(t *testing.T) {
	s := fedSender(t) // X = 100000: t_ipi = 10 ms
	var times []clock.Time
	for now := 40 * ms; now < 140*ms; now += clock.Time(100 * time.Microsecond) {
		if _, ok := s.Poll(now); ok {
			times = append(times, now)
		}
	}
	// 40.0 (the last nominal time was 0), then every 10 ms, 0.5 ms early.
	want := []clock.Time{40 * ms, 49*ms + ms/2, 59*ms + ms/2, 69*ms + ms/2, 79*ms + ms/2, 89*ms + ms/2, 99*ms + ms/2, 109*ms + ms/2, 119*ms + ms/2, 129*ms + ms/2, 139*ms + ms/2}
	if len(times) != len(want) {
		t.Fatalf("sent at %v, want %v", times, want)
	}
	for i := range times {
		if times[i] != want[i] {
			t.Errorf("packet %d at %v, want %v", i, times[i], want[i])
		}
	}
	// Asleep for 50 ms (within the nofeedback timer's 160 ms): at most
	// 2·t_ipi of credit, so a burst of 3, nominally at 170, 180, 190 ms.
	n := 0
	for {
		if _, ok := s.Poll(190 * ms); !ok {
			break
		}
		n++
	}
	if n != 3 {
		t.Errorf("burst of %d after a long sleep, want 3", n)
	}
	if d := s.Deadline(); d != 200*ms-ms/2 {
		t.Errorf("next deadline %v, want 199.5ms", d)
	}
}

func BenchmarkSenderPoll(b *testing.B) {
	s, _ := NewSender(SenderConfig{PacketSize: 1000}, 0)
	s.Enqueue(0)
	s.Poll(0)
	s.OnFeedback(40*ms, Feedback{Echo: 0, XRecv: 0})
	now := 40 * ms
	b.ReportAllocs()
	for i := range b.N {
		s.Enqueue(now)
		s.Poll(now)
		now += clock.Time(10 * time.Millisecond)
		if i%4 == 0 {
			s.OnFeedback(now, Feedback{Echo: now - 40*ms, XRecv: 1e6, P: 0.01})
		}
	}
}
