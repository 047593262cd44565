package lab

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"wanlab/bridgeport"
	"wanlab/internal/outfile"
	"wanlab/link"
	"wanlab/netns"
	"wanlab/qdisc"
	"wanlab/router"
	"wanlab/tcspec"
	"wanlab/tun"
)

// Testbed is a running testbed owned by the calling process. Its methods
// are safe for concurrent use.
type Testbed struct {
	opts    Options
	info    Info
	created time.Time

	nt    *netns.Testbed
	hosts map[Role]*netns.Handle
	// hostsMu guards hosts while the hosts are being built, at the same
	// time; once up, hosts does not change.
	hostsMu sync.Mutex
	// rns is the router's namespace on the packet plane (nt closes its
	// handle).
	rns *netns.Handle
	// devs are the router's devices, in the order of Options.Roles (the
	// client's, or a bridge's first port's, first), and rings read the
	// kernel's rings in front of them.
	devs  []device
	rings []func() (router.RingCounters, error)
	// ports are a bridge's, given back by Close.
	ports []*bridgeport.Port
	r     *router.Router
	pcap  *outfile.File // unbuffered: the router buffers and flushes
	ln    *net.UnixListener

	capMu      sync.Mutex // guards what follows
	capErr     error      // why the capture stopped, once it did
	capAt      time.Time  // when
	capEnded   bool       // StopRouter committed it
	capClaimed bool       // StopRouter returned capErr: Close does not again

	cancel  context.CancelFunc
	ran     chan struct{} // closed when the router's Run has returned
	runErr  error         // Run's result, readable once ran is closed
	stop    chan struct{} // closed by requestStop
	stopped sync.Once

	mu     sync.Mutex // serialises SetChain calls, starts of programs in the hosts, and Close
	closed bool
	// chains are the directions' chains as last set, under mu.
	chains map[string][]qdisc.Spec
	// changed lists what run sessions changed and could not restore
	// (see serveSession), under mu; Status reports it.
	changed []string
	// sessions are the connections of the run sessions, under mu; Close
	// closes them.
	sessions map[*net.UnixConn]bool
}

// device is a device of the router, which the testbed closes: a TUN
// device or a packet socket.
type device interface {
	router.Device
	Close() error
}

// Up builds the testbed o describes and starts its router and control
// socket. It checks o first and returns an ErrBadInput error, having
// created nothing, if o can never work. It removes the leftovers of a
// testbed of the same name whose owner died; it fails, naming `wanlab down
// NAME`, if a live process owns one. If ctx is done while the testbed is
// being built, Up removes what it built and returns an error. Once up, the
// router stops when ctx is done, when a `down` request arrives or when a
// device fails, all of which close Done; the caller must then (or at any
// time) call Close, which removes everything.
func Up(ctx context.Context, o Options) (*Testbed, error) {
	o = o.withDefaults()
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.Ports != [2]string{} {
		return nil, bad(fmt.Errorf("testbed %s: Ports %q are a bridge's: call Bridge", o.Name, o.Ports))
	}
	if o.CC != "" {
		if err := CheckCC(o.CC); err != nil {
			return nil, bad(err)
		}
	}
	if err := o.checkHostCCs(); err != nil {
		return nil, bad(err)
	}
	return start(ctx, o, o.infoOf(), (*Testbed).buildHosts)
}

