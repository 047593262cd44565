package quicflow

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlogwriter"

	"wanlab/clock"
	"wanlab/traffic"
)

// Flow-control windows the receiver offers when Config leaves them 0; see
// the package documentation.
const (
	DefaultStreamWindow     = 32 << 20
	DefaultConnectionWindow = 32 << 20
)

// CongestionControl names the congestion controller of quic-go v0.65.0,
// the only one it has (see the package documentation).
const CongestionControl = "newreno"

// Kind is the FlowInfo.Kind of a QUIC flow's result.
const Kind = "quic"

// Config describes a bulk QUIC flow. The client always dials the server;
// Dir says which of the two then sends.
type Config struct {
	// Label names the flow (for instance "QUIC upload").
	Label string
	// Client dials from a UDP socket its Net makes, bound to Client.Addr
	// if that is valid (else to the unspecified address); Server listens
	// on a UDP socket bound to Server.Addr.
	Client, Server traffic.Host
	// Dir is traffic.Up when the client sends, traffic.Down when the
	// server sends.
	Dir traffic.Direction
	// TOS is the TOS byte of both ends' packets: the DSCP shifted left by
	// two (EF is 0xb8, CS1 0x20). Its ECN bits must be 0: quic-go sets the
	// ECN field itself. 0 leaves the default DSCP, 0.
	TOS int
	// Start and Stop are offsets from T0: the client dials at Start, and
	// the sender stops writing at Stop.
	Start, Stop time.Duration
	// Bytes, if positive, is how much the sender writes before it stops
	// (it stops at Stop all the same if that comes first).
	Bytes int64
	// StreamWindow and ConnectionWindow are the receiver's stream and
	// connection flow-control windows in bytes, both initial and maximum;
	// 0 means DefaultStreamWindow and DefaultConnectionWindow.
	StreamWindow, ConnectionWindow uint64
}

// maxWindow is the largest flow-control window QUIC can express: a
// variable-length integer (RFC 9000 §16).
const maxWindow = 1<<62 - 1

// Flow is a bulk QUIC flow: the sender writes one unidirectional stream
// as fast as quic-go takes the data, the receiver reads and discards it,
// both count the bytes, and each grid point reads both ends' recovery
// state. At Stop (or after Bytes) the sender closes its stream (FIN); the
// receiver reads what is still in flight until the end of the stream, so
// the flow ends complete when every byte written has been read. At the
// end of the run both ends close the connection (CONNECTION_CLOSE),
// discarding whatever the sender still had queued.
type Flow struct {
	cfg            Config
	network        string // "udp4" or "udp6"
	clientConf     *quic.Config
	clientTLS      *tls.Config
	clientRec      recorder
	serverRec      recorder
	sndRec, rcvRec *recorder // the sender's and the receiver's

	// Set by Open and Start, read only afterwards.
	clientPC, serverPC net.PacketConn
	clientTr, serverTr *quic.Transport
	ln                 *quic.Listener
	env                traffic.Env
	runCtx             context.Context
	stopAbort          func() bool
	wg                 sync.WaitGroup

	sent, received atomic.Int64 // bytes written and read by the two ends
	// live counts the flow's goroutines still running; at 0 nothing the
	// flow records changes any more.
	live atomic.Int32

	abortOnce sync.Once
	mu        sync.Mutex // guards what follows
	closed    bool
	conns     []*quic.Conn // every connection made, for abort
	snd, rcv  *quic.Conn   // the sending and the receiving end, once connected
	res       Result

	// Used only on the sampling goroutine.
	opened, ended bool
}

var _ traffic.Flow = (*Flow)(nil)

// Result is what a QUIC flow recorded.
type Result struct {
	traffic.FlowInfo
	// Dir, TOS and Bytes are the flow's configuration, and StreamWindow
	// and ConnectionWindow the flow-control windows the receiver offered.
	Dir              traffic.Direction `json:"direction"`
	TOS              int               `json:"tos"`
	Bytes            int64             `json:"bytes,omitempty"`
	StreamWindow     uint64            `json:"stream_window"`
	ConnectionWindow uint64            `json:"connection_window"`
	// CC is the stack's congestion controller, CongestionControl.
	CC string `json:"cc"`
	// Sender and Receiver are the two ends as they were set up, read once
	// connected; zero if the flow never connected.
	Sender   EndInfo `json:"sender"`
	Receiver EndInfo `json:"receiver"`
	// BulkOutcome says what became of the stream; ConnectedAt is one
	// round trip after the dial began, QUIC's handshake being 1-RTT.
	traffic.BulkOutcome
	// Samples are the readings at the grid points from the first one at
	// or after Start to the first one after the receiver read the end of
	// the stream (or the end of the run). The byte counts are 0 at
	// T0+Start, which is where the first sample's interval begins.
	Samples []Sample `json:"samples"`
}

