package router

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/tcspec"
	"wanlab/tun"
)

// dirHosts are the hosts of one direction of a router of many hosts
// (Config.Clients and Servers): in, the hosts it reads from, are its
// ingress ports, and out, those it writes to, its egress ports, each with
// its access link in this direction (inAccess, outAccess; nil for none).
// The up direction reads the clients and writes the servers, the down
// one the reverse.
//
// direct says the hosts are one client and one server without access
// links: the loop then carries them as the router of Client and Server
// does (path nil), and its ports are the direction's.
type dirHosts struct {
	dir                 string // "up" or "down"
	direct              bool
	in, out             []Host
	inAccess, outAccess []*link.Config
	// chains are the access links' current chains, the ingress ports'
	// then the egress ports' (nil for a port without one), for reports.
	chains [][]qdisc.Spec
	// writeDrops counts, per egress port, the segments its device
	// refused (on the loop's thread).
	writeDrops []uint64
}

func newDirHosts(dir string, clients, servers []Host, direct bool) *dirHosts {
	h := &dirHosts{dir: dir, direct: direct, in: clients, out: servers}
	if dir == "down" {
		h.in, h.out = servers, clients
	}
	for _, x := range h.in {
		h.inAccess = append(h.inAccess, x.access(dir))
	}
	for _, x := range h.out {
		h.outAccess = append(h.outAccess, x.access(dir))
	}
	for _, c := range slices.Concat(h.inAccess, h.outAccess) {
		var chain []qdisc.Spec
		if c != nil {
			chain = slices.Clone(c.Chain)
		}
		h.chains = append(h.chains, chain)
	}
	h.writeDrops = make([]uint64, len(h.out))
	return h
}

// access returns h's access link in direction dir.
func (h Host) access(dir string) *link.Config {
	if dir == "up" {
		return h.Up
	}
	return h.Down
}

// stage returns where host's access link sits in the direction: a
// client sends up and receives down, a server the reverse.
func (h *dirHosts) stage(host link.Host) link.Stage {
	if host.Server == (h.dir == "down") {
		return link.Stage{Place: link.Ingress, Port: host.Port()}
	}
	return link.Stage{Place: link.Egress, Port: host.Port()}
}

// chainIndex returns the index in h.chains of stage st.
func (h *dirHosts) chainIndex(st link.Stage) int {
	if st.Place == link.Egress {
		return len(h.in) + st.Port
	}
	return st.Port
}

