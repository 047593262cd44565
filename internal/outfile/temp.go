package outfile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
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
func removeStale(dir dirRef) {
	me := self()
	if me.ns == 0 {
		return
	}
	fd, err := unix.Openat(dir.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	d := os.NewFile(uintptr(fd), dir.where())
	ents, _ := d.ReadDir(-1)
	d.Close()
	for _, e := range ents {
		ns, pid, ok := parseTempName(e.Name())
		if !ok || ns != me.ns || pid == me.pid || !e.Type().IsRegular() || pid > 1<<22 {
			continue
		}
		// kill(pid, 0) tests existence; EPERM means it exists but is not
		// ours to signal.
		if err := unix.Kill(int(pid), 0); errors.Is(err, syscall.ESRCH) {
			unix.Unlinkat(dir.fd, e.Name(), 0)
		}
	}
}

// createTemp creates, in t's directory, the temporary that will become
// t.name, with the mode (and, as root, the owner) the result must have.
func createTemp(t target) (*os.File, *temporary, error) {
	// A new file is created 0644 so that the kernel applies the umask (and
	// a default ACL) as for any new file; a replacement starts private and
	// gets the old file's mode once its owner is set, since chown clears
	// the set-user-ID and set-group-ID bits.
	perm := os.FileMode(0o644)
	if t.kind == kindRegular {
		perm = 0o600
	}
	var (
		f   *os.File
		tmp *temporary
		err error
	)
	for range 100 {
		tmp = &temporary{dirfd: t.dir.fd, name: tempName(t.name)}
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
			f.Chown(int(t.st.Uid), int(t.st.Gid))
		}
		if err := unix.Fchmod(int(f.Fd()), t.st.Mode&0o7777); err != nil {
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

// install renames the temporary to name in its directory, replacing what
// is there (a link is replaced, not followed); the temporary is gone
// afterwards either way.
func (t *temporary) install(name string) error {
	return t.installing(func() error { return unix.Renameat(t.dirfd, t.name, t.dirfd, name) })
}

// installFree renames the temporary to the first of base's numbered names,
// from the nth on, that does not exist (a name wanlab chose never replaces
// anything), and returns that name; the temporary is gone afterwards
// either way.
func (t *temporary) installFree(base string, n int) (string, error) {
	var name string
	err := t.installing(func() error {
		for ; n <= maxNames; n++ {
			name = numbered(base, n)
			if err := renameNoReplace(t.dirfd, t.name, name); !errors.Is(err, os.ErrExist) {
				return err
			}
		}
		return os.ErrExist
	})
	return name, err
}

// installing runs rename under the registry's lock, unless a signal
// removed the temporary first, and removes the temporary if rename fails.
func (t *temporary) installing(rename func() error) error {
	registry.Lock()
	defer registry.Unlock()
	defer registry.forget(t)
	if t.removed.Load() {
		return errRemovedBySignal
	}
	err := rename()
	if err != nil {
		t.remove()
	}
	return err
}

// discard removes the temporary.
func (t *temporary) discard() {
	registry.Lock()
	defer registry.Unlock()
	if !t.removed.Load() {
		t.remove()
	}
	registry.forget(t)
}

// remove unlinks the temporary from its directory.
func (t *temporary) remove() { unix.Unlinkat(t.dirfd, t.name, 0) }

// renameNoReplace renames oldname to newname in the directory dirfd unless
// newname exists (renameat2 with RENAME_NOREPLACE; on a file system
// without it, link and unlink, which fail the same way). Neither follows a
// link at newname.
func renameNoReplace(dirfd int, oldname, newname string) error {
	err := unix.Renameat2(dirfd, oldname, dirfd, newname, unix.RENAME_NOREPLACE)
	if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOSYS) {
		return err
	}
	if err := unix.Linkat(dirfd, oldname, dirfd, newname, 0); err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, oldname, 0)
}