// EndInfo is one end of a connection as it was set up.
type EndInfo struct {
	// Local and Remote are the UDP addresses of the connection's path;
	// Local is the address the socket is bound to, the unspecified address
	// for a client host without one.
	Local  netip.AddrPort `json:"local"`
	Remote netip.AddrPort `json:"remote"`
	// TOS is the socket's TOS byte read back (IP_TOS or IPV6_TCLASS);
	// quic-go adds the ECN bits per packet.
	TOS int `json:"tos"`
	// SendBuffer and ReceiveBuffer are the socket's SO_SNDBUF and
	// SO_RCVBUF read back (quic-go raises both).
	SendBuffer    int `json:"sndbuf"`
	ReceiveBuffer int `json:"rcvbuf"`
	// Version is the QUIC version in use ("v1"), ALPN the application
	// protocol negotiated, and GSO whether quic-go sends with UDP
	// segmentation offload.
	Version string `json:"version"`
	ALPN    string `json:"alpn"`
	GSO     bool   `json:"gso"`
}

// Sample is one grid point's reading of a QUIC flow. Every figure is a
// running total or a current state, not a per-step difference: the
// goodput over a step is the difference of two samples' bytes divided by
// the difference of their times.
type Sample struct {
	K int        `json:"k"`
	T clock.Time `json:"t_ns"`
	// Connected says whether the connection existed at the time; before,
	// the byte counts are 0 and the two ends' states empty.
	Connected bool `json:"connected"`
	// SentBytes is what the sender's application has handed to quic-go
	// so far (it may lag quic-go by part of the 32 KiB write in progress,
	// never lead it) and ReceivedBytes what the receiver's has read. Both
	// only grow from one sample to the next, and ReceivedBytes <=
	// SentBytes holds.
	SentBytes     int64 `json:"sent_bytes"`
	ReceivedBytes int64 `json:"received_bytes"`
	// Sender and Receiver are the two ends' recovery states.
	Sender   EndStats `json:"sender"`
	Receiver EndStats `json:"receiver"`
}

// EndStats is one end's recovery state at a grid point: RFC 9002's
// variables as quic-go keeps them, and counts since the connection began.
// Packet and byte counts are of QUIC packets (UDP payloads), all packet
// number spaces together.
type EndStats struct {
	// SRTT, RTTVar, MinRTT and LatestRTT are RFC 9002's smoothed_rtt,
	// rttvar, min_rtt and latest_rtt (§5), ack delay excluded.
	SRTT      time.Duration `json:"srtt_ns"`
	RTTVar    time.Duration `json:"rttvar_ns"`
	MinRTT    time.Duration `json:"min_rtt_ns"`
	LatestRTT time.Duration `json:"latest_rtt_ns"`
	// Cwnd is the congestion window in bytes of QUIC packets (UDP and IP
	// headers not counted); BytesInFlight and PacketsInFlight are what is
	// sent and not yet acknowledged or declared lost, as the congestion
	// controller counts it.
	Cwnd            uint64 `json:"cwnd_bytes"`
	BytesInFlight   int    `json:"bytes_in_flight"`
	PacketsInFlight int    `json:"packets_in_flight"`
	// CongestionState is the controller's state as quic-go's qlog names
	// it: "slow_start", "congestion_avoidance", "recovery" or
	// "application_limited". quic-go says application_limited whenever an
	// acknowledgement finds more than 3 datagrams of the window unused:
	// a bulk flow, whose stream always has data, shows it too when quic-go
	// itself sends less than the window allows (between paced bursts, or
	// while its goroutines wait for a CPU), and the window does not grow
	// then. ECNState is the ECN validation state of RFC
	// 9000 §13.4.2 (quic-go's "testing", "unknown", "capable", "failed").
	CongestionState string `json:"congestion_state"`
	ECNState        string `json:"ecn_state"`
	// MaxUDPPayload is the largest UDP payload path MTU discovery (RFC
	// 8899) has confirmed; 0 until it has confirmed one above quic-go's
	// initial 1280 bytes.
	MaxUDPPayload int `json:"max_udp_payload"`
	// PacketsSent and BytesSent count every packet sent, retransmissions
	// included; PacketsReceived and BytesReceived every packet received.
	PacketsSent     uint64 `json:"packets_sent"`
	BytesSent       uint64 `json:"bytes_sent"`
	PacketsReceived uint64 `json:"packets_received"`
	BytesReceived   uint64 `json:"bytes_received"`
	// PacketsLost counts the packets declared lost (RFC 9002 §6.1), path
	// MTU probes not included, and BytesLost their bytes; SpuriousLosses
	// counts those of them acknowledged later after all.
	PacketsLost    uint64 `json:"packets_lost"`
	BytesLost      uint64 `json:"bytes_lost"`
	SpuriousLosses uint64 `json:"spurious_losses"`
	// BytesRetrans counts the stream bytes sent again, at offsets sent
	// before (QUIC retransmits data, not packets).
	BytesRetrans uint64 `json:"bytes_retrans"`
	// CEReceived counts the packets that arrived marked CE.
	CEReceived uint64 `json:"ce_received"`
}

