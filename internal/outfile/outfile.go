// Package outfile is the one way wanlab writes a file the user named: event
// logs, packet captures, results, reports. It writes to what the path is,
// and replaces only what can be replaced safely:
//
//   - "-" is the standard output; Commit flushes it.
//   - A character device (/dev/null, a terminal) or a FIFO is written
//     through, never replaced. Opening a FIFO for writing waits until a
//     reader opens it (open(2) in fifo(7)); Create gives up when its context
//     is done, so a command that catches SIGINT can still be interrupted.
//   - A symbolic link is followed, at the end of the path or in the middle,
//     unless someone other than the caller could have planted it where the
//     caller did not expect one: a link in a sticky world-writable
//     directory (/tmp) is followed only if it belongs to the caller or to
//     the directory's owner. That is the kernel's rule with
//     fs.protected_symlinks=1, applied whatever the sysctl says, since an
//     atomic replace resolves the link in userspace where the kernel
//     cannot apply it; a refused link is named, with its owner and the
//     fix. A followed link stays, and its target is written by these rules
//     (a dangling link creates its target, as a shell's > does): a user's
//     own link in their own directory works as with the shell.
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
// The path is looked up one name at a time, each in a descriptor of the
// directory before it, and the temporary is created (O_EXCL, O_NOFOLLOW)
// and renamed within the descriptor of the directory that was checked, so
// nothing swapped into the path between the check and the write is
// followed. A name wanlab derives itself (Options.NoClobber: a default
// results name, a graph beside it) is never written through or over
// anything: when the name is taken, by a file, a link or anything else,
// the output goes to name-2, name-3, ... (File.Path says which).
//
// The temporary is removed on every error, on Abort, and when SIGINT,
// SIGTERM or SIGHUP ends the process (see NotifyContext for commands that
// catch those signals themselves). A process killed with SIGKILL cannot
// remove its temporary: temporaries carry the writer's process identity in
// their name, and the next Create in the same directory removes those whose
// writer is gone.
//
// Paths in messages, and paths commands print, go through Printable, so a
// control character in a name cannot break or forge a line.
package outfile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

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
	// NoClobber marks a name wanlab chose itself (a default results file
	// name, a graph beside it): the user never asked for anything there to
	// be replaced or written through. When the name is taken (by a file,
	// a link, dangling or not, a device, a FIFO), the output goes to the
	// first free one of name-2, name-3, ... name-100, chosen again on
	// Commit if another process takes it meanwhile; File.Path says which.
	// Check and Create refuse it only when all of them are taken.
	NoClobber bool
	// ClobberHint tells the user, when every NoClobber name is taken, how
	// to choose another ("give another name with -o FILE"). Empty, the
	// message says to choose another name or remove the files.
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
	path string // as given, for messages
	opts Options
	kind kind
	// dir and name are where a regular file's content ends; dir stays open
	// until Commit or Abort. For a NoClobber name, base and n are the name
	// derived and the number of the one to try first (target's).
	dir     dirRef
	name    string
	base    string
	n       int
	f       *os.File // nil for stdout
	w       io.Writer
	buf     *bufio.Writer // nil when unbuffered
	tmp     *temporary    // the temporary of a replaced or new regular file
	ended   bool
	err     error  // the first write error, reported again by Commit
	written string // Path's answer
}

// temporary is a live temporary file; the registry holds every one so that
// a signal can remove them all.
type temporary struct {
	dirfd int    // the directory's descriptor, open while the temporary lives
	name  string // its name there
	// removed is set when a signal removed the file, so that a Commit still
	// running learns that its content is gone.
	removed atomic.Bool
}

// Check validates path as Create would, without creating or opening
// anything: it reports a directory, a missing or unwritable parent
// directory, an unwritable file, a block device or socket, a symbolic link
// loop, a link it does not follow, and (with NoClobber) a name whose
// numbered alternatives are all taken. Commands call it while parsing
// their options, before they create anything else. Every error it returns
// is about the path the user gave, and says what to change.
func Check(path string, o Options) error {
	t, err := resolve(path, o)
	if err == nil {
		t.close()
	}
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
	f := &File{path: path, opts: o, kind: t.kind, dir: dirRef{fd: -1}, name: t.name, base: t.base, n: t.n, written: path}
	if o.NoClobber {
		f.written = f.renamed(t.name)
	}
	switch t.kind {
	case kindStdout:
		f.w = o.Stdout
		if f.w == nil {
			f.w = os.Stdout
		}
	case kindDevice:
		f.f, err = openDevice(t)
		t.close()
		if err != nil {
			return nil, f.failed("cannot open it", err)
		}
	case kindFIFO:
		f.f, err = openFIFO(ctx, t)
		t.close()
		if err != nil {
			return nil, f.failed("cannot open it", err)
		}
	case kindNew, kindRegular:
		removeStale(t.dir)
		if f.f, f.tmp, err = createTemp(t); err != nil {
			t.close()
			return nil, f.failed("cannot create a temporary file beside it", err)
		}
		f.dir = t.dir
	}
	if f.f != nil {
		f.w = f.f
	}
	if !o.Unbuffered {
		f.buf = bufio.NewWriterSize(f.w, bufSize)
	}
	return f, nil
}

// Path is the path the output goes to, as the caller gave it: path itself,
// or for a NoClobber name taken by something else, the numbered name
// wanlab chose (run-2.json.gz). After Commit it is where the content is.
func (f *File) Path() string { return f.written }

// renamed is the path as given with its last name replaced by name.
func (f *File) renamed(name string) string {
	i := strings.LastIndexByte(f.path, '/')
	return f.path[:i+1] + name
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
// it and renames it over the path (with NoClobber, to the first of the
// path's numbered names that still does not exist). A failed Commit leaves the path as it was before Create,
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
	defer f.dir.close()
	if err != nil {
		f.tmp.discard()
		return f.failed("writing it failed", err)
	}
	if f.opts.NoClobber {
		name, err := f.tmp.installFree(f.base, f.n)
		if err != nil {
			return f.commitFailed(err)
		}
		f.written = f.renamed(name)
	} else if err := f.tmp.install(f.name); err != nil {
		return f.commitFailed(err)
	}
	// The rename is durable once the directory is synced; a failure here
	// loses nothing that a crash could not, so it is not reported.
	if fd, err := unix.Openat(f.dir.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		unix.Fsync(fd)
		unix.Close(fd)
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
		f.dir.close()
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
		return fmt.Errorf("%s: not written: it and the names after it up to %s were all taken by the time wanlab had written it, and wanlab does not replace a file it named itself: %s", f.describe(), Printable(numbered(f.base, maxNames)), f.clobberHint())
	}
	return f.failed("cannot move the finished file into place", err)
}

// describe names the output as the user gave it.
func (f *File) describe() string { return describe(f.opts, f.path) }

func (f *File) clobberHint() string { return clobberHint(f.opts) }

// Printable is path as wanlab prints it, in messages and in the lines that
// say what it wrote: unchanged when it is valid UTF-8 and every character
// prints (spaces and non-ASCII letters included), otherwise quoted as a Go
// string ("a\nb", "\xff.json"), so that a newline or a terminal escape in
// a name cannot break or forge a line. A path that starts with a double
// quote is quoted too, so that a quoted path is never ambiguous.
func Printable(path string) string {
	plain := utf8.ValidString(path) && !strings.HasPrefix(path, `"`) &&
		strings.IndexFunc(path, func(r rune) bool { return !strconv.IsPrint(r) }) < 0
	if plain {
		return path
	}
	return strconv.Quote(path)
}

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
