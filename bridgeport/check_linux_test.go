package bridgeport

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"wanlab/netns"
	"wanlab/tun"
)

// port is a State Check accepts: a veth, down, without addresses.
func port(name string, index int) State {
	return State{Netns: "wl-t-r", NetnsID: netns.ID{Dev: 4, Ino: 4026532000}, Name: name, Index: index, Kind: "veth", LinkType: "ether", MTU: 1500, DisableIPv6: "0"}
}

func TestCheck(t *testing.T) {
	a, b := port("wl-a", 2), port("wl-b", 3)
	with := func(s State, f func(*State)) State { f(&s); return s }
	addr := with(a, func(s *State) {
		s.Addrs = []netip.Prefix{netip.MustParsePrefix("10.1.0.1/24"), netip.MustParsePrefix("fe80::1/64")}
	})
	for _, tc := range []struct {
		name  string
		a, b  State
		force bool
		want  []string // in the refusal; none: accepted
		warn  []string // in the warnings when accepted
	}{
		{name: "two veths", a: a, b: b},
		{name: "a link-local address is no address of the machine's", a: with(a, func(s *State) { s.Addrs = []netip.Prefix{netip.MustParsePrefix("fe80::1/64")} }), b: b},
		{name: "twice", a: a, b: a, want: []string{"wl-t-r's wl-a is given twice", "two different interfaces"}},
		{name: "same index, other namespace", a: a, b: with(a, func(s *State) { s.NetnsID.Ino++ })},
		{name: "loopback", a: with(a, func(s *State) { s.Name, s.LinkType = "lo", "loopback" }), b: b, force: true,
			want: []string{"lo is the loopback interface", "give an Ethernet interface"}},
		{name: "not Ethernet", a: a, b: with(b, func(s *State) { s.LinkType = "none" }), force: true,
			want: []string{"wl-b has link type none, not Ethernet", "give an Ethernet interface"}},
		{name: "in a bridge", a: with(a, func(s *State) { s.Master, s.MasterKind = "wl-br", "bridge" }), b: b, force: true,
			want: []string{"enslaved to bridge wl-br", "ip link set wl-a nomaster"}},
		{name: "in a bond", a: a, b: with(b, func(s *State) { s.Master, s.MasterKind = "wl-bond", "bond" }), force: true,
			want: []string{"enslaved to bond wl-bond", "ip link set wl-b nomaster"}},
		{name: "clsact", a: with(a, func(s *State) { s.Clsact, s.Qdiscs = true, []string{"clsact ffff:0 parent ingress"} }), b: b, force: true,
			want: []string{"already has a clsact qdisc", "someone else's", "tc qdisc del dev wl-a clsact"}},
		{name: "ingress", a: with(a, func(s *State) { s.Clsact, s.Qdiscs = true, []string{"ingress ffff:0 parent ingress"} }), b: b, force: true,
			want: []string{"already has an ingress qdisc", "tc qdisc del dev wl-a ingress"}},
		{name: "addresses", a: addr, b: b,
			want: []string{"wl-a: it carries addresses of this machine (10.1.0.1/24)", "its own traffic", "--force"}},
		{name: "addresses, forced", a: addr, b: b, force: true,
			warn: []string{"wl-a: it carries addresses of this machine (10.1.0.1/24): its own traffic through them stops"}},
		{name: "default route", a: a, b: with(b, func(s *State) { s.DefaultRoute = []string{"IPv4", "IPv6"} }),
			want: []string{"wl-b: it carries the machine's default route (IPv4, IPv6)", "--force"}},
		{name: "default route, forced", a: a, b: with(b, func(s *State) { s.DefaultRoute = []string{"IPv6"} }), force: true,
			warn: []string{"wl-b: it carries the machine's default route (IPv6): its traffic to other networks stops"}},
		{name: "VLANs on it", a: with(a, func(s *State) { s.Uppers = []string{"wl-a.7"} }), b: b,
			want: []string{"the interfaces wl-a.7 receive through it", "--force"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warn, err := Check(tc.a, tc.b, tc.force)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(warn) != len(tc.warn) {
					t.Fatalf("warnings %q, want %d", warn, len(tc.warn))
				}
				for i, w := range tc.warn {
					if !strings.Contains(warn[i], w) {
						t.Errorf("warning %q lacks %q", warn[i], w)
					}
				}
				return
			}
			checkRefusal(t, err, tc.want...)
		})
	}
}