// New checks cfg and returns the flow.
func New(cfg Config) (*Flow, error) {
	if err := traffic.CheckHosts(cfg.Label, cfg.Client, cfg.Server); err != nil {
		return nil, err
	}
	if cfg.Dir != traffic.Up && cfg.Dir != traffic.Down {
		return nil, fmt.Errorf("quicflow: flow %q: direction %d: use traffic.Up or traffic.Down", cfg.Label, int(cfg.Dir))
	}
	if err := traffic.CheckTOS(cfg.Label, cfg.TOS); err != nil {
		return nil, err
	}
	if cfg.TOS&3 != 0 {
		return nil, fmt.Errorf("quicflow: flow %q: TOS %#x has ECN bits set, and quic-go sets the ECN field itself: use %#x", cfg.Label, cfg.TOS, cfg.TOS&^3)
	}
	if cfg.Bytes < 0 {
		return nil, fmt.Errorf("quicflow: flow %q: byte count %d: use 0 to send until Stop", cfg.Label, cfg.Bytes)
	}
	if cfg.StreamWindow == 0 {
		cfg.StreamWindow = DefaultStreamWindow
	}
	if cfg.ConnectionWindow == 0 {
		cfg.ConnectionWindow = DefaultConnectionWindow
	}
	if cfg.StreamWindow > maxWindow || cfg.ConnectionWindow > maxWindow {
		return nil, fmt.Errorf("quicflow: flow %q: flow-control windows %d and %d: QUIC's limit is 2^62-1 bytes", cfg.Label, cfg.StreamWindow, cfg.ConnectionWindow)
	}
	f := &Flow{cfg: cfg, network: "udp6"}
	if cfg.Server.Addr.Is4() {
		f.network = "udp4"
	}
	f.sndRec, f.rcvRec = &f.clientRec, &f.serverRec
	if cfg.Dir == traffic.Down {
		f.sndRec, f.rcvRec = &f.serverRec, &f.clientRec
	}
	f.res = Result{
		FlowInfo:         traffic.FlowInfo{Label: cfg.Label, Kind: Kind, Start: cfg.Start, Stop: cfg.Stop},
		Dir:              cfg.Dir,
		TOS:              cfg.TOS,
		Bytes:            cfg.Bytes,
		StreamWindow:     cfg.StreamWindow,
		ConnectionWindow: cfg.ConnectionWindow,
		CC:               CongestionControl,
	}
	return f, nil
}

// Label returns the flow's label.
func (f *Flow) Label() string { return f.cfg.Label }

// Window returns the flow's start and stop offsets.
func (f *Flow) Window() (start, stop time.Duration) { return f.cfg.Start, f.cfg.Stop }

