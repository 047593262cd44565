package scalableflow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"wanlab/clock"
	"wanlab/scalable"
	"wanlab/scalable/scalableudp"
	"wanlab/traffic"
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

// Flow is a bulk scalable flow.
type Flow struct {
	cfg              Config
	network          string // "udp4" or "udp6"
	sndHost, rcvHost traffic.Host

	// Set by Open and Start, read only afterwards.
	snd    *scalableudp.Sender
	rcv    *scalableudp.Receiver
	env    traffic.Env
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu  sync.Mutex // guards res
	res Result

	// Used only on the sampling goroutine.
	opened, started, closed bool
}

var _ traffic.Flow = (*Flow)(nil)

// New checks cfg and returns the flow.
func New(cfg Config) (*Flow, error) {
	if cfg.Client.Net == nil || cfg.Server.Net == nil {
		return nil, fmt.Errorf("scalableflow: flow %q: both hosts need a Net (traffic.Local{} for this process's namespace)", cfg.Label)
	}
	if cfg.Dir != traffic.Up && cfg.Dir != traffic.Down {
		return nil, fmt.Errorf("scalableflow: flow %q: direction %d: use traffic.Up or traffic.Down", cfg.Label, int(cfg.Dir))
	}
	f := &Flow{cfg: cfg, sndHost: cfg.Client, rcvHost: cfg.Server}
	if cfg.Dir == traffic.Down {
		f.sndHost, f.rcvHost = cfg.Server, cfg.Client
	}
	if !f.rcvHost.Addr.IsValid() {
		return nil, fmt.Errorf("scalableflow: flow %q: the receiving host (the %s) has no address for the sender to send to: set its Addr", cfg.Label, map[traffic.Direction]string{traffic.Up: "server", traffic.Down: "client"}[cfg.Dir])
	}
	if a := f.sndHost.Addr; a.IsValid() && a.Is4() != f.rcvHost.Addr.Is4() {
		return nil, fmt.Errorf("scalableflow: flow %q: sender address %v and receiver address %v are of different IP versions: use two IPv4 or two IPv6 addresses", cfg.Label, a, f.rcvHost.Addr)
	}
	if err := traffic.CheckTOS(cfg.Label, cfg.TOS); err != nil {
		return nil, err
	}
	if cfg.AckEvery < 0 || cfg.AckEvery > 2 {
		return nil, fmt.Errorf("scalableflow: flow %q: an ACK every %d packets: use 1 (every packet) or 2", cfg.Label, cfg.AckEvery)
	}
	f.network = "udp6"
	if f.rcvHost.Addr.Is4() {
		f.network = "udp4"
	}
	f.res = Result{
		FlowInfo: traffic.FlowInfo{Label: cfg.Label, Kind: Kind, Start: cfg.Start, Stop: cfg.Stop},
		Dir:      cfg.Dir,
		TOS:      cfg.TOS,
	}
	return f, nil
}

// Label returns the flow's label.
func (f *Flow) Label() string { return f.cfg.Label }

// Window returns the flow's start and stop offsets.
func (f *Flow) Window() (start, stop time.Duration) { return f.cfg.Start, f.cfg.Stop }

