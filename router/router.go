// Package router is wanlab's real-time loop: it carries the kernel traffic
// of two hosts through one link.Direction per direction, read from and
// written to their TUN devices, or to packet sockets on two Ethernet
// interfaces (see Device); or that of a dumbbell of many hosts through one
// link.Path per direction (see Many hosts).
//
// A packet's path through a direction, in the order the code in loop.go
// follows it:
//
//	read      ingress.read takes what the device holds, up to a batch,
//	          without waiting (vnetIngress for a VNet TUN and
//	          frameIngress for a packet socket, on the loop's thread;
//	          chanIngress from a reader goroutine for other TUNs), and no
//	          more than the loop can release on time later (readPacer): a
//	          loop that cannot keep up leaves packets in the ring in front
//	          of it rather than releasing them late. A packet arrives when
//	          it is read, or, from a packet socket, when the kernel took
//	          it in (frameIngress.arrival)
//	classify  loop.arrive: virtio-net header, 5-tuple and flow, and
//	          whether a GSO super-packet enters whole (packet.DescribeGSO's
//	          segments) or is split into wire segments (splitter) with their
//	          checksums completed; what is not an IP packet that fits its
//	          own length fields, or cannot be split, is counted as
//	          malformed and dropped here
//	link      loop.enqueue: link.Direction.Enqueue, into the qdisc tree
//	release   loop.release: link.Direction.Dequeue of everything due now,
//	          each packet with the deadline it could have left at
//	write     egress.write: to the other device (vnetEgress, which
//	          coalesces TCP segments due together into GSO writes and UDP
//	          datagrams into USO ones, to a VNet TUN or, each packet behind
//	          the Ethernet header it came with, to a packet socket;
//	          batchEgress for other TUNs)
//	account   dirStats: what the link does not count itself (each
//	          discipline's own drops, flows, lateness, the ring in front of
//	          the ingress, refused writes, the loop's busy time)
//
// Each direction runs on its own OS thread, locked and with a timer slack of
// 1 ns. It waits in ppoll(2) on the ingress device with a nanosecond timeout
// until the next packet or the link's next deadline, spins through the last
// microseconds before a deadline, and then releases every packet that is
// due. How late each packet leaves against the time the link said it could
// (its release lateness) is kept in a histogram: it is the emulator's own
// timing error.
//
// # Many hosts
//
// With Config.Clients and Servers, each direction's loop reads the VNet
// TUNs of its sending hosts and writes those of its receiving hosts,
// through a link.Path: the sending host's access link, the shared
// bottleneck (Config.Up or Down), the receiving host's access link. A
// packet enters the path by the port of the device it was read from; its
// egress port is the receiving host one of whose Addrs is its destination
// (routeTable, a scan of a small flat table at classify), and a packet to
// no receiving host's address is dropped there and counted
// (DirSnapshot.NoRoute): a dumbbell carries traffic between clients and
// servers, so a client's packet to another client finds no route.
// The loop waits in one ppoll(2) over every sending host's device and its
// wake eventfd (tun.VNetSet), and reads the devices that have packets in
// turn, one packet from each, each pass starting after the device the
// last one ended at (multiIngress), within the read pacer's limits as for
// one device, so that no host keeps the others' packets waiting. Each
// receiving host has its own egress, coalescing as for one, flushed after
// every release pass. One client and one server without access links are
// the router of Client and Server, at its cost.
//
// # Packet sockets
//
// On packet sockets (package packetsock) the router is a bridge between
// two Ethernet interfaces. Each packet's arrival is the kernel's time of
// it, taken in the receive path whatever the loop was doing, so a packet
// that waited in the socket's ring is as old as it is: its delay, its
// sojourn in a queue and its deadline count from when it arrived, and a
// loop that read it late shows as the ring's wait and, where that made
// its release late, as release lateness. (On a TUN, a packet arrives when
// it is read: the time it waited in the ring is lost.) The link sees IP
// packets as on a TUN; each keeps the Ethernet header it came with (its
// index in the direction's l2Headers rides in packet.Tag) and leaves
// behind it. A frame that is not an IPv4 or IPv6 packet crosses outside
// the link, written to the other side as soon as it is read and counted
// (DirSnapshot.NonIP): ARP crosses unshaped, while NDP, being ICMPv6,
// crosses the chain like any IP packet. Super-packets enter the link whole
// only where the egress interface segments every kind of them itself
// (packetsock.Offload); otherwise they are split before it.
//
// # Super-packets
//
// With devices of kind tun.VNet, and packet sockets on interfaces that
// segment them, GSO super-packets of up to 64 KiB enter the link whole. Its disciplines decide per wire segment, in segment
// order, as they would for the segments one by one (see
// qdisc.GranularitySegment), and cut a super-packet, headers and
// checksums right, only where its segments' fates differ; on the way out
// the egress coalesces the segments of one TCP flow that are due together
// back into one super-packet (as the kernel's GRO does; groTable), and UDP
// datagrams into USO ones (usoBatch). With Config.Granularity
// qdisc.GranularityGSO the disciplines take a super-packet as one packet
// instead, as tc on the sending host's own egress does. Without such
// devices, or with a trace, super-packets are split into wire segments
// before the link. All counters count wire segments and their framed
// bytes, so a whole super-packet counts as the segments it stands for; see
// DirSnapshot.
package router

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"wanlab/clock"
	"wanlab/fidelity"
	"wanlab/internal/procs"
	"wanlab/link"
	"wanlab/qdisc"
)

