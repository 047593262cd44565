package traffic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
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
	*BulkFlow[net.Conn, SocketInfo, TCPSample]
}

var _ Flow = (*TCP)(nil)

// tcpTransport is what a bulk TCP flow does its own way.
type tcpTransport struct {
	cfg                  TCPConfig
	senderOpts, recvOpts sockOpts
	ln                   net.Listener // set by Open
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
	t := &tcpTransport{
		cfg:        cfg,
		senderOpts: sockOpts{cc: cfg.CC, tos: cfg.TOS, sndbuf: cfg.SendBuffer},
		recvOpts:   sockOpts{cc: cfg.CC, tos: cfg.TOS, rcvbuf: cfg.ReceiveBuffer},
	}
	spec := BulkSpec{
		Name:  "traffic: a TCP flow",
		Label: cfg.Label, Kind: "tcp", Start: cfg.Start, Stop: cfg.Stop,
		Dir: cfg.Dir, Bytes: cfg.Bytes,
		WriteSize: 128 << 10, ReadSize: 128 << 10,
	}
	return &TCP{NewBulkFlow[net.Conn, SocketInfo, TCPSample](spec, t)}, nil
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

// network returns "tcp4" or "tcp6" for the server's address family.
func (t *tcpTransport) network() string {
	if t.cfg.Server.Addr.Is4() {
		return "tcp4"
	}
	return "tcp6"
}

// Open listens on the server. The listener carries the options of the
// server's end, which the accepted connection inherits.
func (t *tcpTransport) Open(ctx context.Context) error {
	opts := t.recvOpts
	if t.cfg.Dir == Down {
		opts = t.senderOpts
	}
	ln, err := t.cfg.Server.Net.Listen(ctx, t.network(), t.cfg.Server.listenAddr(), opts.control())
	if err != nil {
		return err
	}
	t.ln = ln
	return nil
}

// Connect makes the connection: the client dials, the server accepts it.
// A connection from anywhere else that reaches the listener first is
// turned away.
func (t *tcpTransport) Connect(ctx context.Context, adopt func(net.Conn) bool) (client, server net.Conn, err error) {
	addr := t.ln.Addr().String()
	client, err = t.cfg.Client.Net.Dial(ctx, t.network(), t.cfg.Client.bindAddr(), addr, t.clientOpts().control())
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	if !adopt(client) {
		return nil, nil, net.ErrClosed
	}
	for {
		server, err = t.ln.Accept()
		if err != nil {
			return nil, nil, fmt.Errorf("accept on %s: %w", addr, err)
		}
		if server.RemoteAddr().String() == client.LocalAddr().String() {
			break
		}
		server.Close()
	}
	// One connection per flow: the listener has done its job.
	t.ln.Close()
	if !adopt(server) {
		return nil, nil, net.ErrClosed
	}
	return client, server, nil
}

func (t *tcpTransport) clientOpts() sockOpts {
	if t.cfg.Dir == Up {
		return t.senderOpts
	}
	return t.recvOpts
}

// End reads back how the kernel set up one end of the connection.
func (t *tcpTransport) End(c net.Conn, _ bool) (SocketInfo, error) {
	st, err := ReadSocketState(c, true)
	if err != nil {
		return SocketInfo{}, err
	}
	return socketInfo(c, st), nil
}

// SendStream is the sending socket itself; the stream ends when the
// sender shuts its side down and the receiver has acknowledged all of it
// (see awaitFINAcked).
func (t *tcpTransport) SendStream(c net.Conn) (StreamWriter, func() error, error) {
	end := func() error {
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			if err := cw.CloseWrite(); err != nil {
				return fmt.Errorf("shut down the sending side: %w", err)
			}
		}
		awaitFINAcked(c)
		return nil
	}
	return c, end, nil
}

// finAckPoll is how often awaitFINAcked looks at the socket.
const finAckPoll = time.Millisecond

// awaitFINAcked waits until the sending kernel has had its FIN, and so
// every byte before it, acknowledged, or until the connection is closed
// (the run's end aborts it). The flow ends when both of its goroutines
// have; without this wait the receiver could read the end of the stream
// and the flow end while the last acknowledgement is still on its way,
// and the last sample would show the sender's bytes_acked short of what
// was sent.
func awaitFINAcked(c net.Conn) {
	for {
		info, err := tcpInfoOf(c)
		if err != nil || (info.State != tcpFinWait1 && info.State != tcpClosing) {
			return
		}
		time.Sleep(finAckPoll)
	}
}

// TCP states (include/net/tcp_states.h) in which the FIN sent is not yet
// acknowledged.
const (
	tcpFinWait1 = 4
	tcpClosing  = 11
)

// ReceiveStream is the receiving socket itself.
func (t *tcpTransport) ReceiveStream(_ context.Context, c net.Conn) (io.Reader, error) {
	return c, nil
}

// Sample reads both ends' byte counts and TCP_INFO.
func (t *tcpTransport) Sample(k int, at clock.Time, snd, rcv net.Conn, connected bool, n *BulkCounts) (TCPSample, error) {
	// Each count is read before the one it must not exceed: what the
	// receiver read before what the sender wrote, the sender's kernel's
	// acknowledged bytes before what it wrote, and what the receiver read
	// before its kernel's received bytes. What was read or acknowledged
	// was written, even if the write that took it has not returned yet.
	s := TCPSample{K: k, T: at, Connected: connected}
	s.ReceivedBytes = n.Received()
	var err1, err2 error
	if connected {
		s.Sender, err1 = tcpInfoOf(snd)
	}
	s.SentBytes = n.Sent(s.ReceivedBytes, int64(s.Sender.BytesAcked)-2)
	if connected {
		s.Receiver, err2 = tcpInfoOf(rcv)
	}
	if err := errors.Join(err1, err2); err != nil {
		return s, fmt.Errorf("TCP_INFO: %w", err)
	}
	return s, nil
}

// CloseConn resets the connection (SO_LINGER 0) rather than closing it: a
// plain close would leave the kernel sending what is still in the send
// buffer after the run is over.
func (t *tcpTransport) CloseConn(c net.Conn) {
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		l.SetLinger(0)
	}
	c.Close()
}

// Abort closes the listener.
func (t *tcpTransport) Abort() {
	if t.ln != nil {
		t.ln.Close()
	}
}

// Release has nothing left to close: the listener and the connections
// are all the sockets a TCP flow has.
func (t *tcpTransport) Release() {}

// Result is the flow's configuration and what it recorded.
func (t *tcpTransport) Result(r BulkRecord[SocketInfo, TCPSample]) FlowResult {
	return &TCPResult{
		FlowInfo: r.Info,
		Dir:      t.cfg.Dir, CC: t.cfg.CC, TOS: t.cfg.TOS, Bytes: t.cfg.Bytes,
		Sender: r.Sender, Receiver: r.Receiver,
		BulkOutcome: r.Outcome,
		Samples:     r.Samples,
	}
}

// socketInfo describes one end of a connection from what was read back.
func socketInfo(c net.Conn, st SocketState) SocketInfo {
	return SocketInfo{
		Local:         AddrPort(c.LocalAddr()),
		Remote:        AddrPort(c.RemoteAddr()),
		CC:            st.CC,
		TOS:           st.TOS,
		SendBuffer:    st.SendBuffer,
		ReceiveBuffer: st.ReceiveBuffer,
	}
}
