package main

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// A probe measures what the machine gives a sleeping thread, as cyclictest
// does: a thread with a timer slack of 1 ns (as the router's loops have)
// sleeps for a fixed interval again and again, alternately in
// clock_nanosleep and in ppoll, and records how late each wake-up is. Run
// beside the router under load, it gives the floor below which no release
// lateness can go on this machine without spinning.

// probeInterval is how long each probe sleep asks for.
const probeInterval = 500 * time.Microsecond

// probeResult holds the wake-up delays of one probe thread, in ns.
type probeResult struct {
	policy       string
	sleep, ppoll []int64
	err          error
}

// probe runs one probe thread until stop closes; prio > 0 runs it under
// SCHED_FIFO at that priority.
func probe(prio int, stop <-chan struct{}, out chan<- probeResult) {
	runtime.LockOSThread() // never unlocked: the runtime discards the thread
	r := probeResult{policy: "other"}
	if prio > 0 {
		r.policy = fmt.Sprintf("fifo%d", prio)
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		r.err = err
		out <- r
		return
	}
	if prio > 0 {
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			r.err = err
			out <- r
			return
		}
	}
	r.sleep = make([]int64, 0, 1<<16)
	r.ppoll = make([]int64, 0, 1<<16)
	// ppoll waits on an eventfd that nobody writes, as a loop waits on
	// its device.
	ev, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		r.err = err
		out <- r
		return
	}
	defer unix.Close(ev)
	fds := []unix.PollFd{{Fd: int32(ev), Events: unix.POLLIN}}
	for i := 0; ; i++ {
		select {
		case <-stop:
			out <- r
			return
		default:
		}
		var t0, t1 unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &t0)
		target := t0.Nano() + int64(probeInterval)
		// The Go runtime's signals interrupt the sleeps: sleep again
		// until the target.
		for {
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &t1)
			left := target - t1.Nano()
			if left <= 0 {
				break
			}
			if i%2 == 0 {
				abs := unix.NsecToTimespec(target)
				unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &abs, nil)
			} else {
				ts := unix.NsecToTimespec(left)
				unix.Ppoll(fds, &ts, nil)
			}
		}
		late := t1.Nano() - target
		if i%2 == 0 {
			r.sleep = append(r.sleep, late)
		} else {
			r.ppoll = append(r.ppoll, late)
		}
	}
}

// startProbes starts a SCHED_OTHER probe and, when rtPrio > 0, a
// SCHED_FIFO one; the returned function stops them and formats their
// figures as key=value pairs.
func startProbes(rtPrio int) func() string {
	stop := make(chan struct{})
	out := make(chan probeResult, 2)
	n := 1
	go probe(0, stop, out)
	if rtPrio > 0 {
		n++
		go probe(rtPrio, stop, out)
	}
	return func() string {
		close(stop)
		var s string
		for range n {
			r := <-out
			if r.err != nil {
				s += fmt.Sprintf(" probe_%s_err=%q", r.policy, r.err.Error())
				continue
			}
			for _, x := range []struct {
				name string
				v    []int64
			}{{"nanosleep", r.sleep}, {"ppoll", r.ppoll}} {
				p50, p99, mx := percentiles(x.v)
				s += fmt.Sprintf(" probe_%s_%s_p50_us=%.1f p99_us=%.1f max_us=%.1f n=%d",
					r.policy, x.name, p50/1e3, p99/1e3, mx/1e3, len(x.v))
			}
		}
		return s
	}
}

func percentiles(v []int64) (p50, p99, mx float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	at := func(q float64) float64 { return float64(s[int(q*float64(len(s)-1))]) }
	return at(0.5), at(0.99), float64(s[len(s)-1])
}
