package tfrcudp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"wanlab/clock"
	"wanlab/internal/dgram"
	"wanlab/internal/ppoll"
	"wanlab/tfrc"
)

// ErrClosed is returned by Write once the sender has ended.
var ErrClosed = errors.New("tfrcudp: sender closed")

// SenderStats is what a Sender reports: the protocol's state (tfrc's
// SenderStats: X, X_calc, the X_recv and p of the latest feedback, RTT,
// packets sent) and the bytes that went out.
type SenderStats struct {
	tfrc.SenderStats
	// Elapsed is the time since the sender was made.
	Elapsed time.Duration `json:"elapsed_ns"`
	// TxQueueLen is the configured transmit buffer (0: unbounded).
	TxQueueLen int `json:"tx_queue_len"`
	// BytesSent counts the UDP payload of the data packets sent and
	// PayloadBytesSent the application data in them.
	BytesSent        uint64 `json:"bytes_sent"`
	PayloadBytesSent uint64 `json:"payload_bytes_sent"`
	// Written counts the application bytes accepted by Write.
	Written uint64 `json:"written"`
	// SendErrors counts datagrams the socket refused; BadPackets the
	// datagrams received that were not TFRC feedback.
	SendErrors uint64 `json:"send_errors"`
	BadPackets uint64 `json:"bad_packets"`
}

// Sender sends an application's data with TFRC over a UDP socket. Write
// queues data; Run paces it out and processes the feedback. Stats may be
// read at any time from any goroutine.
type Sender struct {
	cfg     Config
	size    int // s: UDP payload of a data packet
	payload int // application bytes per packet
	clk     *clock.Real

	mu   sync.Mutex
	core *tfrc.Sender
	// The transmit buffer: ring[head], ... hold the queued payloads.
	ring  [][]byte
	head  int
	st    SenderStats
	space chan struct{} // signalled when a slot frees
	// out is the packet being sent, the pacing thread's own.
	out []byte

	wake *ppoll.Waker
	done chan struct{} // closed when Run has ended
	loop dgram.Sender
}

// NewSender returns a sender of data to peer over conn. conn belongs to
// the sender from now on; Run closes it when it ends.
func NewSender(conn net.PacketConn, peer net.Addr, cfg Config) (*Sender, error) {
	size, capacity, err := cfg.resolve(peer)
	if err != nil {
		return nil, err
	}
	clk := clock.NewReal()
	core, err := tfrc.NewSender(tfrc.SenderConfig{PacketSize: size, TxQueueLen: capacity, TimerGranularity: cfg.TimerGranularity}, clk.Now())
	if err != nil {
		return nil, err
	}
	w, err := ppoll.NewWaker()
	if err != nil {
		return nil, fmt.Errorf("tfrcudp: %w", err)
	}
	s := &Sender{
		cfg:     cfg,
		size:    size,
		payload: size - tfrc.DataHeaderLen,
		clk:     clk,
		core:    core,
		ring:    make([][]byte, capacity),
		space:   make(chan struct{}, 1),
		out:     make([]byte, 0, size),
		wake:    w,
		done:    make(chan struct{}),
	}
	for i := range s.ring {
		s.ring[i] = make([]byte, 0, s.payload)
	}
	s.loop = dgram.Sender{
		Pkg: "tfrcudp", Feedback: "feedback",
		Socket: dgram.NewSocket(conn), Peer: dgram.NewPeer(peer), Clock: clk,
		Pacer: (*pacer)(s), Wake: w,
		// Write wakes the pacer under mu once it has seen that done is
		// still open.
		Locker: &s.mu, Ended: func() { close(s.done) },
	}
	return s, nil
}

// PayloadSize returns the application bytes one data packet carries; a
// Write of that many bytes makes one packet.
func (s *Sender) PayloadSize() int { return s.payload }

// Write queues p for sending, in packets of at most PayloadSize bytes, and
// blocks while the transmit buffer is full. It returns ErrClosed once the
// sender has ended. It may be called before Run.
func (s *Sender) Write(p []byte) (int, error) { return s.write(nil, p) }

func (s *Sender) write(ctx context.Context, p []byte) (int, error) {
	var cancel <-chan struct{}
	if ctx != nil {
		cancel = ctx.Done()
	}
	n := 0
	for len(p) > 0 {
		s.mu.Lock()
		select {
		case <-s.done:
			s.mu.Unlock()
			return n, ErrClosed
		default:
		}
		now := s.clk.Now()
		wasEmpty := s.core.Queued() == 0
		if !s.core.Enqueue(now) {
			s.mu.Unlock()
			select {
			case <-s.space:
			case <-s.done:
				return n, ErrClosed
			case <-cancel:
				return n, ctx.Err()
			}
			continue
		}
		k := min(len(p), s.payload)
		tail := (s.head + s.core.Queued() - 1) % len(s.ring)
		s.ring[tail] = append(s.ring[tail][:0], p[:k]...)
		s.st.Written += uint64(k)
		if wasEmpty {
			// Under the lock: Run closes the eventfd under it too,
			// after done, which was checked above.
			s.wake.Wake()
		}
		s.mu.Unlock()
		p, n = p[k:], n+k
	}
	return n, nil
}

// Bulk writes full packets of filler data until ctx ends or the sender
// does: an application that always has data, as a bulk transfer test
// needs. It returns nil when ctx ends.
func (s *Sender) Bulk(ctx context.Context) error {
	buf := make([]byte, s.payload)
	for i := range buf {
		buf[i] = byte(i)
	}
	for {
		if _, err := s.write(ctx, buf); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// Stats returns the sender's figures now.
func (s *Sender) Stats() SenderStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.SenderStats = s.core.Stats()
	st.Elapsed = time.Duration(s.clk.Now())
	st.TxQueueLen = s.cfg.TxQueueLen
	return st
}

// Run sends until ctx ends or the socket fails, then closes the socket
// and returns, with every goroutine it started ended; Write then returns
// ErrClosed. It returns nil when ctx ended it. Run may be called once; a
// sender that is never run is released by Run on an ended context.
func (s *Sender) Run(ctx context.Context) error { return s.loop.Run(ctx) }

// pacer is the Sender as dgram's pacing loop drives it.
type pacer Sender

// Next takes the packet at the head of the transmit buffer if TFRC lets
// it go now.
func (p *pacer) Next() ([]byte, bool, clock.Time) {
	s := (*Sender)(p)
	s.mu.Lock()
	h, ok := s.core.Poll(s.clk.Now())
	if ok {
		s.out = tfrc.AppendData(s.out[:0], h)
		s.out = append(s.out, s.ring[s.head]...)
		s.st.PayloadBytesSent += uint64(len(s.ring[s.head]))
		s.head = (s.head + 1) % len(s.ring)
		s.st.BytesSent += uint64(len(s.out))
	}
	deadline := s.core.Deadline()
	s.mu.Unlock()
	if ok {
		// A slot has freed: a Write may be waiting for it.
		select {
		case s.space <- struct{}{}:
		default:
		}
	}
	return s.out, ok, deadline
}

// SendFailed counts a data packet the socket refused.
func (p *pacer) SendFailed() {
	p.mu.Lock()
	p.st.SendErrors++
	p.mu.Unlock()
}

// Feedback hands a feedback packet to TFRC.
func (p *pacer) Feedback(now clock.Time, b []byte) bool {
	fb, err := tfrc.ParseFeedback(b)
	p.mu.Lock()
	if err != nil {
		p.st.BadPackets++
	} else {
		p.core.OnFeedback(now, fb)
	}
	p.mu.Unlock()
	return err == nil
}
