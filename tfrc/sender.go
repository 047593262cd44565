package tfrc

import (
	"fmt"
	"math"
	"time"

	"wanlab/clock"
)

const (
	// TMBI is t_mbi of RFC 5348 §4.3, the maximum backoff interval: the
	// allowed rate never falls below one packet per 64 seconds.
	TMBI = 64 * time.Second
	// InitialNoFeedback is how long the sender waits for its first
	// feedback before halving its rate (§4.2).
	InitialNoFeedback = 2 * time.Second
	// DefaultTxQueueLen is Linux DCCP's default net.dccp.default.tx_qlen.
	DefaultTxQueueLen = 5
	// DefaultTimerGranularity is t_gran when SenderConfig leaves it zero:
	// the 1 ms tick of a HZ=1000 kernel, which Linux's CCID 3 used.
	DefaultTimerGranularity = time.Millisecond
	// rttWeight is q of §4.3: R = q·R + (1-q)·R_sample.
	rttWeight = 0.9
	// xRecvSetCap bounds X_recv_set. It holds the reports of two round
	// trips, about three at one feedback per RTT, more when losses
	// trigger extra ones; the oldest goes first.
	xRecvSetCap = 8
)

// SenderConfig configures a Sender.
type SenderConfig struct {
	// PacketSize is s, the length of every data packet in bytes, header
	// included (RFC 5348 §4.1; CCID 3 uses the mean packet size, and a
	// bulk sender's packets are all this long). It must exceed
	// DataHeaderLen.
	PacketSize int
	// TxQueueLen is the transmit buffer in packets, as Linux DCCP's
	// net.dccp.default.tx_qlen: Enqueue refuses a packet while this many
	// wait to be sent. 0 means unbounded (as tx_qlen = 0 was); Linux's
	// default was DefaultTxQueueLen.
	TxQueueLen int
	// TimerGranularity is t_gran of §4.6: a packet may leave up to
	// min(t_ipi, t_gran)/2 before its nominal time. 0 means
	// DefaultTimerGranularity.
	TimerGranularity time.Duration
	// InitialRTT is an RTT measured before the first data packet (a
	// handshake's), which lets the sender start at W_init/R at once
	// (§4.2). 0 means none: the sender starts at one packet per second
	// and moves to W_init/R with its first RTT sample.
	InitialRTT time.Duration
}

func (c SenderConfig) withDefaults() (SenderConfig, error) {
	if c.PacketSize <= DataHeaderLen {
		return c, fmt.Errorf("tfrc: packet size %d leaves no room for data: it must exceed the %d-byte header (use the path MTU minus the IP and UDP headers, e.g. 1472 for IPv4 over a 1500-byte MTU)", c.PacketSize, DataHeaderLen)
	}
	if c.TxQueueLen < 0 {
		return c, fmt.Errorf("tfrc: transmit queue length %d is negative: use 0 for an unbounded queue or a number of packets (Linux's default is %d)", c.TxQueueLen, DefaultTxQueueLen)
	}
	if c.TimerGranularity < 0 {
		return c, fmt.Errorf("tfrc: timer granularity %v is negative: use 0 for the default of %v", c.TimerGranularity, DefaultTimerGranularity)
	}
	if c.InitialRTT < 0 {
		return c, fmt.Errorf("tfrc: initial RTT %v is negative: use 0 if none was measured", c.InitialRTT)
	}
	if c.TimerGranularity == 0 {
		c.TimerGranularity = DefaultTimerGranularity
	}
	return c, nil
}