// start registers the testbed o describes, whose Info is info, builds its
// devices with build (which returns, at each step, what interrupted
// returns), and starts its router and control socket; see Up.
func start(ctx context.Context, o Options, info Info, build func(t *Testbed, interrupted func() error) error) (_ *Testbed, err error) {
	// The capture is opened first: opening a FIFO waits for its reader,
	// and while it waits there is nothing to remove if the user gives up.
	var pcap *outfile.File
	if o.Pcap != "" {
		if pcap, err = outfile.Create(ctx, o.Pcap, outfile.Options{Label: "pcap", Suggest: "wan.pcap", Unbuffered: true}); err != nil {
			return nil, err
		}
	}
	nt, err := netns.NewTestbed(o.Name)
	if err != nil {
		if pcap != nil {
			pcap.Abort()
		}
		return nil, err
	}
	t := &Testbed{
		opts:    o,
		info:    info,
		created: time.Now(),
		nt:      nt,
		hosts:   map[Role]*netns.Handle{},
		pcap:    pcap,
		ran:     make(chan struct{}),
		stop:    make(chan struct{}),
		chains:  initialChains(o),
	}
	close(t.ran) // until a router runs, there is nothing to wait for
	defer func() {
		if err != nil {
			// A testbed that never came up leaves no capture: Close
			// commits only what a running testbed recorded.
			t.pcap = nil
			err = errors.Join(err, t.Close())
			if pcap != nil {
				pcap.Abort()
			}
		}
	}()
	// A cancelled ctx (Ctrl-C while the testbed is being built) stops the
	// building between steps; the deferred Close removes what exists.
	interrupted := func() error {
		if ctx.Err() != nil {
			return fmt.Errorf("testbed %s: interrupted before it was up (%w); nothing of it is left", o.Name, context.Cause(ctx))
		}
		return nil
	}
	if err := build(t, interrupted); err != nil {
		return nil, err
	}
	if err := interrupted(); err != nil {
		return nil, err
	}
	if err := t.startRouter(ctx); err != nil {
		return nil, err
	}
	if err := t.listen(); err != nil {
		return nil, err
	}
	return t, nil
}

// buildHosts makes the hosts and their devices (and, on the packet
// plane, the router's namespace first). The hosts are built at the same
// time, a few at once: most of a host's making is waiting for the kernel.
func (t *Testbed) buildHosts(interrupted func() error) error {
	if t.opts.DataPlane == PacketPlane {
		h, err := t.nt.Namespace(routerRole)
		if err != nil {
			return err
		}
		t.rns = h
	}
	roles := t.opts.Roles()
	t.devs = make([]device, len(roles))
	t.rings = make([]func() (router.RingCounters, error), len(roles))
	errs := make([]error, len(roles))
	var wg sync.WaitGroup
	sem := make(chan struct{}, buildParallel)
	for k, r := range roles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if errs[k] = interrupted(); errs[k] == nil {
				errs[k] = t.setupHost(r, k)
			}
		}()
	}
	wg.Wait()
	// The first host's error: the others' are most often the same one.
	// Devices of hosts that failed are closed with the rest by Close,
	// which skips the slots never filled.
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if t.opts.DataPlane == PacketPlane {
		return t.introduce()
	}
	return nil
}

// buildParallel is how many hosts are built at once: enough to keep the
// kernel busy while a host waits on it, few enough not to crowd a small
// machine's registry lock.
const buildParallel = 8

// setupHost creates host r's namespace and its interface to the router (a
// TUN device, or a veth pair into the router's namespace), the router's
// device k, and configures its addresses, routes and sysctls.
func (t *Testbed) setupHost(r Role, k int) error {
	h, err := t.nt.Namespace(r.short())
	if err != nil {
		return err
	}
	t.hostsMu.Lock()
	t.hosts[r] = h
	t.hostsMu.Unlock()
	hi := t.info.Host(r)
	if err := h.LoopbackUp(); err != nil {
		return err
	}
	if err := t.setSysctls(h, r); err != nil {
		return err
	}
	attach := t.attachTUN
	if t.opts.DataPlane == PacketPlane {
		attach = t.attachVeth
	}
	if err := attach(h, r, k); err != nil {
		return err
	}
	// The per-device IPv6 keys exist once the device does; they must be
	// set before it comes up, when the kernel would start soliciting.
	if err := quietIPv6(h, hi.IfName); err != nil {
		return err
	}
	if err := h.SetLinkUp(hi.IfName); err != nil {
		return err
	}
	if t.opts.dumbbell() {
		return t.routePeers(h, r)
	}
	// A point-to-point address makes the kernel route the peer through
	// the device; IPv6 needs the device up for that (see AddPeerAddr).
	// On a veth the peer is then a neighbour on the link, whose MAC
	// address the host is given (introduce).
	peer := t.info.Host(r.Peer())
	for _, a := range [][2]netip.Addr{{hi.Addr4, peer.Addr4}, {hi.Addr6, peer.Addr6}} {
		if err := h.AddPeerAddr(hi.IfName, a[0], netip.PrefixFrom(a[1], a[1].BitLen())); err != nil {
			return err
		}
	}
	return nil
}

