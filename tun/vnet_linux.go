package tun

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"wanlab/internal/ppoll"
	"wanlab/packet"
)

// VNetHdrLen is the size of the virtio-net header (struct virtio_net_hdr,
// without num_buffers; see packet.VirtioNetHdr) that a VNet device puts in
// front of every packet.
const VNetHdrLen = packet.VirtioNetHdrLen

// VNetMaxPacket is the largest packet a VNet device's Read returns: a GSO
// super-packet of up to 64 KiB (the kernel's GSO_LEGACY_MAX_SIZE).
const VNetMaxPacket = 65536

// Offload flags of TUNSETOFFLOAD (include/uapi/linux/if_tun.h).
const (
	tunFCSUM = 0x01
	tunFTSO4 = 0x02
	tunFTSO6 = 0x04
	tunFUSO4 = 0x20
	tunFUSO6 = 0x40
)

// VNetDevice is implemented by devices of kind VNet: /dev/net/tun with
// IFF_VNET_HDR and TSO (and USO where the kernel has it), whose packets
// keep the virtio-net header the kernel wrote and stay whole, GSO
// super-packets included.
//
// Read and TryRead store the header of the i-th packet at
// bufs[i][offset-VNetHdrLen:offset] and the packet at bufs[i][offset:], so
// offset must be at least VNetHdrLen and every buffer must hold
// VNetMaxPacket bytes beyond offset. Write and WriteOne take the header
// from the same place and hand it to the kernel unchanged: a super-packet
// read from one VNet device can be written to another as it is. A packet
// whose checksums are complete and that is no super-packet goes with a
// header of zeros.
//
// One goroutine may read (Read, TryRead, Wait) and one write at a time.
type VNetDevice interface {
	Device
	// TryRead is Read without waiting: it returns 0 and no error when the
	// kernel has nothing to send.
	TryRead(bufs [][]byte, sizes []int, offset int) (int, error)
	// Wait waits until the device has a packet to read, the file
	// descriptor wake (an eventfd or a pipe) is readable, or timeout
	// passes; a negative timeout waits for ever. It reports whether the
	// device is readable and whether wake is; it does not read either.
	// A signal interrupts it early with neither set, so callers wait in
	// a loop. Once Close has begun it returns an error wrapping
	// os.ErrClosed, also when Close ends a Wait in progress, whatever
	// woke that Wait.
	Wait(wake int, timeout time.Duration) (readable, woken bool, err error)
	// WriteOne writes the packet b[offset:] with its header at
	// b[offset-VNetHdrLen:offset] in one system call and returns the
	// errno of a refused write (0 when the kernel took it). It never
	// waits: a full receive path shows as EAGAIN or ENOBUFS.
	WriteOne(b []byte, offset int) syscall.Errno
	// Offloads returns the TUNSETOFFLOAD flags the kernel accepted.
	Offloads() uint
}

// vnetDevice is a TUN with virtio-net headers and no userspace
// segmentation or coalescing.
type vnetDevice struct {
	fd      int
	closeEv int // eventfd written by Close so that a Wait returns
	name    string
	offload uint

	// mu is held shared by every operation on fd and exclusively by
	// Close, so that the descriptor is never closed (and its number
	// reused) while a system call uses it.
	mu     sync.RWMutex
	closed atomic.Bool
}

// openVNet creates the device; the caller runs it on a thread inside the
// target namespace.
func openVNet(name string) (*vnetDevice, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("tun: open /dev/net/tun: %w", err)
	}
	fail := func(err error) (*vnetDevice, error) {
		unix.Close(fd)
		return nil, err
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return fail(fmt.Errorf("tun: %w", err))
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		return fail(fmt.Errorf("tun: create vnet device %s: %w", name, err))
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TUNSETVNETHDRSZ, VNetHdrLen); err != nil {
		return fail(fmt.Errorf("tun: %s: set the virtio-net header size to %d: %w", name, VNetHdrLen, err))
	}
	// USO arrived in Linux 6.2; older kernels refuse the whole set.
	offload := uint(tunFCSUM | tunFTSO4 | tunFTSO6 | tunFUSO4 | tunFUSO6)
	if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, int(offload)); err != nil {
		offload = tunFCSUM | tunFTSO4 | tunFTSO6
		if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, int(offload)); err != nil {
			return fail(fmt.Errorf("tun: %s: enable checksum and TSO offload: %w", name, err))
		}
	}
	ev, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fail(fmt.Errorf("tun: eventfd: %w", err))
	}
	return &vnetDevice{fd: fd, closeEv: ev, name: name, offload: offload}, nil
}

