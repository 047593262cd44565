package traffic

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/roottest"
)

// idle is a Flow that makes no sockets and records the grid points it is
// sampled at: the driver's schedule seen from a flow.
type idle struct {
	label       string
	start, stop time.Duration
	opened      int
	openErr     error
	closed      int
	ks          []int
	ts          []clock.Time
}

func (f *idle) Label() string                          { return f.label }
func (f *idle) Window() (time.Duration, time.Duration) { return f.start, f.stop }
func (f *idle) Open(context.Context) error             { f.opened++; return f.openErr }
func (f *idle) Start(context.Context, Env)             {}
func (f *idle) Sample(k int, t clock.Time)             { f.ks = append(f.ks, k); f.ts = append(f.ts, t) }
func (f *idle) Close()                                 { f.closed++ }
func (f *idle) Result() FlowResult                     { return &FlowInfo{Label: f.label, Kind: "idle"} }

func TestPlanCheck(t *testing.T) {
	ok := &idle{label: "ok", stop: time.Second}
	for _, c := range []struct {
		plan Plan
		want string
	}{
		{Plan{Length: time.Second}, "step 0s: must be positive"},
		{Plan{Step: time.Second, Length: time.Millisecond}, "shorter than one step"},
		{Plan{Step: time.Second, Length: time.Second, Flows: []Flow{nil}}, "flow 0 is nil"},
		{Plan{Step: time.Second, Length: time.Second, Flows: []Flow{ok, ok}}, "flow 1 (ok) is the same flow as flow 0"},
		{Plan{Step: time.Second, Length: time.Second, Flows: []Flow{&idle{label: "x", start: -1, stop: time.Second}}}, "before T0"},
		{Plan{Step: time.Second, Length: time.Second, Flows: []Flow{&idle{label: "x", start: time.Second, stop: time.Second}}}, "stop 1s is not after start 1s"},
		{Plan{Step: time.Second, Length: time.Second, Flows: []Flow{&idle{label: "x", stop: 2 * time.Second}}}, "flow 0 (x): stop 2s is after the end of the run (1s)"},
	} {
		res, err := Run(context.Background(), c.plan)
		if err == nil || !strings.Contains(err.Error(), c.want) || res != nil {
			t.Errorf("%+v: err %v, want one containing %q", c.plan, err, c.want)
		}
	}
}

// A flow that cannot open stops the run before it starts; the flows
// opened before it are closed, the ones after it never opened.
func TestOpenFailureClosesOthers(t *testing.T) {
	a := &idle{label: "a", stop: time.Second}
	b := &idle{label: "b", stop: time.Second, openErr: context.DeadlineExceeded}
	c := &idle{label: "c", stop: time.Second}
	res, err := Run(context.Background(), Plan{Step: time.Second, Length: time.Second, Flows: []Flow{a, b, c}})
	if err == nil || !strings.Contains(err.Error(), "flow 1 (b)") || res != nil {
		t.Fatalf("err %v", err)
	}
	if a.opened != 1 || a.closed != 1 || b.closed != 0 || c.opened != 0 || c.closed != 0 {
		t.Errorf("a opened %d closed %d, b closed %d, c opened %d closed %d", a.opened, a.closed, b.closed, c.opened, c.closed)
	}
}

// The grid is absolute: a sample is never early; a late one records its
// true time and the next is back on the grid; one so late that the next
// point is due too is skipped. OnStep sees the samples' times.
func TestGridSchedule(t *testing.T) {
	roottest.Twice(t, "the grid's schedule", func(rep roottest.Reporter) {
		const step = 40 * time.Millisecond
		f := &idle{label: "idle", start: 2 * step, stop: 10 * step}
		var onStep []Tick
		res, err := Run(context.Background(), Plan{Step: step, Length: 10 * step, Flows: []Flow{f},
			OnStep: func(k int, t clock.Time) {
				onStep = append(onStep, Tick{k, t})
				switch k {
				case 3:
					time.Sleep(step * 3 / 2) // 4 is late, 5 on time
				case 6:
					time.Sleep(step * 5 / 2) // 7 is skipped, 8 is late
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		var ks []int
		for i, tk := range res.Ticks {
			ks = append(ks, tk.K)
			grid := res.T0.Add(time.Duration(tk.K) * step)
			if tk.T < grid {
				rep.Errorf("k=%d sampled %v before its time", tk.K, grid.Sub(tk.T))
			}
			if onStep[i] != tk {
				rep.Errorf("OnStep saw %+v, the result has %+v", onStep[i], tk)
			}
		}
		if want := []int{0, 1, 2, 3, 4, 5, 6, 8, 9, 10}; !slices.Equal(ks, want) {
			rep.Errorf("ticks %v, want %v", ks, want)
		}
		if !slices.Equal(res.Skipped, []int{7}) {
			rep.Errorf("skipped %v, want [7]", res.Skipped)
		}
		// Every flow is sampled at every point; what it keeps is its own
		// business.
		if !slices.Equal(f.ks, ks) {
			rep.Errorf("flow sampled at %v", f.ks)
		}
		at := func(k int) time.Duration {
			for _, tk := range res.Ticks {
				if tk.K == k {
					return tk.T.Sub(res.T0.Add(time.Duration(k) * step))
				}
			}
			return -1
		}
		// 4 is half a step late; 5 is back on the grid (lateness is a
		// wake-up's, far below half a step).
		if at(4) < step/2-step/8 || at(5) > step/4 {
			rep.Errorf("k=4 late by %v, k=5 by %v", at(4), at(5))
		}
		if res.Partial || f.closed != 1 || len(res.Flows) != 1 || res.Start.IsZero() {
			rep.Errorf("partial %v, closed %d, %d results, start %v", res.Partial, f.closed, len(res.Flows), res.Start)
		}
	})
}
