// Package sim is a discrete-event simulator: synthetic UDP flows crossing
// the two directions of a dumbbell (link.Path: the hosts' access links
// and the shared bottleneck, each a link.Direction with its qdisc tree
// and trace) on a virtual clock. It runs much faster than real time,
// makes no system calls, and gives the same result for the same
// configuration and seed.
package sim

import (
	"fmt"
	"math"
	"time"

	"wanlab/clock"
	"wanlab/link"
	"wanlab/packet"
	"wanlab/qdisc"
)

// Config describes a simulation.
type Config struct {
	// Up and Down are the two directions' bottlenecks. Run names them "up"
	// and "down" if their names are empty, turns on PerFlow and
	// KeepDelays (the results give exact per-flow percentiles), gives
	// both its own packet pool as Env.Pool, and, where Env.Seed is 0,
	// sets it to link.DirectionSeed(Seed, name), as the lab does.
	Up, Down link.Config
	// Clients and Servers are the dumbbell's hosts, c1..cN and s1..sM: 1
	// to link.MaxHosts each, 0 meaning 1. Up packets go from a client to
	// a server, down packets the other way.
	Clients, Servers int
	// Access are the hosts' access links, at most one per host and
	// direction; a host without one is joined straight to the
	// bottleneck.
	Access []Access
	// Flows are the sources; flow i is numbered i in packets and results.
	Flows []Flow
	// Duration is the simulated time: events at times in [0, Duration)
	// happen; packets still inside a direction at the end are "queued".
	Duration time.Duration
	// Seed seeds the Poisson sources and, by default, the directions.
	Seed uint64
	// OnPacket, when not nil, is called once for every packet at its fate:
	// when it is delivered or dropped (a netem duplicate is a packet of its
	// own). Packets still queued at the end are not reported.
	OnPacket func(PacketRecord)
}

// Access is one host's access link in one direction. A client's up link
// carries its packets into the up bottleneck and its down link the down
// bottleneck's packets to it; a server's the other way round.
type Access struct {
	Host link.Host
	// Dir is "up" or "down".
	Dir string
	// Chain is the link's qdisc chain; an empty one is a direct link,
	// which only counts. Its Env is its direction's bottleneck's, its
	// seed link.DirectionSeed(Seed, Host.LinkName(Dir)).
	Chain []qdisc.Spec
}

// PacketRecord is one packet's fate.
type PacketRecord struct {
	Flow int32
	Seq  int64
	// Dir is "up" or "down" (the direction's name).
	Dir  string
	Size int
	// SentNs is when the packet entered its direction (its sender's access
	// link, or the bottleneck); LeftNs when it left the direction, or -1
	// if it was dropped.
	SentNs, LeftNs int64
	// Verdict is "delivered", "marked" (delivered with CE set by the path)
	// or "dropped:REASON" with REASON a qdisc.Reason name.
	Verdict string
	// Dup reports a duplicate made by the path.
	Dup bool
}

// Verdicts of PacketRecord.
const (
	VerdictDelivered = "delivered"
	VerdictMarked    = "marked"
)

// dropVerdicts holds "dropped:REASON" for every reason, so that reporting
// a drop allocates nothing.
var dropVerdicts = func() [qdisc.NumReasons]string {
	var v [qdisc.NumReasons]string
	for _, r := range qdisc.Reasons() {
		v[r] = "dropped:" + r.String()
	}
	return v
}()

// runner is one simulation's state.
type runner struct {
	cfg      Config
	pool     *packet.Pool
	paths    [2]*link.Path
	names    [2]string
	hosts    bool // more than two hosts, or access links: results per host
	deadline [2]clock.Time
	touched  [2]bool
	srcs     sources
	end      clock.Time
}

// Run simulates cfg and returns its counters.
func Run(cfg Config) (*Result, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	r.loop()
	return r.result(), nil
}

