package outfile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A temporary's name is
//
//	.BASE.wanlab-tmp.PIDNS.PID.RANDOM
//
// hidden (a leading dot), beside the file it will replace, and naming the
// process that writes it: PIDNS is the inode of its pid namespace
// (/proc/self/ns/pid), so that a process in another container with the
// same pid number is never taken for it, and PID its process id. A later
// Create in the same directory removes the temporaries of its own pid
// namespace whose process no longer exists.
const tempMarker = ".wanlab-tmp."

// self is this process's identity in temporaries' names.
var self = sync.OnceValue(func() (id struct{ ns, pid uint64 }) {
	id.pid = uint64(os.Getpid())
	// The link reads "pid:[4026531836]"; without it (no /proc), ns stays 0
	// and no other process's temporary is ever removed.
	if l, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		l = strings.TrimSuffix(strings.TrimPrefix(l, "pid:["), "]")
		id.ns, _ = strconv.ParseUint(l, 10, 64)
	}
	return id
})

// tempName returns a fresh temporary name for a file named base.
func tempName(base string) string {
	id := self()
	suffix := fmt.Sprintf("%s%d.%d.%08x", tempMarker, id.ns, id.pid, rand.Uint32())
	// A name may have 255 bytes (NAME_MAX); a long base is cut, which only
	// makes the temporary's name less telling.
	if room := 255 - 1 - len(suffix); len(base) > room {
		base = base[:room]
	}
	return "." + base + suffix
}

// parseTempName returns the pid namespace and pid in a temporary's name.
func parseTempName(name string) (ns, pid uint64, ok bool) {
	i := strings.LastIndex(name, tempMarker)
	if !strings.HasPrefix(name, ".") || i < 1 {
		return 0, 0, false
	}
	f := strings.Split(name[i+len(tempMarker):], ".")
	if len(f) != 3 || len(f[2]) != 8 {
		return 0, 0, false
	}
	ns, err1 := strconv.ParseUint(f[0], 10, 64)
	pid, err2 := strconv.ParseUint(f[1], 10, 64)
	_, err3 := strconv.ParseUint(f[2], 16, 32)
	return ns, pid, err1 == nil && err2 == nil && err3 == nil && pid > 0
}

// removeStale removes the temporaries in dir that processes of this pid
// namespace left when they were killed. Errors are ignored: a temporary
// that cannot be removed is in the way of nothing.
func removeStale(dir string) {
	me := self()
	if me.ns == 0 {
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		ns, pid, ok := parseTempName(e.Name())
		if !ok || ns != me.ns || pid == me.pid || !e.Type().IsRegular() || pid > 1<<22 {
			continue
		}
		// kill(pid, 0) tests existence; EPERM means it exists but is not
		// ours to signal.
		if err := unix.Kill(int(pid), 0); errors.Is(err, syscall.ESRCH) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// createTemp creates the temporary that will replace t.path, with the mode
// (and, as root, the owner) the result must have.
func createTemp(t target) (*os.File, *temporary, error) {
	// A new file is created 0644 so that the kernel applies the umask (and
	// a default ACL) as for any new file; a replacement starts private and
	// gets the old file's mode once its owner is set, since chown clears
	// the set-user-ID and set-group-ID bits.
	perm := os.FileMode(0o644)
	if t.kind == kindRegular {
		perm = 0o600
	}
	dir := filepath.Dir(t.path)
	var (
		f   *os.File
		tmp *temporary
		err error
	)
	for range 100 {
		tmp = &temporary{path: filepath.Join(dir, tempName(filepath.Base(t.path)))}
		f, err = registry.create(tmp, perm)
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if t.kind == kindRegular {
		if os.Geteuid() == 0 {
			// Best effort: some file systems (vfat, NFS with root
			// squashing) refuse chown even to root.
			f.Chown(int(t.uid), int(t.gid))
		}
		if err := unix.Fchmod(int(f.Fd()), t.mode); err != nil {
			f.Close()
			tmp.discard()
			return nil, nil, err
		}
	}
	return f, tmp, nil
}

// errRemovedBySignal is install's error when a signal removed the
// temporary first.
var errRemovedBySignal = errors.New("outfile: temporary removed by a signal")

// install renames the temporary over final, or, with noClobber, only if
// final does not exist; either way the temporary is gone afterwards.
func (t *temporary) install(final string, noClobber bool) error {
	registry.Lock()
	defer registry.Unlock()
	defer registry.forget(t)
	if t.removed.Load() {
		return errRemovedBySignal
	}
	var err error
	if noClobber {
		err = renameNoReplace(t.path, final)
	} else {
		err = os.Rename(t.path, final)
	}
	if err != nil {
		os.Remove(t.path)
	}
	return err
}

// discard removes the temporary.
func (t *temporary) discard() {
	registry.Lock()
	defer registry.Unlock()
	if !t.removed.Load() {
		os.Remove(t.path)
	}
	registry.forget(t)
}

// renameNoReplace renames oldpath to newpath unless newpath exists
// (renameat2 with RENAME_NOREPLACE; on a file system without it, link and
// unlink, which fail the same way).
func renameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOSYS) {
		return err
	}
	if err := os.Link(oldpath, newpath); err != nil {
		return err
	}
	return os.Remove(oldpath)
}
