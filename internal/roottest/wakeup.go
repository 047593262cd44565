package roottest

import (
	"encoding/binary"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// IdleWakeup measures this machine's cost of waking an idle thread: the
// median time from one thread's write to a pipe until another, asleep in
// ppoll as the router's loops sleep between packets, has read it, after a
// pause long enough for the CPUs to go idle. On bare metal it is tens of
// microseconds; in a virtual machine whose idle vCPUs halt it can be
// 0.1-0.3 ms. A sparse flow (a ping every 200 ms) pays it once on entering
// the router, outside the router's own lateness figure, which starts when
// the packet is read; tests of absolute one-way delays add it to their
// tolerance, as a baseline measured in the same run.
func IdleWakeup(t testing.TB) time.Duration {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatalf("pipe: %v", err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	const samples = 31
	got := make(chan time.Duration, samples)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var b [8]byte
		fds := []unix.PollFd{{Fd: int32(p[0]), Events: unix.POLLIN}}
		for i := 0; i < samples; i++ {
			if _, err := unix.Ppoll(fds, nil, nil); err != nil && err != unix.EINTR {
				close(got)
				return
			}
			if n, err := unix.Read(p[0], b[:]); err != nil || n != 8 {
				if err == unix.EINTR {
					i--
					continue
				}
				close(got)
				return
			}
			got <- time.Duration(monotonic() - int64(binary.LittleEndian.Uint64(b[:])))
		}
	}()
	var ds []time.Duration
	var b [8]byte
	for i := 0; i < samples; i++ {
		time.Sleep(20 * time.Millisecond)
		binary.LittleEndian.PutUint64(b[:], uint64(monotonic()))
		if _, err := unix.Write(p[1], b[:]); err != nil {
			t.Fatalf("pipe write: %v", err)
		}
		d, ok := <-got
		if !ok {
			t.Fatalf("IdleWakeup: the reading thread failed")
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func monotonic() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
