package outfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// kind is what a path turned out to be, which decides how it is written.
type kind int

const (
	kindStdout  kind = iota // "-"
	kindNew                 // nothing there yet: created by rename
	kindRegular             // an existing regular file: replaced by rename
	kindDevice              // a character device: written through
	kindFIFO                // a FIFO: written through
)

// maxNames bounds the names tried for an output wanlab names itself: the
// name, then name-2 up to name-100.
const maxNames = 100

// target is a resolved output path.
type target struct {
	kind kind
	// dir holds name, what the output is written to (or, for a name wanlab
	// chose, the free name found); its descriptor is open, except for
	// stdout, and the caller closes it.
	dir  dirRef
	name string
	// shown is the resolved path as messages show it.
	shown string
	// st is an existing file's, device's or FIFO's: the replacement of a
	// regular file keeps its mode and owner, and a device or FIFO must
	// still be the same file once opened.
	st unix.Stat_t
	// base and n are, for a name wanlab chose (Options.NoClobber), the
	// name it derived and the number of the free one found (1 for base
	// itself); a name taken meanwhile makes Commit try n+1 and on.
	base string
	n    int
}

func (t *target) close() {
	if t.kind != kindStdout {
		t.dir.close()
	}
}

// resolve walks path, following symbolic links by the rule of the package
// comment, and decides how to write what it names, checking what can be
// checked without creating anything. Unless it returns an error or
// stdout, the target's directory is open and the caller closes it.
func resolve(path string, o Options) (target, error) {
	if path == "-" {
		return target{kind: kindStdout}, nil
	}
	w := newWalk(describe(o, path), path)
	switch {
	case path == "":
		return target{}, fmt.Errorf("%s: the file name is empty: give a file name, or - for the standard output", w.subject)
	case len(path) >= pathMax:
		return target{}, lookupError(w.subject, unix.ENAMETOOLONG)
	}
	d, err := openStart(path)
	if err != nil {
		return target{}, w.failed(err)
	}
	cs := names(path, false)
	if d, err = w.dirs(d, cs[:len(cs)-1], false, 0); err != nil {
		return target{}, w.failed(err)
	}
	name := cs[len(cs)-1].name
	if o.NoClobber {
		return w.freeName(d, name, o)
	}
	for {
		shown := join(d.shown, name)
		if isDirName(name) {
			// "dir/", "dir/." or "dir/..": a directory, if anything.
			d, err := w.dirs(d, []comp{{name: name}}, false, 0)
			if err != nil {
				return target{}, w.failed(err)
			}
			d.close()
			return target{}, w.isDir(shown, o)
		}
		var st unix.Stat_t
		err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			if err := w.checkDir(d); err != nil {
				d.close()
				return target{}, err
			}
			return target{kind: kindNew, dir: d, name: name, shown: shown}, nil
		}
		if err != nil {
			d.close()
			return target{}, lookupError(w.subject, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			dest, err := w.follow(d, name, &st, shown)
			if err != nil {
				d.close()
				return target{}, w.failed(err)
			}
			// The link stays; what it points to is written by these rules
			// (a dangling link creates its target, as a shell's > does).
			if strings.HasPrefix(dest, "/") {
				d.close()
				if d, err = openStart(dest); err != nil {
					return target{}, w.failed(err)
				}
			}
			w.current = filepath.Clean(join(d.shown, dest))
			w.subject = fmt.Sprintf("%s (a link to %s)", w.named, Printable(w.current))
			cs := names(dest, false)
			if d, err = w.dirs(d, cs[:len(cs)-1], false, 0); err != nil {
				return target{}, w.failed(err)
			}
			name = cs[len(cs)-1].name
			continue
		case unix.S_IFDIR:
			d.close()
			return target{}, w.isDir(shown, o)
		case unix.S_IFREG:
			if err := unix.Faccessat(d.fd, name, unix.W_OK, 0); err != nil {
				d.close()
				return target{}, fmt.Errorf("%s is not writable (%v): make it writable or give another path", w.subject, err)
			}
			if err := w.checkDir(d); err != nil {
				d.close()
				return target{}, err
			}
			return target{kind: kindRegular, dir: d, name: name, shown: shown, st: st}, nil
		case unix.S_IFCHR, unix.S_IFIFO:
			if err := unix.Faccessat(d.fd, name, unix.W_OK, 0); err != nil {
				d.close()
				return target{}, fmt.Errorf("%s is not writable (%v): give another path", w.subject, err)
			}
			k := kindDevice
			if st.Mode&unix.S_IFMT == unix.S_IFIFO {
				k = kindFIFO
			}
			return target{kind: k, dir: d, name: name, shown: shown, st: st}, nil
		default:
			d.close()
			what := "a socket"
			if st.Mode&unix.S_IFMT == unix.S_IFBLK {
				what = "a block device"
			}
			return target{}, fmt.Errorf("%s is %s; wanlab writes to a regular file, a character device such as /dev/null, a FIFO or - (the standard output): give a file name", w.subject, what)
		}
	}
}

