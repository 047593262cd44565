package traffic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"wanlab/clock"
)

// TCPConfig describes a bulk TCP flow. The client always connects to the
// server, as netperf's does; Dir says which of the two then sends.
type TCPConfig struct {
	// Label names the flow (for instance "TCP upload BE").
	Label string
	// Client connects; Server listens on Server.Addr. A valid Client.Addr
	// is bound as the connection's source address.
	Client, Server Host
	// Dir is Up when the client sends, Down when the server sends.
	Dir Direction
	// CC is the congestion control of both sockets (TCP_CONGESTION), for
	// instance "cubic", "reno" or "bbr"; "" keeps the host's default.
	CC string
	// TOS is the TOS byte (IP_TOS, or IPV6_TCLASS over IPv6) of both
	// sockets, so data and acknowledgements carry it: the DSCP shifted
	// left by two (EF is 0xb8, CS1 0x20). The kernel keeps the ECN bits
	// of TCP segments to itself. 0 leaves the default, which is 0.
	TOS int
	// SendBuffer is the sender's SO_SNDBUF and ReceiveBuffer the
	// receiver's SO_RCVBUF, in bytes as given to setsockopt (the kernel
	// doubles them); 0 leaves the kernel's autotuning
	// (net.ipv4.tcp_wmem, tcp_rmem).
	SendBuffer, ReceiveBuffer int
	// Start and Stop are offsets from T0: the client connects at Start,
	// and the sender stops writing at Stop.
	Start, Stop time.Duration
	// Bytes, if positive, is how much the sender writes before it stops
	// (it stops at Stop all the same if that comes first).
	Bytes int64
}

// TCP is a bulk TCP flow: the sender writes as fast as its socket takes,
// the receiver reads and discards, both count the bytes, and each grid
// point reads TCP_INFO at both ends. At Stop (or after Bytes) the sender
// shuts its side down (FIN); the receiver reads what is still in flight
// until the end of the stream, so the flow ends complete when every byte
// written has been read.
type TCP struct {
	cfg TCPConfig

	// Set before Start, read only afterwards.
	ln         net.Listener
	senderOpts sockOpts
	recvOpts   sockOpts
	env        Env
	wg         sync.WaitGroup

	sent, received atomic.Int64 // bytes written and read by the two ends
	// live counts the flow's goroutines still running; at 0 nothing the
	// flow records changes any more.
	live atomic.Int32

	mu     sync.Mutex // guards what follows
	closed bool
	conns  []net.Conn // every connection made, for Close
	snd    net.Conn   // the sending end, once connected
	rcv    net.Conn   // the receiving end, once connected
	res    TCPResult

	// Used only on the sampling goroutine.
	opened, ended bool
}

// NewTCP checks cfg and returns the flow.
func NewTCP(cfg TCPConfig) (*TCP, error) {
	if err := CheckHosts(cfg.Label, cfg.Client, cfg.Server); err != nil {
		return nil, err
	}
	if cfg.Dir != Up && cfg.Dir != Down {
		return nil, fmt.Errorf("traffic: TCP flow %q: direction %d: use traffic.Up or traffic.Down", cfg.Label, int(cfg.Dir))
	}
	if err := CheckTOS(cfg.Label, cfg.TOS); err != nil {
		return nil, err
	}
	if cfg.SendBuffer < 0 || cfg.ReceiveBuffer < 0 {
		return nil, fmt.Errorf("traffic: TCP flow %q: negative buffer size: use 0 for the kernel's autotuning", cfg.Label)
	}
	if cfg.Bytes < 0 {
		return nil, fmt.Errorf("traffic: TCP flow %q: byte count %d: use 0 to send until Stop", cfg.Label, cfg.Bytes)
	}
	if len(cfg.CC) >= 16 {
		return nil, fmt.Errorf("traffic: TCP flow %q: congestion control name %q is longer than the kernel allows (15 bytes)", cfg.Label, cfg.CC)
	}
	f := &TCP{cfg: cfg}
	f.senderOpts = sockOpts{cc: cfg.CC, tos: cfg.TOS, sndbuf: cfg.SendBuffer}
	f.recvOpts = sockOpts{cc: cfg.CC, tos: cfg.TOS, rcvbuf: cfg.ReceiveBuffer}
	f.res = TCPResult{
		FlowInfo: FlowInfo{Label: cfg.Label, Kind: "tcp", Start: cfg.Start, Stop: cfg.Stop},
		Dir:      cfg.Dir, CC: cfg.CC, TOS: cfg.TOS, Bytes: cfg.Bytes,
	}
	return f, nil
}

