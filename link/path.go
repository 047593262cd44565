package link

import (
	"fmt"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
)

// MaxPorts bounds the ingress and the egress ports of a Path each
// (packet.InPort and OutPort are bytes).
const MaxPorts = 256

// Place says where a stage of a Path sits.
type Place uint8

// The stages of a Path, in the order a packet crosses them.
const (
	// Ingress is the access link from the sending host, one per ingress
	// port.
	Ingress Place = iota
	// Bottleneck is the link every packet of the path crosses.
	Bottleneck
	// Egress is the access link to the receiving host, one per egress
	// port.
	Egress
)

var placeNames = [...]string{Ingress: "ingress", Bottleneck: "bottleneck", Egress: "egress"}

// String returns the place's lowercase name.
func (p Place) String() string {
	if int(p) < len(placeNames) {
		return placeNames[p]
	}
	return "unknown"
}

// Stage names one stage of a Path: its place and, for an access link, its
// port (0 for the bottleneck).
type Stage struct {
	Place Place
	Port  int
}

// PathConfig describes a Path.
type PathConfig struct {
	// Name labels the path ("up", "down") in errors.
	Name string
	// Bottleneck is the shared link.
	Bottleneck Config
	// In and Out are the access links of the ingress and egress ports,
	// one entry per port: there are len(In) ingress and len(Out) egress
	// ports, 1 to MaxPorts each. A nil entry is a port without an access
	// link, whose packets go straight into (or out of) the bottleneck at
	// no cost; such a port cannot be given a chain later (Path.SetChain),
	// so a port whose chain may change at run time needs a Config, with
	// an empty Chain for a direct link to start with.
	In, Out []*Config
	// PerFlow, KeepDelays and MaxKeptDelays are the end-to-end counters'
	// (Path.Counters, FlowCounters), as Config's are a link's.
	PerFlow       bool
	KeepDelays    bool
	MaxKeptDelays int
}

// Path is one direction of a dumbbell: per ingress port (the sending
// host) an optional access link, then the shared bottleneck, then per
// egress port (the receiving host) an optional access link, each a
// Direction. It is steppable as a Direction is: Enqueue offers a packet by
// its ports at a time, Dequeue returns the next packet that leaves the
// path by a time and the time it could have left.
//
// Inside, the stages advance in time order (a discrete-event merge): a
// packet a stage releases at t enters the next stage at t, whatever time
// the caller comes at, so the bottleneck sees the packets of several
// access links in the order they left them, and each stage's figures are
// those of the emulated path. Every stage keeps its Counters; the path
// keeps end-to-end ones, in total, per port and, with PerFlow, per flow.
//
// A path of the bottleneck alone between one ingress and one egress port
// is that Direction: Enqueue and Dequeue pass straight through, at its
// cost, and the end-to-end counters are the bottleneck's (which then keeps
// per-flow counters and exact delays if either config asks).
//
// It is not safe for concurrent use.
type Path struct {
	name   string
	nIn    int
	stages []*Direction // ingress ports, the bottleneck, egress ports; nil: no access link
	next   []clock.Time // per stage, when it may next release a packet (Never: not before an Enqueue)
	active []int        // the stages that are not nil, in order
	simple bool         // the bottleneck alone, between one port and one
	env    *qdisc.Env   // the bottleneck's: how the end-to-end counters count bytes

	// front is the latest time the path has been given or advanced to:
	// no stage is ever asked about an earlier one.
	front clock.Time
	// held are packets that left the path while an Enqueue advanced it
	// (the caller came late), waiting for Dequeue in the order they left.
	held     []held
	heldHead int
	// entering is the packet the path is handing to a stage, so that the
	// stage's hook can tell a duplicate (any other packet) from it.
	entering *packet.Packet

	account       // end to end
	ports   []acc // end to end per ingress port, then per egress port
}

type held struct {
	p *packet.Packet
	t clock.Time
}

