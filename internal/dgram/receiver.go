package dgram

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"wanlab/clock"
)

// Handler is a receiver's protocol as the receive loop drives it. The
// loop calls it from one goroutine; each method takes the receiver's own
// lock, as Stats does.
type Handler interface {
	// Deadline returns when the protocol's timer is next due
	// (clock.Never: not until data arrives): the loop reads with that
	// deadline.
	Deadline() clock.Time
	// Handle takes the datagram b, with its control messages oob, that
	// arrived at now, or with b nil the timer's expiry at now, and
	// appends the feedback due then, if any, to out. data says whether b
	// was the protocol's data, whose source the feedback goes to from
	// then on.
	Handle(now clock.Time, b, oob, out []byte) (feedback []byte, data bool)
	// SendFailed counts a feedback datagram the socket refused.
	SendFailed()
}

// Receiver is a transport receiver's socket loop: it reads data, hands
// it to its Handler and sends the feedback to where the latest data came
// from. Use it by pointer, as a field set once before Run.
type Receiver struct {
	// Pkg begins the loop's errors, for instance "tfrcudp".
	Pkg     string
	Socket  Socket
	Clock   *clock.Real
	Handler Handler
	// OOB is the size of the buffer for each datagram's control
	// messages (0: none are read); FeedbackLen the size of a feedback
	// packet.
	OOB, FeedbackLen int

	once sync.Once
}

// Run receives until ctx ends or the socket fails, then closes the socket
// and returns, with every goroutine it started ended. It returns nil when
// ctx ended it. Run may be called once.
func (r *Receiver) Run(ctx context.Context) error {
	err := fmt.Errorf("%s: Run called twice", r.Pkg)
	r.once.Do(func() { err = r.run(ctx) })
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
		r.Socket.Close() // ends the blocked read
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
// deadline is the protocol's timer: a read that times out is the moment
// to send what the timer asks for (TFRC's periodic feedback, a delayed
// ACK).
func (r *Receiver) receive() error {
	buf := make([]byte, 65536)
	var oob []byte
	if r.OOB > 0 {
		oob = make([]byte, r.OOB)
	}
	out := make([]byte, 0, r.FeedbackLen)
	var to Peer
	set := clock.Time(-1) // the read deadline in force, -1: none yet
	for {
		if deadline := r.Handler.Deadline(); deadline != set {
			t := time.Time{}
			if deadline != clock.Never {
				t = r.Clock.Wall(deadline)
			}
			if err := r.Socket.SetReadDeadline(t); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return nil
				}
				return fmt.Errorf("%s: set the read deadline: %w", r.Pkg, err)
			}
			set = deadline
		}
		n, oobn, from, err := r.Socket.Receive(buf, oob)
		now := r.Clock.Now()
		if err != nil && !isTimeout(err) {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("%s: read data: %w", r.Pkg, err)
		}
		var b, ob []byte
		if err == nil {
			b, ob = buf[:n], oob[:oobn]
		}
		fb, data := r.Handler.Handle(now, b, ob, out[:0])
		if data {
			to = from
		}
		if fb != nil && to.Valid() {
			if err := r.Socket.Send(fb, to); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return nil
				}
				r.Handler.SendFailed()
			}
		}
	}
}