// TCPResult is what a TCP flow recorded.
type TCPResult struct {
	FlowInfo
	// Dir, CC, TOS and Bytes are the flow's configuration.
	Dir   Direction `json:"direction"`
	CC    string    `json:"cc"`
	TOS   int       `json:"tos"`
	Bytes int64     `json:"bytes,omitempty"`
	// Sender and Receiver are the two sockets as the kernel set them up,
	// read back once connected; zero if the flow never connected.
	Sender   SocketInfo `json:"sender"`
	Receiver SocketInfo `json:"receiver"`
	BulkOutcome
	// Samples are the readings at the grid points from the first one at
	// or after Start to the first one after the receiver read the end of
	// the stream (or the end of the run). The byte counts are 0 at
	// T0+Start, which is where the first sample's interval begins.
	Samples []TCPSample `json:"samples"`
}

// SocketInfo is one end of a connection as the kernel set it up.
type SocketInfo struct {
	Local  netip.AddrPort `json:"local"`
	Remote netip.AddrPort `json:"remote"`
	// CC is the congestion control in use (TCP_CONGESTION read back).
	CC string `json:"cc"`
	// TOS is the TOS byte read back (IP_TOS or IPV6_TCLASS).
	TOS int `json:"tos"`
	// SendBuffer and ReceiveBuffer are SO_SNDBUF and SO_RCVBUF read back
	// when the connection was made (autotuning changes them later).
	SendBuffer    int `json:"sndbuf"`
	ReceiveBuffer int `json:"rcvbuf"`
}

// TCPSample is one grid point's reading of a TCP flow. Every figure is a
// running total or a current state, not a per-step difference: the
// throughput over a step is the difference of two samples' bytes divided
// by the difference of their times.
type TCPSample struct {
	K int        `json:"k"`
	T clock.Time `json:"t_ns"`
	// Connected says whether the connection existed at the time; before,
	// the byte counts are 0 and the TCP_INFO readings empty.
	Connected bool `json:"connected"`
	// SentBytes is what the sender's application has written so far (it
	// may lag the kernel by part of the 128 KiB write in progress, never
	// lead it) and ReceivedBytes what the receiver's has read. Both only
	// grow from one sample to the next, and they are read so that
	// ReceivedBytes <= SentBytes, Sender.BytesAcked <= SentBytes+2 (the
	// kernel counts the SYN and the FIN as a byte each) and ReceivedBytes
	// <= Receiver.BytesReceived hold.
	SentBytes     int64 `json:"sent_bytes"`
	ReceivedBytes int64 `json:"received_bytes"`
	// Sender and Receiver are the two ends' TCP_INFO (the sender's
	// BytesAcked is its acknowledged-bytes counter).
	Sender   TCPInfo `json:"sender"`
	Receiver TCPInfo `json:"receiver"`
}

// Label returns the flow's label.
func (f *TCP) Label() string { return f.cfg.Label }

// Window returns the flow's start and stop offsets.
func (f *TCP) Window() (start, stop time.Duration) { return f.cfg.Start, f.cfg.Stop }

// network returns "tcp4" or "tcp6" for the server's address family.
func (f *TCP) network() string {
	if f.cfg.Server.Addr.Is4() {
		return "tcp4"
	}
	return "tcp6"
}

