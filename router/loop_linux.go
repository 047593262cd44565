package router

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/clock"
	"wanlab/internal/ppoll"
)

// run is the direction's real-time loop. It locks its goroutine to an OS
// thread for good: the thread gets a timer slack of 1 ns, so that ppoll's
// timeouts expire when asked rather than up to 50 µs later, and the runtime
// discards the thread when the loop ends instead of lending that setting to
// other goroutines.
func (l *loop) run() error {
	runtime.LockOSThread()
	l.onThread = true
	l.began = l.clk.Now()
	l.tid.Store(int32(unix.Gettid()))
	defer l.tid.Store(0)
	defer l.exit()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("router: %s: set the timer slack: %w", l.name, err)
	}
	l.startNormal()
	if l.rtPrio > 0 {
		if err := l.setFIFO(true); err != nil {
			return fmt.Errorf("router: %s: SCHED_FIFO priority %d: %w", l.name, l.rtPrio, err)
		}
	}
	for {
		if l.hasReq.Load() {
			l.serve()
		}
		if l.stopping.Load() {
			return errStopped
		}
		n, _, err := l.pass()
		if err != nil {
			return fmt.Errorf("router: %s: %w", l.name, err)
		}
		if l.fatal != nil {
			return l.fatal
		}
		if n >= readBatch {
			continue // more is probably waiting
		}
		if err := l.idle(); err != nil {
			return fmt.Errorf("router: %s: %w", l.name, err)
		}
	}
}

// idle waits for the next packet or the link's next deadline. A sleeping
// thread wakes up late (tens of microseconds on a virtual machine, more
// after a long sleep), so the loop sleeps only until l.spin before the
// deadline; l.spin follows the wake-up delays it sees (see adaptSpin), and
// no more of it is used than review allows (l.spinCap).
// Within l.spin of the deadline idle returns at once: the loop then polls,
// reading without waiting on every pass, so that packets arriving meanwhile
// get their true arrival time and the deadline is met within a pass. After
// l.maxBusy of polling without a break it sleeps until the deadline
// instead, and halves l.spin.
func (l *loop) idle() error {
	timeout := time.Duration(-1)
	var target clock.Time
	now := l.clk.Now()
	if l.spunFrom != 0 {
		l.st.spun += int64(now - l.spunFrom)
		l.spunFrom = 0
	}
	if l.review(now) && !l.fifo {
		l.setNormal()
	}
	spin := min(l.spin, l.spinCap)
	if l.held {
		return l.holdReads(now, spin)
	}
	if next := l.lastNext; next != clock.Never {
		d := time.Duration(next - now)
		if d <= 0 {
			return nil
		}
		timeout = d - spin
		if d <= spin {
			if l.busySince == 0 {
				l.busySince = now
			}
			if time.Duration(now-l.busySince) < l.maxBusy {
				l.st.spins++
				l.spunFrom = now
				l.setFIFO(false)
				return nil
			}
			l.spin = max(l.spin/2, minSpin)
			timeout = max(d, minSpin)
		}
		target = now + clock.Time(timeout)
	}
	l.busySince = 0
	l.st.sleeps++
	l.setFIFO(true)
	event, woken, err := l.in.wait(l.wake, timeout)
	if woken {
		drainWake(l.wake)
	}
	if !event && err == nil && timeout >= 0 {
		l.adaptSpin(time.Duration(l.clk.Now() - target))
	}
	return err
}

// holdReads waits, without looking at the ingress (whose packets wait for
// the read pacer), until a read is allowed again or the link's next
// deadline, whichever is first; it spins through the last l.spin of it.
func (l *loop) holdReads(now clock.Time, spin time.Duration) error {
	d := l.pacer.wait(now)
	if next := l.lastNext; next != clock.Never {
		d = min(d, time.Duration(next-now))
	}
	if d <= spin {
		l.st.spins++
		l.spunFrom = now
		return nil
	}
	l.st.sleeps++
	woken, err := pollWake(l.wake, d-spin)
	if woken {
		drainWake(l.wake)
	}
	return err
}