// SenderStats are the sender's counters and its current state.
type SenderStats struct {
	// X is the allowed sending rate, bytes/s; XCalc the equation's rate
	// for the current R and p (+Inf while p is 0); XRecv the largest
	// receive rate in X_recv_set (0 before the first report).
	X     float64 `json:"x"`
	XCalc float64 `json:"x_calc"`
	XRecv float64 `json:"x_recv"`
	// P is the loss event rate of the latest feedback.
	P float64 `json:"p"`
	// RTT is the smoothed round-trip time R (0 before the first sample),
	// RTO the nofeedback timeout of §4.3 step 3.
	RTT time.Duration `json:"rtt_ns"`
	RTO time.Duration `json:"rto_ns"`
	// Queued is how many packets wait in the transmit buffer.
	Queued int `json:"queued"`
	// Sent counts data packets sent; Feedbacks the feedback packets
	// accepted; BadFeedback those ignored because their echo was in the
	// future or gave no positive RTT sample; NoFeedback the expiries of
	// the nofeedback timer.
	Sent        uint64 `json:"sent"`
	Feedbacks   uint64 `json:"feedbacks"`
	BadFeedback uint64 `json:"bad_feedback"`
	NoFeedback  uint64 `json:"no_feedback"`
	// SlowStart is true until the first feedback that reports a loss.
	SlowStart bool `json:"slow_start"`
}

type xRecvEntry struct {
	rate float64
	at   clock.Time
}

// Sender is the sending side of TFRC (RFC 5348 §4): it holds the transmit
// buffer, decides when each packet may leave, and adjusts the allowed rate
// X from the receiver's feedback and the nofeedback timer.
//
// The caller puts packets in with Enqueue, takes them out with Poll when
// they may be sent, hands feedback to OnFeedback and calls Poll again at
// Deadline.
type Sender struct {
	cfg   SenderConfig
	s     float64 // packet size, bytes
	x     float64 // allowed rate, bytes/s
	xCalc float64
	p     float64
	rtt   time.Duration
	rto   time.Duration
	tld   clock.Time // time last doubled in slow start
	start clock.Time
	// recvSet is X_recv_set of §4.3; math.Inf(1) is its initial entry.
	recvSet  [xRecvSetCap]xRecvEntry
	nRecvSet int
	// nfbAt is when the nofeedback timer expires (Never until the first
	// packet leaves); sentSinceNFB whether a packet left since it was set.
	nfbAt        clock.Time
	sentSinceNFB bool
	queued       int
	sentAny      bool
	// lastNom is the nominal send time of the latest packet and nextNom
	// that of the next one, t_nom of §4.6.
	lastNom, nextNom clock.Time
	// busyUntil is the latest time at which the sender is known not to
	// have been data-limited: it had a packet waiting, or the next one
	// was not yet due. prevEcho is the send time of the packet the
	// previous feedback echoed: the feedback that follows covers what was
	// sent since.
	busyUntil clock.Time
	prevEcho  clock.Time
	seq       uint64
	stats     SenderStats
}

// NewSender returns a sender that starts at now, with an allowed rate of
// one packet per second, or W_init/R if cfg has an initial RTT (§4.2).
func NewSender(cfg SenderConfig, now clock.Time) (*Sender, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Sender{
		cfg:       cfg,
		s:         float64(cfg.PacketSize),
		xCalc:     math.Inf(1),
		start:     now,
		nfbAt:     clock.Never,
		busyUntil: now,
		prevEcho:  now,
	}
	s.x = s.s // one packet per second
	if cfg.InitialRTT > 0 {
		s.rtt = cfg.InitialRTT
		s.x = s.initialRate()
		s.tld = now
	}
	s.recvSet[0] = xRecvEntry{rate: math.Inf(1), at: now}
	s.nRecvSet = 1
	return s, nil
}

// initialRate is W_init/R with W_init = min(4·s, max(2·s, 4380)) (§4.2,
// RFC 3390's initial window).
func (s *Sender) initialRate() float64 {
	w := min(4*s.s, max(2*s.s, 4380))
	return w / s.rtt.Seconds()
}

// minRate is s/t_mbi.
func (s *Sender) minRate() float64 { return s.s / TMBI.Seconds() }

// ipi is t_ipi = s/X.
func (s *Sender) ipi() time.Duration {
	return time.Duration(s.s / s.x * float64(time.Second))
}

// delta is how early a packet may leave: min(t_ipi/2, t_gran/2) (§4.6).
func (s *Sender) delta() time.Duration {
	return min(s.ipi(), s.cfg.TimerGranularity) / 2
}

