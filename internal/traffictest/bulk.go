package traffictest

import (
	"testing"
	"time"

	"wanlab/clock"
)

// BulkPoint is what CheckBulkSteps reads of one sample of a bulk flow:
// its grid point, when it was read, and the bytes written and read so far.
type BulkPoint struct {
	K              int
	T              clock.Time
	Sent, Received int64
}

// CheckBulkSteps checks the samples of a bulk flow (TCP's, QUIC's) that
// ran on a clean path, taken on a grid of step, through point: they start
// at the first grid point at or after the flow's start and follow the
// grid, the counts only grow, what was read never exceeds what was
// written, and the per-step amounts read, which start from 0 at the
// flow's start, add up to received, the flow's total.
func CheckBulkSteps[S any](t testing.TB, step, start time.Duration, received int64, samples []S, point func(S) BulkPoint) {
	t.Helper()
	if len(samples) < 2 {
		t.Fatalf("%d samples", len(samples))
	}
	if first, want := point(samples[0]).K, int((start+step-1)/step); first != want {
		t.Errorf("first sample at k=%d, want %d", first, want)
	}
	var sum int64
	var prev BulkPoint
	for i, smp := range samples {
		s := point(smp)
		if i > 0 && (s.K != prev.K+1 || s.T <= prev.T) {
			t.Errorf("sample %d: k=%d at %v after k=%d at %v", i, s.K, s.T, prev.K, prev.T)
		}
		if s.Sent < prev.Sent {
			t.Errorf("sample %d: sent %d after %d", i, s.Sent, prev.Sent)
		}
		if s.Received < prev.Received || s.Received > s.Sent {
			t.Errorf("sample %d: received %d (before %d), sent %d", i, s.Received, prev.Received, s.Sent)
		}
		sum += s.Received - prev.Received
		prev = s
	}
	if sum != received {
		t.Errorf("the steps add up to %d bytes, the flow received %d", sum, received)
	}
}