// routePeers gives host r of a dumbbell its addresses, each a prefix of
// its own, and a route through its device to every host of the other
// side: a point-to-point address names one peer only. The hosts of its
// own side it has no route to, as the router has none between them.
func (t *Testbed) routePeers(h *netns.Handle, r Role) error {
	hi := t.info.Host(r)
	for _, a := range []netip.Addr{hi.Addr4, hi.Addr6} {
		if err := h.AddAddr(hi.IfName, netip.PrefixFrom(a, a.BitLen())); err != nil {
			return err
		}
	}
	for _, p := range t.info.All() {
		if p.Name.Host().Server == r.Host().Server {
			continue
		}
		for _, a := range [][2]netip.Addr{{hi.Addr4, p.Addr4}, {hi.Addr6, p.Addr6}} {
			if err := h.AddRoute(netns.Route{Dst: netip.PrefixFrom(a[1], a[1].BitLen()), Dev: hi.IfName, Src: a[0]}); err != nil {
				return err
			}
		}
	}
	return nil
}

// attachTUN makes host r's TUN device in its namespace h, the router's
// device k on the TUN plane.
func (t *Testbed) attachTUN(h *netns.Handle, r Role, k int) error {
	ifn := t.info.Host(r).IfName
	dev, err := tun.Open(h, ifn, tun.Options{Kind: t.opts.DeviceKind})
	if err != nil {
		return err
	}
	t.devs[k] = dev
	// The kernel queues packets only on their way from a host to the
	// router: a direction loses them at its ingress TUN's ring.
	t.rings[k] = router.TUNRing(h, ifn)
	return t.nt.AddDevice(h, ifn)
}

// setSysctls writes host r's TCP settings. They are per namespace, so
// they never change the machine's own.
func (t *Testbed) setSysctls(h *netns.Handle, r Role) error {
	o := t.opts
	set := []struct{ key, val string }{
		{"net.ipv4.tcp_congestion_control", o.hostCC(r)},
		{"net.ipv4.tcp_rmem", o.TCPRmem},
		{"net.ipv4.tcp_wmem", o.TCPWmem},
	}
	switch {
	case o.ECN == ECNOff:
		set = append(set, struct{ key, val string }{"net.ipv4.tcp_ecn", "0"})
	case o.ECN > 0:
		set = append(set, struct{ key, val string }{"net.ipv4.tcp_ecn", fmt.Sprint(o.ECN)})
	}
	for _, s := range set {
		if s.val == "" {
			continue
		}
		if err := h.SetSysctl(s.key, s.val); err != nil {
			return err
		}
	}
	return nil
}

// quietIPv6 stops the host from sending router solicitations on the TUN,
// so that the only traffic crossing the router is what the user runs
// (multicast listener reports for the host's own addresses still go out).
func quietIPv6(h *netns.Handle, ifname string) error {
	return h.SetSysctl("net/ipv6/conf/"+ifname+"/router_solicitations", "0")
}

// startRouter makes the router and runs it on its own goroutine.
func (t *Testbed) startRouter(ctx context.Context) error {
	cfg := router.Config{
		Up:               link.Config{Name: "up", Chain: t.opts.Up, Trace: t.opts.UpTrace, Env: qdisc.Env{Seed: link.DirectionSeed(t.opts.Seed, "up")}},
		Down:             link.Config{Name: "down", Chain: t.opts.Down, Trace: t.opts.DownTrace, Env: qdisc.Env{Seed: link.DirectionSeed(t.opts.Seed, "down")}},
		Client:           t.devs[0],
		Server:           t.devs[1],
		ClientIf:         t.devs[0].Name(),
		ServerIf:         t.devs[1].Name(),
		Framing:          t.opts.Framing,
		Granularity:      t.opts.Granularity,
		UpRing:           t.rings[0],
		DownRing:         t.rings[1],
		RealTimePriority: t.opts.RealTimePriority,
	}
	if t.opts.dumbbell() {
		t.dumbbellConfig(&cfg)
	}
	if t.pcap != nil {
		cfg.Pcap = t.pcap
		cfg.PcapFailed = t.captureFailed
	}
	r, err := router.New(cfg)
	if err != nil {
		return err
	}
	t.r = r
	ctx, t.cancel = context.WithCancel(ctx)
	t.ran = make(chan struct{})
	go func() {
		defer close(t.ran)
		t.runErr = r.Run(ctx)
		t.requestStop()
	}()
	return nil
}