// maxLag bounds how far the send schedule may fall behind now. §4.6 keeps
// a nominal schedule, t_nom += t_ipi per packet, so a sender woken late
// catches up with a short burst; the bound keeps a sender that was idle,
// or starved by its application, from earning a long one.
func (s *Sender) maxLag() time.Duration {
	return 2 * max(s.ipi(), s.cfg.TimerGranularity)
}

// nominal returns the nominal send time of the next packet.
func (s *Sender) nominal(now clock.Time) clock.Time {
	if !s.sentAny {
		return now
	}
	n := s.nextNom
	if floor := now.Add(-s.maxLag()); n < floor {
		n = floor
	}
	return n
}

// reschedule moves the next packet's nominal time after X changed at now:
// to t_ipi at the new rate after the latest packet, but a faster rate
// brings it forward no earlier than now, so that the change earns no
// credit for the time before it.
func (s *Sender) reschedule(now clock.Time) {
	if !s.sentAny {
		return
	}
	n := s.lastNom.Add(s.ipi())
	if n < s.nextNom {
		n = max(n, min(now, s.nextNom))
	}
	s.nextNom = n
}

// Enqueue puts a packet in the transmit buffer; it returns false, and
// leaves the buffer as it was, if the buffer is full.
func (s *Sender) Enqueue(now clock.Time) bool {
	s.advance(now)
	if s.Full() {
		return false
	}
	if s.queued == 0 {
		// The sender was not limited until its next packet was due.
		s.busy(s.notLimitedUntil(now))
	}
	s.queued++
	s.busy(now)
	return true
}

// Full reports whether the transmit buffer is full.
func (s *Sender) Full() bool {
	return s.cfg.TxQueueLen > 0 && s.queued >= s.cfg.TxQueueLen
}

// Queued returns how many packets wait in the transmit buffer.
func (s *Sender) Queued() int { return s.queued }

func (s *Sender) busy(t clock.Time) {
	if t > s.busyUntil {
		s.busyUntil = t
	}
}

// notLimitedUntil returns, as of now, the latest time at which the sender
// was not data-limited: now while packets wait, otherwise the time its
// next packet became due, if that has passed.
func (s *Sender) notLimitedUntil(now clock.Time) clock.Time {
	if s.queued > 0 {
		return now
	}
	t := now
	if s.sentAny {
		t = min(now, s.nextNom.Add(-s.delta()))
	}
	return max(s.busyUntil, t)
}

// Poll takes the next packet from the transmit buffer if it may leave at
// now (now >= t_nom - delta, §4.6) and returns the header to send it with.
// It also runs the nofeedback timer if it has expired. Call it until it
// returns false, then again at Deadline.
func (s *Sender) Poll(now clock.Time) (DataHeader, bool) {
	s.advance(now)
	if s.queued == 0 {
		return DataHeader{}, false
	}
	nom := s.nominal(now)
	if now < nom.Add(-s.delta()) {
		return DataHeader{}, false
	}
	s.queued--
	s.lastNom, s.nextNom, s.sentAny = nom, nom.Add(s.ipi()), true
	s.sentSinceNFB = true
	if s.nfbAt == clock.Never {
		s.nfbAt = now.Add(InitialNoFeedback)
	}
	h := DataHeader{Seq: s.seq, Timestamp: now, RTT: s.rtt}
	s.seq++
	s.stats.Sent++
	return h, true
}

// Deadline returns when Poll next has something to do: the next packet's
// earliest send time if one is waiting, or the nofeedback timer's expiry.
// A time not after now means at once.
func (s *Sender) Deadline() clock.Time {
	d := s.nfbAt
	if s.queued > 0 {
		if !s.sentAny {
			return s.start
		}
		d = clock.Min(d, s.nextNom.Add(-s.delta()))
	}
	return d
}

