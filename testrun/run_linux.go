package testrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/clock"
	"wanlab/internal/preempt"
	"wanlab/internal/rundir"
	"wanlab/lab"
	"wanlab/link"
	"wanlab/netns"
	"wanlab/results"
	"wanlab/rootless"
	"wanlab/traffic"
)

// Hooks let the caller follow a run.
type Hooks struct {
	// Progress, if set, is called at every grid point (on the sampling
	// goroutine: it must return quickly).
	Progress func(Progress)
	// Warnf, if set, is told about things that went wrong without ending
	// the run (a timed change that failed, a sysctl not restored).
	Warnf func(format string, args ...any)
}

// Progress is the state of a run at one grid point.
type Progress struct {
	// Elapsed is the time since T0 and Length the whole run's.
	Elapsed, Length time.Duration
	// Phase is "lead", "load" or "tail".
	Phase string
	// UpMbps and DownMbps are what crossed each way in the last step, in
	// Mbit/s of the router's bytes (the veth's without a router).
	UpMbps, DownMbps float64
	// DelayMs is the mean delay through the chains, up plus down, of the
	// packets the router delivered in the last step (NaN when unknown):
	// the path's round trip without the hosts' own time.
	DelayMs float64
}

// Info is what the document records about the program that ran.
type Info struct {
	Argv    []string
	Version string
}

// recordedSysctls are read from both hosts into run.sysctls, with every
// key the run set: the settings that shape TCP's behaviour (Flent records
// a similar list).
var recordedSysctls = []string{
	"net.ipv4.tcp_congestion_control", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_ecn",
	"net.ipv4.tcp_sack", "net.ipv4.tcp_timestamps", "net.ipv4.tcp_window_scaling", "net.ipv4.tcp_recovery",
	"net.ipv4.tcp_reordering", "net.ipv4.tcp_max_reordering", "net.ipv4.tcp_frto", "net.ipv4.tcp_mtu_probing",
	"net.ipv4.tcp_no_metrics_save", "net.ipv4.tcp_autocorking", "net.ipv4.tcp_limit_output_bytes",
	"net.ipv4.tcp_notsent_lowat", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_pacing_ss_ratio",
	"net.ipv4.tcp_pacing_ca_ratio", "net.core.rmem_max", "net.core.wmem_max", "net.core.default_qdisc",
}

