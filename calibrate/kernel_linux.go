package calibrate

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"

	"github.com/vishvananda/netlink"

	"wanlab/netns"
	"wanlab/qdisc"
	"wanlab/traffic"
)

// The kernel side's devices and addresses: client wl-c0 (10.77.1.1) to the
// router's wl-r0 (10.77.1.254); the router's wl-r1 (10.77.2.254) to the
// server's wl-s0 (10.77.2.1). The chain sits on wl-r1's egress.
const (
	devClient     = "wl-c0"
	devRouterIn   = "wl-r0"
	devRouterOut  = "wl-r1"
	devServer     = "wl-s0"
	clientPrefix  = "10.77.1.1/24"
	routerInAddr  = "10.77.1.254/24"
	routerOutAddr = "10.77.2.254/24"
	serverPrefix  = "10.77.2.1/24"
)

// kernelPath is a forwarding hop with the kernel's qdiscs.
type kernelPath struct {
	tb                     *netns.Testbed
	client, router, server *netns.Handle
}

// chainCommands are the tc commands that make a chain on the hop's
// device: each element on the class 1 of the one before.
func chainCommands(elements []string) []tcCommand {
	var cmds []tcCommand
	for i, e := range elements {
		args := []string{"qdisc", "add", "dev", devRouterOut}
		if i == 0 {
			args = append(args, "root")
		} else {
			args = append(args, "parent", fmt.Sprintf("%d:1", i))
		}
		args = append(args, "handle", fmt.Sprintf("%d:", i+1))
		cmds = append(cmds, tcCommand{args: append(args, strings.Fields(e)...)})
	}
	return cmds
}

// newKernelPath builds the hop and runs the tc commands on its device.
func newKernelPath(name string, cmds []tcCommand) (_ *kernelPath, err error) {
	tcBin, err := exec.LookPath("tc")
	if err != nil {
		return nil, errors.New("calibrate: the kernel side needs iproute2's tc, which is not installed: install iproute2 (apt-get install iproute2)")
	}
	tb, err := netns.NewTestbed(name)
	if err != nil {
		return nil, err
	}
	p := &kernelPath{tb: tb}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	for _, role := range []struct {
		h    **netns.Handle
		name string
	}{{&p.client, "client"}, {&p.router, "router"}, {&p.server, "server"}} {
		h, err := tb.Namespace(role.name)
		if err != nil {
			return nil, err
		}
		*role.h = h
		// Nothing but the test may cross the hop: no IPv6 (router
		// solicitations, DAD).
		for _, k := range []string{"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"} {
			if err := h.SetSysctl(k, "1"); err != nil {
				return nil, err
			}
		}
		if err := h.LoopbackUp(); err != nil {
			return nil, err
		}
	}
	if err := p.veth(p.client, devClient, devRouterIn); err != nil {
		return nil, err
	}
	if err := p.veth(p.server, devServer, devRouterOut); err != nil {
		return nil, err
	}
	for _, a := range []struct {
		h      *netns.Handle
		dev    string
		prefix string
	}{
		{p.client, devClient, clientPrefix}, {p.router, devRouterIn, routerInAddr},
		{p.router, devRouterOut, routerOutAddr}, {p.server, devServer, serverPrefix},
	} {
		if err := OffloadsOff(a.h, a.dev); err != nil {
			return nil, err
		}
		if err := a.h.AddAddr(a.dev, netip.MustParsePrefix(a.prefix)); err != nil {
			return nil, err
		}
		if err := a.h.SetLinkUp(a.dev); err != nil {
			return nil, err
		}
	}
	if err := p.router.SetSysctl("net.ipv4.ip_forward", "1"); err != nil {
		return nil, err
	}
	for _, r := range []struct {
		h   *netns.Handle
		dev string
		via string
	}{{p.client, devClient, routerInAddr}, {p.server, devServer, routerOutAddr}} {
		route := netns.Route{Dst: netip.MustParsePrefix("0.0.0.0/0"), Dev: r.dev, Via: netip.MustParsePrefix(r.via).Addr()}
		if err := r.h.AddRoute(route); err != nil {
			return nil, err
		}
	}
	for _, c := range cmds {
		out, err := netns.Command(p.router, tcBin, c.args...).CombinedOutput()
		if err != nil && !c.quiet {
			return nil, fmt.Errorf("calibrate: the kernel refused %q: %v: %s: a kernel without a discipline or classifier cannot be compared on it (try modprobe sch_KIND or cls_KIND); compare one it has, such as tbf, htb or u32",
				c, err, strings.TrimSpace(string(out)))
		}
	}
	return p, nil
}

