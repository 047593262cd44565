package tun

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"

	wgtun "golang.zx2c4.com/wireguard/tun"
)

// offloadDevice adapts wireguard-go's Linux TUN to Device.
type offloadDevice struct {
	dev    wgtun.Device
	name   string
	closed atomic.Bool
}

// openOffload creates the device; the caller runs it on a thread inside the
// target namespace, where the device and wireguard-go's netlink listener
// socket are then created.
func openOffload(name string, mtu int) (*offloadDevice, error) {
	dev, err := wgtun.CreateTUN(name, mtu)
	if err != nil {
		return nil, fmt.Errorf("tun: create offload device %s: %w", name, err)
	}
	// wireguard-go reports link events on a small buffered channel and its
	// listeners block once it is full; nothing here needs them, so drain it
	// until Close closes it.
	go func() {
		for range dev.Events() {
		}
	}()
	return &offloadDevice{dev: dev, name: name}, nil
}

func (d *offloadDevice) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	n, err := d.dev.Read(bufs, sizes, offset)
	if err == nil || errors.Is(err, ErrTooManySegments) {
		return n, err
	}
	if d.closed.Load() {
		// Closing also stops wireguard-go's netlink listener, whose
		// complaint may reach a pending Read before the closed file does.
		return n, fmt.Errorf("tun: %s: %w", d.name, os.ErrClosed)
	}
	// wireguard-go returns the read(2) of its file as an *fs.PathError
	// (os.ErrClosed once closed); any other error is its refusal of the
	// packet it read (handleVirtioRead's checks of the virtio-net header
	// against the packet), or, rarely, of its netlink listener, which its
	// errors do not tell apart by type.
	var pe *fs.PathError
	if n == 0 && !errors.As(err, &pe) && !errors.Is(err, os.ErrClosed) {
		return 0, fmt.Errorf("%w on %s: %v", ErrMalformed, d.name, err)
	}
	return n, err
}

func (d *offloadDevice) Write(bufs [][]byte, offset int) (int, error) {
	if offset < MinOffset {
		return 0, errOffset
	}
	if len(bufs) == 0 {
		return 0, nil
	}
	// wireguard-go returns a byte count here; Device counts packets.
	if _, err := d.dev.Write(bufs, offset); err != nil {
		return 0, err
	}
	return len(bufs), nil
}

func (d *offloadDevice) BatchSize() int { return d.dev.BatchSize() }
func (d *offloadDevice) Name() string   { return d.name }
func (d *offloadDevice) Close() error {
	d.closed.Store(true)
	return d.dev.Close()
}