// Run runs the test s describes and returns its results document. It
// builds the path (or borrows the running testbed), runs the traffic, and
// removes what it built before it returns, whatever happens.
//
// If ctx ends during the traffic, the run stops at once and the document
// holds what was measured, marked partial, with ctx's cause as the reason;
// the error is then nil. If ctx ends before the traffic starts, there is
// no document and the error is ctx's.
func Run(ctx context.Context, s *Setup, info Info, hooks Hooks) (doc *results.Document, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("run needs root for network namespaces and TUN devices: run it with sudo")
	}
	warnf := hooks.Warnf
	if warnf == nil {
		warnf = func(string, ...any) {}
	}
	// Socket buffers beyond the machine's limits, which only root's
	// sockets may force, are known before anything is built.
	for _, w := range rootless.BufferWarnings(s.Opts.SendBuffer, s.Opts.ReceiveBuffer) {
		warnf("%s", w)
	}
	var b bed
	switch s.Mode {
	case ModeTestbed:
		b, err = newOwnBed(ctx, s)
	case ModeLab:
		b, err = newLabBed(s.Lab, s.Test, s.Sysctls)
	case ModeDirect:
		b, err = newDirectBed(s)
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := b.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("removing the path: %w", cerr))
		}
	}()
	restore, err := s.setSysctls(b, warnf)
	defer restore()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}

	// Each flow and probe makes its sockets in the hosts the test gives
	// it: c1 and s1, or (rtt_fair) a server of its own.
	flows, specs, err := s.flows(func(h link.Host) (traffic.Host, error) {
		ns, addr := b.host(lab.HostRole(h), s.Opts.IPv6)
		if ns == nil || !addr.IsValid() {
			return traffic.Host{}, fmt.Errorf("test %s runs flows to host %s, which the testbed does not have: give it %d clients and %d servers (--clients, --servers)",
				s.Test.Name, h, max(s.Test.Clients, 1), max(s.Test.Servers, 1))
		}
		return traffic.Host{Net: traffic.InNamespace(ns), Addr: addr}, nil
	})
	if err != nil {
		return nil, err
	}
	prov := Provenance{
		Argv: info.Argv, Version: info.Version, KernelRelease: kernelRelease(), KernelPreemption: preempt.Mode(),
		Sysctls: readSysctls(s, b), Seed: b.seed(), Framing: b.framing(), DataPlane: b.dataPlane(),
		Rootless: rundir.Rootless(),
	}
	prov.PathUp, prov.PathDown = b.chains()
	prov.Hosts = runHosts(b.hostInfos(), prov.Sysctls)

	rec := &routerRecord{}
	if v, ok, err := b.read(); err != nil {
		return nil, fmt.Errorf("reading the router: %w", err)
	} else if ok {
		rec.base = v
	}
	// The traffic ends early when ctx does, when a borrowed testbed goes
	// away under the run, or when a custom command fails.
	tctx, stopTraffic := context.WithCancelCause(ctx)
	defer stopTraffic(nil)
	// One clock for the traffic, the timed changes and the commands.
	clk := clock.NewReal()
	var commands *commandFlow
	if s.Test.Custom {
		// First, so that the server listens before wanlab's own probes
		// open their sockets, which the wait for it would take for its.
		commands = newCommandFlow(s, b, clk, tctx, stopTraffic, warnf)
		flows = append([]traffic.Flow{commands}, flows...)
		specs = append([]flowSpec{{label: commands.Label()}}, specs...)
	}
	w := &watcher{s: s, b: b, rec: rec, hooks: hooks, warnf: warnf, stop: stopTraffic, clk: clk}
	runCtx, cancelChanges := context.WithCancel(tctx)
	defer cancelChanges()
	res, runErr := traffic.Run(tctx, traffic.Plan{
		Step:   s.Step,
		Length: s.Length(),
		Flows:  flows,
		Clock:  clk,
		OnStep: func(k int, t clock.Time) { w.step(runCtx, k, t) },
	})
	cancelChanges()
	w.wait()
	if res == nil {
		var ce *CommandError
		if errors.As(runErr, &ce) {
			return nil, ce
		}
		return nil, runErr
	}
	for _, fr := range res.Flows {
		if i := fr.Info(); i.Error != "" {
			warnf("%s: %s", i.Label, i.Error)
		}
	}
	partial := ""
	if res.Partial {
		partial = fmt.Sprintf("stopped %v into the run of %v: %v", res.Stopped.Sub(res.T0).Round(time.Millisecond), s.Length(), context.Cause(tctx))
	} else if commands != nil && commands.failure() != "" {
		// A command that failed once the traffic had ended (a client
		// that outlived a short tail) fails the run all the same.
		partial = commands.failure()
	}
	// The router's last reading: the packets still in flight at the end
	// have arrived, or are lost.
	if v, ok, err := b.read(); err == nil && ok {
		rec.final, rec.hasFinal = v, true
	}
	// A capture that failed fails the output, not the run: the document
	// says so, and the caller writes it all the same.
	var failed []results.FailedOutput
	if c, ok := b.(capturer); ok && s.Opts.Pcap != "" {
		if err := c.endCapture(); err != nil {
			failed = append(failed, results.FailedOutput{Output: "--pcap", Path: s.Opts.Pcap, Error: err.Error()})
		}
	}
	doc, err = s.document(res, specs, rec, prov, partial)
	if doc != nil {
		doc.Run.FailedOutputs = failed
	}
	return doc, err
}

// watcher reads the router at every grid point, applies the timed changes
// and reports progress.
type watcher struct {
	s     *Setup
	b     bed
	rec   *routerRecord
	hooks Hooks
	warnf func(string, ...any)

	stop context.CancelCauseFunc // ends the traffic early
	clk  *clock.Real             // the traffic's clock

	started bool
	t0      clock.Time
	wg      sync.WaitGroup
	prevUp  uint64
	prevDn  uint64
	hasPrev bool
	// captureWarned: the capture's failure has been reported.
	captureWarned bool
}

func (w *watcher) step(ctx context.Context, k int, t clock.Time) {
	if !w.started {
		// T0 is a little before the first grid point's reading.
		w.started, w.t0 = true, t.Add(-time.Duration(k)*w.s.Step)
		w.startChanges(ctx)
	}
	if c, ok := w.b.(capturer); ok && !w.captureWarned {
		if err := c.captureErr(); err != nil {
			w.captureWarned = true
			w.warnf("%v: the capture stops here, the run goes on", err)
		}
	}
	v, ok, err := w.b.read()
	switch {
	case err != nil && w.rec.err == "":
		w.rec.err = fmt.Sprintf("at %v: %v", t.Sub(w.t0).Round(time.Millisecond), err)
		if errors.Is(err, lab.ErrNotRunning) {
			// The borrowed testbed is gone: what follows would measure
			// nothing.
			w.stop(fmt.Errorf("testbed %s stopped during the run", w.s.Lab))
		}
	case ok:
		w.rec.mu.Lock()
		w.rec.steps = append(w.rec.steps, routerStep{K: k, View: v})
		w.rec.mu.Unlock()
	}
	if w.hooks.Progress != nil {
		w.hooks.Progress(w.progress(k, t, v, ok))
	}
}

