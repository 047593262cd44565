package tfrcflow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"time"

	"wanlab/clock"
	"wanlab/tfrc"
	"wanlab/tfrc/tfrcudp"
	"wanlab/traffic"
	"wanlab/traffic/udpflow"
)

// Kind is the FlowInfo.Kind of a TFRC flow's result.
const Kind = "tfrc"

// MaxTxQueueLen bounds Config.TxQueueLen. Each slot of the transmit buffer
// holds a whole packet and a bulk sender keeps the buffer full, so 10000
// packets are 14.5 MB of memory; a buffer that long already holds seconds
// of data at any rate TFRC reaches here.
const MaxTxQueueLen = 10000

// Config describes a bulk TFRC flow.
type Config struct {
	// Label names the flow (for instance "TFRC upload").
	Label string
	// Client and Server are the two hosts. The receiving host (Server
	// for Up, Client for Down) needs an address, which the sender sends
	// to; the sending host's socket is bound to its address if it has
	// one.
	Client, Server traffic.Host
	// Dir is traffic.Up when the client sends, traffic.Down when the
	// server sends.
	Dir traffic.Direction
	// TOS is the TOS byte of the data and the feedback: the DSCP shifted
	// left by two, plus the ECN bits.
	TOS int
	// Start and Stop are offsets from T0: the sender sends from Start
	// and stops at Stop, discarding what its transmit buffer still holds.
	Start, Stop time.Duration
	// TxQueueLen is the transmit buffer in packets, as DCCP's
	// net.dccp.default.tx_qlen: 0 means unbounded, which leaves the
	// socket's send buffer as the bound (see the package documentation).
	// At most MaxTxQueueLen.
	TxQueueLen int
	// PacketSize is s, the UDP payload of a data packet with the TFRC
	// header; 0 means the largest that fits a 1500-byte MTU (1472 bytes
	// over IPv4, 1452 over IPv6).
	PacketSize int
}

// Result is what a TFRC flow recorded.
type Result struct {
	traffic.FlowInfo
	// Dir, TOS and TxQueueLen are the flow's configuration; PacketSize is
	// s as used and Payload the application bytes in each data packet.
	Dir        traffic.Direction `json:"direction"`
	TOS        int               `json:"tos"`
	TxQueueLen int               `json:"tx_queue_len"`
	PacketSize int               `json:"packet_size"`
	Payload    int               `json:"payload"`
	// Sender and Receiver are the UDP sockets the data goes from and to;
	// the feedback goes the other way.
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
	// or after Start to the end of the run. The counts are 0 at
	// T0+Start, where the first sample's interval begins.
	Samples []Sample `json:"samples"`
}

// Sample is one grid point's reading of both sides. Counts are running
// totals since the flow started; rates and states are current. Rates are
// in bytes per second of TFRC packets (headers included), as RFC 5348
// counts them.
type Sample struct {
	K int        `json:"k"`
	T clock.Time `json:"t_ns"`
	// X is the sender's allowed rate; XCalc the throughput equation's
	// rate for the current p and RTT, 0 while p is 0 (the equation then
	// sets no bound); XRecv the receive rate of the latest feedback (the
	// receiver's figure).
	X     float64 `json:"x_bps"`
	XCalc float64 `json:"x_calc_bps"`
	XRecv float64 `json:"x_recv_bps"`
	// P is the receiver's loss event rate now (RFC 5348 §5.4), a
	// fraction; SenderP the one of the latest feedback, which the
	// sender uses.
	P       float64 `json:"p"`
	SenderP float64 `json:"sender_p"`
	// RTT is the sender's smoothed round-trip time R (0 before the first
	// feedback) and RTO its nofeedback timeout.
	RTT time.Duration `json:"rtt_ns"`
	RTO time.Duration `json:"rto_ns"`
	// SlowStart is true until the first feedback that reports a loss.
	SlowStart bool `json:"slow_start"`
	// Queued is how many packets wait in the transmit buffer.
	Queued int `json:"queued"`
	// SentPackets and SentBytes count the data packets sent and their
	// bytes; SentPayload the application bytes in them.
	SentPackets uint64 `json:"sent_packets"`
	SentBytes   uint64 `json:"sent_bytes"`
	SentPayload uint64 `json:"sent_payload"`
	// Feedbacks counts the feedback packets the sender accepted and
	// NoFeedback the expiries of its nofeedback timer.
	Feedbacks  uint64 `json:"feedbacks"`
	NoFeedback uint64 `json:"no_feedback"`
	// ReceivedPackets and ReceivedBytes count the data packets received
	// (duplicates excluded) and their bytes; ReceivedPayload the
	// application bytes delivered.
	ReceivedPackets uint64 `json:"received_packets"`
	ReceivedBytes   uint64 `json:"received_bytes"`
	ReceivedPayload uint64 `json:"received_payload"`
	// Lost counts the packets the receiver declared lost and LossEvents
	// the loss events they made (RFC 5348 §5.2).
	Lost       uint64 `json:"lost"`
	LossEvents uint64 `json:"loss_events"`
	// SendErrors counts datagrams either side's socket refused.
	SendErrors uint64 `json:"send_errors"`
}

