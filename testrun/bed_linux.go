package testrun

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"wanlab/catalog"
	"wanlab/lab"
	"wanlab/link"
	"wanlab/netns"
	"wanlab/qdisc"
	"wanlab/tun"
)

// bed is the path a run's traffic crosses and the two hosts at its ends.
type bed interface {
	// host returns a host's namespace and address.
	host(r lab.Role, ipv6 bool) (*netns.Handle, netip.Addr)
	// read reads the router (ok false without one).
	read() (v routerView, ok bool, err error)
	// set applies a timed change's chains together, as `wanlab set`
	// does, and says what it did to each direction.
	set(c TimedChange) (effects map[string]string, err error)
	// seed, framing, dataPlane and chains describe the path as it is
	// (dataPlane is "" without a router).
	seed() uint64
	framing() string
	dataPlane() string
	chains() (up, down string)
	// hostInfos describes every host, the clients first.
	hostInfos() []lab.HostInfo
	// command returns a command that runs inside host r; the testbed's
	// removal ends it if it still runs (for a borrowed testbed, `wanlab
	// down` does).
	command(r lab.Role, name string, args ...string) *netns.Cmd
	// close removes what the run built (or releases what it borrowed).
	close() error
}

// ownBed is a testbed the run built.
type ownBed struct {
	tb     *lab.Testbed
	opts   lab.Options
	cancel context.CancelFunc // of the router's context
}

func newOwnBed(ctx context.Context, s *Setup) (*ownBed, error) {
	if _, err := lab.CleanStale(); err != nil {
		return nil, fmt.Errorf("removing what earlier runs left behind: %w", err)
	}
	o := lab.Options{
		Name: s.Lab, Up: s.Up, Down: s.Down, UpTrace: s.TraceUp, DownTrace: s.TraceDown,
		Seed: s.Opts.Seed, DataPlane: s.DataPlane, DeviceKind: tun.VNet, Pcap: s.Opts.Pcap, Framing: s.Framing, Granularity: s.Granularity,
		Clients: s.Hosts.Clients, Servers: s.Hosts.Servers, Access: s.Hosts.Access, HostCC: s.Hosts.HostCC,
	}
	// The router stops when Close is called, not when the run's context
	// ends: the run reads it once more after its traffic has stopped. Only
	// while the testbed is being built (a --pcap FIFO waits for its
	// reader) does the run's context end it.
	upCtx, cancel := context.WithCancel(context.Background())
	built := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			cancel()
		case <-built:
		}
	}()
	tb, err := lab.Up(upCtx, o)
	close(built)
	if err == nil && upCtx.Err() != nil {
		// Cancelled just as the testbed came up: its router has stopped.
		err = errors.Join(context.Cause(ctx), tb.Close())
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &ownBed{tb: tb, opts: o, cancel: cancel}, nil
}

func (b *ownBed) host(r lab.Role, ipv6 bool) (*netns.Handle, netip.Addr) {
	h := b.tb.Info().Host(r)
	if ipv6 {
		return b.tb.Namespace(r), h.Addr6
	}
	return b.tb.Namespace(r), h.Addr4
}

func (b *ownBed) hostInfos() []lab.HostInfo { return b.tb.Info().All() }

func (b *ownBed) read() (routerView, bool, error) {
	return viewOfSnapshot(b.tb.Snapshot()), true, nil
}

func (b *ownBed) set(c TimedChange) (map[string]string, error) {
	sets := make([]lab.ChainSet, len(c.Dirs))
	for i, d := range c.Dirs {
		sets[i] = lab.ChainSet{Dir: d, Chain: c.Chains[i]}
	}
	return effects(b.tb.Set(sets...))
}

// effects describes what a set did to each direction, in one line each.
func effects(changes []lab.DirChange, err error) (map[string]string, error) {
	m := map[string]string{}
	for _, c := range changes {
		m[c.Dir] = strings.ReplaceAll(c.Change.String(), "\n", "; ")
	}
	return m, err
}
func (b *ownBed) seed() uint64      { return b.opts.Seed }
func (b *ownBed) framing() string   { return b.opts.Framing.String() }
func (b *ownBed) dataPlane() string { return b.opts.DataPlane.String() }
func (b *ownBed) chains() (string, string) {
	st := b.tb.Status()
	return st.Up.Chain, st.Down.Chain
}
func (b *ownBed) command(r lab.Role, name string, args ...string) *netns.Cmd {
	return b.tb.Command(r, name, args...)
}

