package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A path is walked one name at a time, each looked up in a descriptor of
// the directory before it, as the kernel's own lookup does, so that
// symbolic links are met one by one and judged by the rule the kernel
// applies with fs.protected_symlinks=1 (may_follow_link in fs/namei.c):
// a link is followed only if its directory is not both sticky and
// world-writable, or the link belongs to the caller, or to the
// directory's owner. Otherwise any user could plant, in /tmp, a link at a
// name a root wanlab is about to write and have it replace a system file;
// an atomic replace (a temporary renamed over the link's target) resolves
// the link in userspace, out of the kernel's reach, so wanlab must apply
// the rule itself whatever the sysctl says.

// maxLinks bounds how many symbolic links a walk follows, as the kernel's
// MAXSYMLINKS (40) bounds path lookup.
const maxLinks = 40

// pathMax is the longest path the kernel looks up (PATH_MAX, with its
// terminating zero).
const pathMax = 4096

// walk is the state of one path's lookup.
type walk struct {
	// subject names the output in messages: its label and the path as
	// given, and the link it turned out to be, once one is followed.
	subject string
	named   string // the label and the path as given: subject before any link
	// current is the path subject names, cleaned: the path as given, or
	// the target of the last link followed at its end.
	current string
	uid     uint32 // the caller's effective uid, which links are judged by
	links   int
}

func newWalk(subject, path string) *walk {
	return &walk{subject: subject, named: subject, current: filepath.Clean(path), uid: uint32(unix.Geteuid())}
}

// comp is one name of a path still to be looked up.
type comp struct {
	name string
	// hidden marks a name from the target of a link in the middle of a
	// path: messages show the path as the user wrote it (/tmp/d/x, not
	// /etc/x when d links to /etc), so hidden names do not extend it.
	hidden bool
}

// dirRef is a directory reached by a walk: an O_PATH descriptor, which
// looks names up without the right to read the directory, and its path
// as messages show it ("" for the current directory).
type dirRef struct {
	fd    int
	shown string
}

func (d dirRef) close() { unix.Close(d.fd) }

// where is the directory as a message names it.
func (d dirRef) where() string {
	if d.shown == "" {
		return "."
	}
	return d.shown
}

// join is the path of name in directory shown, as messages show it.
func join(shown, name string) string {
	if shown == "" {
		return name
	}
	return filepath.Join(shown, name)
}

// names splits path into its names, each marked hidden or not.
func names(path string, hidden bool) []comp {
	var cs []comp
	for _, n := range strings.Split(path, "/") {
		cs = append(cs, comp{name: n, hidden: hidden})
	}
	return cs
}

// isDirName reports whether the last name of a path names a directory
// whatever is there: "", as in "dir/", and "." and "..".
func isDirName(name string) bool { return name == "" || name == "." || name == ".." }

// openStart opens what a walk starts from: the root for an absolute path,
// the current directory for a relative one.
func openStart(path string) (dirRef, error) {
	start, shown := ".", ""
	if strings.HasPrefix(path, "/") {
		start, shown = "/", "/"
	}
	fd, err := unix.Open(start, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return dirRef{}, &dirFailure{dir: start, err: err}
	}
	return dirRef{fd, shown}, nil
}

// dirFailure is a directory of a path that could not be looked up (or
// created): its path as shown, and why.
type dirFailure struct {
	dir string
	err error
}

func (e *dirFailure) Error() string { return e.dir + ": " + e.err.Error() }
func (e *dirFailure) Unwrap() error { return e.err }