// Config describes one router between two hosts.
type Config struct {
	// Up carries client→server traffic (read from Client, written to
	// Server); Down the reverse. Each is a link.Config (Name "up"/"down",
	// Chain in qdisc.Spec form, optional Trace, Env.Seed/MTU/TxQueueLen;
	// Env.Framing and Env.Granularity are set from Framing and Granularity).
	// The router sets Env.Pool, PerFlow and the Hook itself; a Hook given
	// here is called after the router's own, on the direction's loop
	// thread, with event times on the router's clock (see Router.Wall);
	// it must not call the Router's methods, which wait for that loop.
	Up, Down link.Config
	// Client and Server are opened by the caller, in their namespaces
	// (see Device).
	Client, Server Device
	// Clients and Servers, when either is set, make the router a
	// dumbbell of that many hosts (1 to link.MaxHosts each), every host
	// with its device, addresses and access links (see Host), and replace
	// Client, Server, ClientIf, ServerIf, UpRing and DownRing, which must
	// then be unset. Up and Down are the bottlenecks. The devices must be
	// VNet TUNs (tun.VNet). One client and one server without access links
	// forward as Client and Server do, at their cost, with devices of any
	// kind: every packet goes to the other host, whatever its destination.
	Clients, Servers []Host
	// ClientIf and ServerIf are the interface names, for reports.
	ClientIf, ServerIf string
	// Framing is what the emulated devices count in each packet's length
	// (qdisc.FramingEthernet, the zero value, or FramingIP): both
	// directions' disciplines and the router's byte counters use it.
	Framing qdisc.Framing
	// Granularity is what both directions' disciplines take as one packet
	// when a GSO super-packet reaches them: each of its wire segments
	// (qdisc.GranularitySegment, the zero value) or the whole
	// (GranularityGSO, as tc on the sending host's egress). Where the
	// router splits super-packets before the link (a trace, or a device
	// of another kind than tun.VNet), the disciplines see segments
	// either way.
	Granularity qdisc.Granularity
	// UpRing and DownRing, when set, read the kernel's figures for the
	// ring in front of a direction's ingress device (TUNRing, PacketRing);
	// the router reports them in the Snapshot, reading them on the
	// caller's goroutine. The kernel queues packets only on the way from
	// a host to the router, so the ring of "up" is the client device's
	// (packets the up loop did not read in time), and that of "down" the
	// server's.
	UpRing, DownRing func() (RingCounters, error)
	// Pcap, when set, receives every packet that crosses the links, both
	// directions, as a pcap stream (nanosecond timestamps, LINKTYPE_RAW:
	// IP packets, without the Ethernet headers of a packet socket's
	// frames, and none of the frames that cross outside the links) with
	// the time the router handed it to the egress device. A write to it that fails
	// (a reader that went away, a full disk) ends the capture, not the
	// router: it goes on forwarding, records nothing more, and calls
	// PcapFailed if set (once, on a goroutine of its own); PcapErr says
	// it too.
	Pcap       io.Writer
	PcapFailed func(error)
	// RealTimePriority, when between 1 and 99, runs both loops with the
	// SCHED_FIFO scheduling policy at that priority, so that the programs
	// whose packets they carry (woken by the loop's own writes) cannot
	// preempt them; 0 keeps normal scheduling. It is meant for loops that
	// have CPUs to themselves (docs/benchmarks.md measures it on a machine
	// where they do not).
	RealTimePriority int
}