// setFIFO puts the loop's thread under SCHED_FIFO at l.rtPrio, or back
// under normal scheduling, if RealTimePriority asks for it at all. A
// real-time loop spins under normal scheduling: spinning as a real-time
// thread would keep the threads of the Go runtime it depends on (and the
// hosts' programs) off its CPU until the kernel's real-time throttling
// stepped in, which stalled the loop for most of a second. It sleeps as a
// real-time thread, so that it runs as soon as it wakes, and keeps that
// policy while it works on the packets that woke it.
func (l *loop) setFIFO(on bool) error {
	if l.rtPrio == 0 || l.fifo == on {
		return nil
	}
	attr := l.normalAttr(l.nice, l.slice)
	if on {
		attr = unix.SchedAttr{Size: unix.SizeofSchedAttr}
		// Threads the runtime creates from this one must not inherit
		// the policy: a runtime thread running as a real-time one
		// would keep the loops off the CPU.
		attr.Policy, attr.Priority = unix.SCHED_FIFO, uint32(l.rtPrio)
		attr.Flags = unix.SCHED_FLAG_RESET_ON_FORK
	}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return err
	}
	l.fifo = on
	return nil
}

// startNormal gives the loop's thread, under normal scheduling, a time
// slice of loopSlice and its boost: the lowest nice value it may have,
// down to loopNice (loopNice as root, else what RLIMIT_NICE allows, ulimit
// -e, else 0). A kernel that refuses all of it leaves the thread as it
// was. review takes the boost away while the loop is busy, setNormal
// applies that.
//
// Why: a loop sleeps until its next deadline and must run when it wakes.
// Under EEVDF (Linux 6.6 and later) a waking thread runs at once only if
// its virtual deadline is earlier than the running one's, and a thread's
// deadline is its slice, scaled down by its weight, past its virtual run
// time: a short slice (honoured since Linux 6.12; earlier kernels ignore
// it) and a high weight put the loop first, where a host's program that
// its write woke, or that the machine's other CPU pushed over, would
// otherwise run first for milliseconds. A loop with the boost mostly
// waits (review), and spins within its budget, so the weight does not let
// it starve the hosts. Threads the runtime creates from this one inherit
// neither (SCHED_FLAG_RESET_ON_FORK).
func (l *loop) startNormal() {
	nices := []int{loopNice, 0}
	var lim unix.Rlimit
	// RLIMIT_NICE's ceiling is 20 - nice (setrlimit(2)).
	if unix.Getrlimit(unix.RLIMIT_NICE, &lim) == nil && lim.Cur > 20 && lim.Cur < 40 {
		nices = []int{loopNice, 20 - int(lim.Cur), 0}
	}
	// Kernels before 6.12 ignore a normal thread's slice; one that
	// refused it would still get the nice value.
	for _, slice := range []time.Duration{loopSlice, 0} {
		for _, nice := range nices {
			attr := l.normalAttr(nice, slice)
			if unix.SchedSetAttr(0, &attr, 0) == nil {
				l.boostNice = nice
				l.nice, l.slice = nice, slice
				return
			}
		}
	}
}

// setNormal gives the thread its boost, or takes it away, as l.boost
// says, at the end of a window of review; a real-time loop's thread,
// which may be under SCHED_FIFO then, takes it at a window that ends
// while it is not.
func (l *loop) setNormal() {
	nice := 0
	if l.boost {
		nice = l.boostNice
	}
	if nice == l.nice {
		return
	}
	attr := l.normalAttr(nice, l.slice)
	if unix.SchedSetAttr(0, &attr, 0) == nil {
		l.nice = nice
	}
}

// normalAttr is the normal scheduling of a thread of nice value nice and
// time slice slice (0: the kernel's default), which threads created from
// it do not inherit.
func (l *loop) normalAttr(nice int, slice time.Duration) unix.SchedAttr {
	return unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL,
		Flags: unix.SCHED_FLAG_RESET_ON_FORK, Nice: int32(nice), Runtime: uint64(slice)}
}

// threadCPU returns the CPU time the calling thread has used.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newWake returns a non-blocking eventfd.
func newWake() (int, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return -1, fmt.Errorf("router: eventfd: %w", err)
	}
	return fd, nil
}

func signalWake(fd int) {
	if fd < 0 {
		return
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	unix.Write(fd, one[:])
}

func drainWake(fd int) {
	var b [8]byte
	unix.Read(fd, b[:])
}

func closeWake(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// pollWake waits until fd is readable or timeout passes (negative: for
// ever) and reports whether it is.
func pollWake(fd int, timeout time.Duration) (bool, error) {
	fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if err := ppoll.Wait(fds[:], timeout); err != nil {
		return false, fmt.Errorf("poll: %w", err)
	}
	return fds[0].Revents != 0, nil
}
