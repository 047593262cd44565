// Package ppoll waits for file descriptors the way the router's loop, the
// TUN devices, the packet sockets and TFRC's sockets do: ppoll(2) with an
// optional timeout, a signal's interruption being no error.
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

// Device waits as the Wait of a device read on a loop's thread does (a
// TUN, a packet socket): until the device's fd is readable, closing (the
// eventfd its Close writes) is, wake (another eventfd or a pipe; -1 for
// none) is, or timeout passes, as Wait would. It returns fd's revents and
// whether closing and wake are readable; it reads none of them.
func Device(fd, closing, wake int, timeout time.Duration) (revents int16, closed, woken bool, err error) {
	fds := [3]unix.PollFd{
		{Fd: int32(fd), Events: unix.POLLIN},
		{Fd: int32(closing), Events: unix.POLLIN},
		{Fd: int32(wake), Events: unix.POLLIN},
	}
	nfds := 3
	if wake < 0 {
		nfds = 2
	}
	if err := Wait(fds[:nfds], timeout); err != nil {
		return 0, false, false, err
	}
	return fds[0].Revents, fds[1].Revents != 0, nfds == 3 && fds[2].Revents != 0, nil
}