// captureFailed records that writing the capture failed while the router
// ran, and logs it: the testbed goes on without recording.
func (t *Testbed) captureFailed(err error) {
	t.capMu.Lock()
	first := t.capErr == nil
	if first {
		t.capErr, t.capAt = err, time.Now()
	}
	t.capMu.Unlock()
	if first {
		t.logf("testbed %s: the capture %s stopped: %v; the testbed goes on without it", t.opts.Name, t.opts.Pcap, err)
	}
}

// CaptureErr returns why the capture (Options.Pcap) stopped or could not
// be committed, and nil while it records, after a commit that succeeded,
// and without one. It is safe from any goroutine.
func (t *Testbed) CaptureErr() error {
	t.capMu.Lock()
	defer t.capMu.Unlock()
	return t.capErr
}

// captureStatus describes a failed capture for Status, with when it
// stopped.
func (t *Testbed) captureStatus() string {
	t.capMu.Lock()
	defer t.capMu.Unlock()
	if t.capErr == nil {
		return ""
	}
	return fmt.Sprintf("%v (at %s)", t.capErr, t.capAt.Format(time.TimeOnly))
}

// StopRouter stops the router (Done closes) and commits the capture it
// fed, and returns the capture's failure (CaptureErr), if it had one; the
// rest of the testbed stays until Close. A caller that reads the router a
// last time and then wants the capture's fate before removing the
// testbed calls it; Close does it otherwise, and then reports a failed
// capture in its own error, which after StopRouter it does not repeat.
func (t *Testbed) StopRouter() error {
	err := t.stopRouter()
	t.capMu.Lock()
	t.capClaimed = true
	t.capMu.Unlock()
	return err
}

// stopRouter stops the router and commits the capture once.
func (t *Testbed) stopRouter() error {
	if t.cancel != nil {
		t.cancel()
	}
	<-t.ran
	t.capMu.Lock()
	defer t.capMu.Unlock()
	if t.pcap != nil && !t.capEnded {
		t.capEnded = true
		// The commit reports the first failed write, or a failure of its
		// own (a last flush, a full disk at the rename).
		if err := t.pcap.Commit(); err != nil {
			if t.capErr == nil {
				t.capAt = time.Now()
			}
			t.capErr = err
		}
	}
	return t.capErr
}

func (t *Testbed) logf(format string, args ...any) {
	if t.opts.Logf != nil {
		t.opts.Logf(format, args...)
	}
}

// requestStop closes Done.
func (t *Testbed) requestStop() { t.stopped.Do(func() { close(t.stop) }) }

// Done is closed when the testbed should be closed: its router stopped
// (see Err), or a `down` request arrived on the control socket.
func (t *Testbed) Done() <-chan struct{} { return t.stop }

// Err returns the router's error once it has stopped on its own (a device
// failed), and nil while it runs or after a stop that was asked for.
func (t *Testbed) Err() error {
	select {
	case <-t.ran:
		return t.runErr
	default:
		return nil
	}
}

// Name returns the testbed's name.
func (t *Testbed) Name() string { return t.opts.Name }

// Info describes the testbed's hosts, or a bridge's ports as they are
// now.
func (t *Testbed) Info() Info {
	i := t.info
	if len(t.ports) > 0 {
		i.Ports = portInfos(t.ports)
	}
	if len(i.Hosts) > 0 {
		// The access links as last set.
		t.mu.Lock()
		i.Hosts = slices.Clone(i.Hosts)
		for k := range i.Hosts {
			h := &i.Hosts[k]
			for _, a := range []struct {
				dir  string
				text *string
			}{{"up", &h.AccessUp}, {"down", &h.AccessDown}} {
				if c, ok := t.chains[h.Name.Host().LinkName(a.dir)]; ok {
					*a.text = accessText(c)
				}
			}
			switch h.Name {
			case Client:
				i.Client = *h
			case Server:
				i.Server = *h
			}
		}
		t.mu.Unlock()
	}
	return i
}

// Namespace returns the open namespace of host r. It stays valid until
// Close.
func (t *Testbed) Namespace(r Role) *netns.Handle { return t.hosts[r] }

// Snapshot returns the router's live counters.
func (t *Testbed) Snapshot() router.Snapshot { return t.r.Snapshot() }