// NewPath builds a path from cfg: each stage with New.
func NewPath(cfg PathConfig) (*Path, error) {
	nIn, nOut := len(cfg.In), len(cfg.Out)
	if nIn < 1 || nIn > MaxPorts || nOut < 1 || nOut > MaxPorts {
		return nil, fmt.Errorf("%s: %d ingress and %d egress ports: give 1 to %d of each", cfg.Name, nIn, nOut, MaxPorts)
	}
	p := &Path{name: cfg.Name, nIn: nIn, stages: make([]*Direction, nIn+1+nOut)}
	p.simple = nIn == 1 && nOut == 1 && cfg.In[0] == nil && cfg.Out[0] == nil
	b := cfg.Bottleneck
	if p.simple {
		b.PerFlow = b.PerFlow || cfg.PerFlow
		b.KeepDelays = b.KeepDelays || cfg.KeepDelays
		if b.MaxKeptDelays == 0 {
			b.MaxKeptDelays = cfg.MaxKeptDelays
		}
	}
	p.account.init(cfg.PerFlow, cfg.KeepDelays, cfg.MaxKeptDelays)
	p.ports = make([]acc, nIn+nOut)
	links := make([]*Config, 0, len(p.stages))
	links = append(links, cfg.In...)
	links = append(links, &b)
	links = append(links, cfg.Out...)
	for i, c := range links {
		if c == nil {
			continue
		}
		lc := *c
		if !p.simple {
			lc.Hook = &stageHook{p: p, next: c.Hook}
		}
		d, err := New(lc)
		if err != nil {
			return nil, err
		}
		p.stages[i] = d
		p.active = append(p.active, i)
	}
	p.env = p.stages[nIn].env
	p.next = make([]clock.Time, len(p.stages))
	for i := range p.next {
		p.next[i] = clock.Never
	}
	return p, nil
}

// Name returns the path's name.
func (p *Path) Name() string { return p.name }

// Ports returns the numbers of ingress and egress ports.
func (p *Path) Ports() (in, out int) { return p.nIn, len(p.stages) - p.nIn - 1 }

// index returns the position of st in p.stages, or -1 if there is none.
func (p *Path) index(st Stage) int {
	nOut := len(p.stages) - p.nIn - 1
	switch {
	case st.Place == Bottleneck:
		return p.nIn
	case st.Place == Ingress && st.Port >= 0 && st.Port < p.nIn:
		return st.Port
	case st.Place == Egress && st.Port >= 0 && st.Port < nOut:
		return p.nIn + 1 + st.Port
	}
	return -1
}

// Link returns the Direction of stage st, or nil if st is a port without
// an access link (or no port of the path). Read its counters and
// configuration through it; change its chain through Path.SetChain.
func (p *Path) Link(st Stage) *Direction {
	if i := p.index(st); i >= 0 {
		return p.stages[i]
	}
	return nil
}

// Len returns the number of packets inside the path.
func (p *Path) Len() int {
	n := len(p.held) - p.heldHead
	for _, i := range p.active {
		n += p.stages[i].Len()
	}
	return n
}

// Enqueue offers pk at time now, entering by ingress port in and to leave
// by egress port out (the caller decides both, by its addresses); it
// panics if either is not a port of the path. The path owns pk from now
// on.
func (p *Path) Enqueue(now clock.Time, in, out int, pk *packet.Packet) {
	if uint(in) >= uint(p.nIn) || uint(out) >= uint(len(p.stages)-p.nIn-1) {
		panic(fmt.Sprintf("link: %s: Enqueue by ports %d→%d of a path of %d→%d", p.name, in, out, p.nIn, len(p.stages)-p.nIn-1))
	}
	pk.InPort, pk.OutPort = uint8(in), uint8(out)
	pk.PathArrival = now
	if p.simple {
		p.stages[p.nIn].Enqueue(now, pk)
		return
	}
	// What left the stages before now left before pk came: move it on
	// first, so that no stage sees time go back.
	p.advance(now)
	n := p.env.PktLen(pk)
	p.sent(pk, n)
	segs := uint64(pk.Segments())
	for _, a := range p.portsOf(pk) {
		a.c.Sent += segs
		a.c.BytesIn += uint64(n)
	}
	s := in
	if p.stages[s] == nil {
		s = p.nIn
	}
	p.enter(s, now, pk)
}