func newRunner(cfg Config) (*runner, error) {
	if err := Check(cfg); err != nil {
		return nil, err
	}
	cfg.Clients, cfg.Servers = max(cfg.Clients, 1), max(cfg.Servers, 1)
	maxSize := 0
	for _, f := range cfg.Flows {
		maxSize = max(maxSize, f.base().Size)
	}
	r := &runner{
		cfg:   cfg,
		pool:  packet.NewPool(max(2048, maxSize+packet.DefaultHeadroom), packet.DefaultHeadroom),
		end:   clock.Time(cfg.Duration),
		hosts: cfg.Clients > 1 || cfg.Servers > 1 || len(cfg.Access) > 0,
	}
	for i, lc := range []link.Config{cfg.Up, cfg.Down} {
		if lc.Name == "" {
			lc.Name = [2]string{"up", "down"}[i]
		}
		dir := [2]string{"up", "down"}[i]
		lc.PerFlow, lc.KeepDelays = true, true
		lc.Env.Pool = r.pool
		if lc.Env.Seed == 0 {
			lc.Env.Seed = link.DirectionSeed(cfg.Seed, lc.Name)
		}
		// The up path enters from the clients and leaves to the
		// servers; the down path the other way.
		pc := link.PathConfig{Name: lc.Name, PerFlow: true, KeepDelays: true,
			In: make([]*link.Config, cfg.Clients), Out: make([]*link.Config, cfg.Servers)}
		if i == 1 {
			pc.In, pc.Out = pc.Out, pc.In
		}
		for _, a := range cfg.Access {
			if a.Dir != dir {
				continue
			}
			ac := &link.Config{Name: a.Host.LinkName(dir), Chain: a.Chain, Env: lc.Env, KeepDelays: true}
			ac.Env.Seed = link.DirectionSeed(cfg.Seed, ac.Name)
			if cfg.OnPacket != nil {
				ac.Hook = &dropHook{r: r, dir: lc.Name}
			}
			if a.Host.Server == (i == 0) {
				pc.Out[a.Host.Port()] = ac
			} else {
				pc.In[a.Host.Port()] = ac
			}
		}
		if cfg.OnPacket != nil {
			lc.Hook = &dropHook{r: r, dir: lc.Name, next: lc.Hook}
		}
		pc.Bottleneck = lc
		p, err := link.NewPath(pc)
		if err != nil {
			return nil, err
		}
		r.paths[i], r.names[i] = p, lc.Name
		r.deadline[i] = clock.Never
	}
	r.reserve()
	r.srcs = make(sources, len(cfg.Flows))
	for i, f := range cfg.Flows {
		r.srcs[i] = newSource(i, f, cfg.Seed)
		r.srcs[i].route(cfg.Clients, cfg.Servers)
	}
	r.srcs.init()
	return r, nil
}

// Check reports what Run would refuse in cfg before it simulates
// anything: a duration that is not positive, a flow that is not valid, a
// host that the dumbbell does not have, a second access link for a host
// and direction. It does not build the links, so it does not check their
// chains.
func Check(cfg Config) error {
	if cfg.Duration <= 0 {
		return fmt.Errorf("duration %v must be positive; e.g. 10s", cfg.Duration)
	}
	for _, n := range []struct {
		n    int
		name string
	}{{cfg.Clients, "clients"}, {cfg.Servers, "servers"}} {
		if n.n < 0 || n.n > link.MaxHosts {
			return fmt.Errorf("%d %s: a dumbbell has 1 to %d %s", n.n, n.name, link.MaxHosts, n.name)
		}
	}
	clients, servers := max(cfg.Clients, 1), max(cfg.Servers, 1)
	for i, f := range cfg.Flows {
		if f == nil {
			return fmt.Errorf("flow %d is nil", i)
		}
		c := f.base()
		if err := c.validate(); err != nil {
			return fmt.Errorf("flow %d (%s): %w", i, f, err)
		}
		for _, h := range []struct {
			key  string
			host link.Host
		}{{"src", c.SrcHost}, {"dst", c.DstHost}} {
			if h.host.N == 0 {
				continue
			}
			if err := h.host.Check(clients, servers); err != nil {
				return fmt.Errorf("flow %d (%s): %s=%w", i, f, h.key, err)
			}
		}
	}
	seen := map[string]bool{}
	for _, a := range cfg.Access {
		if a.Dir != "up" && a.Dir != "down" {
			return fmt.Errorf("access link of %s: direction %q: use up or down", a.Host, a.Dir)
		}
		if a.Host.N < 1 || a.Host.N > link.MaxHosts {
			return fmt.Errorf("access link of host %d: hosts are numbered 1 to %d", a.Host.N, link.MaxHosts)
		}
		if err := a.Host.Check(clients, servers); err != nil {
			return fmt.Errorf("%s access link: %w", a.Dir, err)
		}
		name := a.Host.LinkName(a.Dir)
		if seen[name] {
			return fmt.Errorf("%s has two %s access links; give one", a.Host, a.Dir)
		}
		seen[name] = true
	}
	return nil
}