// veth makes a veth pair with one transmit queue per end: end in h, peer in
// the router's namespace.
func (p *kernelPath) veth(h *netns.Handle, end, peer string) error {
	f, err := os.Open(p.router.Path())
	if err != nil {
		return fmt.Errorf("calibrate: open the router's namespace: %w", err)
	}
	defer f.Close()
	v := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: end, NumTxQueues: 1, NumRxQueues: 1},
		PeerName:  peer, PeerNamespace: netlink.NsFd(int(f.Fd())),
		PeerNumTxQueues: 1, PeerNumRxQueues: 1,
	}
	if err := h.Netlink().LinkAdd(v); err != nil {
		return fmt.Errorf("calibrate: veth %s-%s: %w", end, peer, err)
	}
	if err := p.tb.AddDevice(h, end); err != nil {
		return err
	}
	return p.tb.AddDevice(p.router, peer)
}

func (p *kernelPath) Client() traffic.Host {
	return traffic.Host{Net: traffic.InNamespace(p.client), Addr: netip.MustParsePrefix(clientPrefix).Addr()}
}

func (p *kernelPath) Server() traffic.Host {
	return traffic.Host{Net: traffic.InNamespace(p.server), Addr: netip.MustParsePrefix(serverPrefix).Addr()}
}

// Counters returns the root qdisc's drops (its children's included: the
// kernel adds a child's drops to every ancestor) and packets sent.
func (p *kernelPath) Counters() (drops, sent uint64, err error) {
	return KernelCounters(p.router, devRouterOut)
}

// KernelCounters returns the drops (its children's included: the kernel
// adds a child's drops to every ancestor) and the packets sent of the root
// qdisc of dev in ns: the Counters of a Path whose chain is the kernel's,
// on dev's egress.
func KernelCounters(ns *netns.Handle, dev string) (drops, sent uint64, err error) {
	nl := ns.Netlink()
	l, err := nl.LinkByName(dev)
	if err != nil {
		return 0, 0, err
	}
	qs, err := nl.QdiscList(l)
	if err != nil {
		return 0, 0, err
	}
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent != netlink.HANDLE_ROOT || a.Statistics == nil || a.Statistics.Queue == nil || a.Statistics.Basic == nil {
			continue
		}
		return uint64(a.Statistics.Queue.Drops), uint64(a.Statistics.Basic.Packets), nil
	}
	return 0, 0, fmt.Errorf("calibrate: no statistics for the root qdisc of %s", dev)
}

// Classes returns each class's drops, as tc -s class show counts them.
func (p *kernelPath) Classes() (map[string]uint64, error) {
	nl := p.router.Netlink()
	l, err := nl.LinkByName(devRouterOut)
	if err != nil {
		return nil, err
	}
	cs, err := nl.ClassList(l, netlink.HANDLE_NONE)
	if err != nil {
		return nil, err
	}
	drops := map[string]uint64{}
	for _, c := range cs {
		a := c.Attrs()
		if a.Statistics == nil || a.Statistics.Queue == nil {
			continue
		}
		drops[qdisc.ClassID(a.Handle).String()] = uint64(a.Statistics.Queue.Drops)
	}
	return drops, nil
}

// Close removes the namespaces and everything in them.
func (p *kernelPath) Close() error { return p.tb.Close() }