// Dequeue returns the next packet that leaves the path by now, its egress
// port and the time it left (not after now), or nil and the time at which
// one may (clock.Never if none will without new arrivals). Call it until
// it returns nil to release everything that is due. The caller owns the
// packet returned.
func (p *Path) Dequeue(now clock.Time) (*packet.Packet, int, clock.Time) {
	return p.DequeueLate(now, now)
}

// DequeueLate is Dequeue for a caller that asks at now but should have
// asked at due, as Direction.DequeueLate: the stages decide at the times
// they would have, up to due, and the end-to-end delay is counted to now.
// Each stage counts its own delay to the time it released the packet, and
// the time returned is when the last stage did. A path of the bottleneck
// alone is that Direction, asked at due: its delay counts to now and the
// time returned is due.
func (p *Path) DequeueLate(due, now clock.Time) (*packet.Packet, int, clock.Time) {
	if p.simple {
		pk, next := p.stages[p.nIn].DequeueLate(due, now)
		if pk == nil {
			return nil, 0, next
		}
		return pk, int(pk.OutPort), next
	}
	for {
		if p.heldHead < len(p.held) {
			h := p.held[p.heldHead]
			if h.t > due {
				return nil, 0, h.t
			}
			p.held[p.heldHead] = held{}
			if p.heldHead++; p.heldHead == len(p.held) {
				p.held, p.heldHead = p.held[:0], 0
			}
			return p.leave(h.p, h.t, now)
		}
		s, t := p.earliest()
		if t > due {
			// Everything up to due is done: a chain changed now
			// changes at due.
			p.front = max(p.front, due)
			return nil, 0, t
		}
		if pk := p.step(s, t); pk != nil {
			return p.leave(pk, t, now)
		}
	}
}

// advance moves every packet due before now through the stages, keeping
// those that leave the path for Dequeue.
func (p *Path) advance(now clock.Time) {
	for {
		s, t := p.earliest()
		if t >= now {
			return
		}
		if pk := p.step(s, t); pk != nil {
			p.held = append(p.held, held{pk, t})
		}
	}
}

// earliest returns the stage that may release a packet first and when;
// of stages due at the same time the first in the path goes first, so
// that what the access links release at t is in the bottleneck before it
// is asked at t.
func (p *Path) earliest() (int, clock.Time) {
	s, t := -1, clock.Never
	for _, i := range p.active {
		if p.next[i] < t {
			s, t = i, p.next[i]
		}
	}
	return s, t
}

// step asks stage s for a packet at t and moves it into the next stage;
// it returns the packet if it leaves the path.
func (p *Path) step(s int, t clock.Time) *packet.Packet {
	p.front = max(p.front, t)
	pk, next := p.stages[s].DequeueLate(t, t)
	if pk == nil {
		// A time that is not in the future would ask again at once.
		if next <= t {
			next = t + 1
		}
		p.next[s] = next
		return nil
	}
	switch {
	case s < p.nIn:
		p.enter(p.nIn, t, pk)
	case s == p.nIn && p.stages[s+1+int(pk.OutPort)] != nil:
		p.enter(s+1+int(pk.OutPort), t, pk)
	default:
		return pk
	}
	return nil
}

// enter hands pk to stage s at t.
func (p *Path) enter(s int, t clock.Time, pk *packet.Packet) {
	p.front = max(p.front, t)
	p.entering = pk
	p.stages[s].Enqueue(t, pk)
	p.entering = nil
	p.next[s] = min(p.next[s], t)
}

// leave accounts for pk leaving the path at t, taken by the caller at now.
func (p *Path) leave(pk *packet.Packet, t, now clock.Time) (*packet.Packet, int, clock.Time) {
	n := p.env.PktLen(pk)
	delay := int64(now - pk.PathArrival)
	reordered := p.delivered(pk, n, delay)
	for _, a := range p.portsOf(pk) {
		a.delivered(pk.Segments(), n, delay)
		if reordered {
			a.c.Reordered++
		}
	}
	return pk, int(pk.OutPort), t
}

// portsOf returns the end-to-end accumulators of pk's ports.
func (p *Path) portsOf(pk *packet.Packet) [2]*acc {
	return [2]*acc{&p.ports[pk.InPort], &p.ports[p.nIn+int(pk.OutPort)]}
}

