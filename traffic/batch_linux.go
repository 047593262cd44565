package traffic

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// batchWriter sends datagrams on a connected UDP socket with sendmmsg(2):
// up to len(bufs) per system call, so that a high packet rate does not
// cost a system call per packet. Everything is allocated up front;
// writing allocates nothing.
type batchWriter struct {
	rc   syscall.RawConn
	hdrs []unix.Mmsghdr
	iovs []unix.Iovec
	fn   func(fd uintptr) bool // do, as a method value made once

	// One call's state, for fn.
	off, n, sent int
	errno        syscall.Errno
}

// newBatchWriter prepares to send bufs[i] as datagram i of a batch on c,
// which must be connected.
func newBatchWriter(c net.Conn, bufs [][]byte) (*batchWriter, error) {
	rc, err := rawConn(c)
	if err != nil {
		return nil, err
	}
	w := &batchWriter{rc: rc, hdrs: make([]unix.Mmsghdr, len(bufs)), iovs: make([]unix.Iovec, len(bufs))}
	for i, b := range bufs {
		w.iovs[i].Base = &b[0]
		w.iovs[i].SetLen(len(b))
		w.hdrs[i].Hdr.Iov = &w.iovs[i]
		w.hdrs[i].Hdr.SetIovlen(1)
	}
	w.fn = w.do
	return w, nil
}

// do makes one sendmmsg call for datagrams off … off+n-1; it returns false
// to have the runtime wait until the socket is writable.
func (w *batchWriter) do(fd uintptr) bool {
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&w.hdrs[w.off])), uintptr(w.n), 0, 0, 0)
	if e == unix.EAGAIN {
		return false
	}
	w.sent, w.errno = int(r), e
	return true
}

// write sends the first n datagrams. It returns how many the kernel
// refused with an error that concerns only that datagram (no buffer
// space, or an ICMP error of an earlier one reported now): they are
// skipped. Any other error ends the write.
func (w *batchWriter) write(n int) (refused int, err error) {
	for w.off = 0; w.off < n; {
		w.n = n - w.off
		if err := w.rc.Write(w.fn); err != nil {
			return refused, err
		}
		switch {
		case w.errno == 0:
			w.off += w.sent
		case errors.Is(w.errno, unix.ENOBUFS) || errors.Is(w.errno, unix.ECONNREFUSED) || errors.Is(w.errno, unix.EPERM):
			// EPERM: a firewall rule refused it.
			refused++
			w.off++
		default:
			return refused, fmt.Errorf("sendmmsg: %w", w.errno)
		}
	}
	return refused, nil
}

// socketDrops returns how many datagrams c's socket has dropped because
// its receive buffer was full (SK_MEMINFO_DROPS of SO_MEMINFO,
// include/uapi/linux/sock_diag.h).
func socketDrops(c any) (uint32, error) {
	rc, err := rawConn(c)
	if err != nil {
		return 0, err
	}
	const skMeminfoDrops = 8
	var info [skMeminfoDrops + 1]uint32
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		size := uint32(unsafe.Sizeof(info))
		_, _, errno = unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
	})
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, fmt.Errorf("SO_MEMINFO: %w", errno)
	}
	return info[skMeminfoDrops], nil
}
