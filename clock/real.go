package clock

import "time"

// Real is a Clock that reads the process's monotonic clock. Its epoch is the
// moment it was created.
type Real struct{ start time.Time }

// NewReal returns a real clock whose zero is now.
func NewReal() *Real { return &Real{start: time.Now()} }

// Now returns the monotonic time elapsed since the clock was created.
func (r *Real) Now() Time { return Time(time.Since(r.start)) }

// Wall converts a time on this clock to wall-clock time.
func (r *Real) Wall(t Time) time.Time { return r.start.Add(time.Duration(t)) }

var _ Clock = (*Real)(nil)
