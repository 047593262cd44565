package rootless

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"wanlab/internal/rundir"
)

// UserDir returns the user's private directory, creating it: wanlab under
// $XDG_RUNTIME_DIR, or /tmp/wanlab-UID. It refuses one that is a symbolic
// link, another user's, or open to others, since testbeds' sockets and
// state live there.
func UserDir() (string, error) {
	uid := os.Geteuid()
	dir := filepath.Join(os.TempDir(), "wanlab-"+strconv.Itoa(uid))
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); xdg != "" {
		var st unix.Stat_t
		if unix.Stat(xdg, &st) == nil && int(st.Uid) == uid && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			dir = filepath.Join(xdg, "wanlab")
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("rootless: create %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return "", fmt.Errorf("rootless: %w", err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return "", fmt.Errorf("rootless: %s is not a directory (a link or a file someone else made?): remove it, or set XDG_RUNTIME_DIR to a directory of yours", dir)
	case int(st.Uid) != uid:
		return "", fmt.Errorf("rootless: %s belongs to uid %d, not to you (uid %d): remove it, or set XDG_RUNTIME_DIR to a directory of yours", dir, st.Uid, uid)
	case st.Mode&0o077 != 0:
		return "", fmt.Errorf("rootless: %s is open to other users (mode %#o): chmod 700 it", dir, st.Mode&0o777)
	}
	return dir, nil
}

// IsKeeper reports whether this process was started as the keeper; main
// then runs Keeper and nothing else.
func IsKeeper() bool { return os.Getenv(keeperEnv) == "1" }

// idleChecks is how many checks in a row, a second apart, must find the
// namespace unused before the keeper ends.
const idleChecks = 2

// Keeper holds the user's namespace: it mounts the private tmpfs of the
// namespaces' bind mounts, says it is ready on descriptor 3, and then runs
// until the namespace is unused: no command holds the lock that Enter
// passes on, and no other process is in the namespace. It returns the exit
// status.
func Keeper() int {
	dir := os.Getenv(rundir.Env)
	if dir == "" {
		fmt.Fprintln(os.Stderr, "rootless keeper: no directory")
		return 1
	}
	nsdir := rundir.Netns()
	if err := os.MkdirAll(nsdir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "rootless keeper:", err)
		return 1
	}
	// Bind mounts of namespaces made here stay in this mount namespace;
	// the tmpfs keeps even their mount points off the disk.
	if err := unix.Mount("wanlab-netns", nsdir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755"); err != nil {
		fmt.Fprintln(os.Stderr, "rootless keeper: mount a tmpfs on", nsdir+":", err)
		return 1
	}
	// The namespace's loopback, up as the machine's is.
	if lo, err := netlink.LinkByName("lo"); err == nil {
		netlink.LinkSetUp(lo)
	}
	hold, err := os.OpenFile(filepath.Join(dir, keeperLock), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rootless keeper:", err)
		return 1
	}
	self, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rootless keeper:", err)
		return 1
	}
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE)
	ready := os.NewFile(3, "ready")
	ready.Write([]byte{1})
	ready.Close()
	idle := 0
	for range time.Tick(time.Second) {
		// A command holding the lock, or another process in the
		// namespace (a zombie holds no namespace and does not count),
		// keeps it in use.
		if unix.Flock(int(hold.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil || inUse(self) {
			unix.Flock(int(hold.Fd()), unix.LOCK_UN)
			idle = 0
			continue
		}
		if idle++; idle < idleChecks {
			unix.Flock(int(hold.Fd()), unix.LOCK_UN)
			continue
		}
		// Still holding the lock: a command that wants the namespace
		// now waits until this process has gone, then finds the record
		// gone and starts a new keeper.
		os.Remove(filepath.Join(dir, keeperFile))
		return 0
	}
	return 0
}

// inUse reports whether a process other than the keeper is in the user
// namespace ns.
func inUse(ns string) bool {
	_, ok := memberOf(ns, os.Getpid())
	return ok
}