// checkHosts checks cfg's Clients and Servers, which it replaces by
// copies with their names filled in, and reports whether they are one
// client and one server without access links (see dirHosts.direct).
func checkHosts(cfg *Config) (direct bool, err error) {
	if cfg.Client != nil || cfg.Server != nil || cfg.ClientIf != "" || cfg.ServerIf != "" || cfg.UpRing != nil || cfg.DownRing != nil {
		return false, errors.New("router: Config.Clients and Servers replace Client, Server, ClientIf, ServerIf, UpRing and DownRing: give each host's Device, If and Ring in its Host and leave those unset")
	}
	cfg.Clients, cfg.Servers = slices.Clone(cfg.Clients), slices.Clone(cfg.Servers)
	owner := map[netip.Addr]link.Host{}
	devs := map[Device]link.Host{}
	access := false
	for _, side := range []struct {
		hosts  []Host
		server bool
		what   string
	}{{cfg.Clients, false, "clients"}, {cfg.Servers, true, "servers"}} {
		if n := len(side.hosts); n < 1 || n > link.MaxHosts {
			return false, fmt.Errorf("router: %d %s: a router of many hosts has 1 to %d %s", n, side.what, link.MaxHosts, side.what)
		}
		for i := range side.hosts {
			h := &side.hosts[i]
			want := link.Host{Server: side.server, N: i + 1}
			if h.Name == (link.Host{}) {
				h.Name = want
			}
			if h.Name != want {
				return false, fmt.Errorf("router: %s number %d is named %s: name the %s %s, %s, ... in order (or leave Name unset)", side.what[:len(side.what)-1], i+1, h.Name, side.what, link.Host{Server: side.server, N: 1}, link.Host{Server: side.server, N: 2})
			}
			if h.Device == nil {
				return false, fmt.Errorf("router: host %s has no Device: open its TUN (tun.VNet) in its namespace", h.Name)
			}
			if o, dup := devs[h.Device]; dup {
				return false, fmt.Errorf("router: hosts %s and %s have the same device %s: give each host a device of its own", o, h.Name, h.Device.Name())
			}
			devs[h.Device] = h.Name
			if len(h.Addrs) == 0 {
				return false, fmt.Errorf("router: host %s has no Addrs: give the addresses packets to it are sent to", h.Name)
			}
			for _, a := range h.Addrs {
				if !a.IsValid() {
					return false, fmt.Errorf("router: host %s: an address is the zero netip.Addr: give valid addresses", h.Name)
				}
				a = a.Unmap()
				if o, dup := owner[a]; dup {
					return false, fmt.Errorf("router: address %s is given to both %s and %s: each address routes to one host; give it to one of them", a, o, h.Name)
				}
				owner[a] = h.Name
			}
			access = access || h.Up != nil || h.Down != nil
		}
	}
	direct = len(cfg.Clients) == 1 && len(cfg.Servers) == 1 && !access
	if direct {
		return true, nil
	}
	for _, h := range slices.Concat(cfg.Clients, cfg.Servers) {
		if _, ok := h.Device.(tun.VNetDevice); !ok {
			return false, fmt.Errorf("router: host %s: device %s (%T) is not a VNet TUN: a router of many hosts (or with access links) carries VNet TUNs only; open each with tun.Options{Kind: tun.VNet}, or join two hosts of another kind with Config.Client and Server", h.Name, h.Device.Name(), h.Device)
		}
	}
	return false, nil
}

// buildPath makes the loop's path: each ingress host's access link,
// the bottleneck cfg, each egress host's access link; and the routes to
// the egress hosts' addresses.
func (l *loop) buildPath(cfg link.Config, h *dirHosts) error {
	pc := link.PathConfig{Name: cfg.Name, Bottleneck: cfg, KeepDelays: cfg.KeepDelays, MaxKeptDelays: cfg.MaxKeptDelays}
	access := func(x Host, c *link.Config) *link.Config {
		if c == nil {
			return nil
		}
		ac := *c
		if ac.Name == "" {
			ac.Name = x.Name.LinkName(h.dir)
		}
		if ac.Env.Seed == 0 {
			ac.Env.Seed = link.DirectionSeed(cfg.Env.Seed, ac.Name)
		}
		ac.Env.Framing, ac.Env.Granularity, ac.Env.Pool = cfg.Env.Framing, cfg.Env.Granularity, cfg.Env.Pool
		ac.PerFlow = false
		ac.Hook = &accessHook{l: l, next: c.Hook}
		// A trace anywhere counts its opportunities' bytes per buffer.
		l.trace = l.trace || c.Trace != nil
		return &ac
	}
	for i, x := range h.in {
		pc.In = append(pc.In, access(x, h.inAccess[i]))
	}
	for i, x := range h.out {
		pc.Out = append(pc.Out, access(x, h.outAccess[i]))
		for _, a := range x.Addrs {
			l.routes.add(a, i)
		}
	}
	p, err := link.NewPath(pc)
	if err != nil {
		return err
	}
	l.path = p
	l.dir = p.Link(link.Stage{Place: link.Bottleneck})
	return nil
}

// accessHook takes the events of an access link: the loop accounts
// them as the bottleneck's (per flow), and the access link's own hook, if
// any, sees them.
type accessHook struct {
	l    *loop
	next link.Hook
}

func (a *accessHook) Event(e *link.Event) {
	a.l.account(e)
	if a.next != nil {
		a.next.Event(e)
	}
}

// checkAccessChain reports whether setAccessChain(host, chain) would
// succeed, on the loop's goroutine.
func (l *loop) checkAccessChain(host link.Host, chain []qdisc.Spec) error {
	st, err := l.accessStage(host)
	if err != nil {
		return err
	}
	l.r.inLoop(l, func() { err = l.path.CheckChain(st, chain) })
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	return nil
}

