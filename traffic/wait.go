package traffic

import (
	"context"
	"time"

	"wanlab/clock"
)

// SleepUntil returns once clk reads t or later, true; or false as soon as
// ctx ends, even if t has passed. It is the one way the run's parts wait
// for a time on the run's clock; a loop that waits again and again uses a
// Waiter instead.
func SleepUntil(ctx context.Context, clk *clock.Real, t clock.Time) bool {
	return NewWaiter(clk).Until(ctx, t)
}

// Waiter waits for times on a run's clock. It keeps one timer, so that a
// pacing loop allocates nothing per wait. One goroutine uses it at a time.
type Waiter struct {
	clk   *clock.Real
	timer *time.Timer
}

// NewWaiter returns a Waiter on clk.
func NewWaiter(clk *clock.Real) *Waiter {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Waiter{clk: clk, timer: t}
}

// Until returns once the clock reads t or later, true; or false as soon as
// ctx ends, even if t has passed.
func (w *Waiter) Until(ctx context.Context, t clock.Time) bool {
	for {
		if ctx.Err() != nil {
			return false
		}
		if w.clk.Now() >= t {
			return true
		}
		select {
		case <-w.Alarm(t):
		case <-ctx.Done():
			w.timer.Stop()
			return false
		}
	}
}

// Alarm sets the waiter's timer for t, replacing whatever it was set for,
// and returns the channel that receives once the clock reads t: for a
// select that waits for other events as well.
func (w *Waiter) Alarm(t clock.Time) <-chan time.Time {
	w.timer.Reset(t.Sub(w.clk.Now()))
	return w.timer.C
}
