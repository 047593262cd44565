package experiment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LockName is the lock file in a results directory. Its leading dot keeps
// it out of the directory's contents as checkEmpty and the readers of runs
// see them.
const LockName = ".wanlab-lock"

// dirLock is a results directory held by this process.
type dirLock struct{ f *os.File }

// lockDir takes the results directory dir for this process, for the whole
// of what (e.g. "experiment run"), so that two processes never run or
// merge into one directory at once (each would run every case and
// overwrite the other's results). The lock is an open file description
// lock (F_OFD_SETLK) on dir/LockName: the kernel releases it when its
// holder dies, however it dies, so a killed run never leaves the
// directory locked. The holder writes its PID and what into the file, so
// that a second process can name it in its refusal, a *DirError.
func lockDir(dir, what string) (*dirLock, error) {
	path := filepath.Join(dir, LockName)
	// O_NOFOLLOW: a link planted under the lock's name is refused, not
	// followed; O_NONBLOCK: a FIFO planted there does not hang the open,
	// and is refused below.
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, &DirError{fmt.Sprintf("results directory %s: cannot open its lock %s: %v: give a directory wanlab can write in (-o DIR)", dir, LockName, err)}
	}
	f := os.NewFile(uintptr(fd), path)
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, &DirError{fmt.Sprintf("results directory %s: %s is not a regular file: remove it, or give another -o DIR", dir, path)}
	}
	lock := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lock); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, &DirError{fmt.Sprintf("results directory %s is in use: %s; wait for it to end (or stop it), or give another -o DIR", dir, holder(f))}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(fmt.Sprintf("%d %s\n", os.Getpid(), what)), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

// The holders' activities, as lockDir's callers name them.
const (
	lockRun   = "experiment run"
	lockMerge = "experiment merge"
)

// holder says who holds the lock file f, from what its holder wrote: its
// PID and, when it is one wanlab writes, its activity (the file's text is
// not repeated as it is: whoever can write in the directory can write it).
func holder(f *os.File) string {
	b := make([]byte, 64)
	n, _ := f.ReadAt(b, 0)
	pid, what, _ := strings.Cut(strings.TrimSpace(string(b[:n])), " ")
	if n, err := strconv.Atoi(pid); err != nil || n <= 0 {
		// The holder has not written its PID yet.
		return "another wanlab holds it"
	}
	who := "another wanlab"
	if what == lockRun || what == lockMerge {
		who = "wanlab " + what
	}
	return fmt.Sprintf("%s (pid %s) is writing into it", who, pid)
}

// release gives the directory up.
func (l *dirLock) release() {
	if l != nil {
		l.f.Close()
	}
}

// checkNotInUse refuses a directory whose lock another process holds,
// naming it, without creating a lock file where there is none: it is for
// a directory that is about to be refused for another reason (a merge
// into a directory that a run is filling), so that the user learns the
// real one.
func checkNotInUse(dir string) error {
	if who, held := lockHolder(dir); held {
		return &DirError{fmt.Sprintf("results directory %s is in use: %s; wait for it to end (or stop it), or give another -o DIR", dir, who)}
	}
	return nil
}

// lockHolder reports whether a process holds dir's lock, and who (as
// holder says), without creating a lock file where there is none. On a
// shared filesystem that forwards locks to its server (NFS, CephFS,
// Lustre with flock) a holder on another machine counts too.
func lockHolder(dir string) (who string, held bool) {
	path := filepath.Join(dir, LockName)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false // no lock file, or none wanlab could have made: not in use
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	lock := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lock); err != nil || lock.Type == unix.F_UNLCK {
		return "", false
	}
	return holder(f), true
}