// quicConfig returns the QUIC configuration of one end, whose events rec
// records.
func (f *Flow) quicConfig(rec *recorder) *quic.Config {
	return &quic.Config{
		InitialStreamReceiveWindow:     f.cfg.StreamWindow,
		MaxStreamReceiveWindow:         f.cfg.StreamWindow,
		InitialConnectionReceiveWindow: f.cfg.ConnectionWindow,
		MaxConnectionReceiveWindow:     f.cfg.ConnectionWindow,
		// A path that stays silent (a long outage the experiment
		// imposes) must not end the connection before the run does: the
		// idle timeout outlasts the flow's window.
		MaxIdleTimeout: f.cfg.Stop - f.cfg.Start + 30*time.Second,
		// The flow uses one unidirectional stream, opened by the sender.
		MaxIncomingStreams:    -1,
		MaxIncomingUniStreams: 1,
		Tracer: func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
			return rec
		},
	}
}

// Open makes both ends' UDP sockets and starts the server listening, so
// that a bad address or option is an error before the run starts.
func (f *Flow) Open(ctx context.Context) (err error) {
	if f.opened {
		return errors.New("quicflow: a QUIC flow runs once: make a new one for each run")
	}
	f.opened = true
	defer func() {
		if err != nil {
			f.abort()
			f.closeSockets()
		}
	}()
	serverTLS, clientTLS, err := tlsConfigs(time.Now())
	if err != nil {
		return err
	}
	f.clientTLS = clientTLS
	ctl := traffic.TOSControl(f.cfg.TOS)
	f.serverPC, err = f.cfg.Server.Net.ListenPacket(ctx, f.network, netip.AddrPortFrom(f.cfg.Server.Addr, 0).String(), ctl)
	if err != nil {
		return fmt.Errorf("quicflow: server socket: %w", err)
	}
	clientAddr := ":0"
	if f.cfg.Client.Addr.IsValid() {
		clientAddr = netip.AddrPortFrom(f.cfg.Client.Addr, 0).String()
	}
	f.clientPC, err = f.cfg.Client.Net.ListenPacket(ctx, f.network, clientAddr, ctl)
	if err != nil {
		return fmt.Errorf("quicflow: client socket: %w", err)
	}
	serverConn, err := f.withDSCP(f.serverPC)
	if err != nil {
		return err
	}
	clientConn, err := f.withDSCP(f.clientPC)
	if err != nil {
		return err
	}
	f.serverTr = &quic.Transport{Conn: serverConn}
	f.clientTr = &quic.Transport{Conn: clientConn}
	f.clientConf = f.quicConfig(&f.clientRec)
	serverConf := f.quicConfig(&f.serverRec)
	listenConf := serverConf.Clone()
	from := traffic.AddrPort(f.clientPC.LocalAddr())
	listenConf.GetConfigForClient = func(info *quic.ClientInfo) (*quic.Config, error) {
		// One connection per flow: one from anywhere but the client's
		// socket is refused before it begins.
		if !f.fromClient(from, traffic.AddrPort(info.RemoteAddr)) {
			return nil, fmt.Errorf("quicflow: connection from %v refused: expecting the flow's client", info.RemoteAddr)
		}
		return serverConf, nil
	}
	f.ln, err = f.serverTr.Listen(serverTLS, listenConf)
	if err != nil {
		return fmt.Errorf("quicflow: listen on %v: %w", f.serverPC.LocalAddr(), err)
	}
	return nil
}

// withDSCP returns the socket quic-go is to use: pc itself, or pc wrapped
// so that quic-go's ECN control messages keep the flow's DSCP.
func (f *Flow) withDSCP(pc net.PacketConn) (net.PacketConn, error) {
	if f.cfg.TOS == 0 {
		return pc, nil
	}
	u, ok := pc.(*net.UDPConn)
	if !ok {
		return nil, fmt.Errorf("quicflow: the host's Net made a %T, not a *net.UDPConn, which a DSCP needs", pc)
	}
	return &dscpConn{UDPConn: u, dscp: byte(f.cfg.TOS)}, nil
}

// fromClient reports whether a connection attempt from remote comes from
// the client's socket, bound to local. The port identifies it; when the
// socket is bound to the unspecified address, the source address is the
// kernel's choice and is not compared.
func (f *Flow) fromClient(local, remote netip.AddrPort) bool {
	if remote.Port() != local.Port() {
		return false
	}
	return local.Addr().IsUnspecified() || remote.Addr() == local.Addr()
}

// Start launches the flow: at Start it dials and sends. When ctx ends,
// the connections close.
func (f *Flow) Start(ctx context.Context, env traffic.Env) {
	f.env = env
	f.runCtx = ctx
	f.stopAbort = context.AfterFunc(ctx, f.abort)
	f.wg.Add(1)
	f.live.Add(1)
	go f.run(ctx)
}

