package tfrcflow

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
	"wanlab/tfrc"
	"wanlab/tfrc/tfrcudp"
	"wanlab/traffic"
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
// it from Start to Stop, and TFRC paces it out.
type Flow struct {
	cfg              Config
	network          string // "udp4" or "udp6"
	sndHost, rcvHost traffic.Host

	// Set by Open and Start, read only afterwards.
	sndConn, rcvConn net.PacketConn
	snd              *tfrcudp.Sender
	rcv              *tfrcudp.Receiver
	env              traffic.Env
	cancel           context.CancelFunc
	wg               sync.WaitGroup

	mu  sync.Mutex // guards res
	res Result

	// Used only on the sampling goroutine.
	opened, started, closed bool
}

var _ traffic.Flow = (*Flow)(nil)

// New checks cfg and returns the flow.
func New(cfg Config) (*Flow, error) {
	if cfg.Client.Net == nil || cfg.Server.Net == nil {
		return nil, fmt.Errorf("tfrcflow: flow %q: both hosts need a Net (traffic.Local{} for this process's namespace)", cfg.Label)
	}
	if cfg.Dir != traffic.Up && cfg.Dir != traffic.Down {
		return nil, fmt.Errorf("tfrcflow: flow %q: direction %d: use traffic.Up or traffic.Down", cfg.Label, int(cfg.Dir))
	}
	f := &Flow{cfg: cfg, sndHost: cfg.Client, rcvHost: cfg.Server}
	if cfg.Dir == traffic.Down {
		f.sndHost, f.rcvHost = cfg.Server, cfg.Client
	}
	if !f.rcvHost.Addr.IsValid() {
		return nil, fmt.Errorf("tfrcflow: flow %q: the receiving host (the %s) has no address for the sender to send to: set its Addr", cfg.Label, map[traffic.Direction]string{traffic.Up: "server", traffic.Down: "client"}[cfg.Dir])
	}
	if a := f.sndHost.Addr; a.IsValid() && a.Is4() != f.rcvHost.Addr.Is4() {
		return nil, fmt.Errorf("tfrcflow: flow %q: sender address %v and receiver address %v are of different IP versions: use two IPv4 or two IPv6 addresses", cfg.Label, a, f.rcvHost.Addr)
	}
	if err := traffic.CheckTOS(cfg.Label, cfg.TOS); err != nil {
		return nil, err
	}
	if cfg.TxQueueLen < 0 || cfg.TxQueueLen > MaxTxQueueLen {
		return nil, fmt.Errorf("tfrcflow: flow %q: transmit buffer of %d packets: give 0 (unbounded: the socket's send buffer bounds it) to %d (Linux DCCP's default was %d)",
			cfg.Label, cfg.TxQueueLen, MaxTxQueueLen, tfrcudp.DefaultTxQueueLen)
	}
	f.network = "udp6"
	if f.rcvHost.Addr.Is4() {
		f.network = "udp4"
	}
	f.res = Result{
		FlowInfo:   traffic.FlowInfo{Label: cfg.Label, Kind: Kind, Start: cfg.Start, Stop: cfg.Stop},
		Dir:        cfg.Dir,
		TOS:        cfg.TOS,
		TxQueueLen: cfg.TxQueueLen,
	}
	return f, nil
}

// Label returns the flow's label.
func (f *Flow) Label() string { return f.cfg.Label }

// Window returns the flow's start and stop offsets.
func (f *Flow) Window() (start, stop time.Duration) { return f.cfg.Start, f.cfg.Stop }

// Open makes both sockets, the sender and the receiver, so that a bad
// address or option is an error before the run starts.
func (f *Flow) Open(ctx context.Context) (err error) {
	if f.opened {
		return errors.New("tfrcflow: a TFRC flow runs once: make a new one for each run")
	}
	f.opened = true
	defer func() {
		if err != nil {
			for _, c := range []net.PacketConn{f.sndConn, f.rcvConn} {
				if c != nil {
					c.Close()
				}
			}
		}
	}()
	ctl := traffic.TOSControl(f.cfg.TOS)
	f.rcvConn, err = f.rcvHost.Net.ListenPacket(ctx, f.network, netip.AddrPortFrom(f.rcvHost.Addr, 0).String(), ctl)
	if err != nil {
		return fmt.Errorf("tfrcflow: receiver socket: %w", err)
	}
	sndAddr := ":0"
	if f.sndHost.Addr.IsValid() {
		sndAddr = netip.AddrPortFrom(f.sndHost.Addr, 0).String()
	}
	f.sndConn, err = f.sndHost.Net.ListenPacket(ctx, f.network, sndAddr, ctl)
	if err != nil {
		return fmt.Errorf("tfrcflow: sender socket: %w", err)
	}
	f.snd, err = tfrcudp.NewSender(f.sndConn, f.rcvConn.LocalAddr(), tfrcudp.Config{TxQueueLen: f.cfg.TxQueueLen, PacketSize: f.cfg.PacketSize})
	if err != nil {
		return fmt.Errorf("tfrcflow: flow %q: %w", f.cfg.Label, err)
	}
	f.rcv = tfrcudp.NewReceiver(f.rcvConn)
	f.res.Payload = f.snd.PayloadSize()
	f.res.PacketSize = f.res.Payload + tfrc.DataHeaderLen
	f.res.Sender = traffic.AddrPort(f.sndConn.LocalAddr())
	f.res.Receiver = traffic.AddrPort(f.rcvConn.LocalAddr())
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

// send runs the sender and a bulk application from Start to Stop.
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
	bulk := make(chan error, 1)
	go func() { bulk <- f.snd.Bulk(sctx) }()
	err := f.snd.Run(sctx)
	berr := <-bulk
	f.mu.Lock()
	f.res.StoppedAt = clk.Now()
	f.mu.Unlock()
	if err != nil {
		f.fail(fmt.Errorf("sender: %w", err))
	} else if berr != nil && !errors.Is(berr, tfrcudp.ErrClosed) {
		f.fail(fmt.Errorf("application: %w", berr))
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
