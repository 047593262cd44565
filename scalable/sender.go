package scalable

import (
	"fmt"
	"math"
	"time"

	"wanlab/clock"
)

const (
	// G is DCTCP's gain g for α (RFC 8257 §4.2 recommends 1/16).
	G = 1.0 / 16
	// InitialWindow is the window before the first ACK, in packets, as
	// Linux's TCP (RFC 6928).
	InitialWindow = 10
	// MinWindow is the smallest window, in packets: a reduction never
	// goes below it (RFC 8257 §3.3 keeps at least 2 segments as DCTCP
	// on Linux does).
	MinWindow = 2
	// MinRTO and MaxRTO bound the retransmission timeout (RFC 6298 §2;
	// 200 ms is Linux's TCP_RTO_MIN).
	MinRTO = 200 * time.Millisecond
	MaxRTO = 60 * time.Second
	// InitialRTO is the timeout before the first RTT sample (RFC 6298
	// §2.1).
	InitialRTO = time.Second
	// PacingGainSlowStart and PacingGain are the pacing rate over
	// cwnd/SRTT in slow start and afterwards, as Linux's
	// tcp_pacing_ss_ratio (200 %) and tcp_pacing_ca_ratio (120 %): the
	// window, not the pacing, decides the rate, and pacing spreads the
	// packets over the RTT (RFC 9331 §4.3).
	PacingGainSlowStart = 2.0
	PacingGain          = 1.2
)

// SenderConfig configures a Sender.
type SenderConfig struct {
	// PacketSize is the length of every data packet in bytes, header
	// included (the UDP payload). It must exceed DataHeaderLen.
	PacketSize int
	// MaxWindow bounds the window in packets; 0 means unbounded.
	MaxWindow float64
}

// SenderStats are the sender's counters and its current state.
type SenderStats struct {
	// Cwnd is the congestion window in packets, Ssthresh the slow-start
	// threshold (+Inf until the first reduction ends slow start), and
	// Inflight the packets sent and neither acknowledged nor lost.
	Cwnd     float64 `json:"cwnd"`
	Ssthresh float64 `json:"ssthresh"`
	Inflight uint64  `json:"inflight"`
	// Alpha is DCTCP's α: the moving average of the fraction of bytes
	// CE-marked per observation window (RFC 8257 §3.3), starting at 1.
	// F is that fraction in the latest complete window.
	Alpha float64 `json:"alpha"`
	F     float64 `json:"f"`
	// SRTT, RTTVar, MinRTT and LatestRTT are the RTT estimates (RFC
	// 6298), 0 before the first sample; RTO the retransmission timeout.
	SRTT      time.Duration `json:"srtt_ns"`
	RTTVar    time.Duration `json:"rttvar_ns"`
	MinRTT    time.Duration `json:"min_rtt_ns"`
	LatestRTT time.Duration `json:"latest_rtt_ns"`
	RTO       time.Duration `json:"rto_ns"`
	// PacingRate is the pacing rate in bytes per second, 0 before the
	// first RTT sample (the initial window leaves unpaced).
	PacingRate float64 `json:"pacing_rate"`
	// Sent counts the data packets sent and Acks the acknowledgements
	// taken; BadAcks those ignored (for packets never sent).
	Sent    uint64 `json:"sent"`
	Acks    uint64 `json:"acks"`
	BadAcks uint64 `json:"bad_acks"`
	// Delivered, DeliveredBytes, CEPackets, CEBytes, ECT1Packets and
	// NotECTPackets are the receiver's totals as of the latest ACK; Lost
	// the packets the sender counts as lost: the sequence numbers below
	// the highest acknowledged that the receiver has not had.
	Delivered      uint64 `json:"delivered"`
	DeliveredBytes uint64 `json:"delivered_bytes"`
	CEPackets      uint64 `json:"ce_packets"`
	CEBytes        uint64 `json:"ce_bytes"`
	ECT1Packets    uint64 `json:"ect1_packets"`
	NotECTPackets  uint64 `json:"not_ect_packets"`
	Lost           uint64 `json:"lost"`
	// CEReductions counts the window reductions for CE marks,
	// LossReductions those for losses, Timeouts the retransmission
	// timeouts.
	CEReductions   uint64 `json:"ce_reductions"`
	LossReductions uint64 `json:"loss_reductions"`
	Timeouts       uint64 `json:"timeouts"`
	// SlowStart is true until the first reduction.
	SlowStart bool `json:"slow_start"`
}

