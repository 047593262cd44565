package lab

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLogInUse is wrapped by ClaimLog's error when another run holds the
// log: a testbed of that name is being started in the background, or runs
// there.
var ErrLogInUse = errors.New("log in use")

// claimWait is how long ClaimLog retries a held lock before it gives up.
// A run that owns the log holds it for its whole life; anything else holds
// it for a moment.
const claimWait = 200 * time.Millisecond

// ClaimLog opens the log of a detached testbed name (LogPath), creating it,
// and locks it for the caller's run. The lock is an open file description
// lock (F_OFD_SETLK) on the returned file: it lasts while that file, or a
// copy of it such as a child's standard output, stays open, and the kernel
// releases it when the last holder dies. The log is emptied only once the
// lock is held, so a second run of the same name fails here, with an
// error wrapping ErrLogInUse, instead of wiping the log of the run that
// holds it.
func ClaimLog(name string) (*os.File, error) {
	if err := CheckName(name); err != nil {
		return nil, bad(err)
	}
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return nil, err
	}
	path := LogPath(name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	lock := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	deadline := time.Now().Add(claimWait)
	for {
		err = unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lock)
		if err == nil || !(errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("testbed %s is being started or runs in the background (another wanlab up holds its log %s): %w", name, path, ErrLogInUse)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// logInUse reports whether a run holds the lock ClaimLog takes on path. It
// only asks (F_OFD_GETLK), so it never stands in a claim's way.
func logInUse(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	lock := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lock); err != nil {
		return false
	}
	return lock.Type != unix.F_UNLCK
}

// removeLog removes the log of testbed name unless a run holds it.
func removeLog(name string) {
	if !logInUse(LogPath(name)) {
		os.Remove(LogPath(name))
	}
}
