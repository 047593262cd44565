package lab

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"wanlab/link"
	"wanlab/netns"
	"wanlab/tcspec"
)

// TestDumbbellNames: every host of a 16+16 dumbbell gets a namespace, a
// device name that fits and, on the packet plane, a router end, all
// distinct, and addresses in the testbed's /24 and /64, distinct; c1 and
// s1 keep the client's and the server's names and addresses.
func TestDumbbellNames(t *testing.T) {
	for _, name := range []string{"lab", "ninechars", strings.Repeat("x", 32)} {
		o := Options{Name: name, Clients: link.MaxHosts, Servers: link.MaxHosts, DataPlane: PacketPlane}
		i := o.infoOf()
		if len(i.Hosts) != 2*link.MaxHosts {
			t.Fatalf("%s: %d hosts, want %d", name, len(i.Hosts), 2*link.MaxHosts)
		}
		two := InfoOf(name).onPlane(PacketPlane)
		if c := i.Client; c.NS != two.Client.NS || c.IfName != two.Client.IfName || c.Addr4 != two.Client.Addr4 || c.Addr6 != two.Client.Addr6 || c.RouterIf != two.Client.RouterIf {
			t.Errorf("%s: c1 is %+v, want the client of two hosts %+v", name, c, two.Client)
		}
		if s := i.Host(Server); s.NS != two.Server.NS || s.Addr4 != two.Server.Addr4 || s.IfName != two.Server.IfName {
			t.Errorf("%s: s1 is %+v, want the server of two hosts %+v", name, s, two.Server)
		}
		seen := map[string]string{}
		prefix4 := netip.PrefixFrom(i.Client.Addr4, 24).Masked()
		prefix6 := netip.PrefixFrom(i.Client.Addr6, 64).Masked()
		for _, h := range i.Hosts {
			if err := netns.CheckName(h.NS); err != nil {
				t.Errorf("%s: %v", h.Name, err)
			}
			for _, ifn := range []string{h.IfName, h.RouterIf} {
				if err := netns.CheckIfName(ifn); err != nil {
					t.Errorf("%s: %v", h.Name, err)
				}
			}
			if !prefix4.Contains(h.Addr4) || !prefix6.Contains(h.Addr6) {
				t.Errorf("%s: %v %v outside %v %v", h.Name, h.Addr4, h.Addr6, prefix4, prefix6)
			}
			for _, k := range []string{h.NS, h.RouterIf, h.Addr4.String(), h.Addr6.String()} {
				if prev, ok := seen[k]; ok {
					t.Errorf("%s: %s is also %s's", h.Name, k, prev)
				}
				seen[k] = string(h.Name)
			}
			if got := i.Host(h.Name); got.NS != h.NS {
				t.Errorf("Info.Host(%s) = %+v", h.Name, got)
			}
		}
	}
	i := Options{Name: "lab", Clients: 3, Servers: 16}.infoOf()
	for r, want := range map[Role][3]string{
		"c2":  {"wl-lab-c2", "wl-lab-c2", "102"},
		"s16": {"wl-lab-s16", "wl-lab-s16", "216"},
	} {
		h := i.Host(r)
		if h.NS != want[0] || h.IfName != want[1] || !strings.HasSuffix(h.Addr4.String(), "."+want[2]) || !strings.HasSuffix(h.Addr6.String(), "::"+want[2]) {
			t.Errorf("host %s = %s %s %v %v; want %s %s .%s ::%s", r, h.NS, h.IfName, h.Addr4, h.Addr6, want[0], want[1], want[2], want[2])
		}
	}
}

// TestParseRoleHosts: c1..c16 and s1..s16 name hosts, c1 and s1 being the
// client and the server; anything else is refused naming what is.
func TestParseRoleHosts(t *testing.T) {
	for in, want := range map[string]Role{"c1": Client, "s1": Server, "c2": "c2", "s16": "s16", "C3": "c3"} {
		if got, err := ParseRole(in); err != nil || got != want {
			t.Errorf("ParseRole(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"c17", "s0", "x2", "router"} {
		if _, err := ParseRole(in); err == nil || !strings.Contains(err.Error(), "c1..c16") {
			t.Errorf("ParseRole(%q) = %v, want an error naming c1..c16", in, err)
		}
	}
	if Role("c3").Peer() != Server || Role("s2").Peer() != Client || Client.Peer() != Server {
		t.Errorf("peers: c3 %s, s2 %s, client %s", Role("c3").Peer(), Role("s2").Peer(), Client.Peer())
	}
	i := Options{Name: "lab", Clients: 2}.infoOf()
	if err := i.Has("c2"); err != nil {
		t.Errorf("Has(c2) = %v", err)
	}
	if err := i.Has("s2"); err == nil || !strings.Contains(err.Error(), "host s2 is not one of testbed lab's hosts (client, c2, server)") {
		t.Errorf("Has(s2) = %v, want an error naming client, c2, server", err)
	}
	if err := InfoOf("lab").Has("c2"); err == nil || !strings.Contains(err.Error(), "client, server") {
		t.Errorf("two hosts: Has(c2) = %v, want an error naming client, server", err)
	}
}

// TestOptionsCheckHosts: counts, access links and per-host congestion
// controls that can never work are ErrBadInput naming the setting.
func TestOptionsCheckHosts(t *testing.T) {
	c2, s1 := link.Host{N: 2}, link.Host{Server: true, N: 1}
	good := []Options{
		{Clients: 16, Servers: 16},
		{Clients: 2, Access: []Access{{Host: c2, Dir: "up", Chain: mustChain(t, "netem delay 40ms")}, {Host: s1, Dir: "down"}}},
		{Clients: 2, HostCC: map[link.Host]string{c2: "bbr"}},
	}
	for _, o := range good {
		if err := o.Check(); err != nil {
			t.Errorf("Check(%+v) = %v, want nil", o, err)
		}
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Clients: 17}, "17 clients: give 1 to 16"},
		{Options{Servers: -1}, "-1 servers"},
		{Options{Access: []Access{{Host: c2, Dir: "up"}}}, "up:c2: c2: there is one client (c1)"},
		{Options{Clients: 4, Access: []Access{{Host: link.Host{N: 5}, Dir: "up"}}}, "there are 4 clients (c1..c4)"},
		{Options{Access: []Access{{Host: s1, Dir: "sideways"}}}, `direction "sideways"`},
		{Options{Access: []Access{{Host: s1, Dir: "up"}, {Host: s1, Dir: "up"}}}, "up:s1 is given twice"},
		{Options{Access: []Access{{Host: s1, Dir: "down", Chain: mustChain(t, "fq_codel; netem delay 1ms")}}}, "access link down:s1"},
		{Options{HostCC: map[link.Host]string{c2: "bbr"}}, "congestion control of c2"},
		{Options{HostCC: map[link.Host]string{s1: "bbr;x"}}, "s1: congestion control"},
	} {
		err := c.o.Check()
		if err == nil || !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%+v) = %v; want ErrBadInput saying %q", c.o, err, c.want)
		}
	}
}

