// Package errwriter is a writer that keeps its first error, so that code
// printing many small pieces (a summary, a dry run, a command's output)
// checks once at the end instead of after every print.
package errwriter

import (
	"fmt"
	"io"
)

// Writer passes writes on to the writer it wraps until one fails; from then
// on every write fails with that first error, and Err returns it.
type Writer struct {
	w   io.Writer
	err error
}

// New returns a Writer writing to w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p, or returns the first error of an earlier write.
func (e *Writer) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// Printf writes as fmt.Fprintf does; its error is kept for Err.
func (e *Writer) Printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

// Linef writes as Printf does, then a newline.
func (e *Writer) Linef(format string, args ...any) { fmt.Fprintf(e, format+"\n", args...) }

// Err returns the first error a write met, or nil.
func (e *Writer) Err() error { return e.err }

// Underlying returns the writer e wraps, for a caller that must hand the
// real file on (to a program it starts, say).
func (e *Writer) Underlying() io.Writer { return e.w }