// fail records the first error of the flow's goroutines. Errors once the
// run's context has ended or the flow was closed are the closing's doing,
// not the flow's failure, and are not recorded.
func (f *Flow) fail(err error) {
	if f.runCtx.Err() != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.res.Error == "" && !f.closed {
		f.res.Error = err.Error()
	}
}

// adopt records a new connection so that abort closes it; if abort came
// first, it closes c and returns false.
func (f *Flow) adopt(c *quic.Conn) bool {
	f.mu.Lock()
	if !f.closed {
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		return true
	}
	f.mu.Unlock()
	c.CloseWithError(0, "")
	return false
}

func (f *Flow) run(ctx context.Context) {
	defer f.wg.Done()
	defer f.live.Add(-1)
	if !traffic.SleepUntil(ctx, f.env.Clock, f.env.At(f.cfg.Start)) {
		return
	}
	client, server, err := f.connect(ctx)
	if err != nil {
		f.fail(err)
		return
	}
	snd, rcv := client, server
	sndPC, rcvPC := f.clientPC, f.serverPC
	if f.cfg.Dir == traffic.Down {
		snd, rcv = server, client
		sndPC, rcvPC = f.serverPC, f.clientPC
	}
	sndInfo, err1 := endInfo(snd, sndPC)
	rcvInfo, err2 := endInfo(rcv, rcvPC)
	if err := errors.Join(err1, err2); err != nil {
		f.fail(err)
		return
	}
	f.mu.Lock()
	f.snd, f.rcv = snd, rcv
	f.res.Connected = true
	f.res.ConnectedAt = f.env.Clock.Now()
	f.res.Sender, f.res.Receiver = sndInfo, rcvInfo
	f.mu.Unlock()

	f.wg.Add(1)
	f.live.Add(1)
	go f.receive(ctx, rcv)
	f.send(snd)
}

// connect makes the connection: the client dials, the server accepts.
func (f *Flow) connect(ctx context.Context) (client, server *quic.Conn, err error) {
	addr := f.ln.Addr()
	client, err = f.clientTr.Dial(ctx, addr, f.clientTLS, f.clientConf)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %v: %w", addr, err)
	}
	if !f.adopt(client) {
		return nil, nil, net.ErrClosed
	}
	server, err = f.ln.Accept(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("accept on %v: %w", addr, err)
	}
	if !f.adopt(server) {
		return nil, nil, net.ErrClosed
	}
	return client, server, nil
}

// endInfo describes one end of a connection from the connection and its
// socket.
func endInfo(c *quic.Conn, pc net.PacketConn) (EndInfo, error) {
	st, err := readSocketState(pc)
	if err != nil {
		return EndInfo{}, err
	}
	cs := c.ConnectionState()
	return EndInfo{
		Local:         traffic.AddrPort(c.LocalAddr()),
		Remote:        traffic.AddrPort(c.RemoteAddr()),
		TOS:           st.tos,
		SendBuffer:    st.sndbuf,
		ReceiveBuffer: st.rcvbuf,
		Version:       cs.Version.String(),
		ALPN:          cs.TLS.NegotiatedProtocol,
		GSO:           cs.GSO,
	}, nil
}

// send opens the stream, writes until Stop or Bytes, then closes the
// stream (FIN).
func (f *Flow) send(c *quic.Conn) {
	st, err := c.OpenUniStream()
	if err != nil {
		f.fail(fmt.Errorf("open stream: %w", err))
		return
	}
	if err := f.write(st); err != nil {
		f.fail(fmt.Errorf("send: %w", err))
		return
	}
	if err := st.Close(); err != nil {
		f.fail(fmt.Errorf("close stream: %w", err))
	}
}

// writeChunk is how much the sender hands quic-go per write.
const writeChunk = 32 << 10

// write writes until Stop or Bytes, and records when it stopped.
func (f *Flow) write(st *quic.SendStream) error {
	defer func() {
		f.mu.Lock()
		f.res.StoppedAt = f.env.Clock.Now()
		f.mu.Unlock()
	}()
	st.SetWriteDeadline(f.env.Clock.Wall(f.env.At(f.cfg.Stop)))
	return traffic.WriteBulk(st, make([]byte, writeChunk), f.cfg.Bytes, &f.sent)
}

