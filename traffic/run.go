package traffic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"wanlab/clock"
)

// Flow is one generator or probe stream that Run drives: a TCP bulk flow,
// a UDP or ICMP probe stream, a UDP flood, or another transport that
// implements it. A Flow is used for one run only.
//
// Run calls its methods in this order, all from one goroutine: Window and
// Label to check the plan, Open before T0, Start at T0, Sample at each
// point of the grid, then Close and Result. The flow's own goroutines do
// the sending and receiving; they begin at T0+start and end by themselves
// at T0+stop, or when Close is called.
type Flow interface {
	// Label names the flow in errors and results (for instance the Flent
	// series name it becomes).
	Label() string
	// Window returns when the flow runs, as offsets from T0.
	Window() (start, stop time.Duration)
	// Open makes the sockets the flow needs before the run starts
	// (listeners, bound sockets) and so reports bad options before T0. An
	// Open that fails leaves nothing open.
	Open(ctx context.Context) error
	// Start launches the flow's goroutines and returns at once. They end
	// when ctx ends, at the latest.
	Start(ctx context.Context, env Env)
	// Sample records the flow's state at grid point k, read at time t.
	Sample(k int, t clock.Time)
	// Close stops the flow if it still runs, waits for every goroutine it
	// started and closes every socket it made. Run calls it once for every
	// flow whose Open succeeded, whether or not Start was called.
	Close()
	// Result returns what the flow recorded, once Close has returned.
	Result() FlowResult
}

// Env is what a flow learns when it starts: the clock every time is read
// on, and the grid's origin and step.
type Env struct {
	Clock *clock.Real
	T0    clock.Time
	Step  time.Duration
}

// At returns the time d after T0.
func (e Env) At(d time.Duration) clock.Time { return e.T0.Add(d) }

// Grid returns the time of grid point k.
func (e Env) Grid(k int) clock.Time { return e.T0.Add(time.Duration(k) * e.Step) }

// Plan is one run: a grid of sampling points and the flows sampled on it.
type Plan struct {
	// Step is the grid's spacing; it must be positive.
	Step time.Duration
	// Length is how long the run lasts: grid points are T0 + k·Step for
	// k = 0 … ⌊Length/Step⌋. It must be at least one Step.
	Length time.Duration
	// Flows are the generators and probes. Each one's window must lie
	// within [0, Length].
	Flows []Flow
	// Clock is the clock every time in the result is read on; nil makes
	// a new one. Pass the router's clock to put the router's snapshots on
	// the same time line.
	Clock *clock.Real
	// OnStep, if set, is called at every grid point after the flows have
	// been sampled, with the point's index and the time the flows were
	// sampled at, for instance to read the router's counters on the same
	// grid and to print progress. It runs on the sampling goroutine: a
	// slow OnStep makes later samples late.
	OnStep func(k int, t clock.Time)
}

// Tick is one sampled grid point: its index and the time the samples were
// actually read (at or shortly after T0 + K·Step).
type Tick struct {
	K int        `json:"k"`
	T clock.Time `json:"t_ns"`
}

// Result is what a run recorded. Every clock.Time in it, here and in the
// flows' results, is a reading of the plan's clock, in nanoseconds since
// that clock's zero; subtract T0 for the time into the run.
type Result struct {
	// T0 is the grid's origin and Start the wall-clock time of T0.
	T0    clock.Time `json:"t0_ns"`
	Start time.Time  `json:"start"`
	// Step and Length are the plan's.
	Step   time.Duration `json:"step_ns"`
	Length time.Duration `json:"length_ns"`
	// Ticks are the grid points sampled, in order.
	Ticks []Tick `json:"ticks"`
	// Skipped lists grid points not sampled because the sampler woke up
	// only after the next point was due as well (the machine was busy);
	// the flows have no sample for them.
	Skipped []int `json:"skipped"`
	// Partial is set when the run was cancelled before its end: the
	// samples are those taken until then, Stopped.
	Partial bool       `json:"partial"`
	Stopped clock.Time `json:"stopped_ns,omitempty"`
	// Flows are the flows' results, in the plan's order.
	Flows []FlowResult `json:"flows"`
}

// FlowResult is what one flow recorded: *TCPResult, *ProbeResult,
// *FloodResult, or another transport's own type.
type FlowResult interface {
	// Info returns the description every flow result starts with.
	Info() *FlowInfo
}