var errClosed = fmt.Errorf("tun: %w", os.ErrClosed)

func (d *vnetDevice) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	for {
		n, err := d.TryRead(bufs, sizes, offset)
		if n > 0 || err != nil {
			return n, err
		}
		if _, _, err := d.Wait(-1, -1); err != nil {
			return 0, err
		}
	}
}

func (d *vnetDevice) TryRead(bufs [][]byte, sizes []int, offset int) (int, error) {
	if offset < VNetHdrLen {
		return 0, errOffset
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed.Load() {
		return 0, errClosed
	}
	n := 0
	for n < len(bufs) {
		k, err := unix.Read(d.fd, bufs[n][offset-VNetHdrLen:])
		if err != nil {
			if err == unix.EAGAIN || err == unix.EINTR {
				break
			}
			return n, fmt.Errorf("tun: read %s: %w", d.name, closedIfBadFD(err))
		}
		if k < VNetHdrLen {
			return n, fmt.Errorf("tun: read %s: %d bytes, shorter than the virtio-net header", d.name, k)
		}
		sizes[n] = k - VNetHdrLen
		n++
	}
	return n, nil
}

func (d *vnetDevice) Wait(wake int, timeout time.Duration) (readable, woken bool, err error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed.Load() {
		return false, false, errClosed
	}
	revents, closing, woken, err := ppoll.Device(d.fd, d.closeEv, wake, timeout)
	if err != nil {
		return false, false, fmt.Errorf("tun: poll %s: %w", d.name, err)
	}
	// A signal (the Go runtime's preemption signal, a child's SIGCHLD)
	// can end ppoll with EINTR after Close set closed but before its
	// eventfd write was seen: closed, not only the eventfd, says so.
	if closing || d.closed.Load() {
		return false, false, errClosed
	}
	if revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
		return false, false, fmt.Errorf("tun: poll %s: device gone (revents %#x): %w", d.name, revents, os.ErrClosed)
	}
	return revents&unix.POLLIN != 0, woken, nil
}

func (d *vnetDevice) WriteOne(b []byte, offset int) syscall.Errno {
	if offset < VNetHdrLen {
		return unix.EINVAL
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed.Load() {
		return unix.EBADF
	}
	p := b[offset-VNetHdrLen:]
	for {
		_, _, e := unix.Syscall(unix.SYS_WRITE, uintptr(d.fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e != unix.EINTR {
			return e
		}
	}
}

// Write writes every packet with WriteOne; it goes on after a refused
// packet, as the raw device does, and returns the number accepted.
func (d *vnetDevice) Write(bufs [][]byte, offset int) (int, error) {
	return writeEach(bufs, offset, func(b []byte) (bool, error) {
		switch e := d.WriteOne(b, offset); e {
		case 0:
			return false, nil
		case unix.EBADF, unix.EBADFD:
			return true, errClosed
		default:
			return false, fmt.Errorf("tun: write %s: %w", d.name, e)
		}
	})
}

func (d *vnetDevice) Offloads() uint { return d.offload }

// BatchSize is the number of packets TryRead takes per call at most when
// given that many buffers; super-packets make each one up to 64 KiB.
func (d *vnetDevice) BatchSize() int { return 64 }
func (d *vnetDevice) Name() string   { return d.name }

func (d *vnetDevice) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	one := [8]byte{1}
	unix.Write(d.closeEv, one[:])
	d.mu.Lock()
	defer d.mu.Unlock()
	err := unix.Close(d.fd)
	unix.Close(d.closeEv)
	if err != nil {
		return fmt.Errorf("tun: close %s: %w", d.name, err)
	}
	return nil
}

var _ VNetDevice = (*vnetDevice)(nil)