// stageHook counts in the path's end-to-end counters what happens to a
// packet inside a stage, and passes every event on to the stage's own
// hook.
type stageHook struct {
	p    *Path
	next Hook
}

func (h *stageHook) Event(e *Event) {
	p, pk := h.p, e.Packet
	switch {
	case e.Kind == Enqueue && pk != p.entering:
		// A packet the stage made itself: a netem duplicate.
		p.duplicated(pk)
		for _, a := range p.portsOf(pk) {
			a.c.Duplicated += uint64(pk.Segments())
		}
	case e.Kind == Drop:
		p.dropped(pk, e.Reason)
		for _, a := range p.portsOf(pk) {
			a.dropped(uint64(pk.Segments()), e.Reason)
		}
	case e.Kind == Mark:
		p.marked(pk)
		for _, a := range p.portsOf(pk) {
			a.c.Marked += uint64(pk.Segments())
		}
	}
	if h.next != nil {
		h.next.Event(e)
	}
}

// SetChain changes the chain of stage st as Direction.SetChain does, at
// the latest time the path has seen. A port without an access link has
// no chain to change.
func (p *Path) SetChain(st Stage, chain []qdisc.Spec) (qdisc.ChainChange, error) {
	i, err := p.stage(st)
	if err != nil {
		return nil, err
	}
	d := p.stages[i]
	rep, err := d.SetChain(chain)
	if err != nil {
		return nil, err
	}
	if !p.simple {
		// The new tree may have a packet ready earlier than the old one
		// said: look at it again now.
		p.next[i] = min(p.next[i], max(d.now, p.front))
	}
	return rep, nil
}

// CheckChain reports whether SetChain(st, chain) would succeed, without
// changing anything.
func (p *Path) CheckChain(st Stage, chain []qdisc.Spec) error {
	i, err := p.stage(st)
	if err != nil {
		return err
	}
	return p.stages[i].CheckChain(chain)
}

// stage returns the index of st's link, or an error that says why there
// is none.
func (p *Path) stage(st Stage) (int, error) {
	i := p.index(st)
	switch {
	case i < 0:
		in, out := p.Ports()
		return 0, fmt.Errorf("%s: no %s port %d: the path has %d ingress and %d egress ports, numbered from 0", p.name, st.Place, st.Port, in, out)
	case p.stages[i] == nil:
		return 0, fmt.Errorf("%s: %s port %d has no access link whose chain could change: build the path with one (an empty chain is a direct link)", p.name, st.Place, st.Port)
	}
	return i, nil
}

// Counters returns a snapshot of the path's end-to-end counters: packets
// offered to Enqueue and returned by Dequeue, dropped, marked or
// duplicated by any stage, and their delay from Enqueue to Dequeue.
func (p *Path) Counters() Counters {
	if p.simple {
		return p.stages[p.nIn].Counters()
	}
	return p.total.snapshot()
}

// PortCounters returns a snapshot of the end-to-end counters of the
// packets that entered by ingress port port (place Ingress) or leave by
// egress port port (Egress); their delays are summarised by histograms
// (Delay.Exact is false). It returns the zero Counters for a port the
// path does not have.
func (p *Path) PortCounters(place Place, port int) Counters {
	i := p.index(Stage{place, port})
	if i < 0 || place == Bottleneck {
		return Counters{}
	}
	if p.simple {
		return p.stages[p.nIn].Counters()
	}
	if place == Egress {
		i--
	}
	return p.ports[i].snapshot()
}

// FlowCounters returns a snapshot of the end-to-end counters of every flow
// seen, by packet.Flow, or nil unless PathConfig.PerFlow is set.
func (p *Path) FlowCounters() map[int32]Counters {
	if p.simple {
		return p.stages[p.nIn].FlowCounters()
	}
	return p.flowCounters()
}

// ReserveDelays is Direction.ReserveDelays for the end-to-end counters.
func (p *Path) ReserveDelays(n int, perFlow map[int32]int) {
	if p.simple {
		p.stages[p.nIn].ReserveDelays(n, perFlow)
		return
	}
	p.reserve(n, perFlow)
}