// capturer is a bed that records the run's capture (--pcap): the run's
// own testbed.
type capturer interface {
	// captureErr says why the capture stopped, if it did; the path goes
	// on without recording.
	captureErr() error
	// endCapture stops the router, once the run has read it for the last
	// time, and commits the capture: the error is the capture's failure.
	// close no longer reports it.
	endCapture() error
}

func (b *ownBed) captureErr() error { return b.tb.CaptureErr() }
func (b *ownBed) endCapture() error { return b.tb.StopRouter() }

func (b *ownBed) close() error {
	err := b.tb.Close()
	b.cancel()
	return err
}

// labBed is a testbed another process runs: the run opens its hosts'
// namespaces and talks to its router through the control socket, changing
// it in a run session (lab.Borrow) so that the testbed sets back the
// run's chains and sysctls itself if the run dies.
type labBed struct {
	name string
	hostsOf
	start   lab.Status
	session *lab.Session
}

// hostsOf is the hosts of a testbed whose namespaces the run opened
// itself.
type hostsOf struct {
	info  lab.Info
	hosts map[lab.Role]*netns.Handle
}

func (b *hostsOf) hostInfos() []lab.HostInfo { return b.info.All() }

func (b *hostsOf) host(r lab.Role, ipv6 bool) (*netns.Handle, netip.Addr) {
	h := b.info.Host(r)
	if ipv6 {
		return b.hosts[r], h.Addr6
	}
	return b.hosts[r], h.Addr4
}

// newLabBed borrows the running testbed name for a run of test that sets
// sysctls. A testbed without the hosts the test runs flows to is refused
// first (a *BadOption), before anything of it changes.
func newLabBed(name string, test catalog.Test, sysctls []Sysctl) (*labBed, error) {
	st, err := lab.GetStatus(name, 0)
	if err != nil {
		return nil, err
	}
	if len(st.Ports) > 0 {
		return nil, fmt.Errorf("--lab %s: %s is a bridge between %s and %s (wanlab bridge), which has no hosts for a run's traffic: run your programs on the machines on its ports, and watch it with `wanlab status %s`", name, name, st.Ports[0].IfName, st.Ports[1].IfName, name)
	}
	if err := labHasHosts(name, test, st.Info); err != nil {
		return nil, err
	}
	b := &labBed{name: name, hostsOf: hostsOf{info: st.Info, hosts: map[lab.Role]*netns.Handle{}}, start: st}
	keys := make([]lab.SysctlKey, len(sysctls))
	for i, sc := range sysctls {
		keys[i] = lab.SysctlKey{Host: sc.Host, Key: sc.Key}
	}
	if b.session, err = lab.Borrow(name, keys); err != nil {
		return nil, err
	}
	for _, hi := range b.info.All() {
		h, err := netns.Open(hi.NS)
		if err != nil {
			b.close()
			return nil, fmt.Errorf("testbed %s: %w", name, err)
		}
		b.hosts[hi.Name] = h
	}
	return b, nil
}

func (b *labBed) read() (routerView, bool, error) {
	// All flows: the run's own may not be the busiest.
	st, err := lab.GetStatus(b.name, 0)
	if err != nil {
		return routerView{}, false, err
	}
	return routerView{Up: viewOf(st.Up), Down: viewOf(st.Down)}, true, nil
}

func (b *labBed) set(c TimedChange) (map[string]string, error) {
	sets := make([]lab.ChainText, len(c.Dirs))
	for i, d := range c.Dirs {
		sets[i] = lab.ChainText{Dir: d, Chain: c.Texts[i]}
	}
	return effects(b.session.Set(sets...))
}
func (b *labBed) seed() uint64             { return b.start.Seed }
func (b *labBed) framing() string          { return b.start.Framing.String() }
func (b *labBed) dataPlane() string        { return b.start.DataPlane }
func (b *labBed) chains() (string, string) { return b.start.Up.Chain, b.start.Down.Chain }

func (b *labBed) command(r lab.Role, name string, args ...string) *netns.Cmd {
	return netns.Command(b.hosts[r], name, args...)
}

// close gives the testbed back as the run found it: ending the session
// sets back the chains a timed change replaced, and any sysctl the run
// set that is not back yet.
func (b *labBed) close() error {
	var errs []error
	if b.session != nil {
		// A testbed that went away during the run has nothing to give
		// back; the run has said that it stopped.
		if _, err := b.session.End(); err != nil && !errors.Is(err, lab.ErrNotRunning) {
			errs = append(errs, fmt.Errorf("giving testbed %s back: %w", b.name, err))
		}
	}
	for _, h := range b.hosts {
		errs = append(errs, h.Close())
	}
	return errors.Join(errs...)
}