// Open makes both sockets, the sender and the receiver, so that a bad
// address or option (a kernel that will not set ECT(1)) is an error
// before the run starts.
func (f *Flow) Open(ctx context.Context) (err error) {
	if f.opened {
		return errors.New("scalableflow: a scalable flow runs once: make a new one for each run")
	}
	f.opened = true
	var sndConn, rcvConn net.PacketConn
	defer func() {
		if err != nil {
			for _, c := range []net.PacketConn{sndConn, rcvConn} {
				if c != nil {
					c.Close()
				}
			}
			f.snd, f.rcv = nil, nil
		}
	}()
	rcvConn, err = f.rcvHost.Net.ListenPacket(ctx, f.network, netip.AddrPortFrom(f.rcvHost.Addr, 0).String(), nil)
	if err != nil {
		return fmt.Errorf("scalableflow: receiver socket: %w", err)
	}
	sndAddr := ":0"
	if f.sndHost.Addr.IsValid() {
		sndAddr = netip.AddrPortFrom(f.sndHost.Addr, 0).String()
	}
	sndConn, err = f.sndHost.Net.ListenPacket(ctx, f.network, sndAddr, nil)
	if err != nil {
		return fmt.Errorf("scalableflow: sender socket: %w", err)
	}
	if f.rcv, err = scalableudp.NewReceiver(rcvConn, f.cfg.AckEvery, f.cfg.TOS); err != nil {
		return fmt.Errorf("scalableflow: flow %q: %w", f.cfg.Label, err)
	}
	if f.snd, err = scalableudp.NewSender(sndConn, rcvConn.LocalAddr(), scalableudp.Config{PacketSize: f.cfg.PacketSize, TOS: f.cfg.TOS}); err != nil {
		// The receiver owns its socket now: release it through Run.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		f.rcv.Run(done)
		rcvConn = nil
		return fmt.Errorf("scalableflow: flow %q: %w", f.cfg.Label, err)
	}
	f.res.PacketSize = f.snd.PacketSize()
	f.res.Payload = f.res.PacketSize - scalable.DataHeaderLen
	f.res.TOS = f.snd.Stats().TOS
	f.res.Sender = traffic.AddrPort(sndConn.LocalAddr())
	f.res.Receiver = traffic.AddrPort(rcvConn.LocalAddr())
	return nil
}

// Start launches the receiver at once and the sender at Start. Both end
// when ctx ends, at the latest.
func (f *Flow) Start(ctx context.Context, env traffic.Env) {
	f.env = env
	f.started = true
	fctx, cancel := context.WithCancel(ctx)
	f.cancel = cancel
	f.wg.Add(2)
	go func() {
		defer f.wg.Done()
		if err := f.rcv.Run(fctx); err != nil {
			f.fail(fmt.Errorf("receiver: %w", err))
		}
	}()
	go func() {
		defer f.wg.Done()
		f.send(fctx)
	}()
}

// send runs the sender from Start to Stop.
func (f *Flow) send(ctx context.Context) {
	clk := f.env.Clock
	if !traffic.SleepUntil(ctx, clk, f.env.At(f.cfg.Start)) {
		f.snd.Run(ctx) // releases the socket and the sender's eventfd
		return
	}
	sctx, stop := context.WithTimeout(ctx, f.env.At(f.cfg.Stop).Sub(clk.Now()))
	defer stop()
	f.mu.Lock()
	f.res.StartedAt = clk.Now()
	f.mu.Unlock()
	err := f.snd.Run(sctx)
	f.mu.Lock()
	f.res.StoppedAt = clk.Now()
	f.mu.Unlock()
	if err != nil {
		f.fail(fmt.Errorf("sender: %w", err))
	}
}

// fail records the first error of the flow's goroutines.
func (f *Flow) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.res.Error == "" {
		f.res.Error = err.Error()
	}
}

// Sample reads both sides from the first grid point at or after Start.
func (f *Flow) Sample(k int, t clock.Time) {
	if f.env.Grid(k) < f.env.At(f.cfg.Start) {
		return
	}
	// The receiver is read before the sender, whose counts it cannot
	// exceed.
	rs := f.rcv.Stats()
	ss := f.snd.Stats()
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
	f.mu.Lock()
	f.res.Samples = append(f.res.Samples, s)
	f.mu.Unlock()
}

// Close stops both sides, waits for their goroutines and closes the
// sockets.
func (f *Flow) Close() {
	if f.closed || !f.opened || f.snd == nil {
		return
	}
	f.closed = true
	if !f.started {
		// Run on an ended context releases each side's socket (and the
		// sender's eventfd) at once.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		f.snd.Run(done)
		f.rcv.Run(done)
		return
	}
	f.cancel()
	f.wg.Wait()
	rs, ss := f.rcv.Stats(), f.snd.Stats()
	f.mu.Lock()
	f.res.SentBytes = int64(ss.PayloadBytesSent)
	f.res.ReceivedBytes = int64(rs.PayloadBytes)
	f.mu.Unlock()
}

// Result returns what the flow recorded.
func (f *Flow) Result() traffic.FlowResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.res
	r.Samples = append([]Sample(nil), f.res.Samples...)
	return &r
}