// advance runs the nofeedback timer up to now. Each expiry restarts the
// timer from its own expiry time, so a caller that comes late (or a
// virtual clock that jumps) sees every expiry that would have happened.
func (s *Sender) advance(now clock.Time) {
	if s.queued > 0 {
		s.busy(now) // packets wait: the rate limits, not the data
	}
	for n := 0; now >= s.nfbAt && n < 64; n++ {
		at, x := s.nfbAt, s.x
		s.noFeedback(at)
		if s.x != x {
			s.reschedule(at)
		}
	}
}

// OnFeedback processes a feedback packet that arrived at now (RFC 5348
// §4.3). Feedback that echoes a time in the future, or gives no positive
// RTT sample, is counted in BadFeedback and otherwise ignored.
func (s *Sender) OnFeedback(now clock.Time, f Feedback) {
	s.advance(now)
	sample := now.Sub(f.Echo) - f.Delay
	if f.Echo > now || f.Echo < s.start || sample <= 0 {
		s.stats.BadFeedback++
		return
	}
	s.stats.Feedbacks++
	// Steps 1 and 2: the RTT.
	firstSample := s.rtt == 0
	if firstSample {
		s.rtt = sample
	} else {
		s.rtt = time.Duration(rttWeight*float64(s.rtt) + (1-rttWeight)*float64(sample))
	}
	// The data this feedback covers left between the packet the previous
	// feedback echoed and the one this one echoes; it was a data-limited
	// interval if the sender was limited by its application throughout.
	dataLimited := s.notLimitedUntil(now) < s.prevEcho
	s.prevEcho = f.Echo
	pPrev, x := s.p, s.x
	s.p = f.P

	// Step 4: the allowed rate.
	switch {
	case firstSample && f.P == 0:
		// §4.2: with the first RTT sample the sender moves to W_init/R.
		s.x = s.initialRate()
		s.tld = now
	case dataLimited && f.P > pPrev:
		// A loss while data-limited: the receive rate understated what
		// the path carries, but not by the factor of two allowed
		// otherwise.
		for i := range s.nRecvSet {
			s.recvSet[i].rate /= 2
		}
		s.recompute(now, s.maximizeRecvSet(0.85*f.XRecv, now))
	case dataLimited:
		s.recompute(now, 2*s.maximizeRecvSet(f.XRecv, now))
	default:
		s.updateRecvSet(f.XRecv, now)
		s.recompute(now, 2*s.maxRecvSet())
	}
	if s.x != x {
		s.reschedule(now)
	}
	// Steps 3 and 6: restart the nofeedback timer after
	// RTO = max(4R, 2s/X). Step 3 comes before the new X in the RFC; this
	// uses the new one, as Linux's CCID 3 did, since the timer guards the
	// packets sent at it: after the first feedback the old X, one packet
	// a second, would leave a 2 s timer on a flow of a hundred a second.
	s.rto = max(4*s.rtt, time.Duration(2*s.s/s.x*float64(time.Second)))
	s.nfbAt = now.Add(s.rto)
	s.sentSinceNFB = false
}

// recompute is the second half of §4.3 step 4: the equation's rate bounded
// by recvLimit once there has been a loss, slow start before.
func (s *Sender) recompute(now clock.Time, recvLimit float64) {
	if s.p > 0 {
		s.xCalc = Throughput(s.s, s.rtt, s.p)
		s.x = max(min(s.xCalc, recvLimit), s.minRate())
		return
	}
	s.xCalc = math.Inf(1)
	if s.rtt > 0 && now.Sub(s.tld) >= s.rtt {
		s.x = max(min(2*s.x, recvLimit), s.initialRate())
		s.tld = now
	}
}

// updateRecvSet adds a report to X_recv_set and forgets those older than
// two round trips ("Update X_recv_set" of §4.3).
func (s *Sender) updateRecvSet(x float64, now clock.Time) {
	if s.nRecvSet == xRecvSetCap {
		copy(s.recvSet[:], s.recvSet[1:])
		s.nRecvSet--
	}
	s.recvSet[s.nRecvSet] = xRecvEntry{rate: x, at: now}
	s.nRecvSet++
	keep := 0
	for i := range s.nRecvSet {
		e := s.recvSet[i]
		if i == s.nRecvSet-1 || now.Sub(e.at) <= 2*s.rtt {
			s.recvSet[keep] = e
			keep++
		}
	}
	s.nRecvSet = keep
}