// dirs walks the names cs, all directories, from d, which it takes over,
// and returns the directory they lead to. With create, a missing
// directory is made with mode perm (less the umask), as mkdir -p does.
func (w *walk) dirs(d dirRef, cs []comp, create bool, perm os.FileMode) (dirRef, error) {
	made := 0 // directories made, bounded in case another process keeps removing them
	for len(cs) > 0 {
		c := cs[0]
		cs = cs[1:]
		shown := d.shown
		if !c.hidden {
			shown = join(d.shown, c.name)
		}
		if c.name == "" || c.name == "." {
			continue
		}
		if c.name == ".." {
			// ".." is never a link: the kernel steps to the parent.
			fd, err := unix.Openat(d.fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			d.close()
			if err != nil {
				return dirRef{}, &dirFailure{dir: shown, err: err}
			}
			d = dirRef{fd, shown}
			continue
		}
		var st unix.Stat_t
		err := unix.Fstatat(d.fd, c.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) && create && made < maxLinks {
			err = unix.Mkdirat(d.fd, c.name, uint32(perm.Perm()))
			if err == nil || errors.Is(err, unix.EEXIST) {
				// Made, by this walk or another process: look again.
				made++
				cs = append([]comp{c}, cs...)
				continue
			}
		}
		if err != nil {
			d.close()
			return dirRef{}, &dirFailure{dir: w.rest(shown, cs), err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			// O_NOFOLLOW: a link swapped in since the lookup is not
			// followed (the open fails), so what is opened is what was
			// judged.
			fd, err := unix.Openat(d.fd, c.name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			d.close()
			if err != nil {
				if errors.Is(err, unix.ELOOP) {
					err = unix.ENOTDIR
				}
				return dirRef{}, &dirFailure{dir: w.rest(shown, cs), err: err}
			}
			d = dirRef{fd, shown}
		case unix.S_IFLNK:
			target, err := w.follow(d, c.name, &st, join(d.shown, c.name))
			if err != nil {
				d.close()
				return dirRef{}, err
			}
			// The link's target takes its place; its names are hidden,
			// and the directory keeps the name the user wrote.
			cs = append(names(target, true), cs...)
			if strings.HasPrefix(target, "/") {
				fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				d.close()
				if err != nil {
					return dirRef{}, &dirFailure{dir: "/", err: err}
				}
				d.fd = fd
			}
			if !c.hidden {
				d.shown = shown
			}
		default:
			d.close()
			return dirRef{}, &dirFailure{dir: w.rest(shown, cs), err: unix.ENOTDIR}
		}
	}
	return d, nil
}

// rest is the directory path messages name when a walk fails at shown:
// shown with the names still to walk (the directory the user meant).
func (w *walk) rest(shown string, cs []comp) string {
	for _, c := range cs {
		if !c.hidden && c.name != "" && c.name != "." {
			shown = join(shown, c.name)
		}
	}
	return shown
}

// follow judges the link name in d, whose lstat is st and path as shown
// is shown, and returns its target, or the refusal.
func (w *walk) follow(d dirRef, name string, st *unix.Stat_t, shown string) (string, error) {
	var dst unix.Stat_t
	if err := unix.Fstat(d.fd, &dst); err != nil {
		return "", &dirFailure{dir: d.where(), err: err}
	}
	if !mayFollow(&dst, st, w.uid) {
		return "", w.refuse(shown, d, st)
	}
	if w.links++; w.links > maxLinks {
		return "", &dirFailure{dir: shown, err: unix.ELOOP}
	}
	buf := make([]byte, pathMax)
	n, err := unix.Readlinkat(d.fd, name, buf)
	switch {
	case err != nil:
		return "", &dirFailure{dir: shown, err: err}
	case n == len(buf):
		return "", &dirFailure{dir: shown, err: unix.ENAMETOOLONG}
	case n == 0:
		return "", &dirFailure{dir: shown, err: unix.ENOENT}
	}
	return string(buf[:n]), nil
}

// mayFollow is the kernel's rule for following a link with
// fs.protected_symlinks=1: the caller's own link, any link in a directory
// that is not both sticky and world-writable, and a link of the
// directory's owner.
func mayFollow(dir, link *unix.Stat_t, uid uint32) bool {
	const risky = unix.S_ISVTX | unix.S_IWOTH
	return link.Uid == uid || dir.Mode&risky != risky || dir.Uid == link.Uid
}

// refuse is the message for a link that mayFollow refused.
func (w *walk) refuse(shown string, d dirRef, st *unix.Stat_t) error {
	what := w.subject
	if filepath.Clean(shown) != w.current {
		what += ": " + Printable(shown)
	}
	dir := d.where()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	who := "wanlab does not follow as root"
	if w.uid != 0 {
		who = "wanlab, run by " + userName(w.uid) + ", does not follow"
	}
	return fmt.Errorf("%s is a symbolic link owned by %s in the sticky world-writable directory %s, which %s (as fs.protected_symlinks would not): remove it or give another path",
		what, userName(st.Uid), Printable(dir), who)
}

// userName is "uid N (name)", or "uid N" for a uid without a name.
func userName(uid uint32) string {
	s := "uid " + strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil && u.Username != "" {
		s += " (" + u.Username + ")"
	}
	return s
}

// MkdirAll is os.MkdirAll for a directory wanlab writes into (an
// experiment's results directory): it creates path and any missing
// parents with mode perm (less the umask), and follows a symbolic link on
// the way only by the rule of the package comment, as it does for the
// files it writes. An error names the directory that failed; a refused
// link is named with its owner and the fix.
func MkdirAll(path string, perm os.FileMode) error {
	if path == "" {
		return &fs.PathError{Op: "mkdir", Path: path, Err: unix.ENOENT}
	}
	if len(path) >= pathMax {
		return &fs.PathError{Op: "mkdir", Path: path, Err: unix.ENAMETOOLONG}
	}
	w := newWalk(Printable(path), path)
	d, err := openStart(path)
	if err == nil {
		d, err = w.dirs(d, names(path, false), true, perm)
	}
	var df *dirFailure
	if errors.As(err, &df) {
		return &fs.PathError{Op: "mkdir", Path: df.dir, Err: df.err}
	}
	if err != nil {
		return err
	}
	d.close()
	return nil
}