// Open listens on the server. The listener carries the options of the
// server's end, which the accepted connection inherits.
func (f *TCP) Open(ctx context.Context) error {
	if f.opened {
		return errors.New("traffic: a TCP flow runs once: make a new one for each run")
	}
	f.opened = true
	opts := f.recvOpts
	if f.cfg.Dir == Down {
		opts = f.senderOpts
	}
	ln, err := f.cfg.Server.Net.Listen(ctx, f.network(), f.cfg.Server.listenAddr(), opts.control())
	if err != nil {
		return err
	}
	f.ln = ln
	return nil
}

// Start launches the flow: at Start it connects and sends.
func (f *TCP) Start(ctx context.Context, env Env) {
	f.env = env
	f.wg.Add(1)
	f.live.Add(1)
	go f.run(ctx)
}

// fail records the first error of the flow's goroutines.
func (f *TCP) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.res.Error == "" && !f.closed {
		f.res.Error = err.Error()
	}
}

// adopt records a new connection so that Close closes it; if Close came
// first, it closes c and returns false.
func (f *TCP) adopt(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		c.Close()
		return false
	}
	f.conns = append(f.conns, c)
	return true
}

func (f *TCP) run(ctx context.Context) {
	defer f.wg.Done()
	defer f.live.Add(-1)
	if !SleepUntil(ctx, f.env.Clock, f.env.At(f.cfg.Start)) {
		return
	}
	client, server, err := f.connect(ctx)
	if err != nil {
		if ctx.Err() == nil {
			f.fail(err)
		}
		return
	}
	snd, rcv := client, server
	if f.cfg.Dir == Down {
		snd, rcv = server, client
	}
	sndState, err1 := readSockState(snd, true)
	rcvState, err2 := readSockState(rcv, true)
	if err := errors.Join(err1, err2); err != nil {
		f.fail(err)
		return
	}
	f.mu.Lock()
	f.snd, f.rcv = snd, rcv
	f.res.Connected = true
	f.res.ConnectedAt = f.env.Clock.Now()
	f.res.Sender = socketInfo(snd, sndState)
	f.res.Receiver = socketInfo(rcv, rcvState)
	f.mu.Unlock()

	f.wg.Add(1)
	f.live.Add(1)
	go f.receive(rcv)
	f.send(snd)
}

// connect makes the connection: the client dials, the server accepts it.
// A connection from anywhere else that reaches the listener first is
// turned away.
func (f *TCP) connect(ctx context.Context) (client, server net.Conn, err error) {
	addr := f.ln.Addr().String()
	client, err = f.cfg.Client.Net.Dial(ctx, f.network(), f.cfg.Client.bindAddr(), addr, f.clientOpts().control())
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	if !f.adopt(client) {
		return nil, nil, net.ErrClosed
	}
	for {
		server, err = f.ln.Accept()
		if err != nil {
			return nil, nil, fmt.Errorf("accept on %s: %w", addr, err)
		}
		if server.RemoteAddr().String() == client.LocalAddr().String() {
			break
		}
		server.Close()
	}
	// One connection per flow: the listener has done its job.
	f.ln.Close()
	if !f.adopt(server) {
		return nil, nil, net.ErrClosed
	}
	return client, server, nil
}

func (f *TCP) clientOpts() sockOpts {
	if f.cfg.Dir == Up {
		return f.senderOpts
	}
	return f.recvOpts
}

// send writes until Stop or Bytes, then shuts its side down.
func (f *TCP) send(c net.Conn) {
	if err := f.write(c); err != nil {
		if !errClosed(err) {
			f.fail(fmt.Errorf("send: %w", err))
		}
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		if err := cw.CloseWrite(); err != nil && !errClosed(err) {
			f.fail(fmt.Errorf("shut down the sending side: %w", err))
		}
	}
}

