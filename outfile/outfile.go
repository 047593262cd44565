// Package outfile is the one way wanlab writes a file the user named: event
// logs, packet captures, results, reports. It writes to what the path is,
// and replaces only what can be replaced safely:
//
//   - "-" is the standard output; Commit flushes it.
//   - A character device (/dev/null, a terminal) or a FIFO is written
//     through, never replaced. Opening a FIFO for writing waits until a
//     reader opens it (open(2) in fifo(7)); Create gives up when its context
//     is done, so a command that catches SIGINT can still be interrupted.
//   - A symbolic link is followed: the link stays, and its target is
//     written by these rules (a dangling link creates its target, as a
//     shell's > does).
//   - A regular file, or a path that does not exist yet, is written to a
//     temporary file in the same directory and renamed over the path on
//     Commit (rename(2) is atomic), so a reader never sees half a file and
//     a failed or interrupted write leaves the previous file as it was. The
//     new file keeps the old one's mode (and owner and group, when run as
//     root); a new path gets 0644 less the umask. A regular file with more
//     than one name (a hard link) loses the link, as with any atomic save.
//   - A directory, a block device or a socket is refused, with a message
//     that names the fix.
//
// The temporary is removed on every error, on Abort, and when SIGINT,
// SIGTERM or SIGHUP ends the process (see NotifyContext for commands that
// catch those signals themselves). A process killed with SIGKILL cannot
// remove its temporary: temporaries carry the writer's process identity in
// their name, and the next Create in the same directory removes those whose
// writer is gone.
package outfile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Options describe one output for Check and Create.
type Options struct {
	// Label names the output in messages, usually as the user gave it
	// ("--events"); messages then read "--events /tmp is a directory: ...".
	// Empty, messages start with the path.
	Label string
	// Suggest is a file name offered when the path is a directory
	// ("events.csv" gives "e.g. /tmp/events.csv").
	Suggest string
	// NoClobber refuses a path that names an existing file instead of
	// replacing it. It is for outputs whose name wanlab chose itself (a
	// default results file name): the user never asked for that file to be
	// replaced. Devices and FIFOs are still written through.
	NoClobber bool
	// ClobberHint tells the user, when NoClobber refuses a path, how to
	// choose another name or allow replacing ("give another name with
	// --out FILE"). Empty, the message says to choose another name or
	// remove the file.
	ClobberHint string
	// Unbuffered makes every Write reach the file at once. It is for a
	// caller that buffers itself and flushes when a reader (of a FIFO, say)
	// should see the data; otherwise File buffers 64 KiB.
	Unbuffered bool
	// Stdout is where "-" writes; nil means os.Stdout.
	Stdout io.Writer
}

// bufSize is the buffer of a buffered File: large enough that CSV rows and
// JSON tokens cost a system call per 64 KiB, not per row.
const bufSize = 64 << 10

// File is an output being written. It is an io.Writer; Commit makes the
// content final, Abort discards what can be discarded. Exactly one of
// Commit and Abort must end every File (Abort after Commit is a no-op, so
// `defer f.Abort()` is the usual pattern). A File is not safe for
// concurrent use.
type File struct {
	path  string // as given, for messages
	opts  Options
	kind  kind
	final string   // where the content ends: the resolved target path
	f     *os.File // nil for stdout
	w     io.Writer
	buf   *bufio.Writer // nil when unbuffered
	tmp   *temporary    // the temporary of a replaced or new regular file
	ended bool
	err   error // the first write error, reported again by Commit
}

// temporary is a live temporary file; the registry holds every one so that
// a signal can remove them all.
type temporary struct {
	path string
	// removed is set when a signal removed the file, so that a Commit still
	// running learns that its content is gone.
	removed atomic.Bool
}

// Check validates path as Create would, without creating or opening
// anything: it reports a directory, a missing or unwritable parent
// directory, an unwritable file, a block device or socket, a symbolic link
// loop, and (with NoClobber) an existing file. Commands call it while
// parsing their options, before they create anything else. Every error it
// returns is about the path the user gave, and says what to change.
func Check(path string, o Options) error {
	_, err := resolve(path, o)
	return err
}