// Packets returns how many packets cfg's flows are expected to send in
// all: the work a simulation has, for a caller to judge before Run how
// long it will take.
func Packets(cfg Config) float64 {
	var n float64
	for _, f := range cfg.Flows {
		n += expected(f, cfg.Duration)
	}
	return n
}

// expected returns the packets f is expected to send before duration.
func expected(f Flow, duration time.Duration) float64 {
	c := f.base()
	span := duration - c.Start
	if span <= 0 {
		return 0
	}
	n := span.Seconds()*float64(c.Rate)/float64(c.Size) + 1
	if c.Count > 0 {
		n = min(n, float64(c.Count))
	}
	return n
}

// reserve sizes the directions' delay records for the packets the flows
// are expected to send (a Poisson flow's count varies, so it gets a margin
// of a few standard deviations), so that the loop does not spend its time
// growing them.
func (r *runner) reserve() {
	var total [2]int
	var per [2]map[int32]int
	for i, f := range r.cfg.Flows {
		c := f.base()
		n := expected(f, r.cfg.Duration)
		if n == 0 {
			continue
		}
		if f.poisson() {
			n += 4*math.Sqrt(n) + 16
		}
		// Duplicates and the exact count are not known in advance; a
		// too-small reservation only costs one more growth.
		k := int(min(n, 1<<26))
		d := c.dir()
		if per[d] == nil {
			per[d] = map[int32]int{}
		}
		per[d][int32(i)] = k
		total[d] += k
	}
	for d := range r.paths {
		r.paths[d].ReserveDelays(total[d], per[d])
	}
}

// loop advances the virtual clock from event to event: to the earliest of
// the next emission and the two directions' deadlines. At each time it
// first emits every packet due, then releases everything due in each
// direction that received a packet or whose deadline has come, so a direct
// path delivers a packet at the instant it was sent.
func (r *runner) loop() {
	for {
		t := min(r.deadline[0], r.deadline[1])
		if len(r.srcs) > 0 {
			t = min(t, r.srcs[0].next)
		}
		if t >= r.end {
			return
		}
		for len(r.srcs) > 0 && r.srcs[0].next == t {
			s := r.srcs[0]
			p := r.pool.Get()
			s.emit(p)
			r.paths[s.dir].Enqueue(t, s.in, s.out, p)
			r.touched[s.dir] = true
			r.srcs.down(0)
		}
		for i, p := range r.paths {
			if r.touched[i] || r.deadline[i] <= t {
				r.touched[i] = false
				r.release(i, p, t)
			}
		}
	}
}

// release takes every packet due at now out of direction i.
func (r *runner) release(i int, path *link.Path, now clock.Time) {
	for {
		p, _, next := path.Dequeue(now)
		if p == nil {
			// A deadline that is not in the future would stall the
			// clock; retry 1 ns later instead.
			r.deadline[i] = max(next, now+1)
			return
		}
		if r.cfg.OnPacket != nil {
			v := VerdictDelivered
			if p.Marked {
				v = VerdictMarked
			}
			r.cfg.OnPacket(PacketRecord{Flow: p.Flow, Seq: p.Seq, Dir: r.names[i], Size: p.Len(),
				SentNs: int64(p.PathArrival), LeftNs: int64(now), Verdict: v, Dup: p.Dup})
		}
		p.Free()
	}
}

// dropHook reports drops to Config.OnPacket and passes every event on to
// the direction's own hook.
type dropHook struct {
	r    *runner
	dir  string
	next link.Hook
}

func (h *dropHook) Event(e *link.Event) {
	if h.next != nil {
		h.next.Event(e)
	}
	if e.Kind != link.Drop {
		return
	}
	p := e.Packet
	v := "dropped:unknown"
	if int(e.Reason) < len(dropVerdicts) {
		v = dropVerdicts[e.Reason]
	}
	h.r.cfg.OnPacket(PacketRecord{Flow: p.Flow, Seq: p.Seq, Dir: h.dir, Size: p.Len(),
		SentNs: int64(p.PathArrival), LeftNs: -1, Verdict: v, Dup: p.Dup})
}
