package outfile

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// endSignals are the signals whose default action ends the process and
// which a user or a service manager sends to end it cleanly (Ctrl-C,
// kill, a closed terminal). While a temporary file is live, outfile
// catches them, removes every temporary and then lets the signal end the
// process as it would have.
var endSignals = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// registry holds the live temporaries of the process.
var registry = &tempRegistry{live: map[*temporary]struct{}{}, caught: map[syscall.Signal]int{}}

type tempRegistry struct {
	sync.Mutex
	live map[*temporary]struct{}
	// caught counts, per signal, the contexts of NotifyContext that are
	// live: while one is, the command ends cleanly on that signal by itself.
	caught map[syscall.Signal]int
	// watch catches endSignals while live is not empty.
	watch *watcher
}

// create creates a temporary and records it, under the lock so that a
// signal cannot come between the two and leave the file behind.
func (r *tempRegistry) create(t *temporary, perm os.FileMode) (*os.File, error) {
	r.Lock()
	defer r.Unlock()
	// O_NOFOLLOW and O_EXCL: the temporary is a new file, never a link
	// or a file someone else put there.
	fd, err := unix.Openat(t.dirfd, t.name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm))
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), t.name)
	r.live[t] = struct{}{}
	if r.watch == nil {
		r.watch = startWatch()
	}
	return f, nil
}

// forget drops t from the registry; the caller holds the lock. With no
// temporary left, the signals get back their previous handling.
func (r *tempRegistry) forget(t *temporary) {
	delete(r.live, t)
	if len(r.live) == 0 && r.watch != nil {
		r.watch.stop()
		r.watch = nil
	}
}

// onSignal removes every temporary and ends the process with sig, unless
// a command catches sig itself (NotifyContext).
func (r *tempRegistry) onSignal(sig syscall.Signal) {
	r.Lock()
	if r.caught[sig] > 0 {
		r.Unlock()
		return
	}
	for t := range r.live {
		t.remove()
		t.removed.Store(true)
	}
	clear(r.live)
	if r.watch != nil {
		r.watch.stop()
		r.watch = nil
	}
	r.Unlock()
	// With outfile's handler gone, the signal does what it would have done
	// without it: the runtime's default ends the process by the signal (so
	// a shell sees it killed by SIGINT, not exiting), or a handler the
	// program installed with signal.Notify receives it.
	unix.Kill(os.Getpid(), sig)
}

// watcher is a signal.Notify registration and the goroutine serving it.
type watcher struct {
	c        chan os.Signal
	quit     chan struct{}
	stopOnce sync.Once
}

// startWatch catches endSignals, except those the process ignores: a
// program started under nohup must keep ignoring SIGHUP, which
// signal.Notify would undo.
func startWatch() *watcher {
	w := &watcher{c: make(chan os.Signal, len(endSignals)), quit: make(chan struct{})}
	var sigs []os.Signal
	for _, s := range endSignals {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	if len(sigs) > 0 {
		signal.Notify(w.c, sigs...)
	}
	go w.run()
	return w
}

func (w *watcher) run() {
	for {
		select {
		case s := <-w.c:
			registry.onSignal(s.(syscall.Signal))
		case <-w.quit:
			// A signal that arrived before Stop is still owed its
			// effect: default handling was off when it came.
			select {
			case s := <-w.c:
				registry.onSignal(s.(syscall.Signal))
			default:
			}
			return
		}
	}
}

func (w *watcher) stop() {
	w.stopOnce.Do(func() {
		signal.Stop(w.c)
		close(w.quit)
	})
}

// NotifyContext is signal.NotifyContext for a command that ends cleanly on
// the signals sigs (all signals if none are given) by committing or
// aborting its files itself, as `wanlab up` does on Ctrl-C to keep the
// capture so far. Until stop is called, outfile leaves those signals to
// the command and does not remove its temporaries; without it, a signal
// would remove them first and the command's Commit would then fail.
// A command that catches the signals with signal.Notify directly gets
// each one twice while a temporary is live (once from the process, once
// from outfile passing it on) and finds its temporaries gone.
func NotifyContext(parent context.Context, sigs ...os.Signal) (ctx context.Context, stop context.CancelFunc) {
	ctx, stopNotify := signal.NotifyContext(parent, sigs...)
	caught := endSignals
	if len(sigs) > 0 {
		caught = nil
		for _, s := range sigs {
			if s, ok := s.(syscall.Signal); ok {
				caught = append(caught, s)
			}
		}
	}
	registry.Lock()
	for _, s := range caught {
		registry.caught[s]++
	}
	registry.Unlock()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			// Hand the signals back to outfile before the command stops
			// catching them, so that one arriving in between still removes
			// the temporaries and ends the process.
			registry.Lock()
			for _, s := range caught {
				registry.caught[s]--
			}
			registry.Unlock()
			stopNotify()
		})
	}
}