// receive accepts the sender's stream and reads and discards it until its
// end.
func (f *Flow) receive(ctx context.Context, c *quic.Conn) {
	defer f.wg.Done()
	defer f.live.Add(-1)
	st, err := c.AcceptUniStream(ctx)
	if err != nil {
		f.fail(fmt.Errorf("accept stream: %w", err))
		return
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := st.Read(buf)
		f.received.Add(int64(n))
		if err == io.EOF {
			f.mu.Lock()
			f.res.Complete = true
			f.res.CompletedAt = f.env.Clock.Now()
			f.mu.Unlock()
			return
		}
		if err != nil {
			f.fail(fmt.Errorf("receive: %w", err))
			return
		}
	}
}

// Sample reads both ends' byte counts and recovery state, from the first
// grid point at or after Start until the flow has ended.
func (f *Flow) Sample(k int, t clock.Time) {
	if f.ended || f.env.Grid(k) < f.env.At(f.cfg.Start) {
		return
	}
	// Read whether the flow has ended before reading its counts: if it
	// has, they are final and this is its last sample.
	f.ended = f.live.Load() == 0
	f.mu.Lock()
	snd, rcv := f.snd, f.rcv
	f.mu.Unlock()
	s := Sample{K: k, T: t, Connected: snd != nil}
	// What the receiver read is read before what the sender wrote, which
	// it cannot exceed even while the write that took it is in progress.
	s.ReceivedBytes = f.received.Load()
	s.SentBytes = traffic.SentAtLeast(f.sent.Load(), s.ReceivedBytes)
	if s.Connected {
		s.Sender = endStats(snd, f.sndRec)
		s.Receiver = endStats(rcv, f.rcvRec)
	}
	f.mu.Lock()
	f.res.Samples = append(f.res.Samples, s)
	f.mu.Unlock()
}

// endStats reads one end's recovery state.
func endStats(c *quic.Conn, rec *recorder) EndStats {
	cs := c.ConnectionStats()
	rs := rec.state()
	return EndStats{
		SRTT:            cs.SmoothedRTT,
		RTTVar:          cs.MeanDeviation,
		MinRTT:          cs.MinRTT,
		LatestRTT:       cs.LatestRTT,
		Cwnd:            cs.CongestionWindow,
		BytesInFlight:   rs.bytesInFlight,
		PacketsInFlight: rs.packetsInFlight,
		CongestionState: rs.congestionState,
		ECNState:        rs.ecnState,
		MaxUDPPayload:   rs.maxDatagram,
		PacketsSent:     cs.PacketsSent,
		BytesSent:       cs.BytesSent,
		PacketsReceived: cs.PacketsReceived,
		BytesReceived:   cs.BytesReceived,
		PacketsLost:     rs.lost,
		BytesLost:       cs.BytesLost,
		SpuriousLosses:  rs.spurious,
		BytesRetrans:    rs.retransmitted,
		CEReceived:      rs.ceReceived,
	}
}

// abort closes both connections (CONNECTION_CLOSE), the listener and both
// transports, which ends every blocked dial, accept, write and read; it
// runs once, when the run's context ends or at Close.
func (f *Flow) abort() {
	f.abortOnce.Do(func() {
		f.mu.Lock()
		f.closed = true
		conns := f.conns
		f.mu.Unlock()
		for _, c := range conns {
			c.CloseWithError(0, "")
		}
		if f.ln != nil {
			f.ln.Close()
		}
		for _, tr := range []*quic.Transport{f.clientTr, f.serverTr} {
			if tr != nil {
				tr.Close()
			}
		}
	})
}

// Close stops the flow, waits for its goroutines and closes its sockets.
func (f *Flow) Close() {
	if f.stopAbort != nil {
		f.stopAbort()
	}
	// If the context's AfterFunc is running abort, this waits for it.
	f.abort()
	f.wg.Wait()
	f.closeSockets()
	f.mu.Lock()
	f.res.SentBytes = f.sent.Load()
	f.res.ReceivedBytes = f.received.Load()
	f.mu.Unlock()
}

// closeSockets closes the UDP sockets, once quic-go is done with them.
func (f *Flow) closeSockets() {
	for _, pc := range []net.PacketConn{f.clientPC, f.serverPC} {
		if pc != nil {
			pc.Close()
		}
	}
}

// Result returns what the flow recorded.
func (f *Flow) Result() traffic.FlowResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.res
	return &r
}