func (l *loop) setAccessChain(host link.Host, chain []qdisc.Spec) (qdisc.ChainChange, error) {
	st, err := l.accessStage(host)
	if err != nil {
		return nil, err
	}
	var rep qdisc.ChainChange
	l.r.inLoop(l, func() {
		if rep, err = l.path.SetChain(st, chain); err != nil {
			return
		}
		l.hosts.chains[l.hosts.chainIndex(st)] = slices.Clone(chain)
		// The path may have a packet due earlier than it said.
		l.lastNext = 0
	})
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return rep, nil
}

// accessStage returns where host's access link sits in the loop's
// path, or an error that says why it has none.
func (l *loop) accessStage(host link.Host) (link.Stage, error) {
	h := l.hosts
	if h == nil {
		return link.Stage{}, fmt.Errorf("router: no host %s: this router joins Client and Server; access links need Config.Clients and Servers", host)
	}
	nc, ns := len(h.in), len(h.out)
	if h.dir == "down" {
		nc, ns = ns, nc
	}
	if err := host.Check(nc, ns); err != nil {
		return link.Stage{}, fmt.Errorf("router: %w", err)
	}
	st := h.stage(host)
	if l.path == nil || l.path.Link(st) == nil {
		return link.Stage{}, fmt.Errorf("router: host %s has no %s access link whose chain could change: give it one when the router is made (Host.%s, an empty chain for a direct link to start with)", host, h.dir, accessField(h.dir))
	}
	return st, nil
}

// accessField names the Host field of a direction's access link.
func accessField(dir string) string {
	if dir == "up" {
		return "Up"
	}
	return "Down"
}

// portSnapshots returns the direction's ports, its ingress hosts' then
// its egress hosts', with s's counters for a direct router (whose one
// port each way is the whole direction); on the loop's goroutine.
func (l *loop) portSnapshots(s *DirSnapshot) []PortSnapshot {
	h := l.hosts
	ports := make([]PortSnapshot, 0, len(h.in)+len(h.out))
	add := func(x Host, place link.Place, port int) {
		ps := PortSnapshot{Host: x.Name.String(), Place: place.String(), If: x.If}
		if l.path == nil {
			ps.Counters = s.Counters
			if place == link.Egress {
				ps.WriteDrops = s.WriteDrops
			}
			ports = append(ports, ps)
			return
		}
		st := link.Stage{Place: place, Port: port}
		ps.Counters = l.path.PortCounters(place, port)
		if d := l.path.Link(st); d != nil {
			c := d.Counters()
			ps.Access = &c
			ps.Chain = tcspec.FormatChain(h.chains[h.chainIndex(st)])
		}
		if place == link.Egress {
			ps.WriteDrops = h.writeDrops[port]
		}
		ports = append(ports, ps)
	}
	for i, x := range h.in {
		add(x, link.Ingress, i)
	}
	for i, x := range h.out {
		add(x, link.Egress, i)
	}
	return ports
}

// readRings reads the rings of the direction's ingress hosts into their
// ports, and their sum into the direction's; on the caller's goroutine.
func (h *dirHosts) readRings(s *DirSnapshot) {
	if h.direct {
		// The direction's ring is the one host's (Config.UpRing).
		s.Ports[0].Ring.Size, s.Ports[0].Ring.Drops, s.Ports[0].Ring.Err = s.Ring.Size, s.Ring.Drops, s.Ring.Err
		return
	}
	for i, x := range h.in {
		if x.Ring == nil {
			continue
		}
		rc, err := x.Ring()
		r := &s.Ports[i].Ring
		r.Size, r.Drops = rc.Size, rc.Drops
		s.Ring.Size += rc.Size
		s.Ring.Drops += rc.Drops
		if err != nil {
			r.Err = err.Error()
			if s.Ring.Err == "" {
				s.Ring.Err = fmt.Sprintf("%s: %v", x.Name, err)
			}
		}
	}
}
