package scalableflow

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"time"

	"wanlab/clock"
	"wanlab/scalable"
	"wanlab/scalable/scalableudp"
	"wanlab/traffic"
	"wanlab/traffic/udpflow"
)

// Kind is the FlowInfo.Kind of a scalable flow's result.
const Kind = "scalable"

// CongestionControl names the flow's congestion control in results: what
// it is, not DCTCP.
const CongestionControl = "scalable"

// Config describes a bulk scalable flow.
type Config struct {
	// Label names the flow (for instance "L4S scalable UDP upload").
	Label string
	// Client and Server are the two hosts. The receiving host (Server
	// for Up, Client for Down) needs an address, which the sender sends
	// to; the sending host's socket is bound to its address if it has
	// one.
	Client, Server traffic.Host
	// Dir is traffic.Up when the client sends, traffic.Down when the
	// server sends.
	Dir traffic.Direction
	// TOS is the DSCP of the data and the ACKs, shifted left by two; its
	// ECN bits are ignored: the data is ECT(1), the ACKs Not-ECT.
	TOS int
	// Start and Stop are offsets from T0: the sender sends from Start
	// and stops at Stop.
	Start, Stop time.Duration
	// PacketSize is the UDP payload of a data packet with its header; 0
	// means the largest that fits a 1500-byte MTU (1472 bytes over IPv4,
	// 1452 over IPv6).
	PacketSize int
	// AckEvery is how many data packets one ACK acknowledges: 0 or 1
	// (every packet) or 2.
	AckEvery int
}

// Result is what a scalable flow recorded.
type Result struct {
	traffic.FlowInfo
	// Dir and TOS are the flow's configuration (TOS as the data packets
	// carried it, ECT(1) included); PacketSize is the UDP payload of a
	// data packet and Payload the application bytes in it.
	Dir        traffic.Direction `json:"direction"`
	TOS        int               `json:"tos"`
	PacketSize int               `json:"packet_size"`
	Payload    int               `json:"payload"`
	// Sender and Receiver are the UDP sockets the data goes from and to;
	// the ACKs go the other way.
	Sender   netip.AddrPort `json:"sender"`
	Receiver netip.AddrPort `json:"receiver"`
	// StartedAt is when the sender started, StoppedAt when it stopped (0
	// if it never started).
	StartedAt clock.Time `json:"started_ns"`
	StoppedAt clock.Time `json:"stopped_ns"`
	// SentBytes is the application data the sender sent, ReceivedBytes
	// the application data the receiver received, at the end of the run.
	SentBytes     int64 `json:"sent_bytes"`
	ReceivedBytes int64 `json:"received_bytes"`
	// Samples are the readings at the grid points from the first one at
	// or after Start to the end of the run.
	Samples []Sample `json:"samples"`
}

// Sample is one grid point's reading of both sides. Counts are running
// totals since the flow started; states are current.
type Sample struct {
	K int        `json:"k"`
	T clock.Time `json:"t_ns"`
	// Cwnd is the congestion window in packets; Ssthresh the slow-start
	// threshold (0 while in the first slow start, which has none);
	// Inflight the packets neither acknowledged nor lost.
	Cwnd     float64 `json:"cwnd"`
	Ssthresh float64 `json:"ssthresh"`
	Inflight uint64  `json:"inflight"`
	// Alpha is DCTCP's α (RFC 8257), F the fraction of bytes CE-marked
	// in the latest observation window.
	Alpha float64 `json:"alpha"`
	F     float64 `json:"f"`
	// SRTT, MinRTT and LatestRTT are the sender's RTT estimates (0 before
	// the first ACK); PacingRate its pacing rate, bytes/s.
	SRTT       time.Duration `json:"srtt_ns"`
	MinRTT     time.Duration `json:"min_rtt_ns"`
	LatestRTT  time.Duration `json:"latest_rtt_ns"`
	PacingRate float64       `json:"pacing_rate_bps"`
	// SlowStart is true until the first window reduction.
	SlowStart bool `json:"slow_start"`
	// SentPackets and SentBytes count the data packets sent and their
	// UDP payload; SentPayload the application bytes in them; Acks the
	// ACKs the sender took.
	SentPackets uint64 `json:"sent_packets"`
	SentBytes   uint64 `json:"sent_bytes"`
	SentPayload uint64 `json:"sent_payload"`
	Acks        uint64 `json:"acks"`
	// ReceivedPackets, ReceivedBytes and ReceivedPayload are the
	// receiver's counts; CEPackets and CEBytes those that arrived CE,
	// ECT1Packets, ECT0Packets and NotECTPackets those that arrived with
	// each other codepoint.
	ReceivedPackets uint64 `json:"received_packets"`
	ReceivedBytes   uint64 `json:"received_bytes"`
	ReceivedPayload uint64 `json:"received_payload"`
	CEPackets       uint64 `json:"ce_packets"`
	CEBytes         uint64 `json:"ce_bytes"`
	ECT1Packets     uint64 `json:"ect1_packets"`
	ECT0Packets     uint64 `json:"ect0_packets"`
	NotECTPackets   uint64 `json:"not_ect_packets"`
	// Lost counts the packets the receiver is missing below the highest
	// it got; SenderLost those the sender counted lost (timeouts
	// included).
	Lost       uint64 `json:"lost"`
	SenderLost uint64 `json:"sender_lost"`
	// CEReductions and LossReductions count the window reductions for
	// marks and for losses, Timeouts the retransmission timeouts.
	CEReductions   uint64 `json:"ce_reductions"`
	LossReductions uint64 `json:"loss_reductions"`
	Timeouts       uint64 `json:"timeouts"`
	// SendErrors counts datagrams either side's socket refused.
	SendErrors uint64 `json:"send_errors"`
}

