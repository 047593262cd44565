package tun

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// rawDevice is a plain TUN device (IFF_TUN|IFF_NO_PI): every packet is one
// read or write system call.
type rawDevice struct {
	f    *os.File
	name string
}

// openRaw creates the device; the caller runs it on a thread inside the
// target namespace.
func openRaw(name string) (*rawDevice, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("tun: open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tun: %w", err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tun: create raw device %s: %w", name, err)
	}
	// Non-blocking, the descriptor joins Go's poller, so a blocked Read
	// parks a goroutine rather than a thread, and Close wakes it.
	return &rawDevice{f: os.NewFile(uintptr(fd), "/dev/net/tun"), name: name}, nil
}

func (d *rawDevice) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	n, err := d.f.Read(bufs[0][offset:])
	if err != nil {
		return 0, closedIfBadFD(err)
	}
	sizes[0] = n
	return 1, nil
}

func (d *rawDevice) Write(bufs [][]byte, offset int) (int, error) {
	return writeEach(bufs, offset, func(b []byte) (bool, error) {
		if _, err := d.f.Write(b[offset:]); err != nil {
			err = closedIfBadFD(err)
			return errors.Is(err, os.ErrClosed), err
		}
		return false, nil
	})
}

// writeEach writes each of bufs with write, which reports whether the
// device is closed: it goes on after a refused packet, since one malformed
// packet must not cost the rest of the batch, stops at a closed device,
// and returns the number written.
func writeEach(bufs [][]byte, offset int, write func(b []byte) (closed bool, err error)) (int, error) {
	if offset < MinOffset {
		return 0, errOffset
	}
	var errs []error
	n := 0
	for _, b := range bufs {
		closed, err := write(b)
		switch {
		case closed:
			return n, err
		case err != nil:
			errs = append(errs, err)
		default:
			n++
		}
	}
	return n, errors.Join(errs...)
}

func (d *rawDevice) BatchSize() int { return 1 }
func (d *rawDevice) Name() string   { return d.name }
func (d *rawDevice) Close() error   { return d.f.Close() }

// closedIfBadFD maps EBADFD, which a TUN reports once it is detached, to
// os.ErrClosed like the rest of the package.
func closedIfBadFD(err error) error {
	if errors.Is(err, unix.EBADFD) {
		return fmt.Errorf("tun: %w", os.ErrClosed)
	}
	return err
}
