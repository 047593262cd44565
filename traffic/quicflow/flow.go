package quicflow

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/netip"
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
	*traffic.BulkFlow[*quic.Conn, EndInfo, Sample]
	t *transport
}

// transport is what a bulk QUIC flow does its own way.
type transport struct {
	cfg            Config
	network        string // "udp4" or "udp6"
	clientConf     *quic.Config
	clientTLS      *tls.Config
	clientRec      recorder
	serverRec      recorder
	sndRec, rcvRec *recorder // the sender's and the receiver's

	// Set by Open, read only afterwards.
	clientPC, serverPC net.PacketConn
	clientTr, serverTr *quic.Transport
	ln                 *quic.Listener
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
	t := &transport{cfg: cfg, network: "udp6"}
	if cfg.Server.Addr.Is4() {
		t.network = "udp4"
	}
	t.sndRec, t.rcvRec = &t.clientRec, &t.serverRec
	if cfg.Dir == traffic.Down {
		t.sndRec, t.rcvRec = &t.serverRec, &t.clientRec
	}
	spec := traffic.BulkSpec{
		Name:  "quicflow: a QUIC flow",
		Label: cfg.Label, Kind: Kind, Start: cfg.Start, Stop: cfg.Stop,
		Dir: cfg.Dir, Bytes: cfg.Bytes,
		WriteSize: writeChunk, ReadSize: 64 << 10,
		// When the run ends, the connections close.
		AbortOnCancel: true,
	}
	return &Flow{traffic.NewBulkFlow[*quic.Conn, EndInfo, Sample](spec, t), t}, nil
}

