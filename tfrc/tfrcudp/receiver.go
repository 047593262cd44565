package tfrcudp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"wanlab/clock"
	"wanlab/tfrc"
)

// ReceiverStats is what a Receiver reports: the protocol's figures (tfrc's
// ReceiverStats: packets received and lost, loss events, p, X_recv, and
// the application bytes delivered) and the socket's.
type ReceiverStats struct {
	tfrc.ReceiverStats
	// Elapsed is the time since the receiver was made.
	Elapsed time.Duration `json:"elapsed_ns"`
	// SendErrors counts feedback datagrams the socket refused; BadPackets
	// the datagrams received that were not TFRC data.
	SendErrors uint64 `json:"send_errors"`
	BadPackets uint64 `json:"bad_packets"`
}

// Receiver receives TFRC data on a UDP socket and sends feedback to where
// the data comes from. Stats may be read at any time from any goroutine.
type Receiver struct {
	conn socket
	clk  *clock.Real

	mu      sync.Mutex
	core    *tfrc.Receiver
	st      ReceiverStats
	runOnce sync.Once
}

// NewReceiver returns a receiver on conn. conn belongs to the receiver from
// now on; Run closes it when it ends.
func NewReceiver(conn net.PacketConn) *Receiver {
	return &Receiver{conn: newSocket(conn), clk: clock.NewReal(), core: tfrc.NewReceiver()}
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
	err := errors.New("tfrcudp: Run called twice")
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

// receive reads data until the socket is closed. The socket's read
// deadline is the feedback timer: a read that times out is the moment to
// send periodic feedback.
func (r *Receiver) receive() error {
	buf := make([]byte, 65536)
	out := make([]byte, 0, tfrc.FeedbackLen)
	var to peer
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
				return fmt.Errorf("tfrcudp: set the read deadline: %w", err)
			}
			set = deadline
		}
		n, from, err := r.conn.read(buf)
		now := r.clk.Now()
		if err != nil && !isTimeout(err) {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("tfrcudp: read data: %w", err)
		}
		r.mu.Lock()
		if err == nil {
			if h, _, perr := tfrc.ParseData(buf[:n]); perr != nil {
				r.st.BadPackets++
			} else {
				r.core.OnData(now, h, n)
				to = from
			}
		}
		fb, ok := r.core.Poll(now)
		r.mu.Unlock()
		if ok && to.valid() {
			out = tfrc.AppendFeedback(out[:0], fb)
			if err := r.conn.write(out, to); err != nil {
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

// isTimeout reports whether err is a read deadline passing: the feedback
// timer, not a failure.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
