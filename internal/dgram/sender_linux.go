package dgram

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/clock"
	"wanlab/internal/ppoll"
	"wanlab/internal/procs"
)

// Pacer is a sender's protocol as the pacing loop drives it. Next and
// SendFailed are called on the pacing thread, Feedback on the feedback
// reader; each takes the sender's own lock, as Stats does.
type Pacer interface {
	// Next takes the packet that is due now, if one is, and returns it
	// (in a buffer of the sender's, which the loop writes before the
	// next call); otherwise it returns false and when the next packet is
	// due (clock.Never: not until woken).
	Next() (pkt []byte, ok bool, deadline clock.Time)
	// SendFailed counts a data packet the socket refused.
	SendFailed()
	// Feedback takes a datagram from the receiver, read at now. It
	// returns whether it was feedback, which may move the next send time
	// and so wakes the pacer.
	Feedback(now clock.Time, b []byte) bool
}

// Sender is a paced sender's socket loops: a pacing thread that sends
// every packet its Pacer says is due and sleeps in ppoll until the next
// one is, and a reader of the feedback. Use it by pointer, as a field set
// once before Run.
//
// The pacing goroutine is locked to its own thread with a timer slack of
// 1 ns, so that ppoll wakes when asked: Go's own timers wake up to a
// millisecond late, more than the 1.2 ms between packets at 10 Mbit/s.
type Sender struct {
	// Pkg begins the loops' errors, for instance "tfrcudp"; Feedback
	// names the feedback in them ("feedback", "ACKs").
	Pkg, Feedback string
	Socket        Socket
	Peer          Peer
	Clock         *clock.Real
	Pacer         Pacer
	// Wake is what the pacer sleeps on; the feedback reader signals it,
	// and so may the sender's other goroutines (an application that
	// refills an empty buffer). Run closes it when it ends.
	Wake *ppoll.Waker
	// Locker, if not nil, is held while Ended runs and Wake is closed,
	// once both loops have ended: a sender that signals Wake from
	// elsewhere does so under it, after checking that Ended has not run.
	Locker sync.Locker
	// Ended, if not nil, runs once both loops have ended.
	Ended func()

	once sync.Once
}

// Run sends until ctx ends or the socket fails, then closes the socket
// and Wake and returns, with every goroutine it started ended. It returns
// nil when ctx ended it; on a context that has already ended it only
// releases. Run may be called once.
func (s *Sender) Run(ctx context.Context) error {
	err := fmt.Errorf("%s: Run called twice", s.Pkg)
	s.once.Do(func() { err = s.run(ctx) })
	return err
}

func (s *Sender) run(ctx context.Context) error {
	var (
		wg      sync.WaitGroup
		errc    = make(chan error, 2)
		stopped = make(chan struct{})
	)
	if ctx.Err() == nil {
		// The pacer sleeps to each packet's time and must run when it
		// wakes, without waiting for a P of the Go runtime's (package
		// procs).
		defer procs.Reserve(1)()
		wg.Add(2)
		go func() { defer wg.Done(); errc <- s.pace(stopped) }()
		go func() { defer wg.Done(); errc <- s.readFeedback() }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	close(stopped)
	s.Wake.Wake()
	cerr := s.Socket.Close()
	wg.Wait()
	if s.Locker != nil {
		s.Locker.Lock()
	}
	if s.Ended != nil {
		s.Ended()
	}
	s.Wake.Close()
	if s.Locker != nil {
		s.Locker.Unlock()
	}
	if err == nil && ctx.Err() == nil {
		err = cerr
	}
	return err
}

// pace sends every packet that is due, then sleeps until the next one is
// or something changes. The runtime discards its thread when the
// goroutine ends, timer slack and all.
func (s *Sender) pace(stopped <-chan struct{}) error {
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("%s: set the timer slack: %w", s.Pkg, err)
	}
	for {
		select {
		case <-stopped:
			return nil
		default:
		}
		pkt, ok, deadline := s.Pacer.Next()
		if ok {
			if err := s.Socket.Send(pkt, s.Peer); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return nil
				}
				s.Pacer.SendFailed()
			}
			continue
		}
		d := time.Duration(-1)
		if deadline != clock.Never {
			d = max(0, s.Clock.Wall(deadline).Sub(time.Now()))
		}
		if err := s.Wake.Wait(d); err != nil {
			return fmt.Errorf("%s: %w", s.Pkg, err)
		}
	}
}

// readFeedback hands every datagram from the receiver to the Pacer and
// wakes the pacing thread after each feedback, which may have moved the
// next send time.
func (s *Sender) readFeedback() error {
	buf := make([]byte, 2048)
	for {
		n, _, _, err := s.Socket.Receive(buf, nil)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("%s: read %s: %w", s.Pkg, s.Feedback, err)
		}
		if s.Pacer.Feedback(s.Clock.Now(), buf[:n]) {
			s.Wake.Wake()
		}
	}
}