// Status returns the testbed's description and live counters, as the
// control socket's status request does.
func (t *Testbed) Status() Status {
	snap := t.r.Snapshot()
	cc := t.opts.CC
	if c := t.hosts[Client]; cc == "" && c != nil {
		cc, _ = c.Sysctl("net.ipv4.tcp_congestion_control")
	}
	device := t.opts.DeviceKind.String()
	if t.opts.DataPlane != TUNPlane {
		device = ""
	}
	t.mu.Lock()
	changed := slices.Clone(t.changed)
	t.mu.Unlock()
	return Status{
		Info:      t.Info(),
		Owner:     os.Getpid(),
		Created:   t.created.UTC(),
		CC:        cc,
		Seed:      t.opts.Seed,
		DataPlane: t.opts.DataPlane.String(),
		Device:    device,
		Framing:   t.opts.Framing,
		Pcap:      t.opts.Pcap,
		PcapError: t.captureStatus(),
		Changed:   changed,
		Snapshot:  snap,
	}
}

// ChainSet is one direction's new chain for Set: Dir is "up", "down" or
// "both", or a host's access link, "up:c2" (link.Host.LinkName), which
// takes a Chain and no Script. With Script, the script's commands change the direction's tree
// one after the other, as tc lines would change a device's
// (tcspec.Script.Steps), each one change of the chain.
type ChainSet struct {
	Dir    string
	Chain  []qdisc.Spec
	Script *tcspec.Script
}

// DirChange is what a Set did to one direction's chain: for a script, one
// per command, which Command names ("line 3: tc class change ...").
type DirChange struct {
	Dir     string            `json:"dir"`
	Chain   string            `json:"chain"` // the new chain in tc syntax
	Change  qdisc.ChainChange `json:"change"`
	Command string            `json:"command,omitempty"`
}

// Set changes the chains of the given directions while the testbed runs,
// as tc would (see link.Direction.SetChain): disciplines that keep their
// position and kind keep their packets; those replaced or removed lose
// theirs. Every chain is checked against its direction first: if any is
// refused, nothing changes.
func (t *Testbed) Set(sets ...ChainSet) ([]DirChange, error) {
	return t.set(sets, nil)
}

// set is Set, calling before, if not nil, with each direction's chain
// just before it changes it (under the lock, so that no other change
// comes in between): a run session records there what it will restore.
func (t *Testbed) set(sets []ChainSet, before func(dir string, old []qdisc.Spec)) ([]DirChange, error) {
	type one struct {
		dir     string
		chain   []qdisc.Spec
		command string // a script's command, or ""
	}
	var todo []one
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, fmt.Errorf("testbed %s is closed", t.opts.Name)
	}
	for _, s := range sets {
		dirs, err := directions(s.Dir)
		if err != nil {
			return nil, bad(err)
		}
		if _, _, access := accessLink(s.Dir); access && s.Script != nil {
			return nil, badf("set %s: a script changes a bottleneck's tree; give the access link a chain", s.Dir)
		}
		for _, d := range dirs {
			if s.Script == nil {
				todo = append(todo, one{dir: d, chain: s.Chain})
				continue
			}
			// A script's commands, each a step from the direction's
			// tree as it is, checked together before any is applied.
			base := t.chains[d]
			steps, err := s.Script.Steps(base)
			if err == nil {
				err = tcspec.CheckSteps(base, steps, &qdisc.Env{Framing: t.opts.Framing})
			}
			if err != nil {
				return nil, bad(fmt.Errorf("set %s: %w (nothing was changed)", d, err))
			}
			for _, st := range steps {
				todo = append(todo, one{d, st.Chain, fmt.Sprintf("line %d: %s", st.Line, st.Text)})
			}
		}
	}
	for _, o := range todo {
		if o.command != "" {
			continue // checked with its script
		}
		if err := t.checkChain(o.dir, o.chain); err != nil {
			return nil, bad(fmt.Errorf("set %s to %q: %w (nothing was changed)", o.dir, tcspec.FormatChain(o.chain), err))
		}
	}
	var done []DirChange
	for _, o := range todo {
		if before != nil {
			before(o.dir, t.chains[o.dir])
		}
		rep, err := t.setChain(o.dir, o.chain)
		if err != nil {
			// Checked above: only a failure of the running router can
			// get here; say what was already applied.
			return done, fmt.Errorf("set %s to %q: %w", o.dir, tcspec.FormatChain(o.chain), err)
		}
		t.chains[o.dir] = o.chain
		done = append(done, DirChange{Dir: o.dir, Chain: tcspec.FormatChain(o.chain), Change: rep, Command: o.command})
	}
	return done, nil
}