// FlowInfo is the part of every flow's result that says what the flow
// was. Flow results embed it.
type FlowInfo struct {
	// Label is the flow's label.
	Label string `json:"label"`
	// Kind says which generator made it: "tcp", "udp_probe",
	// "icmp_probe", "udp_flood".
	Kind string `json:"kind"`
	// Start and Stop are the flow's window, offsets from T0.
	Start time.Duration `json:"start_ns"`
	Stop  time.Duration `json:"stop_ns"`
	// Error, if not empty, is the first error that ended or hampered the
	// flow during the run (a refused connection, a reset); the samples
	// are what it recorded until then.
	Error string `json:"error,omitempty"`
}

// Info returns i itself, so that results embedding FlowInfo satisfy
// FlowResult.
func (i *FlowInfo) Info() *FlowInfo { return i }

// Run opens every flow of p, starts them at T0, samples them at
// T0 + k·Step on an absolute schedule, and closes them at the end. A grid
// point reached late is sampled at its true time, and the next one is
// still due on the grid.
//
// An invalid plan or a flow that cannot open is an error before anything
// starts, and the result is nil. If ctx is cancelled, Run stops sampling,
// closes every flow and returns promptly with the samples taken so far,
// marked Partial, and ctx's error. Errors of individual flows during the
// run do not stop it; they are in each flow's result. When Run returns no
// goroutine and no socket of any flow is left.
func Run(ctx context.Context, p Plan) (*Result, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	clk := p.Clock
	if clk == nil {
		clk = clock.NewReal()
	}
	for i, f := range p.Flows {
		if err := f.Open(ctx); err != nil {
			for _, g := range p.Flows[:i] {
				g.Close()
			}
			return nil, fmt.Errorf("traffic: flow %d (%s): %w", i, f.Label(), err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	t0 := clk.Now()
	env := Env{Clock: clk, T0: t0, Step: p.Step}
	for _, f := range p.Flows {
		f.Start(runCtx, env)
	}
	res := &Result{T0: t0, Start: clk.Wall(t0), Step: p.Step, Length: p.Length}
	last := int(p.Length / p.Step)
	w := NewWaiter(clk)
	for k := 0; k <= last; k++ {
		due := env.Grid(k)
		if !w.Until(ctx, due) {
			res.Partial, res.Stopped = true, clk.Now()
			break
		}
		now := clk.Now()
		if k < last && now >= env.Grid(k+1) {
			res.Skipped = append(res.Skipped, k)
			continue
		}
		for _, f := range p.Flows {
			f.Sample(k, now)
		}
		res.Ticks = append(res.Ticks, Tick{K: k, T: now})
		if p.OnStep != nil {
			p.OnStep(k, now)
		}
	}
	cancel()
	for _, f := range p.Flows {
		f.Close()
	}
	for _, f := range p.Flows {
		res.Flows = append(res.Flows, f.Result())
	}
	if res.Partial {
		return res, fmt.Errorf("traffic: run cancelled %v after T0: %w", res.Stopped.Sub(t0).Round(time.Millisecond), ctx.Err())
	}
	return res, nil
}

// check validates the plan, saying what to change.
func (p Plan) check() error {
	if p.Step <= 0 {
		return fmt.Errorf("traffic: plan step %v: must be positive (Flent's default is 200ms)", p.Step)
	}
	if p.Length < p.Step {
		return fmt.Errorf("traffic: plan length %v is shorter than one step (%v): lengthen the run or shorten the step", p.Length, p.Step)
	}
	seen := make(map[Flow]int, len(p.Flows))
	for i, f := range p.Flows {
		if f == nil {
			return fmt.Errorf("traffic: flow %d is nil", i)
		}
		if j, dup := seen[f]; dup {
			return fmt.Errorf("traffic: flow %d (%s) is the same flow as flow %d: make a new flow for each entry", i, f.Label(), j)
		}
		seen[f] = i
		start, stop := f.Window()
		switch {
		case start < 0:
			return fmt.Errorf("traffic: flow %d (%s): start %v is before T0: use an offset of 0 or more", i, f.Label(), start)
		case stop <= start:
			return fmt.Errorf("traffic: flow %d (%s): stop %v is not after start %v", i, f.Label(), stop, start)
		case stop > p.Length:
			return fmt.Errorf("traffic: flow %d (%s): stop %v is after the end of the run (%v): end the flow earlier or lengthen the run", i, f.Label(), stop, p.Length)
		}
	}
	return nil
}

// errClosed reports whether err is what a socket operation returns because
// the flow closed the socket itself (Close, or the end of the run): not a
// failure of the flow.
func errClosed(err error) bool { return errors.Is(err, net.ErrClosed) }
