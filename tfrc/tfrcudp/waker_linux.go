package tfrcudp

import (
	"encoding/binary"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/ppoll"
)

// waker is what the pacer sleeps on: an eventfd that other goroutines
// signal, waited for with ppoll and a timeout.
type waker struct{ fd int }

func newWaker() (*waker, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("tfrcudp: eventfd: %w", err)
	}
	return &waker{fd: fd}, nil
}

// wake makes the current or next wait return at once.
func (w *waker) wake() {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	unix.Write(w.fd, one[:]) // EAGAIN: the counter is full, a wake is pending anyway
}

// wait sleeps until woken or for d (d < 0: until woken), and clears the
// wake-ups that came meanwhile.
func (w *waker) wait(d time.Duration) error {
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
	if err := ppoll.Wait(fds, d); err != nil {
		return fmt.Errorf("tfrcudp: ppoll: %w", err)
	}
	if fds[0].Revents&unix.POLLIN != 0 {
		var buf [8]byte
		unix.Read(w.fd, buf[:])
	}
	return nil
}

func (w *waker) close() error { return unix.Close(w.fd) }