// freeName resolves the last name of a path wanlab chose itself: the
// first of name, name-2, ... name-100 that names nothing at all. A name
// that is taken, by a file, a device, a FIFO or a link, dangling or not,
// is passed over: wanlab never writes through or over it.
func (w *walk) freeName(d dirRef, name string, o Options) (target, error) {
	if isDirName(name) {
		d.close()
		return target{}, w.isDir(join(d.shown, name), o)
	}
	if err := w.checkDir(d); err != nil {
		d.close()
		return target{}, err
	}
	for n := 1; n <= maxNames; n++ {
		var st unix.Stat_t
		err := unix.Fstatat(d.fd, numbered(name, n), &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			return target{kind: kindNew, dir: d, name: numbered(name, n), shown: join(d.shown, numbered(name, n)), base: name, n: n}, nil
		}
		if err != nil {
			d.close()
			return target{}, lookupError(w.subject, err)
		}
	}
	d.close()
	return target{}, w.allTaken(name, o)
}

// allTaken is the error when every name freeName may use is taken.
func (w *walk) allTaken(name string, o Options) error {
	return fmt.Errorf("%s: it and the names after it up to %s are all taken, and wanlab does not replace a file it named itself: %s",
		w.subject, Printable(numbered(name, maxNames)), clobberHint(o))
}

// numbered is the nth name for an output wanlab names itself: name for
// n = 1, otherwise name with -n before its extension (a .gz and the
// extension before it count as one): run.json.gz, run-2.json.gz;
// run.all_scaled.png, run.all_scaled-2.png.
func numbered(name string, n int) string {
	if n <= 1 {
		return name
	}
	ext := extension(name)
	if ext == ".gz" {
		ext = extension(strings.TrimSuffix(name, ext)) + ext
	}
	if ext == name {
		ext = ""
	}
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(name, ext), n, ext)
}

// extension is name's last extension, "" for none or a hidden file's
// whole name.
func extension(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return ""
	}
	return name[i:]
}

// isDir is the message for an output that is a directory.
func (w *walk) isDir(shown string, o Options) error {
	ex := "give a file name inside it"
	if o.Suggest != "" {
		ex = "give a file name, e.g. " + Printable(join(shown, o.Suggest))
	}
	return fmt.Errorf("%s is a directory: %s", w.subject, ex)
}

// failed words the errors of walking a path's directories.
func (w *walk) failed(err error) error {
	var df *dirFailure
	if !errors.As(err, &df) {
		return err // a refused link, worded already
	}
	if errors.Is(df.err, unix.ENOENT) {
		dir := Printable(df.dir)
		return fmt.Errorf("%s: directory %s does not exist: create it first (mkdir -p %s) or give a path in an existing directory", w.subject, dir, dir)
	}
	return lookupError(w.subject, df.err)
}

// checkDir checks that a file can be created in d, where the output or
// its temporary will be.
func (w *walk) checkDir(d dirRef) error {
	if err := unix.Faccessat(d.fd, ".", unix.W_OK|unix.X_OK, 0); err != nil {
		if errors.Is(err, syscall.EROFS) {
			return fmt.Errorf("%s: %s is on a read-only file system: write elsewhere", w.subject, Printable(d.where()))
		}
		return fmt.Errorf("%s: cannot create files in %s (%v): give a path in a directory you may write", w.subject, Printable(d.where()), err)
	}
	return nil
}

// lookupError words the errors of looking a path up.
func lookupError(subject string, err error) error {
	err = unwrapPath(err)
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s: part of the path is a file, not a directory: give a path in an existing directory", subject)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s: too many levels of symbolic links (a loop?): give the file's real path", subject)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("%s: a name in it is longer than 255 bytes, or the whole path longer than 4095: give a shorter one", subject)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%s: cannot look it up (%v): give a path you may write", subject, err)
	}
	return fmt.Errorf("%s: %v", subject, err)
}

// describe names an output as the user gave it: its label and path.
func describe(o Options, path string) string {
	switch {
	case o.Label == "":
		return Printable(path)
	case path == "":
		return o.Label
	}
	return o.Label + " " + Printable(path)
}

func clobberHint(o Options) string {
	if o.ClobberHint != "" {
		return o.ClobberHint
	}
	return "choose another name, or remove the files first"
}
