package tun

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/ppoll"
)

// VNetSet waits on several VNet devices at once, as one device's Wait
// does on it alone: one ppoll(2) over every device, the eventfd each one's
// Close writes, and a wake descriptor. A reader of many devices on one
// thread (the router between many hosts) sleeps in it until any of them
// has a packet.
//
// It is used by the goroutine that reads the devices; it does not read
// them.
type VNetSet struct {
	devs  []*vnetDevice
	fds   []unix.PollFd // per device its fd and its close eventfd, then wake
	ready []bool
}

// NewVNetSet returns a set of devs, which must be devices of kind VNet
// opened by Open.
func NewVNetSet(devs []VNetDevice) (*VNetSet, error) {
	s := &VNetSet{
		devs:  make([]*vnetDevice, len(devs)),
		fds:   make([]unix.PollFd, 2*len(devs)+1),
		ready: make([]bool, len(devs)),
	}
	for i, d := range devs {
		vd, ok := d.(*vnetDevice)
		if !ok {
			return nil, fmt.Errorf("tun: %s (%T) is not a VNet device opened by tun.Open: open it with Options{Kind: VNet}", d.Name(), d)
		}
		s.devs[i] = vd
		s.fds[2*i] = unix.PollFd{Fd: int32(vd.fd), Events: unix.POLLIN}
		s.fds[2*i+1] = unix.PollFd{Fd: int32(vd.closeEv), Events: unix.POLLIN}
	}
	return s, nil
}

// Wait waits until a device has a packet to read, the descriptor wake (-1
// for none) is readable, or timeout passes (negative: for ever); a zero
// timeout looks without waiting. It reports whether wake is readable;
// Readable tells which devices are. A signal may end it early with
// nothing readable. Once any device's Close has begun it returns an error
// wrapping os.ErrClosed, as VNetDevice.Wait does.
func (s *VNetSet) Wait(wake int, timeout time.Duration) (woken bool, err error) {
	// Every descriptor stays open while the poll uses it (see
	// vnetDevice.mu). No defer in the loop: that would allocate.
	for _, d := range s.devs {
		d.mu.RLock()
	}
	woken, err = s.wait(wake, timeout)
	for _, d := range s.devs {
		d.mu.RUnlock()
	}
	return woken, err
}

func (s *VNetSet) wait(wake int, timeout time.Duration) (bool, error) {
	for _, d := range s.devs {
		if d.closed.Load() {
			return false, errClosed
		}
	}
	fds := s.fds
	if wake >= 0 {
		fds[len(fds)-1] = unix.PollFd{Fd: int32(wake), Events: unix.POLLIN}
	} else {
		fds = fds[:len(fds)-1]
	}
	for i := range fds {
		fds[i].Revents = 0
	}
	if err := ppoll.Wait(fds, timeout); err != nil {
		return false, fmt.Errorf("tun: poll %d devices: %w", len(s.devs), err)
	}
	for i, d := range s.devs {
		revents := fds[2*i].Revents
		// As in vnetDevice.Wait: closed, not only the eventfd, says
		// that Close has begun.
		if fds[2*i+1].Revents != 0 || d.closed.Load() {
			return false, errClosed
		}
		if revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			return false, fmt.Errorf("tun: poll %s: device gone (revents %#x): %w", d.name, revents, os.ErrClosed)
		}
		s.ready[i] = revents&unix.POLLIN != 0
	}
	return wake >= 0 && fds[len(fds)-1].Revents != 0, nil
}

// Readable reports whether device i (in the order NewVNetSet was given)
// had a packet to read at the last Wait.
func (s *VNetSet) Readable(i int) bool { return s.ready[i] }