// Device is one side of the router: a TUN device (tun.Device) or a packet
// socket on an Ethernet interface (*packetsock.Device). TUNs of kind
// tun.VNet and packet sockets are read and written directly on the loops'
// threads; other TUNs through a reader goroutine. The two sides are of one
// plane: two TUNs, or two packet sockets.
type Device interface {
	// Name returns the interface's name.
	Name() string
}

// Router forwards between two devices. Its methods are safe for
// concurrent use.
type Router struct {
	clk      *clock.Real
	up, down *loop
	pcap     *pcapWriter

	mu      sync.Mutex // guards started and each loop's running
	started bool
	// busyLoops counts the loops that traffic keeps busy: while any is,
	// neither has its scheduling boost (loop.review).
	busyLoops atomic.Int32
}

// New checks cfg and prepares a router; Run starts it.
func New(cfg Config) (*Router, error) {
	var upHosts, downHosts *dirHosts
	if len(cfg.Clients)+len(cfg.Servers) > 0 {
		direct, err := checkHosts(&cfg)
		if err != nil {
			return nil, err
		}
		upHosts = newDirHosts("up", cfg.Clients, cfg.Servers, direct)
		downHosts = newDirHosts("down", cfg.Clients, cfg.Servers, direct)
		if direct {
			c, s := cfg.Clients[0], cfg.Servers[0]
			cfg.Client, cfg.Server, cfg.ClientIf, cfg.ServerIf = c.Device, s.Device, c.If, s.If
			cfg.UpRing, cfg.DownRing = c.Ring, s.Ring
		}
	}
	many := upHosts != nil && !upHosts.direct
	if !many && (cfg.Client == nil || cfg.Server == nil) {
		return nil, errors.New("router: Config needs both the Client and the Server device, or Clients and Servers")
	}
	if !many && cfg.Client == cfg.Server {
		return nil, errors.New("router: Client and Server are the same device; give one device per host")
	}
	r := &Router{clk: clock.NewReal()}
	if cfg.Pcap != nil {
		p, err := newPcapWriter(cfg.Pcap, r.clk, cfg.PcapFailed)
		if err != nil {
			return nil, err
		}
		r.pcap = p
	}
	if cfg.RealTimePriority < 0 || cfg.RealTimePriority > 99 {
		return nil, fmt.Errorf("router: RealTimePriority %d is outside 0 (off) to 99", cfg.RealTimePriority)
	}
	if cfg.Up.Name == "" {
		cfg.Up.Name = "up"
	}
	if cfg.Down.Name == "" {
		cfg.Down.Name = "down"
	}
	cfg.Up.Env.Framing, cfg.Down.Env.Framing = cfg.Framing, cfg.Framing
	cfg.Up.Env.Granularity, cfg.Down.Env.Granularity = cfg.Granularity, cfg.Granularity
	var err error
	r.up, err = newLoop(r, cfg.Up, cfg.Client, cfg.Server, upHosts, cfg.UpRing, cfg.RealTimePriority)
	if err != nil {
		return nil, err
	}
	r.down, err = newLoop(r, cfg.Down, cfg.Server, cfg.Client, downHosts, cfg.DownRing, cfg.RealTimePriority)
	if err != nil {
		r.up.close()
		return nil, err
	}
	return r, nil
}

// Run forwards until ctx is cancelled or a device fails; it returns nil on
// cancellation and the device's error otherwise (a capture that failed is
// not the router's failure: see Config.Pcap). It may be called once. The devices stay open: the
// caller closes them after Run returns.
func (r *Router) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("router: Run called twice")
	}
	r.started = true
	r.up.running, r.down.running = true, true
	r.mu.Unlock()

	// Each loop gets a P of the Go runtime's of its own, so that waking
	// it never waits for other goroutines to give one up (package procs).
	defer procs.Reserve(2)()
	errc := make(chan error, 2)
	for _, l := range []*loop{r.up, r.down} {
		go func() { errc <- l.run() }()
	}
	stopFlush := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		if r.pcap == nil {
			return
		}
		t := time.NewTicker(pcapFlushEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				r.pcap.flush()
			case <-stopFlush:
				return
			}
		}
	}()

	errs := make([]error, 0, 2)
	select {
	case <-ctx.Done():
	case err := <-errc:
		errs = append(errs, err)
	}
	r.up.stop()
	r.down.stop()
	for len(errs) < 2 {
		errs = append(errs, <-errc)
	}
	var err error
	for _, e := range errs {
		if e != nil && !errors.Is(e, errStopped) {
			err = e
			break
		}
	}
	close(stopFlush)
	<-flushed
	if r.pcap != nil {
		r.pcap.flush()
	}
	r.up.close()
	r.down.close()
	return err
}