// Create opens path for writing by the rules in the package comment. For a
// FIFO it waits until a reader opens it, or until ctx is done. For a
// regular file it first removes the temporaries that earlier, killed
// writers left in the same directory.
func Create(ctx context.Context, path string, o Options) (*File, error) {
	t, err := resolve(path, o)
	if err != nil {
		return nil, err
	}
	f := &File{path: path, opts: o, kind: t.kind, final: t.path}
	switch t.kind {
	case kindStdout:
		f.w = o.Stdout
		if f.w == nil {
			f.w = os.Stdout
		}
	case kindDevice:
		if f.f, err = os.OpenFile(t.path, os.O_WRONLY|unix.O_NOCTTY, 0); err != nil {
			return nil, f.failed("cannot open it", err)
		}
	case kindFIFO:
		if f.f, err = openFIFO(ctx, t.path); err != nil {
			return nil, f.failed("cannot open it", err)
		}
	case kindNew, kindRegular:
		removeStale(filepath.Dir(t.path))
		if f.f, f.tmp, err = createTemp(t); err != nil {
			return nil, f.failed("cannot create a temporary file beside it", err)
		}
	}
	if f.f != nil {
		f.w = f.f
	}
	if !o.Unbuffered {
		f.buf = bufio.NewWriterSize(f.w, bufSize)
	}
	return f, nil
}

// errEnded is what Write and Commit return after Commit or Abort.
var errEnded = errors.New("outfile: the file was already committed or aborted")

// Write writes p. After a failed write every later one fails too, and
// Commit reports the first error.
func (f *File) Write(p []byte) (int, error) {
	if f.ended {
		return 0, errEnded
	}
	if f.err != nil {
		return 0, f.err
	}
	var n int
	if f.buf != nil {
		n, f.err = f.buf.Write(p)
	} else {
		n, f.err = f.w.Write(p)
	}
	return n, f.err
}

// WriteString writes s, as Write does.
func (f *File) WriteString(s string) (int, error) {
	if f.buf != nil && !f.ended && f.err == nil {
		var n int
		n, f.err = f.buf.WriteString(s)
		return n, f.err
	}
	return f.Write([]byte(s))
}

// Commit makes the content final: it flushes, and for a regular file syncs
// it and renames it over the path (with NoClobber, only if the path still
// does not exist). A failed Commit leaves the path as it was before Create,
// except that a device or FIFO keeps what already reached it. Commit after
// Commit or Abort returns an error.
func (f *File) Commit() error {
	if f.ended {
		return errEnded
	}
	f.ended = true
	err := f.err
	if err == nil && f.buf != nil {
		err = f.buf.Flush()
	}
	switch f.kind {
	case kindStdout:
		if err != nil {
			return f.failed("writing it failed", err)
		}
		return nil
	case kindDevice, kindFIFO:
		if cerr := f.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return f.failed("writing it failed", err)
		}
		return nil
	}
	if err == nil {
		err = f.f.Sync()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		f.tmp.discard()
		return f.failed("writing it failed", err)
	}
	if err := f.tmp.install(f.final, f.opts.NoClobber); err != nil {
		return f.commitFailed(err)
	}
	// The rename is durable once the directory is synced; a failure here
	// loses nothing that a crash could not, so it is not reported.
	if d, err := os.Open(filepath.Dir(f.final)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Abort discards the output: the temporary of a regular file is removed
// and the path left as it was; a device, FIFO or stdout keeps what already
// reached it (buffered data is dropped). Abort after Commit or Abort does
// nothing.
func (f *File) Abort() {
	if f.ended {
		return
	}
	f.ended = true
	if f.f != nil {
		f.f.Close()
	}
	if f.tmp != nil {
		f.tmp.discard()
	}
}

// failed wraps err from Create or Commit in a message that names the
// output, the problem and, where there is one, the fix.
func (f *File) failed(what string, err error) error {
	var hint string
	switch {
	case errors.Is(err, syscall.EPIPE):
		hint = ": the reader of the FIFO closed it before the end"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		hint = ": free some space or write elsewhere"
	case errors.Is(err, os.ErrPermission):
		hint = ": give a path you may write"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		err, hint = errors.New("interrupted while waiting for a reader of the FIFO"), ""
	}
	msg := fmt.Sprintf("%s: %s (%v)%s", f.describe(), what, unwrapPath(err), hint)
	switch f.kind {
	case kindRegular:
		msg += "; the existing file is unchanged"
	case kindNew:
		msg += "; no file was created"
	}
	return errors.New(msg)
}

// commitFailed reports a failed rename into place.
func (f *File) commitFailed(err error) error {
	switch {
	case errors.Is(err, errRemovedBySignal):
		return fmt.Errorf("%s: not written: a signal ended the run and its temporary file was removed", f.describe())
	case f.opts.NoClobber && errors.Is(err, os.ErrExist):
		return fmt.Errorf("%s: not written: a file of that name appeared while wanlab was writing it, and wanlab does not replace a file it named itself; %s", f.describe(), f.clobberHint())
	}
	return f.failed("cannot move the finished file into place", err)
}

// describe names the output as the user gave it.
func (f *File) describe() string { return describe(f.opts, f.path) }

func (f *File) clobberHint() string { return clobberHint(f.opts) }

// unwrapPath drops the operation and path that *os.PathError and
// *os.LinkError add, since messages name the path already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
