// Package testlock is the machine-wide lock that tests building real
// namespaces hold, so that no two of them run at once, from any package or
// test binary. It depends on nothing of wanlab but rundir (which names its
// file), so that the tests of every package, netns included, can take it.
package testlock

import (
	"os"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"wanlab/internal/rundir"
)

// path is the file whose flock serialises root tests across the test
// binaries that `go test ./...` runs in parallel.
var path = rundir.TestLock()

var lock struct {
	sync.Mutex
	holders int
	f       *os.File
}

// Hold makes the test the only root test running on the machine until it
// ends. Within one process the lock is counted, so nested helpers and
// subtests may call it again.
func Hold(t testing.TB) {
	t.Helper()
	lock.Lock()
	defer lock.Unlock()
	if lock.holders == 0 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatalf("test lock: %v", err)
		}
		for {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
			if err != unix.EINTR {
				break
			}
		}
		if err != nil {
			f.Close()
			t.Fatalf("test lock: %v", err)
		}
		lock.f = f
	}
	lock.holders++
	t.Cleanup(func() {
		lock.Lock()
		defer lock.Unlock()
		if lock.holders--; lock.holders == 0 {
			lock.f.Close() // releases the flock
			lock.f = nil
		}
	})
}
