package ppoll

import (
	"encoding/binary"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Waker is what a pacing thread sleeps on: an eventfd that other
// goroutines signal, waited for with ppoll and a timeout (the pacing
// thread of package internal/dgram, which TFRC's and the scalable
// sender's UDP transports share).
type Waker struct{ fd int }

// NewWaker returns a waker with its own eventfd; Close releases it.
func NewWaker() (*Waker, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	return &Waker{fd: fd}, nil
}

// Wake makes the current or next Wait return at once.
func (w *Waker) Wake() {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	unix.Write(w.fd, one[:]) // EAGAIN: the counter is full, a wake is pending anyway
}

// Wait sleeps until woken or for d (d < 0: until woken), and clears the
// wake-ups that came meanwhile.
func (w *Waker) Wait(d time.Duration) error {
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
	if err := Wait(fds, d); err != nil {
		return fmt.Errorf("ppoll: %w", err)
	}
	if fds[0].Revents&unix.POLLIN != 0 {
		var buf [8]byte
		unix.Read(w.fd, buf[:])
	}
	return nil
}

// Close releases the eventfd. No Wake or Wait may follow.
func (w *Waker) Close() error { return unix.Close(w.fd) }
