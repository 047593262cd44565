// Package ppoll waits for file descriptors the way the router's loop, the
// TUN devices and TFRC's sockets do: ppoll(2) with an optional timeout, a
// signal's interruption being no error.
package ppoll

import (
	"time"

	"golang.org/x/sys/unix"
)

// Wait waits until one of fds is ready or timeout has passed (a negative
// timeout: for ever). A signal that interrupts the wait (EINTR, which the
// Go runtime's preemption causes) returns nil, as a timeout does: the
// caller reads the revents and decides.
func Wait(fds []unix.PollFd, timeout time.Duration) error {
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	if _, err := unix.Ppoll(fds, ts, nil); err != nil && err != unix.EINTR {
		return err
	}
	return nil
}