// directions expands "up", "down" or "both"; a host's access link
// ("up:c2") is itself.
func directions(dir string) ([]string, error) {
	switch dir {
	case "up", "down":
		return []string{dir}, nil
	case "both":
		return []string{"up", "down"}, nil
	}
	if _, _, ok := accessLink(dir); ok {
		return []string{dir}, nil
	}
	return nil, fmt.Errorf("direction %q is unknown: use up, down or both, or a host's access link, up:HOST or down:HOST (up:c2)", dir)
}

// accessLink reads a host's access link's name, "up:c2", into its host
// and direction.
func accessLink(name string) (link.Host, string, bool) {
	dir, host, ok := strings.Cut(name, ":")
	if !ok || dir != "up" && dir != "down" {
		return link.Host{}, "", false
	}
	h, err := link.ParseHost(host)
	return h, dir, err == nil
}

// checkChain reports whether the router would take chain for the
// direction or access link name.
func (t *Testbed) checkChain(name string, chain []qdisc.Spec) error {
	if h, dir, ok := accessLink(name); ok {
		if err := t.info.Has(HostRole(h)); err != nil {
			return err
		}
		if _, ok := t.chains[name]; !ok {
			return fmt.Errorf("host %s has no %s access link to change: give it one when the testbed is made (--access-%s %s=, an empty chain, is a direct one)", h, dir, dir, h)
		}
		return t.r.CheckAccessChain(h, dir, chain)
	}
	return t.r.CheckChain(name, chain)
}

// setChain sets the chain of the direction or access link name.
func (t *Testbed) setChain(name string, chain []qdisc.Spec) (qdisc.ChainChange, error) {
	if h, dir, ok := accessLink(name); ok {
		return t.r.SetAccessChain(h, dir, chain)
	}
	return t.r.SetChain(name, chain)
}

// initialChains are o's chains by direction ("up", "down") and by access
// link ("up:c2"), as Set names them.
func initialChains(o Options) map[string][]qdisc.Spec {
	m := map[string][]qdisc.Spec{"up": o.Up, "down": o.Down}
	for _, a := range o.Access {
		m[a.Host.LinkName(a.Dir)] = a.Chain
	}
	return m
}

// Command returns a command that runs inside host r with the testbed's
// environment (see Env) added to the caller's. It is recorded in the
// testbed from Start until Wait returns; Close, `wanlab down` and the
// crash cleanup end it if it still runs, as they end every process in the
// hosts.
func (t *Testbed) Command(r Role, name string, args ...string) *netns.Cmd {
	c := t.nt.Command(t.hosts[r], name, args...)
	c.Env = append(os.Environ(), Env(t.info, r)...)
	return c
}

// Close stops the router and the control socket, ends every process inside
// the hosts (those started through Command or the control socket and any
// others, daemons included: SIGTERM, then SIGKILL after two seconds) and
// removes the devices, namespaces, socket and state record; a bridge's
// ports are given back as they were. Closing twice is a no-op.
func (t *Testbed) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	sessions := slices.Collect(maps.Keys(t.sessions))
	t.mu.Unlock()
	var errs []error
	if t.ln != nil {
		errs = append(errs, t.ln.Close())
	}
	// A borrowing run learns from its session that the testbed is gone.
	for _, c := range sessions {
		c.Close()
	}
	capErr := t.stopRouter()
	for _, d := range t.devs {
		if d == nil {
			continue // a host that failed before its device was made
		}
		if err := d.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	// A bridge's ports go back once its sockets are closed, before its
	// record goes: `wanlab down` returns once the record has gone.
	for _, p := range t.ports {
		errs = append(errs, p.Release())
	}
	t.capMu.Lock()
	if !t.capClaimed {
		errs = append(errs, capErr)
	}
	t.capMu.Unlock()
	errs = append(errs, t.nt.Close())
	t.requestStop()
	return errors.Join(errs...)
}