// maximizeRecvSet adds a report to X_recv_set, drops the initial infinite
// entry and keeps only the largest value, stamped now ("Maximize
// X_recv_set" of §4.3). It returns that value.
func (s *Sender) maximizeRecvSet(x float64, now clock.Time) float64 {
	m := x
	for i := range s.nRecvSet {
		if r := s.recvSet[i].rate; !math.IsInf(r, 1) && r > m {
			m = r
		}
	}
	s.recvSet[0] = xRecvEntry{rate: m, at: now}
	s.nRecvSet = 1
	return m
}

// maxRecvSet returns the largest entry of X_recv_set, +Inf while the
// initial entry is there.
func (s *Sender) maxRecvSet() float64 {
	m := 0.0
	for i := range s.nRecvSet {
		m = max(m, s.recvSet[i].rate)
	}
	return m
}

// maxReportedRecv returns the largest receive rate reported in
// X_recv_set, 0 if none.
func (s *Sender) maxReportedRecv() float64 {
	m := 0.0
	for i := range s.nRecvSet {
		if r := s.recvSet[i].rate; !math.IsInf(r, 1) {
			m = max(m, r)
		}
	}
	return m
}

// noFeedback handles an expiry of the nofeedback timer at time at (RFC 5348
// §4.4): it halves the allowed rate, unless the sender has been idle since
// the timer was set and its rate is already near the recover rate W_init/R.
func (s *Sender) noFeedback(at clock.Time) {
	s.stats.NoFeedback++
	idle := !s.sentSinceNFB
	recoverRate := 0.0
	if s.rtt > 0 {
		recoverRate = s.initialRate()
	}
	xRecv := s.maxReportedRecv()
	switch {
	case s.rtt == 0 && s.stats.Feedbacks == 0 && !idle:
		// No RTT, no feedback: only X itself can be halved.
		s.x = max(s.x/2, s.minRate())
	case idle && ((s.p > 0 && s.xCalc < recoverRate) || (s.p == 0 && s.x < 2*recoverRate)):
		// Idle, and the rate is low already: keep it.
	case s.p == 0:
		s.x = max(s.x/2, s.minRate())
	case s.xCalc > 2*xRecv:
		// 2·X_recv was what limited the rate: halve that.
		s.updateLimits(xRecv, at)
	default:
		// The equation limited the rate: halve it.
		s.updateLimits(s.xCalc/2, at)
	}
	timeout := InitialNoFeedback
	if s.rtt > 0 {
		timeout = 4 * s.rtt
	}
	timeout = max(timeout, time.Duration(2*s.s/s.x*float64(time.Second)))
	s.nfbAt = at.Add(timeout)
	s.sentSinceNFB = false
}

// updateLimits is Update_Limits of §4.4: X_recv_set becomes the single
// entry limit/2, so that the recomputed X is at most limit.
func (s *Sender) updateLimits(limit float64, now clock.Time) {
	limit = max(limit, s.minRate())
	s.recvSet[0] = xRecvEntry{rate: limit / 2, at: now}
	s.nRecvSet = 1
	s.recompute(now, limit)
}

// Stats returns the sender's counters and state.
func (s *Sender) Stats() SenderStats {
	st := s.stats
	st.X, st.XCalc, st.XRecv, st.P = s.x, s.xCalc, s.maxReportedRecv(), s.p
	st.RTT, st.RTO = s.rtt, s.rto
	st.Queued = s.queued
	st.SlowStart = s.p == 0
	return st
}

// Rate returns X, the allowed sending rate in bytes per second.
func (s *Sender) Rate() float64 { return s.x }

// RTT returns the smoothed round-trip time R, 0 before the first sample.
func (s *Sender) RTT() time.Duration { return s.rtt }
