package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"wanlab/internal/rundir"
)

// runDir is where named namespaces are bind-mounted, as `ip netns` does, so
// that `ip netns exec NAME ...` works on wanlab's namespaces (the user's
// private directory instead when rootless: see rundir).
var runDir = rundir.Netns()

// threadNS is the current thread's network namespace. /proc/self would name
// the thread-group leader, which is in another namespace while Do runs.
const threadNS = "/proc/thread-self/ns/net"

// setNS moves the calling thread into the network namespace open at fd. It is
// a variable so that tests can make restoring fail.
var setNS = func(fd int) error { return unix.Setns(fd, unix.CLONE_NEWNET) }

// Handle is an open named network namespace. It holds a file descriptor of
// the namespace and a netlink handle whose sockets live inside it, so its
// methods work from any goroutine. A Handle keeps the namespace alive while
// open, even after Delete; Close releases it.
type Handle struct {
	name string
	fd   int
	nl   *netlink.Handle
}

// Name returns the namespace's name, as `ip netns list` shows it.
func (h *Handle) Name() string { return h.name }

// Path returns the namespace's bind mount, /run/netns/NAME.
func (h *Handle) Path() string { return filepath.Join(runDir, h.name) }

// Netlink returns a netlink handle bound to the namespace. It is safe for
// concurrent use and stays valid until Close.
func (h *Handle) Netlink() *netlink.Handle { return h.nl }

// Close releases the handle. It does not delete the namespace.
func (h *Handle) Close() error {
	if h.fd < 0 {
		return nil
	}
	h.nl.Close()
	err := unix.Close(h.fd)
	h.fd = -1
	return err
}

// Do runs f on an OS thread that is inside ns, and returns f's error. A
// panic in f is re-raised in the caller after the thread has left ns. The
// thread is handed back to the runtime only once it has returned to its
// original namespace; if that fails, Do reports the error and the thread is
// discarded (see the package documentation). f must not unlock its thread.
func Do(ns *Handle, f func() error) error {
	if ns == nil || ns.fd < 0 {
		return errors.New("netns: Do on a closed or nil Handle")
	}
	return onLockedThread(func() error {
		if err := setNS(ns.fd); err != nil {
			return fmt.Errorf("netns: enter %s: %w", ns.name, err)
		}
		return nil
	}, f, ns.name)
}

type panicked struct{ v any }

// onLockedThread runs enter and then f on a fresh goroutine locked to its
// thread, and moves the thread back to its original namespace afterwards.
func onLockedThread(enter, f func() error, what string) error {
	type result struct {
		err    error
		p      *panicked
		goexit bool
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open(threadNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("netns: open own namespace: %w", err)}
			return
		}
		defer unix.Close(orig)
		if err := enter(); err != nil {
			// A failed setns or unshare leaves the thread where it was;
			// check that before trusting it again.
			if same, serr := sameNamespace(orig); serr != nil || !same {
				done <- result{err: err}
				return
			}
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		// The deferred restore also runs if f ends its goroutine with
		// runtime.Goexit (t.FailNow, for one), which recover cannot stop.
		r := result{goexit: true}
		defer func() {
			if err := setNS(orig); err != nil {
				// Stay locked: the goroutine exits and the runtime
				// kills the thread, which is still in the other
				// namespace.
				r.err = errors.Join(r.err, fmt.Errorf("netns: leave %s: %w (thread discarded)", what, err))
				done <- r
				return
			}
			runtime.UnlockOSThread()
			done <- r
		}()
		func() {
			defer func() {
				if v := recover(); v != nil {
					r.p = &panicked{v}
				}
			}()
			r.err = f()
		}()
		r.goexit = false
	}()
	r := <-done
	if r.p != nil {
		panic(r.p.v)
	}
	if r.goexit {
		return errors.Join(r.err, fmt.Errorf("netns: the function run in %s called runtime.Goexit (t.FailNow?) on Do's goroutine", what))
	}
	return r.err
}

// sameNamespace reports whether the calling thread is in the namespace open
// at fd.
func sameNamespace(fd int) (bool, error) {
	var want, got unix.Stat_t
	if err := unix.Fstat(fd, &want); err != nil {
		return false, err
	}
	if err := unix.Stat(threadNS, &got); err != nil {
		return false, err
	}
	return want.Dev == got.Dev && want.Ino == got.Ino, nil
}

// Create makes a new named network namespace and opens it. The namespace is
// bind-mounted at /run/netns/NAME exactly as `ip netns add` does, so the
// usual tools see it. Create fails if the name is taken.
func Create(name string) (*Handle, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if err := prepareRunDir(); err != nil {
		return nil, err
	}
	path := filepath.Join(runDir, name)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("netns: namespace %s already exists; remove it with `ip netns del %s` or wanlab down", name, name)
		}
		return nil, fmt.Errorf("netns: create %s: %w", path, err)
	}
	unix.Close(fd)
	err = onLockedThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("netns: unshare: %w", err)
		}
		return nil
	}, func() error {
		if err := unix.Mount(threadNS, path, "none", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("netns: bind-mount %s: %w", path, err)
		}
		return nil
	}, name)
	if err != nil {
		unix.Unmount(path, unix.MNT_DETACH)
		os.Remove(path)
		return nil, err
	}
	h, err := Open(name)
	if err != nil {
		Delete(name)
		return nil, err
	}
	return h, nil
}

// prepareRunDir makes /run/netns a shared mount point, as iproute2 does, so
// that namespaces mounted under it propagate to other mount namespaces (for
// instance those of `ip netns exec`).
func prepareRunDir() error {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	err := unix.Mount("", runDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("netns: make %s shared: %w", runDir, err)
	}
	// EINVAL: not a mount point yet. Bind it onto itself, then retry.
	if err := unix.Mount(runDir, runDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("netns: bind-mount %s: %w", runDir, err)
	}
	if err := unix.Mount("", runDir, "none", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("netns: make %s shared: %w", runDir, err)
	}
	return nil
}

// Open opens the existing named namespace name.
func Open(name string) (*Handle, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	path := filepath.Join(runDir, name)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("netns: open %s: %w", path, err)
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil || st.Type != unix.NSFS_MAGIC {
		unix.Close(fd)
		return nil, fmt.Errorf("netns: %s is not a mounted namespace", path)
	}
	h := &Handle{name: name, fd: fd}
	err = Do(h, func() error {
		// Created on this thread, the handle's sockets belong to the
		// namespace for good.
		nl, err := netlink.NewHandle()
		h.nl = nl
		return err
	})
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netns: netlink in %s: %w", name, err)
	}
	return h, nil
}

// Delete removes the named namespace name: it unmounts and removes
// /run/netns/NAME. The namespace itself disappears once no process, open
// Handle or socket refers to it any more. Deleting a namespace that does not
// exist is not an error.
func Delete(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	path := filepath.Join(runDir, name)
	err := unix.Unmount(path, unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("netns: unmount %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netns: %w", err)
	}
	return nil
}

// Exists reports whether the named namespace name is mounted.
func Exists(name string) bool {
	var st unix.Statfs_t
	return unix.Statfs(filepath.Join(runDir, name), &st) == nil && st.Type == unix.NSFS_MAGIC
}

// List returns the names of the mounted namespaces whose names start with
// Prefix, sorted.
func List() ([]string, error) {
	entries, err := os.ReadDir(runDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), Prefix) && Exists(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}