// Sender is the sending side: it decides when each packet may leave (the
// window and the pacing), and adjusts the window from the ACKs.
//
// The caller calls Poll for the next packet (an application that always
// has data: wanlab's bulk flows), hands every ACK to OnAck, and calls
// Poll again at Deadline.
type Sender struct {
	cfg SenderConfig
	s   float64 // packet size, bytes

	cwnd, ssthresh float64
	alpha          float64

	// Sequence space: next is the next sequence number; acked is one
	// past the highest acknowledged (packets below it are delivered or
	// lost); floor is where a timeout declared the flight lost.
	next, acked, floor uint64
	lastAck            Ack
	haveAck            bool

	// One observation window of about one RTT: it ends when a packet
	// sent after it began is acknowledged (RFC 8257 §3.3).
	winEnd               uint64
	winBytes, winCEBytes uint64
	// No further reduction for marks (ceRecover) or loss (lossRecover)
	// until a packet sent after the last one is acknowledged.
	ceRecover, lossRecover uint64
	ceHeld, lossHeld       bool

	srtt, rttvar, minRTT, latest, rto time.Duration
	nextSend                          clock.Time
	lastProgress                      clock.Time // the latest ACK, or the send that armed the timer
	st                                SenderStats
}

// NewSender returns a sender with the initial window, α = 1 (RFC 8257
// §3.3's conservative start, Linux's dctcp_alpha_on_init) and no RTT
// sample yet.
func NewSender(cfg SenderConfig, now clock.Time) (*Sender, error) {
	if cfg.PacketSize <= DataHeaderLen {
		return nil, fmt.Errorf("scalable: packet size %d leaves no room for data: it must exceed the %d-byte header (use the path MTU minus the IP and UDP headers, e.g. 1472 for IPv4 over a 1500-byte MTU)", cfg.PacketSize, DataHeaderLen)
	}
	if cfg.MaxWindow < 0 || (cfg.MaxWindow > 0 && cfg.MaxWindow < MinWindow) {
		return nil, fmt.Errorf("scalable: maximum window %g packets: use 0 (unbounded) or at least %d", cfg.MaxWindow, MinWindow)
	}
	return &Sender{
		cfg: cfg, s: float64(cfg.PacketSize),
		cwnd: InitialWindow, ssthresh: math.Inf(1), alpha: 1,
		rto: InitialRTO, nextSend: now, lastProgress: now,
	}, nil
}

// inflight is the packets sent and neither acknowledged nor lost.
func (s *Sender) inflight() uint64 { return s.next - max(s.acked, s.floor) }

func (s *Sender) windowOpen() bool { return float64(s.inflight()) < math.Floor(s.cwnd) }

// pacingRate is the pacing rate in bytes/s, 0 before the first sample.
func (s *Sender) pacingRate() float64 {
	if s.srtt == 0 {
		return 0
	}
	gain := PacingGain
	if s.cwnd < s.ssthresh {
		gain = PacingGainSlowStart
	}
	return gain * s.cwnd * s.s / s.srtt.Seconds()
}

// timeoutAt is when the retransmission timer fires: RTO after the latest
// progress while packets are in flight.
func (s *Sender) timeoutAt() clock.Time {
	if s.inflight() == 0 {
		return clock.Never
	}
	return s.lastProgress.Add(s.rto)
}

// Deadline is when Poll next needs to be called: the next packet's send
// time if the window has room, else the retransmission timer.
func (s *Sender) Deadline() clock.Time {
	t := s.timeoutAt()
	if s.windowOpen() {
		t = min(t, s.nextSend)
	}
	return t
}

// Poll returns the header of the packet to send at now, if one may leave:
// the window has room and its paced send time has come. It also runs the
// retransmission timer. A caller sends every packet Poll gives before
// sleeping until Deadline.
func (s *Sender) Poll(now clock.Time) (DataHeader, bool) {
	if now >= s.timeoutAt() {
		s.onTimeout(now)
	}
	if !s.windowOpen() || now < s.nextSend {
		return DataHeader{}, false
	}
	if s.inflight() == 0 {
		s.lastProgress = now // the timer starts with the flight
	}
	h := DataHeader{Seq: s.next, Timestamp: now}
	s.next++
	s.st.Sent++
	if r := s.pacingRate(); r > 0 {
		// The schedule may run behind by one interval (a late wake-up
		// catches up with a packet), not more: an idle sender earns no
		// burst.
		ipi := time.Duration(s.s / r * float64(time.Second))
		s.nextSend = max(s.nextSend, now.Add(-ipi)).Add(ipi)
	} else {
		s.nextSend = now
	}
	return h, true
}

// onTimeout declares the flight lost and restarts from a window of one
// packet (RFC 5681 §3.1's loss window), doubling the timeout (RFC 6298
// §5.5).
func (s *Sender) onTimeout(now clock.Time) {
	s.st.Timeouts++
	s.floor = s.next
	s.ssthresh = max(MinWindow, s.cwnd/2)
	s.cwnd = 1
	s.rto = min(2*s.rto, MaxRTO)
	s.lastProgress = now
	s.nextSend = now
	s.lossRecover, s.lossHeld = s.next, true
}