// quicConfig returns the QUIC configuration of one end, whose events rec
// records.
func (t *transport) quicConfig(rec *recorder) *quic.Config {
	return &quic.Config{
		InitialStreamReceiveWindow:     t.cfg.StreamWindow,
		MaxStreamReceiveWindow:         t.cfg.StreamWindow,
		InitialConnectionReceiveWindow: t.cfg.ConnectionWindow,
		MaxConnectionReceiveWindow:     t.cfg.ConnectionWindow,
		// A path that stays silent (a long outage the experiment
		// imposes) must not end the connection before the run does: the
		// idle timeout outlasts the flow's window.
		MaxIdleTimeout: t.cfg.Stop - t.cfg.Start + 30*time.Second,
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
func (t *transport) Open(ctx context.Context) error {
	serverTLS, clientTLS, err := tlsConfigs(time.Now())
	if err != nil {
		return err
	}
	t.clientTLS = clientTLS
	ctl := traffic.TOSControl(t.cfg.TOS)
	t.serverPC, err = t.cfg.Server.Net.ListenPacket(ctx, t.network, netip.AddrPortFrom(t.cfg.Server.Addr, 0).String(), ctl)
	if err != nil {
		return fmt.Errorf("quicflow: server socket: %w", err)
	}
	clientAddr := ":0"
	if t.cfg.Client.Addr.IsValid() {
		clientAddr = netip.AddrPortFrom(t.cfg.Client.Addr, 0).String()
	}
	t.clientPC, err = t.cfg.Client.Net.ListenPacket(ctx, t.network, clientAddr, ctl)
	if err != nil {
		return fmt.Errorf("quicflow: client socket: %w", err)
	}
	serverConn, err := t.withDSCP(t.serverPC)
	if err != nil {
		return err
	}
	clientConn, err := t.withDSCP(t.clientPC)
	if err != nil {
		return err
	}
	t.serverTr = &quic.Transport{Conn: serverConn}
	t.clientTr = &quic.Transport{Conn: clientConn}
	t.clientConf = t.quicConfig(&t.clientRec)
	serverConf := t.quicConfig(&t.serverRec)
	listenConf := serverConf.Clone()
	from := traffic.AddrPort(t.clientPC.LocalAddr())
	listenConf.GetConfigForClient = func(info *quic.ClientInfo) (*quic.Config, error) {
		// One connection per flow: one from anywhere but the client's
		// socket is refused before it begins.
		if !t.fromClient(from, traffic.AddrPort(info.RemoteAddr)) {
			return nil, fmt.Errorf("quicflow: connection from %v refused: expecting the flow's client", info.RemoteAddr)
		}
		return serverConf, nil
	}
	t.ln, err = t.serverTr.Listen(serverTLS, listenConf)
	if err != nil {
		return fmt.Errorf("quicflow: listen on %v: %w", t.serverPC.LocalAddr(), err)
	}
	return nil
}

// withDSCP returns the socket quic-go is to use: pc itself, or pc wrapped
// so that quic-go's ECN control messages keep the flow's DSCP.
func (t *transport) withDSCP(pc net.PacketConn) (net.PacketConn, error) {
	if t.cfg.TOS == 0 {
		return pc, nil
	}
	u, ok := pc.(*net.UDPConn)
	if !ok {
		return nil, fmt.Errorf("quicflow: the host's Net made a %T, not a *net.UDPConn, which a DSCP needs", pc)
	}
	return &dscpConn{UDPConn: u, dscp: byte(t.cfg.TOS)}, nil
}

// fromClient reports whether a connection attempt from remote comes from
// the client's socket, bound to local. The port identifies it; when the
// socket is bound to the unspecified address, the source address is the
// kernel's choice and is not compared.
func (t *transport) fromClient(local, remote netip.AddrPort) bool {
	if remote.Port() != local.Port() {
		return false
	}
	return local.Addr().IsUnspecified() || remote.Addr() == local.Addr()
}

// Connect makes the connection: the client dials, the server accepts.
func (t *transport) Connect(ctx context.Context, adopt func(*quic.Conn) bool) (client, server *quic.Conn, err error) {
	addr := t.ln.Addr()
	client, err = t.clientTr.Dial(ctx, addr, t.clientTLS, t.clientConf)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %v: %w", addr, err)
	}
	if !adopt(client) {
		return nil, nil, net.ErrClosed
	}
	server, err = t.ln.Accept(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("accept on %v: %w", addr, err)
	}
	if !adopt(server) {
		return nil, nil, net.ErrClosed
	}
	return client, server, nil
}

// End describes one end of the connection from the connection and its
// socket.
func (t *transport) End(c *quic.Conn, client bool) (EndInfo, error) {
	pc := t.serverPC
	if client {
		pc = t.clientPC
	}
	return endInfo(c, pc)
}

// endInfo describes one end of a connection from the connection and its
// socket.
func endInfo(c *quic.Conn, pc net.PacketConn) (EndInfo, error) {
	st, err := traffic.ReadSocketState(pc, false)
	if err != nil {
		return EndInfo{}, err
	}
	cs := c.ConnectionState()
	return EndInfo{
		Local:         traffic.AddrPort(c.LocalAddr()),
		Remote:        traffic.AddrPort(c.RemoteAddr()),
		TOS:           st.TOS,
		SendBuffer:    st.SendBuffer,
		ReceiveBuffer: st.ReceiveBuffer,
		Version:       cs.Version.String(),
		ALPN:          cs.TLS.NegotiatedProtocol,
		GSO:           cs.GSO,
	}, nil
}

// writeChunk is how much the sender hands quic-go per write.
const writeChunk = 32 << 10

// SendStream opens the flow's one unidirectional stream; closing it sends
// its FIN.
func (t *transport) SendStream(c *quic.Conn) (traffic.StreamWriter, func() error, error) {
	st, err := c.OpenUniStream()
	if err != nil {
		return nil, nil, fmt.Errorf("open stream: %w", err)
	}
	end := func() error {
		if err := st.Close(); err != nil {
			return fmt.Errorf("close stream: %w", err)
		}
		return nil
	}
	return st, end, nil
}

// ReceiveStream accepts the sender's stream.
func (t *transport) ReceiveStream(ctx context.Context, c *quic.Conn) (io.Reader, error) {
	st, err := c.AcceptUniStream(ctx)
	if err != nil {
		return nil, fmt.Errorf("accept stream: %w", err)
	}
	return st, nil
}

// Sample reads both ends' byte counts and recovery state.
func (t *transport) Sample(k int, at clock.Time, snd, rcv *quic.Conn, connected bool, n *traffic.BulkCounts) (Sample, error) {
	s := Sample{K: k, T: at, Connected: connected}
	// What the receiver read is read before what the sender wrote, which
	// it cannot exceed even while the write that took it is in progress.
	s.ReceivedBytes = n.Received()
	s.SentBytes = n.Sent(s.ReceivedBytes)
	if connected {
		s.Sender = endStats(snd, t.sndRec)
		s.Receiver = endStats(rcv, t.rcvRec)
	}
	return s, nil
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

// CloseConn closes a connection (CONNECTION_CLOSE), discarding whatever
// its end still had queued.
func (t *transport) CloseConn(c *quic.Conn) { c.CloseWithError(0, "") }

// Abort closes the listener and both transports, which ends every
// blocked dial, accept, write and read.
func (t *transport) Abort() {
	if t.ln != nil {
		t.ln.Close()
	}
	for _, tr := range []*quic.Transport{t.clientTr, t.serverTr} {
		if tr != nil {
			tr.Close()
		}
	}
}

// Release closes the UDP sockets, once quic-go is done with them.
func (t *transport) Release() {
	for _, pc := range []net.PacketConn{t.clientPC, t.serverPC} {
		if pc != nil {
			pc.Close()
		}
	}
}

// Result is the flow's configuration and what it recorded.
func (t *transport) Result(r traffic.BulkRecord[EndInfo, Sample]) traffic.FlowResult {
	return &Result{
		FlowInfo:         r.Info,
		Dir:              t.cfg.Dir,
		TOS:              t.cfg.TOS,
		Bytes:            t.cfg.Bytes,
		StreamWindow:     t.cfg.StreamWindow,
		ConnectionWindow: t.cfg.ConnectionWindow,
		CC:               CongestionControl,
		Sender:           r.Sender,
		Receiver:         r.Receiver,
		BulkOutcome:      r.Outcome,
		Samples:          r.Samples,
	}
}
