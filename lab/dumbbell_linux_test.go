package lab

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/link"
)

// errInspected ends a build that a test has inspected.
var errInspected = errors.New("inspected")

// buildOnly builds o's hosts as Up would, calls inspect with the testbed
// before any router exists, then has the build fail, so that Up removes
// everything, and returns how long building and removing took.
func buildOnly(t *testing.T, o Options, inspect func(*Testbed)) time.Duration {
	t.Helper()
	roottest.NeedRoot(t)
	if o.Name == "" {
		o.Name = uniqueName()
	}
	o = o.withDefaults()
	if err := o.Check(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := start_(context.Background(), o, func(tb *Testbed, interrupted func() error) error {
		if err := tb.buildHosts(interrupted); err != nil {
			return err
		}
		inspect(tb)
		return errInspected
	})
	took := time.Since(start)
	if !errors.Is(err, errInspected) {
		t.Fatalf("build: %v", err)
	}
	assertGone(t, o.Name)
	return took
}

// start_ is start with o's own Info.
func start_(ctx context.Context, o Options, build func(*Testbed, func() error) error) (*Testbed, error) {
	return start(ctx, o, o.infoOf(), build)
}

// TestDumbbellHosts builds 3 clients and 2 servers on each plane and
// checks every host: its namespace, its device, its addresses, a route to
// every host of the other side through its device and none to its own
// side, and its congestion control (HostCC over CC); then that nothing of
// them is left.
func TestDumbbellHosts(t *testing.T) {
	for _, p := range []DataPlane{TUNPlane, PacketPlane} {
		t.Run(p.String(), func(t *testing.T) {
			o := Options{Clients: 3, Servers: 2, CC: "reno", DataPlane: p, ECN: 1,
				HostCC:  map[link.Host]string{{N: 2}: "bbr", {Server: true, N: 2}: "bbr"},
				TCPRmem: "4096 131072 1048576"}
			buildOnly(t, o, func(tb *Testbed) {
				i := tb.Info()
				if len(i.Hosts) != 5 {
					t.Fatalf("%d hosts, want 5: %+v", len(i.Hosts), i)
				}
				for _, h := range i.Hosts {
					ns := tb.Namespace(h.Name)
					if ns == nil || ns.Name() != h.NS {
						t.Fatalf("%s: namespace %v, want %s", h.Name, ns, h.NS)
					}
					wantCC := map[Role]string{"c2": "bbr", "s2": "bbr"}[h.Name]
					if wantCC == "" {
						wantCC = "reno"
					}
					for key, want := range map[string]string{"net.ipv4.tcp_congestion_control": wantCC, "net.ipv4.tcp_ecn": "1", "net.ipv4.tcp_rmem": "4096\t131072\t1048576"} {
						if got, err := ns.Sysctl(key); err != nil || got != want {
							t.Errorf("%s: %s = %q (%v), want %q", h.Name, key, got, err, want)
						}
					}
					l, err := ns.Netlink().LinkByName(h.IfName)
					if err != nil {
						t.Fatalf("%s: device %s: %v", h.Name, h.IfName, err)
					}
					addrs, err := ns.Netlink().AddrList(l, 0)
					if err != nil {
						t.Fatal(err)
					}
					var have []netip.Addr
					for _, a := range addrs {
						if ip, ok := netip.AddrFromSlice(a.IP); ok && !ip.IsLinkLocalUnicast() {
							have = append(have, ip.Unmap())
						}
					}
					if len(have) != 2 || !(have[0] == h.Addr4 || have[1] == h.Addr4) || !(have[0] == h.Addr6 || have[1] == h.Addr6) {
						t.Errorf("%s: addresses %v, want %v and %v", h.Name, have, h.Addr4, h.Addr6)
					}
					for _, p := range i.Hosts {
						for _, a := range []netip.Addr{p.Addr4, p.Addr6} {
							routes, err := ns.Netlink().RouteGet(a.AsSlice())
							other := p.Name.Host().Server != h.Name.Host().Server
							switch {
							case other && (err != nil || len(routes) != 1 || routes[0].LinkIndex != l.Attrs().Index):
								t.Errorf("%s: route to %s (%s): %+v %v; want one through %s", h.Name, p.Name, a, routes, err, h.IfName)
							case !other && p.Name != h.Name && err == nil && len(routes) > 0 && routes[0].LinkIndex == l.Attrs().Index:
								t.Errorf("%s: a route to %s (%s) of its own side through %s", h.Name, p.Name, a, h.IfName)
							}
						}
					}
				}
			})
		})
	}
}

// TestDumbbellBuildTime builds the largest dumbbell, 16+16 hosts, and
// removes it, and reports how long that took. The figure is the lab's
// part of `up` and `down` (the router's start and stop add little);
// the bound is loose, for shared machines.
func TestDumbbellBuildTime(t *testing.T) {
	o := Options{Clients: link.MaxHosts, Servers: link.MaxHosts, CC: "bbr"}
	n := 0
	took := buildOnly(t, o, func(tb *Testbed) {
		for _, h := range tb.Info().Hosts {
			if tb.Namespace(h.Name) != nil {
				n++
			}
		}
	})
	if n != 2*link.MaxHosts {
		t.Errorf("%d hosts built, want %d", n, 2*link.MaxHosts)
	}
	t.Logf("%d+%d hosts built and removed in %v", link.MaxHosts, link.MaxHosts, took.Round(time.Millisecond))
	if took > 30*time.Second {
		t.Errorf("%d+%d hosts took %v to build and remove, want well under 10 s", link.MaxHosts, link.MaxHosts, took)
	}
}