// Flow is a bulk scalable flow. Its lifecycle is udpflow's.
type Flow struct {
	*udpflow.Flow[Sample]
}

var _ traffic.Flow = (*Flow)(nil)

// transport is what a scalable flow adds to udpflow's lifecycle: the
// scalable sender and receiver, and how to read and report them.
type transport struct {
	cfg Config

	// Set by Open, read only afterwards.
	snd        *scalableudp.Sender
	rcv        *scalableudp.Receiver
	packetSize int
	tos        int // as the kernel kept it, ECT(1) included
}

// New checks cfg and returns the flow.
func New(cfg Config) (*Flow, error) {
	tr := &transport{cfg: cfg, tos: cfg.TOS}
	uf, err := udpflow.New[Sample](udpflow.Spec{
		Pkg: "scalableflow", Name: "a scalable flow",
		Label: cfg.Label, Kind: Kind,
		Client: cfg.Client, Server: cfg.Server, Dir: cfg.Dir,
		TOS:   cfg.TOS,
		Start: cfg.Start, Stop: cfg.Stop,
	}, tr)
	if err != nil {
		return nil, err
	}
	if cfg.AckEvery < 0 || cfg.AckEvery > 2 {
		return nil, fmt.Errorf("scalableflow: flow %q: an ACK every %d packets: use 1 (every packet) or 2", cfg.Label, cfg.AckEvery)
	}
	return &Flow{uf}, nil
}

// Open makes the scalable sender and receiver, so that a kernel that will
// not set ECT(1) is an error before the run starts.
func (tr *transport) Open(snd, rcv net.PacketConn) (udpflow.Ends, error) {
	r, err := scalableudp.NewReceiver(rcv, tr.cfg.AckEvery, tr.cfg.TOS)
	if err != nil {
		return udpflow.Ends{}, err
	}
	// If NewSender fails, the receiver holds nothing but its socket,
	// which the flow closes.
	s, err := scalableudp.NewSender(snd, rcv.LocalAddr(), scalableudp.Config{PacketSize: tr.cfg.PacketSize, TOS: tr.cfg.TOS})
	if err != nil {
		return udpflow.Ends{}, err
	}
	tr.snd, tr.rcv = s, r
	tr.packetSize = s.PacketSize()
	tr.tos = s.Stats().TOS
	return udpflow.Ends{Sender: s, Receiver: r}, nil
}

// Sample reads both sides.
func (tr *transport) Sample(k int, t clock.Time) Sample {
	// The receiver is read before the sender, whose counts it cannot
	// exceed.
	rs := tr.rcv.Stats()
	ss := tr.snd.Stats()
	s := Sample{
		K: k, T: t,
		Cwnd: ss.Cwnd, Inflight: ss.Inflight, Alpha: ss.Alpha, F: ss.F,
		SRTT: ss.SRTT, MinRTT: ss.MinRTT, LatestRTT: ss.LatestRTT, PacingRate: ss.PacingRate, SlowStart: ss.SlowStart,
		SentPackets: ss.Sent, SentBytes: ss.BytesSent, SentPayload: ss.PayloadBytesSent, Acks: ss.Acks,
		ReceivedPackets: rs.Packets, ReceivedBytes: rs.Bytes, ReceivedPayload: rs.PayloadBytes,
		CEPackets: rs.CEPackets, CEBytes: rs.CEBytes, ECT1Packets: rs.ECT1Packets, ECT0Packets: rs.ECT0Packets, NotECTPackets: rs.NotECTPackets,
		Lost: rs.Lost, SenderLost: ss.Lost,
		CEReductions: ss.CEReductions, LossReductions: ss.LossReductions, Timeouts: ss.Timeouts,
		SendErrors: ss.SendErrors + rs.SendErrors,
	}
	if !math.IsInf(ss.Ssthresh, 0) {
		s.Ssthresh = ss.Ssthresh
	}
	return s
}

// Delivered returns the application bytes sent and received.
func (tr *transport) Delivered() (sent, received int64) {
	rs, ss := tr.rcv.Stats(), tr.snd.Stats()
	return int64(ss.PayloadBytesSent), int64(rs.PayloadBytes)
}

// Result makes the scalable flow's result.
func (tr *transport) Result(r udpflow.Record[Sample]) traffic.FlowResult {
	res := &Result{
		FlowInfo: r.Info,
		Dir:      tr.cfg.Dir,
		TOS:      tr.tos,
		Sender:   r.Sender, Receiver: r.Receiver,
		StartedAt: r.StartedAt, StoppedAt: r.StoppedAt,
		SentBytes: r.SentBytes, ReceivedBytes: r.ReceivedBytes,
		Samples: r.Samples,
	}
	if tr.packetSize > 0 {
		res.PacketSize = tr.packetSize
		res.Payload = tr.packetSize - scalable.DataHeaderLen
	}
	return res
}
