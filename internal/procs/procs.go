// Package procs gives goroutines locked to threads that must run the
// moment they wake (the router's loops) processors of their own in the Go
// runtime, beside the GOMAXPROCS the rest of the program has.
//
// A goroutine runs Go code only while it holds one of the runtime's
// GOMAXPROCS processors (Ps). A loop that sleeps in ppoll(2) lets the
// runtime hand its P to other goroutines; when the loop wakes it must
// get a P back before it runs a line of Go, and if every P is then busy
// (traffic goroutines, the garbage collector's workers, a process being
// started) it waits in the runtime's queue until one of them blocks or is
// preempted, which takes up to the runtime's 10 ms preemption tick. The
// kernel's scheduling, which the loops' nice value and slice arrange, does
// not reach that wait. With a P per loop added to GOMAXPROCS there is
// usually one idle: the runtime then leaves a sleeping loop its P (it
// takes the P of a goroutine in a system call when no other is idle, or
// after 10 ms), and a loop that wakes finds one; the other goroutines
// would have to keep more Ps busy than there are CPUs to take them all.
package procs

import (
	"runtime"
	"sync"
)

var (
	mu sync.Mutex
	// held is how many Ps are reserved now, over every Reserve not yet
	// released; base is GOMAXPROCS as it was before the first of them.
	held, base int
)

// Reserve adds n processors to GOMAXPROCS until the returned function is
// called (once; later calls do nothing). Reservations add up: two
// routers in one process reserve their loops' Ps each. When the last is
// released, GOMAXPROCS returns to what it was before the first (the
// runtime then no longer follows changes of the CPUs or the cgroup's
// limit, which a run does not expect). Each change stops the world for a
// moment, so it is for starting and stopping things, not per packet.
func Reserve(n int) (release func()) {
	if n <= 0 {
		return func() {}
	}
	mu.Lock()
	if held == 0 {
		base = runtime.GOMAXPROCS(0)
	}
	held += n
	runtime.GOMAXPROCS(base + held)
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			held -= n
			if held > 0 {
				runtime.GOMAXPROCS(base + held)
				return
			}
			runtime.GOMAXPROCS(base)
		})
	}
}
