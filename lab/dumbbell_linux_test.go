package lab

import (
	"context"
	"errors"
	"net/netip"
	"strings"
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

// TestDumbbellHosts builds 3 clients and 2 servers and checks every
// host: its namespace, its device, its addresses, a route to every host
// of the other side through its device and none to its own side, and its
// sysctls (HostCC over CC); then that nothing of them is left.
func TestDumbbellHosts(t *testing.T) {
	o := Options{Clients: 3, Servers: 2, CC: "reno", ECN: 1,
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
			// Info names a host's own congestion control, for status.
			if h.CC != wantCC {
				t.Errorf("%s: Info's cc %q, want %q", h.Name, h.CC, wantCC)
			}
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

// TestDumbbellPingsCrossAccessLinks brings up 3 clients and 2 servers
// with access delays and a shared bottleneck delay, and pings each server
// from each client: the round trip crosses the bottleneck both ways and
// the two hosts' access links, and nothing else.
func TestDumbbellPingsCrossAccessLinks(t *testing.T) {
	need(t, "ping")
	c2, c3, s2 := link.Host{N: 2}, link.Host{N: 3}, link.Host{Server: true, N: 2}
	tb := up(t, Options{Clients: 3, Servers: 2,
		Up: mustChain(t, "netem delay 5ms"),
		Access: []Access{
			{Host: c2, Dir: "up", Chain: mustChain(t, "netem delay 20ms")},
			{Host: c3, Dir: "down", Chain: mustChain(t, "netem delay 40ms")},
			{Host: s2, Dir: "down", Chain: mustChain(t, "netem delay 10ms")},
			{Host: link.Host{N: 1}, Dir: "up"}, // direct: counts only
		}})
	access := map[Role]float64{"c2": 20, "c3": 40, "s2": 10}
	i := tb.Info()
	type pair struct{ c, s Role }
	rtts := map[pair][]float64{}
	for _, c := range []Role{Client, "c2", "c3"} {
		for _, s := range []Role{Server, "s2"} {
			rtts[pair{c, s}] = ping(t, tb, c, i.Host(s).Addr4.String(), "-c", "2", "-i", "0.2", "-W", "2")
		}
	}
	for p, got := range rtts {
		want := 5 + access[p.c] + access[p.s]
		t.Logf("%s → %s: RTT %v ms, want %.0f", p.c, p.s, got, want)
		if got[0] < want || got[0] > want+20 {
			t.Errorf("ping %s → %s: min RTT %.1f ms, want %.0f ms (+ up to 20 ms of noise)", p.c, p.s, got[0], want)
		}
	}
	// Over IPv6 as well, from a server to a client.
	if got := ping(t, tb, "s2", i.Host("c3").Addr6.String(), "-c", "1", "-W", "2"); got[0] < 55 {
		t.Errorf("ping6 s2 → c3: %.1f ms, want at least 55", got[0])
	}
	st := tb.Status()
	if len(st.Up.Ports) == 0 || len(st.Down.Ports) == 0 {
		t.Fatalf("status has no ports: up %d, down %d", len(st.Up.Ports), len(st.Down.Ports))
	}
	for _, p := range st.Up.Ports {
		if p.Place == "ingress" && p.Counters.Sent < 4 {
			t.Errorf("up ingress %s: %d packets in, want at least 4 echo requests", p.Host, p.Counters.Sent)
		}
	}
	// An access link changes as a bottleneck does, and status says so; a
	// host built without one in that direction has none to change.
	if _, err := tb.Set(ChainSet{Dir: "up:c2", Chain: mustChain(t, "netem delay 60ms")}); err != nil {
		t.Fatal(err)
	}
	if got := ping(t, tb, "c2", i.Server.Addr4.String(), "-c", "1", "-W", "2"); got[0] < 65 {
		t.Errorf("after set up:c2, ping c2 → server: %.1f ms, want at least 65", got[0])
	}
	if a := tb.Info().Host("c2").AccessUp; !strings.Contains(a, "delay 60ms") {
		t.Errorf("after set up:c2, Info says its access link is %q", a)
	}
	// Both refusals are bad input (up:c3 has no link, c4 is no host), and
	// the second names the hosts there are.
	for _, c := range []struct{ dir, want string }{
		{"up:c3", "host c3 has no up access link"},
		{"down:c4", "host c4 is not one of testbed " + tb.Info().Name + "'s hosts (client, c2, c3, server, s2)"},
	} {
		if _, err := tb.Set(ChainSet{Dir: c.dir, Chain: mustChain(t, "netem delay 1ms")}); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("set %s: %v; want ErrBadInput saying %q", c.dir, err, c.want)
		}
	}
	// A client cannot reach another client: there is no route.
	if out, err := tb.Command("c2", "ping", "-c", "1", "-W", "1", i.Client.Addr4.String()).CombinedOutput(); err == nil {
		t.Errorf("c2 pinged c1 across the router: %s", out)
	}
}

// TestDumbbellUpDown16 brings the largest dumbbell up, router and all,
// and down, and reports the time; the bound is loose, for shared
// machines (the goal is under 10 s).
func TestDumbbellUpDown16(t *testing.T) {
	roottest.NeedRoot(t)
	name := uniqueName()
	start := time.Now()
	tb, err := Up(context.Background(), Options{Name: name, Clients: link.MaxHosts, Servers: link.MaxHosts, Up: mustChain(t, "netem delay 1ms")})
	if err != nil {
		t.Fatal(err)
	}
	upTook := time.Since(start)
	if n := len(tb.Status().Up.Ports); n != 2*link.MaxHosts {
		t.Errorf("up has %d ports, want %d", n, 2*link.MaxHosts)
	}
	start = time.Now()
	if err := tb.Close(); err != nil {
		t.Error(err)
	}
	downTook := time.Since(start)
	assertGone(t, name)
	t.Logf("%d+%d hosts: up %v, down %v", link.MaxHosts, link.MaxHosts, upTook.Round(time.Millisecond), downTook.Round(time.Millisecond))
	if upTook+downTook > 30*time.Second {
		t.Errorf("up and down of %d+%d hosts took %v, want well under 10 s", link.MaxHosts, link.MaxHosts, upTook+downTook)
	}
}
