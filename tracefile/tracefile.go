// Package tracefile reads the mahimahi trace files a user names on the
// command line (--trace-up, --trace-down), in link.ParseTrace's format.
// It refuses what is no trace file, a directory, a device, a FIFO or a
// file beyond MaxSize, before reading it, so that a path such as
// /dev/zero is never read forever.
package tracefile

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"wanlab/link"
)

// MaxSize bounds a trace file: a day of a 1 Gbit/s trace (one line per
// 1500-byte opportunity, a few bytes each) is far less.
const MaxSize = 1 << 30

// Load reads and parses the trace file at path. Its errors name the path
// and what to give instead.
func Load(path string) (*link.Trace, error) {
	// O_NONBLOCK: opening a FIFO would otherwise wait for a writer.
	// Reads of a regular file ignore it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > MaxSize {
		return nil, fmt.Errorf("%s: give a regular mahimahi trace file of at most %d GiB", path, MaxSize>>30)
	}
	text, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(text) > MaxSize {
		return nil, fmt.Errorf("%s: give a regular mahimahi trace file of at most %d GiB", path, MaxSize>>30)
	}
	t, err := link.ParseTrace(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
