package scalableudp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/clock"
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
	conn *net.UDPConn
	peer netip.AddrPort
	size int // UDP payload of a data packet
	tos  int
	clk  *clock.Real

	mu   sync.Mutex
	core *scalable.Sender
	st   SenderStats

	wake    *ppoll.Waker
	runOnce sync.Once
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
	return &Sender{conn: u, peer: ua.AddrPort(), size: size, tos: tos, clk: clk, core: core, wake: w}, nil
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
func (s *Sender) Run(ctx context.Context) error {
	err := errors.New("scalableudp: Run called twice")
	s.runOnce.Do(func() { err = s.run(ctx) })
	return err
}

func (s *Sender) run(ctx context.Context) error {
	var (
		wg      sync.WaitGroup
		errc    = make(chan error, 2)
		stopped = make(chan struct{})
	)
	if ctx.Err() == nil {
		wg.Add(2)
		go func() { defer wg.Done(); errc <- s.pace(stopped) }()
		go func() { defer wg.Done(); errc <- s.readAcks() }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	close(stopped)
	s.wake.Wake()
	cerr := s.conn.Close()
	wg.Wait()
	s.wake.Close()
	if err == nil && ctx.Err() == nil {
		err = cerr
	}
	return err
}

// pace sends every packet that is due, then sleeps until the next one is
// or an ACK arrives. It runs on its own thread with a timer slack of 1 ns,
// so that ppoll wakes when asked; the runtime discards the thread when the
// goroutine ends.
func (s *Sender) pace(stopped <-chan struct{}) error {
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("scalableudp: set the timer slack: %w", err)
	}
	out := make([]byte, s.size)
	for i := scalable.DataHeaderLen; i < len(out); i++ {
		out[i] = byte(i)
	}
	for {
		select {
		case <-stopped:
			return nil
		default:
		}
		s.mu.Lock()
		h, ok := s.core.Poll(s.clk.Now())
		if ok {
			scalable.AppendData(out[:0], h)
			s.st.BytesSent += uint64(len(out))
			s.st.PayloadBytesSent += uint64(len(out) - scalable.DataHeaderLen)
		}
		deadline := s.core.Deadline()
		s.mu.Unlock()
		if ok {
			if _, err := s.conn.WriteToUDPAddrPort(out, s.peer); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return nil
				}
				s.mu.Lock()
				s.st.SendErrors++
				s.mu.Unlock()
			}
			continue
		}
		d := time.Duration(-1)
		if deadline != clock.Never {
			d = max(0, s.clk.Wall(deadline).Sub(time.Now()))
		}
		if err := s.wake.Wait(d); err != nil {
			return fmt.Errorf("scalableudp: %w", err)
		}
	}
}

// readAcks hands every ACK to the congestion controller and wakes the
// pacer, whose window may have opened.
func (s *Sender) readAcks() error {
	buf := make([]byte, 2048)
	for {
		n, _, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("scalableudp: read ACKs: %w", err)
		}
		now := s.clk.Now()
		a, err := scalable.ParseAck(buf[:n])
		s.mu.Lock()
		if err != nil {
			s.st.BadPackets++
		} else {
			s.core.OnAck(now, a)
		}
		s.mu.Unlock()
		if err == nil {
			s.wake.Wake()
		}
	}
}
