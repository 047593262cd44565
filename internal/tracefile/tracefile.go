// Package tracefile reads the mahimahi trace files a user names on the
// command line (--trace-up, --trace-down), in link.ParseTrace's format.
// It refuses what is not a regular file and a file beyond MaxSize before
// reading it (package infile).
package tracefile

import (
	"fmt"

	"wanlab/internal/infile"
	"wanlab/link"
)

// MaxSize bounds a trace file: a day of a 1 Gbit/s trace (one line per
// 1500-byte opportunity, a few bytes each) is far less.
const MaxSize = 1 << 30

// Load reads and parses the trace file at path. Its errors name the path
// and what to give instead.
func Load(path string) (*link.Trace, error) {
	text, err := infile.Read(path, MaxSize)
	if err != nil {
		return nil, fmt.Errorf("%w; give a mahimahi trace file of at most %s", err, infile.Size(MaxSize))
	}
	t, err := link.ParseTrace(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
