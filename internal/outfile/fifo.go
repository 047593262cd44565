package outfile

import (
	"context"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errReplaced is the error of opening a device or FIFO that another file
// replaced since the path was checked.
var errReplaced = errors.New("it was replaced while wanlab opened it")

// openFlags open a device or FIFO for writing without following a link
// that was swapped in since the path was checked.
const openFlags = unix.O_WRONLY | unix.O_NOCTTY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openDevice opens the character device t for writing.
func openDevice(t target) (*os.File, error) {
	fd, err := unix.Openat(t.dir.fd, t.name, openFlags, 0)
	if err != nil {
		return nil, err
	}
	if err := sameFile(fd, &t.st); err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), t.shown), nil
}

// sameFile checks, before anything is written, that fd is the file whose
// lstat was st (closing fd if not): a regular file (a hard link, say)
// swapped in for a FIFO must not be written through.
func sameFile(fd int, st *unix.Stat_t) error {
	var got unix.Stat_t
	err := unix.Fstat(fd, &got)
	if err == nil && (got.Dev != st.Dev || got.Ino != st.Ino || got.Mode&unix.S_IFMT != st.Mode&unix.S_IFMT) {
		err = errReplaced
	}
	if err != nil {
		unix.Close(fd)
	}
	return err
}

// openFIFO opens the FIFO t for writing. open(2) blocks until a reader
// opens the other end; if ctx is done first, openFIFO returns ctx's error.
// t's directory may be closed once openFIFO returns.
func openFIFO(ctx context.Context, t target) (*os.File, error) {
	fd, err := waitOpen(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := sameFile(fd, &t.st); err != nil {
		return nil, err
	}
	// Non-blocking, as os.OpenFile leaves a FIFO: writes then wait in the
	// runtime's poller, not in a thread of their own.
	unix.SetNonblock(fd, true)
	return os.NewFile(uintptr(fd), t.shown), nil
}

// waitOpen is the open of openFIFO.
func waitOpen(ctx context.Context, t target) (int, error) {
	if ctx.Done() == nil {
		return unix.Openat(t.dir.fd, t.name, openFlags, 0)
	}
	// The waiting open gets a descriptor of the directory of its own,
	// which the caller's closing cannot take away from it.
	dirfd, err := unix.FcntlInt(uintptr(t.dir.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	type result struct {
		fd  int
		err error
	}
	done := make(chan result, 1)
	go func() {
		fd, err := unix.Openat(dirfd, t.name, openFlags, 0)
		unix.Close(dirfd)
		done <- result{fd, err}
	}()
	select {
	case r := <-done:
		return r.fd, r.err
	case <-ctx.Done():
	}
	// The open still waits, in a thread nothing can interrupt. Opening the
	// FIFO for reading, which never blocks with O_NONBLOCK, counts as the
	// reader it waits for (fifo_open wakes writers when the reader count
	// changes), so it returns and its descriptor can be closed. A reader
	// that opens the FIFO meanwhile reads an empty stream.
	r, rerr := unix.Openat(t.dir.fd, t.name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	go func() {
		if res := <-done; res.err == nil {
			unix.Close(res.fd)
		}
		if rerr == nil {
			unix.Close(r)
		}
	}()
	return -1, ctx.Err()
}
