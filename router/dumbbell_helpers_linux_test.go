package router

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"wanlab/internal/roottest"
	"wanlab/link"
	"wanlab/netns"
	"wanlab/qdisc"
	"wanlab/tun"
)

// dumbbellOptions configure newDumbbell.
type dumbbellOptions struct {
	clients, servers int
	up, down         string // the bottlenecks' chains in tc syntax
	// access gives a host access links, up and down, in tc syntax ("" a
	// direct one); a host not named has none.
	access map[string][2]string
	pcap   bool // capture into the bed's pcap
}

// newDumbbell builds namespaces wl-tNNNNNN-c1.. and -s1.., a VNet TUN in
// each with one address in 10.252.X.0/24 (clients .1.., servers .101..)
// and a route to the whole /24 through it, so that every client reaches
// every server through the router (and an address of the /24 that no host
// has reaches the router too), and runs a router of those hosts until the
// test ends. The bed's c and s are c1 and s1.
func newDumbbell(t *testing.T, o dumbbellOptions) *bed {
	t.Helper()
	tb := roottest.NewTestbed(t)
	x := rand.IntN(256)
	b := &bed{tb: tb}
	cfg := Config{
		Up:   link.Config{Name: "up", Chain: mustChain(t, o.up), Env: qdisc.Env{Seed: 1}},
		Down: link.Config{Name: "down", Chain: mustChain(t, o.down), Env: qdisc.Env{Seed: 2}},
	}
	for _, side := range []struct {
		n      int
		server bool
	}{{o.clients, false}, {o.servers, true}} {
		for i := range side.n {
			name := link.Host{Server: side.server, N: i + 1}
			last := 1 + i
			if side.server {
				last = 101 + i
			}
			addr := netip.MustParseAddr(fmt.Sprintf("10.252.%d.%d", x, last))
			h := newDumbbellHost(t, tb, name.String(), addr)
			host := Host{Name: name, Device: h.dev, If: tunName, Addrs: []netip.Addr{addr}, Ring: TUNRing(h.ns, tunName)}
			if a, ok := o.access[name.String()]; ok {
				host.Up = &link.Config{Chain: mustChain(t, a[0])}
				host.Down = &link.Config{Chain: mustChain(t, a[1])}
			}
			if side.server {
				b.servers = append(b.servers, h)
				cfg.Servers = append(cfg.Servers, host)
			} else {
				b.clients = append(b.clients, h)
				cfg.Clients = append(cfg.Clients, host)
			}
		}
	}
	b.c, b.s = b.clients[0], b.servers[0]
	if o.pcap {
		b.pcap = new(syncBuffer)
		cfg.Pcap = b.pcap
	}
	b.run(t, cfg, nil)
	return b
}

// newDumbbellHost creates namespace role with a VNet TUN addressed addr,
// which routes addr's /24 through it.
func newDumbbellHost(t *testing.T, tb *netns.Testbed, role string, addr netip.Addr) *host {
	t.Helper()
	ns, err := tb.Namespace(role)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := tun.Open(ns, tunName, tun.Options{Kind: tun.VNet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	if err := tb.AddDevice(ns, tunName); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		ns.LoopbackUp(),
		ns.SetLinkUp(tunName),
		ns.AddAddr(tunName, netip.PrefixFrom(addr, 32)),
		ns.AddRoute(netns.Route{Dst: netip.PrefixFrom(addr, 24).Masked(), Dev: tunName, Src: addr}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return &host{ns: ns, dev: dev, v4: addr}
}