// checkRefusal checks that err is a *RefusedError, one line, saying each
// of want.
func checkRefusal(t *testing.T, err error, want ...string) {
	t.Helper()
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("got %v (%T), want a *RefusedError", err, err)
	}
	if strings.Contains(re.Msg, "\n") {
		t.Errorf("refusal of more than one line: %q", re.Msg)
	}
	for _, w := range want {
		if !strings.Contains(re.Msg, w) {
			t.Errorf("refusal %q lacks %q", re.Msg, w)
		}
	}
}

// TestInspectSeesWhatCheckRefuses builds each refused interface for real
// and checks that Inspect sees what Check refuses it for.
func TestInspectSeesWhatCheckRefuses(t *testing.T) {
	pr := newPair(t)
	nl := pr.p.Netlink()
	mk := func(l netlink.Link) {
		t.Helper()
		if err := nl.LinkAdd(l); err != nil {
			t.Fatal(err)
		}
		if err := pr.tb.AddDevice(pr.p, l.Attrs().Name); err != nil {
			t.Fatal(err)
		}
	}
	mk(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "wl-c0"}, PeerName: "wl-c1"})
	mk(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "wl-br"}})
	// A TUN, which has no link layer: made through package tun, which
	// makes it inside the namespace (netlink's Tuntap would make it in the
	// calling thread's).
	tdev, err := tun.Open(pr.p, "wl-tun", tun.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tdev.Close()
	base, err := nl.LinkByName(portName)
	if err != nil {
		t.Fatal(err)
	}
	// A macvlan: this kernel has no 8021q or ipvlan, but an upper of one
	// kind stands for all.
	mk(&netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: "wl-bp0m", ParentIndex: base.Attrs().Index}, Mode: netlink.MACVLAN_MODE_BRIDGE})
	br, _ := nl.LinkByName("wl-br")
	c1, _ := nl.LinkByName("wl-c1")
	if err := nl.LinkSetMaster(c1, br); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		pr.p.SetLinkUp("wl-c0"),
		pr.p.AddAddr("wl-c0", netip.MustParsePrefix("10.78.0.1/24")),
		pr.p.AddRoute(netns.Route{Dst: netip.MustParsePrefix("0.0.0.0/0"), Dev: "wl-c0", Via: netip.MustParseAddr("10.78.0.2")}),
		nl.QdiscAdd(clsact(c1.Attrs().Index)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	good := mustInspect(t, pr.p, portName)
	if _, err := Check(good, mustInspect(t, pr.q, peerName), false); err == nil {
		// The peer carries an address: refused without force.
		t.Error("a port with an address was accepted without force")
	}
	for _, tc := range []struct {
		ifname string
		force  bool
		want   []string
	}{
		{"lo", true, []string{pr.p.Name() + "'s lo is the loopback interface"}},
		{"wl-tun", true, []string{"wl-tun has link type none, not Ethernet"}},
		{"wl-c1", true, []string{"enslaved to bridge wl-br"}},
		{"wl-c0", false, []string{"addresses of this machine (10.78.0.1/24)", "default route (IPv4)"}},
		{portName, false, []string{"the interfaces wl-bp0m receive through it"}},
	} {
		st := mustInspect(t, pr.p, tc.ifname)
		other := good
		if tc.ifname == portName {
			other = mustInspect(t, pr.p, "wl-br")
		}
		_, err := Check(st, other, tc.force)
		checkRefusal(t, err, tc.want...)
	}
	// The clsact: the bridge's port is refused for its master first, so
	// a copy without one shows the clsact's refusal.
	st := mustInspect(t, pr.p, "wl-c1")
	st.Master = ""
	_, err = Check(st, good, true)
	checkRefusal(t, err, "already has a clsact qdisc")
	_, err = Check(good, good, true)
	checkRefusal(t, err, "is given twice")
	_, err = Inspect(pr.p, "wl-nothing")
	checkRefusal(t, err, "namespace "+pr.p.Name()+" has no interface wl-nothing; it has lo, wl-bp0, wl-bp0m, wl-br, wl-c0, wl-c1, wl-tun")
}