// TestDumbbellOnlyWhenNeeded: two hosts without access links are the
// testbed of two hosts, with no Hosts list and no dumbbell router.
func TestDumbbellOnlyWhenNeeded(t *testing.T) {
	if o := (Options{Clients: 1, Servers: 1}); o.dumbbell() || len(o.infoOf().Hosts) != 0 {
		t.Errorf("1+1 hosts make a dumbbell")
	}
	o := Options{Access: []Access{{Host: link.Host{N: 1}, Dir: "up"}}}
	if !o.dumbbell() || o.infoOf().Client.AccessUp != "direct" {
		t.Errorf("an access link makes no dumbbell: %+v", o.infoOf())
	}
	if got := (Options{Clients: 2, Servers: 3}).Roles(); strings.Join(roleStrings(got), " ") != "client c2 server s2 s3" {
		t.Errorf("Roles = %v", got)
	}
}

func roleStrings(rs []Role) []string {
	out := make([]string, len(rs))
	for k, r := range rs {
		out[k] = string(r)
	}
	return out
}

// TestHostSpecsParse: the command line's and experiment file's form of
// the hosts becomes Options' fields, and each mistake is a HostSpecError
// whose Label is the setting at fault.
func TestHostSpecsParse(t *testing.T) {
	l := HostLabels{Clients: "clients", Servers: "servers", AccessUp: "access_up", AccessDown: "access_down", HostCC: "host_cc"}
	var o Options
	hs := HostSpecs{Clients: 3, AccessUp: []string{" c2 = netem delay 40ms", "s1="}, AccessDown: []string{"c3=tbf rate 1mbit burst 10k latency 10ms"}, HostCC: []string{"c3=bbr"}}
	if err := hs.Parse(&o, l, tcspec.Options{}, nil); err != nil {
		t.Fatal(err)
	}
	if o.Clients != 3 || o.Servers != 0 || len(o.Access) != 3 || o.Access[0].Host != (link.Host{N: 2}) || len(o.Access[1].Chain) != 0 || o.HostCC[link.Host{N: 3}] != "bbr" {
		t.Errorf("options %+v", o)
	}
	if err := o.Check(); err != nil {
		t.Errorf("Check of what Parse made: %v", err)
	}
	for _, c := range []struct {
		hs          HostSpecs
		label, want string
	}{
		{HostSpecs{Servers: 17}, "servers", "servers 17: give 1 to 16 hosts"},
		{HostSpecs{AccessUp: []string{"c2=netem delay 1ms"}}, "access_up", "c2: there is one client (c1); name it, or give more clients (clients 1 servers 1)"},
		{HostSpecs{AccessDown: []string{"x9=netem delay 1ms"}}, "access_down", "is not a host name"},
		{HostSpecs{AccessDown: []string{"s1=netem delay 1ms", "s1="}}, "access_down", "gives s1 an access link twice"},
		{HostSpecs{AccessUp: []string{"c1=netem dleay 1ms"}}, "access_up", `access_up "c1=netem dleay 1ms": `},
		{HostSpecs{HostCC: []string{"bbr"}}, "host_cc", `"bbr" is not HOST=CC`},
		{HostSpecs{HostCC: []string{"c1=bbr", "c1=reno"}}, "host_cc", "gives c1 a congestion control twice"},
	} {
		err := c.hs.Parse(&Options{}, l, tcspec.Options{}, nil)
		var he *HostSpecError
		if !errors.As(err, &he) || he.Label != c.label || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%+v) = %v; want a HostSpecError at %s saying %q", c.hs, err, c.label, c.want)
		}
	}
}
