package scalableudp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/scalable"
	"wanlab/traffic"
)

// ReceiverStats is what a Receiver reports: the protocol's totals
// (scalable's ReceiverStats: packets and bytes received, per ECN
// codepoint, lost, ACKs) and the socket's.
type ReceiverStats struct {
	scalable.ReceiverStats
	// Elapsed is the time since the receiver was made.
	Elapsed time.Duration `json:"elapsed_ns"`
	// SendErrors counts ACKs the socket refused; BadPackets the
	// datagrams received that were not data; NoTOS the data packets
	// whose TOS byte the kernel did not report (counted as Not-ECT).
	SendErrors uint64 `json:"send_errors"`
	BadPackets uint64 `json:"bad_packets"`
	NoTOS      uint64 `json:"no_tos"`
}

// Receiver receives data on a UDP socket, counts each packet's ECN
// codepoint and acknowledges to where the data comes from. Stats may be
// read at any time from any goroutine.
type Receiver struct {
	conn *net.UDPConn
	clk  *clock.Real

	mu      sync.Mutex
	core    *scalable.Receiver
	st      ReceiverStats
	runOnce sync.Once
}

// NewReceiver returns a receiver on conn, acknowledging every ackEvery
// packets (0 or 1: every packet; 2: every second one), with the TOS byte
// tos on its ACKs (its ECN bits are cleared: the ACKs are Not-ECT). conn
// belongs to the receiver from now on; Run closes it when it ends.
func NewReceiver(conn net.PacketConn, ackEvery, tos int) (*Receiver, error) {
	u, err := udpConn(conn, "receiver")
	if err != nil {
		return nil, err
	}
	core, err := scalable.NewReceiver(scalable.ReceiverConfig{AckEvery: ackEvery})
	if err != nil {
		return nil, err
	}
	if err := recvTOS(u); err != nil {
		return nil, err
	}
	if err := setTOS(u, tos&^3); err != nil {
		return nil, err
	}
	return &Receiver{conn: u, clk: clock.NewReal(), core: core}, nil
}

// Stats returns the receiver's figures now.
func (r *Receiver) Stats() ReceiverStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.st
	st.ReceiverStats = r.core.Stats()
	st.Elapsed = time.Duration(r.clk.Now())
	return st
}

// Run receives until ctx ends or the socket fails, then closes the socket
// and returns, with every goroutine it started ended. It returns nil when
// ctx ended it. Run may be called once.
func (r *Receiver) Run(ctx context.Context) error {
	err := errors.New("scalableudp: Run called twice")
	r.runOnce.Do(func() { err = r.run(ctx) })
	return err
}

func (r *Receiver) run(ctx context.Context) error {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
		case <-stop:
		}
		r.conn.Close() // ends the blocked read
	}()
	err := r.receive()
	close(stop)
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// receive reads data until the socket is closed. The read deadline is
// the delayed-ACK timer.
func (r *Receiver) receive() error {
	buf := make([]byte, 65536)
	oob := make([]byte, 64)
	out := make([]byte, 0, scalable.AckLen)
	var to netip.AddrPort
	set := clock.Time(-1) // the read deadline in force, -1: none yet
	for {
		r.mu.Lock()
		deadline := r.core.Deadline()
		r.mu.Unlock()
		if deadline != set {
			t := time.Time{}
			if deadline != clock.Never {
				t = r.clk.Wall(deadline)
			}
			if err := r.conn.SetReadDeadline(t); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return nil
				}
				return fmt.Errorf("scalableudp: set the read deadline: %w", err)
			}
			set = deadline
		}
		n, oobn, _, from, err := r.conn.ReadMsgUDPAddrPort(buf, oob)
		now := r.clk.Now()
		if err != nil && !isTimeout(err) {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("scalableudp: read data: %w", err)
		}
		r.mu.Lock()
		if err == nil {
			if h, _, perr := scalable.ParseData(buf[:n]); perr != nil {
				r.st.BadPackets++
			} else {
				tos := traffic.ReceivedTOS(oob[:oobn])
				if tos < 0 {
					r.st.NoTOS++
					tos = 0
				}
				r.core.OnData(now, h, n, packet.ECN(tos&3))
				to = from
			}
		}
		a, ok := r.core.Poll(now)
		r.mu.Unlock()
		if ok && to.IsValid() {
			out = scalable.AppendAck(out[:0], a)
			if _, err := r.conn.WriteToUDPAddrPort(out, to); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return nil
				}
				r.mu.Lock()
				r.st.SendErrors++
				r.mu.Unlock()
			}
		}
	}
}

// isTimeout reports whether err is a read deadline passing: the ACK
// timer, not a failure.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
