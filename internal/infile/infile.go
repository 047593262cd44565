// Package infile reads the files a user names as input (experiment files,
// trace files, netem distribution tables, results files). It refuses what
// is not a regular file, a directory, a device such as /dev/zero or a FIFO
// (opened without blocking, so that one with no writer does not hang the
// command), and a file larger than the caller's bound, before it reads
// anything, so that no path is read forever or into all of memory.
package infile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Open opens path for reading if it is a regular file, and otherwise
// returns an error that names it and what it is. It looks before it opens:
// opening a device runs its driver (a tape rewinds, a terminal becomes
// the controlling one) and opening a FIFO waits for a writer. It checks
// again what it opened, which the path may have been replaced by since.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if m := st.Mode(); !m.IsRegular() {
		return nil, notRegular(path, m)
	}
	// O_NONBLOCK: a FIFO put in the file's place must not block the open.
	// Reads of a regular file ignore it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if m := st.Mode(); !m.IsRegular() {
		f.Close()
		return nil, notRegular(path, m)
	}
	return f, nil
}

// notRegular says that path is not a regular file, and what it is.
func notRegular(path string, m os.FileMode) error {
	return fmt.Errorf("%s is %s, not a regular file", path, kind(m))
}

// Read returns the contents of the regular file path (see Open), refusing
// one of more than max bytes with an error that names the bound.
func Read(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %s", path, Size(max))
	}
	return b, nil
}

// Size prints a bound in bytes, KiB, MiB or GiB, whichever holds it
// exactly.
func Size(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// kind names what a non-regular file is.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}
