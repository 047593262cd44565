package scalableudp

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"wanlab/clock"
	"wanlab/internal/dgram"
	"wanlab/internal/ppoll"
	"wanlab/packet"
	"wanlab/scalable"
)

const (
	ipv4UDPHeaders = 28
	ipv6UDPHeaders = 48
	mtu            = 1500
)

// Config configures a Sender.
type Config struct {
	// PacketSize is the UDP payload of a data packet in bytes, header
	// included. 0 means the largest that fits a 1500-byte MTU: 1472 to an
	// IPv4 peer, 1452 to an IPv6 one.
	PacketSize int
	// TOS is the TOS byte of the data packets: its DSCP is kept, its ECN
	// bits are replaced by ECT(1) (RFC 9331 §4.3's identifier).
	TOS int
	// MaxWindow bounds the congestion window in packets (0: unbounded),
	// for paths that would otherwise let it grow without end, such as
	// loopback.
	MaxWindow float64
}

// SenderStats is what a Sender reports: the protocol's state (scalable's
// SenderStats: cwnd, α, F, the RTT estimates, the pacing rate, the
// receiver's counters as of the latest ACK, losses, reductions) and the
// bytes that went out.
type SenderStats struct {
	scalable.SenderStats
	// Elapsed is the time since the sender was made.
	Elapsed time.Duration `json:"elapsed_ns"`
	// TOS is the TOS byte the data packets carry, as the kernel kept it.
	TOS int `json:"tos"`
	// BytesSent counts the UDP payload of the data packets sent and
	// PayloadBytesSent the application data in them.
	BytesSent        uint64 `json:"bytes_sent"`
	PayloadBytesSent uint64 `json:"payload_bytes_sent"`
	// SendErrors counts datagrams the socket refused (a full socket
	// buffer among them: the packet counts as sent and is lost);
	// BadPackets the datagrams received that were not ACKs.
	SendErrors uint64 `json:"send_errors"`
	BadPackets uint64 `json:"bad_packets"`
}

// Sender sends a bulk application's data (filler that never runs out)
// with the scalable congestion controller over a UDP socket. Stats may be
// read at any time from any goroutine.
type Sender struct {
	size int // UDP payload of a data packet
	tos  int
	clk  *clock.Real

	mu   sync.Mutex
	core *scalable.Sender
	st   SenderStats
	// out is the packet being sent, the pacing thread's own: filler
	// after a header that each packet rewrites.
	out []byte

	loop dgram.Sender
}

// NewSender returns a sender to peer over conn, whose data packets carry
// ECT(1). conn belongs to the sender from now on; Run closes it when it
// ends.
func NewSender(conn net.PacketConn, peer net.Addr, cfg Config) (*Sender, error) {
	u, err := udpConn(conn, "sender")
	if err != nil {
		return nil, err
	}
	ua, ok := peer.(*net.UDPAddr)
	if !ok {
		return nil, fmt.Errorf("scalableudp: peer %v is a %T: give a *net.UDPAddr", peer, peer)
	}
	size := cfg.PacketSize
	if size == 0 {
		size = mtu - ipv4UDPHeaders
		if ua.IP.To4() == nil {
			size = mtu - ipv6UDPHeaders
		}
	}
	if size > 65507 {
		return nil, fmt.Errorf("scalableudp: packet size %d does not fit a UDP datagram: use at most 65507 (or the path MTU minus 28 for IPv4, 48 for IPv6)", size)
	}
	if cfg.TOS < 0 || cfg.TOS > 255 {
		return nil, fmt.Errorf("scalableudp: TOS %d is not a byte: give the DSCP shifted left by two", cfg.TOS)
	}
	clk := clock.NewReal()
	core, err := scalable.NewSender(scalable.SenderConfig{PacketSize: size, MaxWindow: cfg.MaxWindow}, clk.Now())
	if err != nil {
		return nil, err
	}
	tos := cfg.TOS&^3 | int(packet.ECT1)
	if err := setTOS(u, tos); err != nil {
		return nil, err
	}
	w, err := ppoll.NewWaker()
	if err != nil {
		return nil, fmt.Errorf("scalableudp: %w", err)
	}
	s := &Sender{size: size, tos: tos, clk: clk, core: core, out: make([]byte, size)}
	for i := scalable.DataHeaderLen; i < len(s.out); i++ {
		s.out[i] = byte(i)
	}
	s.loop = dgram.Sender{
		Pkg: "scalableudp", Feedback: "ACKs",
		Socket: dgram.NewSocket(u), Peer: dgram.NewPeer(ua), Clock: clk,
		Pacer: (*pacer)(s), Wake: w,
	}
	return s, nil
}

// PacketSize returns the UDP payload of a data packet, header included.
func (s *Sender) PacketSize() int { return s.size }

// Stats returns the sender's figures now.
func (s *Sender) Stats() SenderStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.SenderStats = s.core.Stats()
	st.Elapsed = time.Duration(s.clk.Now())
	st.TOS = s.tos
	return st
}

// Run sends until ctx ends or the socket fails, then closes the socket
// and returns, with every goroutine it started ended. It returns nil when
// ctx ended it. Run may be called once; a sender that is never run is
// released by Run on an ended context.
func (s *Sender) Run(ctx context.Context) error { return s.loop.Run(ctx) }

// pacer is the Sender as dgram's pacing loop drives it.
type pacer Sender

// Next stamps the next packet if the congestion controller lets it go
// now.
func (p *pacer) Next() ([]byte, bool, clock.Time) {
	p.mu.Lock()
	h, ok := p.core.Poll(p.clk.Now())
	if ok {
		scalable.AppendData(p.out[:0], h)
		p.st.BytesSent += uint64(len(p.out))
		p.st.PayloadBytesSent += uint64(len(p.out) - scalable.DataHeaderLen)
	}
	deadline := p.core.Deadline()
	p.mu.Unlock()
	return p.out, ok, deadline
}

// SendFailed counts a data packet the socket refused.
func (p *pacer) SendFailed() {
	p.mu.Lock()
	p.st.SendErrors++
	p.mu.Unlock()
}

// Feedback hands an ACK to the congestion controller, whose window may
// have opened.
func (p *pacer) Feedback(now clock.Time, b []byte) bool {
	a, err := scalable.ParseAck(b)
	p.mu.Lock()
	if err != nil {
		p.st.BadPackets++
	} else {
		p.core.OnAck(now, a)
	}
	p.mu.Unlock()
	return err == nil
}
