package traffictest

import (
	"context"
	"testing"
	"time"
)

// Runs runs each of runs (a transport's sender's and receiver's Run) on a
// goroutine of its own with ctx, and returns wait, which waits for them
// all once ctx has ended: the test fails if one returns an error or
// takes more than 10 s to return.
func Runs(ctx context.Context, runs ...func(context.Context) error) (wait func(testing.TB)) {
	errs := make(chan error, len(runs))
	for _, run := range runs {
		go func() { errs <- run(ctx) }()
	}
	return func(t testing.TB) {
		t.Helper()
		for range runs {
			select {
			case err := <-errs:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after its context ended")
			}
		}
	}
}
