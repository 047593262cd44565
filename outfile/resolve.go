package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// maxLinks bounds how many symbolic links resolve follows, as the kernel's
// MAXSYMLINKS (40) bounds path lookup.
const maxLinks = 40

// target is a resolved output path.
type target struct {
	kind kind
	path string // the path after following symbolic links
	// mode, uid and gid are an existing regular file's, which its
	// replacement keeps.
	mode     uint32
	uid, gid uint32
}

// resolve follows path's symbolic links and decides how to write what it
// names, checking what can be checked without creating anything.
func resolve(path string, o Options) (target, error) {
	if path == "-" {
		return target{kind: kindStdout}, nil
	}
	subject := describe(o, path)
	if path == "" {
		return target{}, fmt.Errorf("%s: the file name is empty: give a file name, or - for the standard output", subject)
	}
	p := path
	for links := 0; ; links++ {
		if p != path {
			subject = fmt.Sprintf("%s (a link to %s)", describe(o, path), p)
		}
		var st unix.Stat_t
		err := unix.Lstat(p, &st)
		if errors.Is(err, fs.ErrNotExist) {
			if err := checkDir(subject, filepath.Dir(p)); err != nil {
				return target{}, err
			}
			return target{kind: kindNew, path: p}, nil
		}
		if err != nil {
			return target{}, lookupError(subject, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			if links == maxLinks {
				return target{}, fmt.Errorf("%s: too many levels of symbolic links (a loop?): give the file's real path", describe(o, path))
			}
			dest, err := os.Readlink(p)
			if err != nil {
				return target{}, lookupError(subject, err)
			}
			if !filepath.IsAbs(dest) {
				dest = filepath.Join(filepath.Dir(p), dest)
			}
			p = dest
			continue
		case unix.S_IFDIR:
			ex := "give a file name inside it"
			if o.Suggest != "" {
				ex = "give a file name, e.g. " + filepath.Join(p, o.Suggest)
			}
			return target{}, fmt.Errorf("%s is a directory: %s", subject, ex)
		case unix.S_IFREG:
			if o.NoClobber {
				return target{}, fmt.Errorf("%s already exists, and wanlab does not replace a file it named itself: %s", subject, clobberHint(o))
			}
			if err := unix.Access(p, unix.W_OK); err != nil {
				return target{}, fmt.Errorf("%s is not writable (%v): make it writable or give another path", subject, err)
			}
			if err := checkDir(subject, filepath.Dir(p)); err != nil {
				return target{}, err
			}
			return target{kind: kindRegular, path: p, mode: st.Mode & 0o7777, uid: st.Uid, gid: st.Gid}, nil
		case unix.S_IFCHR, unix.S_IFIFO:
			if err := unix.Access(p, unix.W_OK); err != nil {
				return target{}, fmt.Errorf("%s is not writable (%v): give another path", subject, err)
			}
			k := kindDevice
			if st.Mode&unix.S_IFMT == unix.S_IFIFO {
				k = kindFIFO
			}
			return target{kind: k, path: p}, nil
		default:
			what := "a socket"
			if st.Mode&unix.S_IFMT == unix.S_IFBLK {
				what = "a block device"
			}
			return target{}, fmt.Errorf("%s is %s; wanlab writes to a regular file, a character device such as /dev/null, a FIFO or - (the standard output): give a file name", subject, what)
		}
	}
}

// checkDir checks that a file can be created in dir, where the output or
// its temporary will be.
func checkDir(subject, dir string) error {
	var st unix.Stat_t
	err := unix.Stat(dir, &st)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: directory %s does not exist: create it first (mkdir -p %s) or give a path in an existing directory", subject, dir, dir)
	case err != nil:
		return lookupError(subject, err)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s: %s is not a directory: give a path in an existing directory", subject, dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		if errors.Is(err, syscall.EROFS) {
			return fmt.Errorf("%s: %s is on a read-only file system: write elsewhere", subject, dir)
		}
		return fmt.Errorf("%s: cannot create files in %s (%v): give a path in a directory you may write", subject, dir, err)
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
		return path
	case path == "":
		return o.Label
	}
	return o.Label + " " + path
}

func clobberHint(o Options) string {
	if o.ClobberHint != "" {
		return o.ClobberHint
	}
	return "choose another name, or remove the file first"
}