// Flow is a bulk TFRC flow. The receiver runs from T0 to the end of the
// run; the sender writes filler data as fast as the transmit buffer takes
// it from Start to Stop, and TFRC paces it out. Its lifecycle is
// udpflow's.
type Flow struct {
	*udpflow.Flow[Sample]
}

var _ traffic.Flow = (*Flow)(nil)

// transport is what a TFRC flow adds to udpflow's lifecycle: the TFRC
// sender and receiver, and how to read and report them.
type transport struct {
	cfg Config

	// Set by Open, read only afterwards.
	snd *tfrcudp.Sender
	rcv *tfrcudp.Receiver
}

// New checks cfg and returns the flow.
func New(cfg Config) (*Flow, error) {
	tr := &transport{cfg: cfg}
	uf, err := udpflow.New[Sample](udpflow.Spec{
		Pkg: "tfrcflow", Name: "a TFRC flow",
		Label: cfg.Label, Kind: Kind,
		Client: cfg.Client, Server: cfg.Server, Dir: cfg.Dir,
		TOS: cfg.TOS, Control: traffic.TOSControl(cfg.TOS),
		Start: cfg.Start, Stop: cfg.Stop,
	}, tr)
	if err != nil {
		return nil, err
	}
	if cfg.TxQueueLen < 0 || cfg.TxQueueLen > MaxTxQueueLen {
		return nil, fmt.Errorf("tfrcflow: flow %q: transmit buffer of %d packets: give 0 (unbounded: the socket's send buffer bounds it) to %d (Linux DCCP's default was %d)",
			cfg.Label, cfg.TxQueueLen, MaxTxQueueLen, tfrcudp.DefaultTxQueueLen)
	}
	return &Flow{uf}, nil
}

// Open makes the TFRC sender and receiver.
func (tr *transport) Open(snd, rcv net.PacketConn) (udpflow.Ends, error) {
	var err error
	tr.snd, err = tfrcudp.NewSender(snd, rcv.LocalAddr(), tfrcudp.Config{TxQueueLen: tr.cfg.TxQueueLen, PacketSize: tr.cfg.PacketSize})
	if err != nil {
		return udpflow.Ends{}, err
	}
	tr.rcv = tfrcudp.NewReceiver(rcv)
	return udpflow.Ends{Sender: tr.snd, Receiver: tr.rcv, App: tr.bulk}, nil
}

// bulk is the application: it always has data.
func (tr *transport) bulk(ctx context.Context) error {
	if err := tr.snd.Bulk(ctx); err != nil && !errors.Is(err, tfrcudp.ErrClosed) {
		return err
	}
	return nil
}

// Sample reads both sides.
func (tr *transport) Sample(k int, t clock.Time) Sample {
	// The receiver is read before the sender, whose counts it cannot
	// exceed.
	rs := tr.rcv.Stats()
	ss := tr.snd.Stats()
	s := Sample{
		K: k, T: t,
		X: ss.X, XRecv: rs.XRecv, P: rs.P, SenderP: ss.P,
		RTT: ss.RTT, RTO: ss.RTO, SlowStart: ss.SlowStart, Queued: ss.Queued,
		SentPackets: ss.Sent, SentBytes: ss.BytesSent, SentPayload: ss.PayloadBytesSent,
		Feedbacks: ss.Feedbacks, NoFeedback: ss.NoFeedback,
		ReceivedPackets: rs.Packets, ReceivedBytes: rs.Bytes, ReceivedPayload: rs.PayloadBytes,
		Lost: rs.Lost, LossEvents: rs.LossEvents,
		SendErrors: ss.SendErrors + rs.SendErrors,
	}
	if !math.IsInf(ss.XCalc, 0) {
		s.XCalc = ss.XCalc
	}
	return s
}

// Delivered returns the application bytes sent and received.
func (tr *transport) Delivered() (sent, received int64) {
	rs, ss := tr.rcv.Stats(), tr.snd.Stats()
	return int64(ss.PayloadBytesSent), int64(rs.PayloadBytes)
}

// Result makes the TFRC flow's result.
func (tr *transport) Result(r udpflow.Record[Sample]) traffic.FlowResult {
	res := &Result{
		FlowInfo:   r.Info,
		Dir:        tr.cfg.Dir,
		TOS:        tr.cfg.TOS,
		TxQueueLen: tr.cfg.TxQueueLen,
		Sender:     r.Sender, Receiver: r.Receiver,
		StartedAt: r.StartedAt, StoppedAt: r.StoppedAt,
		SentBytes: r.SentBytes, ReceivedBytes: r.ReceivedBytes,
		Samples: r.Samples,
	}
	if tr.snd != nil {
		res.Payload = tr.snd.PayloadSize()
		res.PacketSize = res.Payload + tfrc.DataHeaderLen
	}
	return res
}