// progress describes grid point k.
func (w *watcher) progress(k int, t clock.Time, v routerView, ok bool) Progress {
	s := w.s
	el := time.Duration(k) * s.Step
	p := Progress{Elapsed: el, Length: s.Length(), Phase: "load", DelayMs: nan()}
	switch {
	case el <= s.Lead && s.Lead > 0:
		p.Phase = "lead"
	case el > s.Lead+s.Duration:
		p.Phase = "tail"
	}
	var up, down uint64
	switch {
	case ok:
		up, down = v.Up.BytesOut, v.Down.BytesOut
		if n := len(w.rec.steps); n >= 2 {
			a, b := w.rec.steps[n-2].View, w.rec.steps[n-1].View
			du, dd := sub(b.Up.DelayN, a.Up.DelayN), sub(b.Down.DelayN, a.Down.DelayN)
			if du > 0 && dd > 0 {
				p.DelayMs = ((b.Up.DelaySum-a.Up.DelaySum)/float64(du) + (b.Down.DelaySum-a.Down.DelaySum)/float64(dd)) / 1e6
			}
		}
	default:
		d, isDirect := w.b.(*directBed)
		if !isDirect {
			return p
		}
		var err error
		if up, down, err = d.linkBytes(); err != nil {
			return p
		}
	}
	if w.hasPrev {
		sec := s.Step.Seconds()
		p.UpMbps = float64(sub(up, w.prevUp)) * 8 / sec / 1e6
		p.DownMbps = float64(sub(down, w.prevDn)) * 8 / sec / 1e6
	}
	w.prevUp, w.prevDn, w.hasPrev = up, down, true
	return p
}

// startChanges applies each timed change at its time from T0.
func (w *watcher) startChanges(ctx context.Context) {
	if len(w.s.Changes) == 0 {
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		wait := traffic.NewWaiter(w.clk)
		for _, c := range w.s.Changes {
			if !wait.Until(ctx, w.t0.Add(c.At)) {
				return
			}
			// The directions of one change are set together, as one
			// `wanlab set` does: all or none.
			effects, err := w.b.set(c)
			applied := w.clk.Now().Sub(w.t0).Seconds()
			if err != nil {
				w.warnf("the change at %v failed: %v", c.At, err)
			}
			w.rec.mu.Lock()
			for i, dir := range c.Dirs {
				ac := results.AppliedChange{AtS: c.At.Seconds(), AppliedS: applied, Direction: dir, Chain: c.Texts[i], Effect: effects[dir]}
				if err != nil {
					ac.Error = err.Error()
				}
				w.rec.changes = append(w.rec.changes, ac)
			}
			w.rec.mu.Unlock()
		}
	}()
}

func (w *watcher) wait() { w.wg.Wait() }

// setSysctls writes the run's sysctls into the hosts. For a borrowed
// testbed it returns a function that writes the old values back.
func (s *Setup) setSysctls(b bed, warnf func(string, ...any)) (restore func(), err error) {
	type old struct {
		h        *netns.Handle
		key, val string
	}
	var olds []old
	restore = func() {
		for i := len(olds) - 1; i >= 0; i-- {
			o := olds[i]
			if err := o.h.SetSysctl(o.key, o.val); err != nil {
				warnf("restoring %s=%q in %s: %v", o.key, o.val, o.h.Name(), err)
			}
		}
	}
	for _, sc := range s.Sysctls {
		h, _ := b.host(sc.Host, false)
		if h == nil {
			// A borrowed testbed's host, named by --sysctl, that it lacks.
			return restore, badf("--sysctl %s:%s=%s: the testbed has no host %s", sc.Host, sc.Key, sc.Value, sc.Host)
		}
		if s.Mode == ModeLab {
			v, err := h.Sysctl(sc.Key)
			if err != nil {
				return restore, fmt.Errorf("%s: read %s: %w", sc.Host, sc.Key, err)
			}
			olds = append(olds, old{h, sc.Key, v})
		}
		if err := h.SetSysctl(sc.Key, sc.Value); err != nil {
			// Only the kernel knows which values a key takes.
			return restore, badf("%s=%s: the %s's kernel refused it (%v): see the key's current value with `sysctl %s`",
				sc.Key, sc.Value, sc.Host, err, sc.Key)
		}
	}
	return restore, nil
}

// readSysctls reads the recorded sysctls of every host.
func readSysctls(s *Setup, b bed) map[string]map[string]string {
	keys := slices.Clone(recordedSysctls)
	for _, sc := range s.Sysctls {
		if !slices.Contains(keys, sc.Key) {
			keys = append(keys, sc.Key)
		}
	}
	out := map[string]map[string]string{}
	for _, hi := range b.hostInfos() {
		r := hi.Name
		h, _ := b.host(r, false)
		m := map[string]string{}
		for _, k := range keys {
			// A key the namespace lacks (net.core ones on older
			// kernels) is left out.
			if v, err := h.Sysctl(k); err == nil {
				m[k] = v
			}
		}
		out[string(r)] = m
	}
	return out
}

// kernelRelease is `uname -r`.
func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