// errStopped ends a loop that was asked to stop.
var errStopped = errors.New("router: stopped")

// Snapshot returns live counters; safe to call from any goroutine while Run
// runs, and before or after. While Run runs, each direction's loop copies
// its counters between two iterations (a few microseconds, which the
// packets due then wait), so poll it every few milliseconds at most; the
// ring counters are read on the caller's goroutine.
//
// Each direction carries the fidelity verdict on the router's whole run
// so far (fidelity.Judge), against the smallest one-way delay the current
// chains configure (on a router of many hosts, the access links' too:
// each alone, which errs on the strict side, a packet crossing several).
func (r *Router) Snapshot() Snapshot {
	now := r.clk.Now()
	s := Snapshot{ClockNs: int64(now), Wall: r.clk.Wall(now), Up: r.up.snapshot(), Down: r.down.snapshot()}
	minDelay := fidelity.MinDelay(slices.Concat([][]qdisc.Spec{s.Up.chain, s.Down.chain}, s.Up.access, s.Down.access)...)
	up, down := fidelity.Judge(s.Up.Fidelity(), minDelay), fidelity.Judge(s.Down.Fidelity(), minDelay)
	s.Up.Verdict, s.Down.Verdict = &up, &down
	return s
}

// SetChain changes a direction's qdisc chain ("up" or "down") while
// running, position by position as tc qdisc change, replace, add and del
// would (see link.Direction.SetChain): disciplines that keep their
// position and kind are changed in place and keep their packets; the
// packets of those replaced or removed are lost, counted as flushed drops.
// It is safe from any goroutine. It returns, once the direction's loop uses
// the new chain, what happened at each position; or the error the new chain
// gave, in which case nothing changed.
func (r *Router) SetChain(dir string, chain []qdisc.Spec) (qdisc.ChainChange, error) {
	l, err := r.loop(dir)
	if err != nil {
		return nil, err
	}
	return l.setChain(chain)
}

// CheckChain reports whether SetChain(dir, chain) would succeed now,
// without changing anything, so that a caller changing both directions can
// check both first.
func (r *Router) CheckChain(dir string, chain []qdisc.Spec) error {
	l, err := r.loop(dir)
	if err != nil {
		return err
	}
	return l.checkChain(chain)
}

// SetAccessChain changes the chain of host's access link in direction
// dir ("up" or "down") while running, as SetChain changes a bottleneck's;
// on a router of Config.Clients and Servers only. A host given no access
// link in that direction (nil) has none to change: give it one when the
// router is made, with an empty chain for a direct link to start with.
func (r *Router) SetAccessChain(host link.Host, dir string, chain []qdisc.Spec) (qdisc.ChainChange, error) {
	l, err := r.loop(dir)
	if err != nil {
		return nil, err
	}
	return l.setAccessChain(host, chain)
}

// CheckAccessChain reports whether SetAccessChain(host, dir, chain)
// would succeed now, without changing anything.
func (r *Router) CheckAccessChain(host link.Host, dir string, chain []qdisc.Spec) error {
	l, err := r.loop(dir)
	if err != nil {
		return err
	}
	return l.checkAccessChain(host, chain)
}

// loop returns the loop of direction dir ("up" or "down").
func (r *Router) loop(dir string) (*loop, error) {
	switch dir {
	case r.up.name, "up":
		return r.up, nil
	case r.down.name, "down":
		return r.down, nil
	}
	return nil, fmt.Errorf("router: no direction %q: use \"up\" or \"down\"", dir)
}

// PcapErr returns why the capture stopped, if it did (nil without one).
// It is safe from any goroutine.
func (r *Router) PcapErr() error {
	if r.pcap == nil {
		return nil
	}
	return r.pcap.state()
}

// Wall converts a time on the router's clock (event and pcap times) to wall
// time.
func (r *Router) Wall(t clock.Time) time.Time { return r.clk.Wall(t) }

// inLoop runs f on l's thread between two iterations while l runs, and
// directly otherwise, and returns when f has run.
func (r *Router) inLoop(l *loop, f func()) {
	r.mu.Lock()
	if !l.running {
		defer r.mu.Unlock()
		f()
		return
	}
	done := make(chan struct{})
	l.request(func() { f(); close(done) })
	r.mu.Unlock()
	<-done
}
