package traffictest

import "testing"

// Must returns the flow (or probe) newFlow makes of cfg, failing the test
// if newFlow refuses cfg: traffictest.Must(t, traffic.NewTCP, cfg).
func Must[C, F any](t testing.TB, newFlow func(C) (F, error), cfg C) F {
	t.Helper()
	f, err := newFlow(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