// directBed is two namespaces joined by a veth pair, with the addresses a
// testbed of the same name would have and no router. Its namespaces are in
// the netns registry, so a crashed run's are removed by the next one.
type directBed struct {
	name string
	nt   *netns.Testbed
	hostsOf
	seedV uint64
}

func newDirectBed(s *Setup) (_ *directBed, err error) {
	if _, err := lab.CleanStale(); err != nil {
		return nil, fmt.Errorf("removing what earlier runs left behind: %w", err)
	}
	nt, err := netns.NewTestbed(s.Lab)
	if err != nil {
		return nil, err
	}
	b := &directBed{name: s.Lab, nt: nt, hostsOf: hostsOf{info: lab.InfoOf(s.Lab), hosts: map[lab.Role]*netns.Handle{}}, seedV: s.Opts.Seed}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	for _, r := range []lab.Role{lab.Client, lab.Server} {
		h, err := nt.Namespace(string(r[:1]))
		if err != nil {
			return nil, err
		}
		b.hosts[r] = h
		if err := h.LoopbackUp(); err != nil {
			return nil, err
		}
	}
	c, sv := b.hosts[lab.Client], b.hosts[lab.Server]
	ci, si := b.info.Client.IfName, b.info.Server.IfName
	// The veth is made in the client's namespace with its peer in the
	// server's, which netlink names by a descriptor of that namespace.
	fd, err := unix.Open(sv.Path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", sv.Path(), err)
	}
	defer unix.Close(fd)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ci}, PeerName: si, PeerNamespace: netlink.NsFd(fd)}
	if err := c.Netlink().LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("%s: add veth %s with peer %s in %s: %w", c.Name(), ci, si, sv.Name(), err)
	}
	for _, r := range []lab.Role{lab.Client, lab.Server} {
		h, hi, peer := b.hosts[r], b.info.Host(r), b.info.Host(r.Peer())
		if err := nt.AddDevice(h, hi.IfName); err != nil {
			return nil, err
		}
		if err := h.SetLinkUp(hi.IfName); err != nil {
			return nil, err
		}
		for _, a := range [][2]netip.Addr{{hi.Addr4, peer.Addr4}, {hi.Addr6, peer.Addr6}} {
			if err := h.AddPeerAddr(hi.IfName, a[0], netip.PrefixFrom(a[1], a[1].BitLen())); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

func (b *directBed) read() (routerView, bool, error) { return routerView{}, false, nil }
func (b *directBed) set(TimedChange) (map[string]string, error) {
	return nil, errors.New("a direct path has no router to change")
}
func (b *directBed) seed() uint64             { return b.seedV }
func (b *directBed) framing() string          { return qdisc.FramingEthernet.String() }
func (b *directBed) dataPlane() string        { return "" }
func (b *directBed) chains() (string, string) { return "", "" }
func (b *directBed) close() error             { return b.nt.Close() }
func (b *directBed) command(r lab.Role, name string, args ...string) *netns.Cmd {
	return b.nt.Command(b.hosts[r], name, args...)
}

// linkBytes reads the bytes the client's veth sent and received: the
// direct path's up and down traffic, for the progress line.
func (b *directBed) linkBytes() (up, down uint64, err error) {
	st, err := b.hosts[lab.Client].LinkStats(b.info.Client.IfName)
	if err != nil {
		return 0, 0, err
	}
	return st.TxBytes, st.RxBytes, nil
}

// labHasHosts refuses testbed name, described by i, for a test that runs
// flows to more clients or servers than it has, naming what it has and
// the up that would do.
func labHasHosts(name string, test catalog.Test, i lab.Info) error {
	nc, ns := max(test.Clients, 1), max(test.Servers, 1)
	last := []link.Host{{N: nc}, {Server: true, N: ns}}
	for _, h := range last {
		if err := i.Has(lab.HostRole(h)); err != nil {
			return bad("lab", "--lab %s: %s runs flows to hosts up to %v and %v, and %v: run it on a testbed that has them (wanlab up --name NAME --clients %d --servers %d), or leave --lab out", name, test.Name, last[0], last[1], err, nc, ns)
		}
	}
	return nil
}
