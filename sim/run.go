// Package sim is a discrete-event simulator: synthetic UDP flows crossing
// the two directions of a path (link.Direction, with their qdisc trees and
// traces) on a virtual clock. It runs much faster than real time, makes no
// system calls, and gives the same result for the same configuration and
// seed.
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
	// Up and Down are the two directions. Run names them "up" and "down"
	// if their names are empty, turns on PerFlow and KeepDelays (the
	// results give exact per-flow percentiles), gives both its own packet
	// pool as Env.Pool, and, where Env.Seed is 0, sets it to
	// link.DirectionSeed(Seed, name), as the lab does.
	Up, Down link.Config
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

// PacketRecord is one packet's fate.
type PacketRecord struct {
	Flow int32
	Seq  int64
	// Dir is "up" or "down" (the direction's name).
	Dir  string
	Size int
	// SentNs is when the packet entered its direction; LeftNs when it left,
	// or -1 if it was dropped.
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
	dirs     [2]*link.Direction
	names    [2]string
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
	if cfg.Duration <= 0 {
		return nil, fmt.Errorf("duration %v must be positive; e.g. 10s", cfg.Duration)
	}
	maxSize := 0
	for i, f := range cfg.Flows {
		if f == nil {
			return nil, fmt.Errorf("flow %d is nil", i)
		}
		if err := f.base().validate(); err != nil {
			return nil, fmt.Errorf("flow %d (%s): %w", i, f, err)
		}
		maxSize = max(maxSize, f.base().Size)
	}
	r := &runner{
		cfg:  cfg,
		pool: packet.NewPool(max(2048, maxSize+packet.DefaultHeadroom), packet.DefaultHeadroom),
		end:  clock.Time(cfg.Duration),
	}
	for i, lc := range []link.Config{cfg.Up, cfg.Down} {
		if lc.Name == "" {
			lc.Name = [2]string{"up", "down"}[i]
		}
		lc.PerFlow, lc.KeepDelays = true, true
		lc.Env.Pool = r.pool
		if lc.Env.Seed == 0 {
			lc.Env.Seed = link.DirectionSeed(cfg.Seed, lc.Name)
		}
		if cfg.OnPacket != nil {
			lc.Hook = &dropHook{r: r, dir: lc.Name, next: lc.Hook}
		}
		d, err := link.New(lc)
		if err != nil {
			return nil, fmt.Errorf("%w", err)
		}
		r.dirs[i], r.names[i] = d, lc.Name
		r.deadline[i] = clock.Never
	}
	r.reserve()
	r.srcs = make(sources, len(cfg.Flows))
	for i, f := range cfg.Flows {
		r.srcs[i] = newSource(i, f, cfg.Seed)
	}
	r.srcs.init()
	return r, nil
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
	for d := range r.dirs {
		r.dirs[d].ReserveDelays(total[d], per[d])
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
			r.dirs[s.dir].Enqueue(t, p)
			r.touched[s.dir] = true
			r.srcs.down(0)
		}
		for i, d := range r.dirs {
			if r.touched[i] || r.deadline[i] <= t {
				r.touched[i] = false
				r.release(i, d, t)
			}
		}
	}
}

// release takes every packet due at now out of direction i.
func (r *runner) release(i int, d *link.Direction, now clock.Time) {
	for {
		p, next := d.Dequeue(now)
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
				SentNs: int64(p.Arrival), LeftNs: int64(now), Verdict: v, Dup: p.Dup})
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
		SentNs: int64(p.Arrival), LeftNs: -1, Verdict: v, Dup: p.Dup})
}
