package outfile

import (
	"context"
	"os"

	"golang.org/x/sys/unix"
)

// openFIFO opens a FIFO for writing. open(2) blocks until a reader opens
// the other end; if ctx is done first, openFIFO returns ctx's error.
func openFIFO(ctx context.Context, path string) (*os.File, error) {
	open := func() (*os.File, error) { return os.OpenFile(path, os.O_WRONLY|unix.O_NOCTTY, 0) }
	if ctx.Done() == nil {
		return open()
	}
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := open()
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-ctx.Done():
	}
	// The open still waits, in a thread nothing can interrupt. Opening the
	// FIFO for reading, which never blocks with O_NONBLOCK, counts as the
	// reader it waits for (fifo_open wakes writers when the reader count
	// changes), so it returns and its descriptor can be closed. A reader
	// that opens the FIFO meanwhile reads an empty stream.
	r, rerr := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	go func() {
		if res := <-done; res.f != nil {
			res.f.Close()
		}
		if rerr == nil {
			r.Close()
		}
	}()
	return nil, ctx.Err()
}
