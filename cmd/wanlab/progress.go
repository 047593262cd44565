package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/testrun"
)

// progressLine keeps one line on a terminal up to date while a run goes
// on: elapsed and remaining time, the phase, the rates each way and the
// path's delay.
//
// It is a few lines of its own rather than github.com/schollz/progressbar:
// what it shows is a free-form line of figures that changes every step,
// which progressbar can only carry as the "description" beside a bar it
// sizes and throttles itself, at the cost of three more modules.
type progressLine struct {
	mu    sync.Mutex // warnings may come from another goroutine
	w     io.Writer
	fd    int
	label string
}

// newProgressLine returns a progress line on w, or nil if w is not a
// terminal (a file, a pipe, a test's buffer).
func newProgressLine(w io.Writer, label string) *progressLine {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return nil
	}
	return &progressLine{w: w, fd: int(f.Fd()), label: label}
}

func (p *progressLine) update(pr testrun.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("%s  %5.1fs of %gs  %-4s  up %7.2f Mbit/s  down %7.2f Mbit/s",
		p.label, pr.Elapsed.Seconds(), pr.Length.Seconds(), pr.Phase, pr.UpMbps, pr.DownMbps)
	if !math.IsNaN(pr.DelayMs) {
		line += fmt.Sprintf("  path delay %7.1f ms", pr.DelayMs)
	}
	line += fmt.Sprintf("  %s left", (pr.Length - pr.Elapsed).Round(time.Second))
	if ws, err := unix.IoctlGetWinsize(p.fd, unix.TIOCGWINSZ); err == nil && ws.Col > 1 && len(line) >= int(ws.Col) {
		line = line[:ws.Col-1]
	}
	// Carriage return, the line, and erase to its end (ECMA-48 EL).
	fmt.Fprintf(p.w, "\r%s\x1b[K", line)
}

// done erases the line.
func (p *progressLine) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\x1b[K")
}

// println erases the line and writes a line of its own in its place; the
// next update draws the progress line again below it.
func (p *progressLine) println(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\x1b[K%s\n", line)
}