// write writes until Stop or Bytes, and records when it stopped.
func (f *TCP) write(c net.Conn) error {
	defer func() {
		f.mu.Lock()
		f.res.StoppedAt = f.env.Clock.Now()
		f.mu.Unlock()
	}()
	c.SetWriteDeadline(f.env.Clock.Wall(f.env.At(f.cfg.Stop)))
	return WriteBulk(c, make([]byte, 128<<10), f.cfg.Bytes, &f.sent)
}

// receive reads and discards until the end of the stream.
func (f *TCP) receive(c net.Conn) {
	defer f.wg.Done()
	defer f.live.Add(-1)
	buf := make([]byte, 128<<10)
	for {
		n, err := c.Read(buf)
		f.received.Add(int64(n))
		if err == io.EOF {
			f.mu.Lock()
			// An end of stream that Close caused is not the sender's.
			if !f.closed {
				f.res.Complete = true
				f.res.CompletedAt = f.env.Clock.Now()
			}
			f.mu.Unlock()
			return
		}
		if err != nil {
			if !errClosed(err) {
				f.fail(fmt.Errorf("receive: %w", err))
			}
			return
		}
	}
}

// Sample reads both ends' byte counts and TCP_INFO, from the first grid
// point at or after Start until the flow has ended.
func (f *TCP) Sample(k int, t clock.Time) {
	if f.ended || f.env.Grid(k) < f.env.At(f.cfg.Start) {
		return
	}
	// Read whether the flow has ended before reading its counts: if it
	// has, they are final and this is its last sample.
	f.ended = f.live.Load() == 0
	f.mu.Lock()
	snd, rcv := f.snd, f.rcv
	f.mu.Unlock()
	// Each count is read before the one it must not exceed: what the
	// receiver read before what the sender wrote, the sender's kernel's
	// acknowledged bytes before what it wrote, and what the receiver read
	// before its kernel's received bytes. What was read or acknowledged
	// was written, even if the write that took it has not returned yet.
	s := TCPSample{K: k, T: t, Connected: snd != nil}
	s.ReceivedBytes = f.received.Load()
	var err1, err2 error
	if s.Connected {
		s.Sender, err1 = tcpInfoOf(snd)
	}
	s.SentBytes = SentAtLeast(f.sent.Load(), s.ReceivedBytes, int64(s.Sender.BytesAcked)-2)
	if s.Connected {
		s.Receiver, err2 = tcpInfoOf(rcv)
	}
	if err := errors.Join(err1, err2); err != nil {
		f.fail(fmt.Errorf("TCP_INFO: %w", err))
	}
	f.mu.Lock()
	f.res.Samples = append(f.res.Samples, s)
	f.mu.Unlock()
}

// Close stops the flow and closes its sockets, with a reset (SO_LINGER 0)
// so that nothing it queued crosses the path after the run.
func (f *TCP) Close() {
	f.mu.Lock()
	f.closed = true
	conns := f.conns
	f.mu.Unlock()
	if f.ln != nil {
		f.ln.Close()
	}
	for _, c := range conns {
		// Reset rather than close: a plain close would leave the
		// kernel sending what is still in the send buffer after the
		// run is over.
		if l, ok := c.(interface{ SetLinger(int) error }); ok {
			l.SetLinger(0)
		}
		c.Close()
	}
	f.wg.Wait()
	f.mu.Lock()
	f.res.SentBytes = f.sent.Load()
	f.res.ReceivedBytes = f.received.Load()
	f.mu.Unlock()
}

// Result returns what the flow recorded.
func (f *TCP) Result() FlowResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.res
	return &r
}

// socketInfo describes one end of a connection from what was read back.
func socketInfo(c net.Conn, st sockState) SocketInfo {
	return SocketInfo{
		Local:         AddrPort(c.LocalAddr()),
		Remote:        AddrPort(c.RemoteAddr()),
		CC:            st.cc,
		TOS:           st.tos,
		SendBuffer:    st.sndbuf,
		ReceiveBuffer: st.rcvbuf,
	}
}