// OnAck takes an acknowledgement that arrived at now.
func (s *Sender) OnAck(now clock.Time, a Ack) {
	if a.Highest >= s.next {
		s.st.BadAcks++
		return
	}
	if s.haveAck && a.Packets < s.lastAck.Packets {
		return // an older ACK, overtaken
	}
	s.st.Acks++
	newly := uint64(0) // packets newly delivered
	var newBytes, newCE uint64
	if s.haveAck {
		newly = a.Packets - s.lastAck.Packets
		newBytes = a.Bytes - s.lastAck.Bytes
		newCE = a.CEBytes - s.lastAck.CEBytes
	} else {
		newly, newBytes, newCE = a.Packets, a.Bytes, a.CEBytes
	}
	newCEPackets := a.CEPackets - s.lastAck.CEPackets
	s.lastAck, s.haveAck = a, true
	s.lastProgress = now
	st := &s.st
	st.Delivered, st.DeliveredBytes = a.Packets, a.Bytes
	st.CEPackets, st.CEBytes = a.CEPackets, a.CEBytes
	st.ECT1Packets, st.NotECTPackets = a.ECT1Packets, a.NotECTPackets

	// The RTT sample from the echoed timestamp, less the receiver's hold.
	if rtt := now.Sub(a.Echo) - a.Delay; rtt > 0 && a.Highest+1 > s.acked {
		s.sampleRTT(rtt)
	}

	// Losses: more gaps below the highest acknowledged than before. (A
	// timeout counts none: the packets of its flight that were lost show
	// as gaps once later ones are acknowledged.)
	if a.Highest+1 > s.acked {
		s.acked = a.Highest + 1
	}
	newLoss := false
	if gaps := s.acked - min(a.Packets, s.acked); gaps > st.Lost {
		st.Lost = gaps
		newLoss = true
	}
	if s.lossHeld && s.acked > s.lossRecover {
		s.lossHeld = false
	}
	if s.ceHeld && s.acked > s.ceRecover {
		s.ceHeld = false
	}

	// The observation window: F and α once per window (RFC 8257 §3.3).
	s.winBytes += newBytes
	s.winCEBytes += newCE
	if s.acked > s.winEnd {
		if s.winBytes > 0 {
			f := float64(s.winCEBytes) / float64(s.winBytes)
			st.F = f
			s.alpha = (1-G)*s.alpha + G*f
		}
		s.winBytes, s.winCEBytes = 0, 0
		s.winEnd = s.next
	}

	switch {
	case newLoss && !s.lossHeld:
		// Loss as classic TCP: halve, once per RTT (RFC 8257 §3.5).
		s.ssthresh = max(MinWindow, s.cwnd/2)
		s.cwnd = s.ssthresh
		s.lossRecover, s.lossHeld = s.next, true
		s.ceRecover, s.ceHeld = s.next, true
		st.LossReductions++
	case newCEPackets > 0 && !s.ceHeld && !s.lossHeld:
		// The scalable response: reduce in proportion to α, once per
		// RTT (RFC 8257 §3.3, RFC 9331 §4.3).
		s.cwnd = max(MinWindow, s.cwnd*(1-s.alpha/2))
		s.ssthresh = s.cwnd
		s.ceRecover, s.ceHeld = s.next, true
		st.CEReductions++
	case !newLoss && !s.lossHeld:
		// Growth on every ACK outside a loss recovery, marked or not:
		// slow start doubles the window each RTT, then one packet per
		// RTT (RFC 5681), also in the RTT after a reduction for marks.
		// (Linux's DCTCP holds the window for that RTT, in its CWR
		// state; under the steady probabilistic marking of a coupled
		// AQM that halves its growth, and DualPI2's coupling, k = 2,
		// assumes a flow that adds one packet every RTT and takes off
		// α/2 every RTT: W = 2/p, RFC 9332 §2.1.)
		if s.cwnd < s.ssthresh {
			s.cwnd = min(s.cwnd+float64(newly), max(s.ssthresh, s.cwnd))
		} else {
			s.cwnd += float64(newly) / s.cwnd
		}
	}
	if s.cfg.MaxWindow > 0 {
		s.cwnd = min(s.cwnd, s.cfg.MaxWindow)
	}
}

// sampleRTT updates SRTT, RTTVAR and the RTO (RFC 6298 §2).
func (s *Sender) sampleRTT(r time.Duration) {
	s.latest = r
	if s.minRTT == 0 || r < s.minRTT {
		s.minRTT = r
	}
	if s.srtt == 0 {
		s.srtt, s.rttvar = r, r/2
	} else {
		d := s.srtt - r
		if d < 0 {
			d = -d
		}
		s.rttvar = (3*s.rttvar + d) / 4
		s.srtt = (7*s.srtt + r) / 8
	}
	s.rto = min(max(s.srtt+max(4*s.rttvar, time.Millisecond), MinRTO), MaxRTO)
}

// Stats returns the sender's counters and state.
func (s *Sender) Stats() SenderStats {
	st := s.st
	st.Cwnd, st.Ssthresh, st.Alpha = s.cwnd, s.ssthresh, s.alpha
	st.Inflight = s.inflight()
	st.SRTT, st.RTTVar, st.MinRTT, st.LatestRTT, st.RTO = s.srtt, s.rttvar, s.minRTT, s.latest, s.rto
	st.PacingRate = s.pacingRate()
	st.SlowStart = math.IsInf(s.ssthresh, 1)
	return st
}
