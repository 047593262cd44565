package bridgeport

import (
	"fmt"
	"net/netip"
	"strings"

	"wanlab/netns"
)

// State is what Inspect saw of an interface: everything Take changes and
// everything Check judges.
type State struct {
	// Netns is the namespace's name; "" is the calling process's own
	// namespace. NetnsID identifies it (two names, or a name reused, are
	// told apart by it).
	Netns   string   `json:"netns,omitempty"`
	NetnsID netns.ID `json:"netns_id"`
	Name    string   `json:"name"`
	Index   int      `json:"index"`
	// Kind is the link's kind as `ip -d link` shows it (veth, vlan,
	// bond, ...); "device" for a plain NIC.
	Kind string `json:"kind"`
	// LinkType is its hardware type (ARPHRD_*) as netlink names it:
	// "ether", "loopback", "none" (a TUN), ...
	LinkType string `json:"link_type"`
	// Flags are its IFF_* flags as `ip link` shows them; Up is IFF_UP.
	Flags uint32 `json:"flags"`
	Up    bool   `json:"up"`
	// Promisc is the promiscuous mode set by hand (ip link set promisc
	// on); Promiscuity is the kernel's count, which also counts packet
	// sockets' memberships.
	Promisc     bool `json:"promisc"`
	Promiscuity int  `json:"promiscuity"`
	MTU         int  `json:"mtu"`
	// MAC is its hardware address, as `ip link` shows it.
	MAC string `json:"mac,omitempty"`
	// Master is the bridge, bond, team or VRF it is enslaved to, and
	// MasterKind that device's kind; "" when it has none.
	Master     string `json:"master,omitempty"`
	MasterKind string `json:"master_kind,omitempty"`
	// Uppers are VLAN, macvlan and ipvlan interfaces made on top of it,
	// which receive through it.
	Uppers []string `json:"uppers,omitempty"`
	// Addrs are its addresses, IPv4 and IPv6, link-local included.
	Addrs []netip.Prefix `json:"addrs,omitempty"`
	// Routes are the routes of the main table that go out of it, as
	// `ip route` would list them, sorted.
	Routes []string `json:"routes,omitempty"`
	// DefaultRoute lists the families ("IPv4", "IPv6") whose default
	// route, in any table, goes out of it.
	DefaultRoute []string `json:"default_route,omitempty"`
	// DisableIPv6 is net.ipv6.conf.IF.disable_ipv6, "0" or "1"; "" when
	// the kernel has no IPv6.
	DisableIPv6 string `json:"disable_ipv6"`
	// Qdiscs are its qdiscs as "KIND HANDLE parent PARENT", in the
	// kernel's order.
	Qdiscs []string `json:"qdiscs,omitempty"`
	// Clsact says whether it has a clsact or ingress qdisc: the hook Take
	// puts its filter on.
	Clsact bool `json:"clsact"`
	// Holder names the live process that holds the port (Take's record
	// of it: "wanlab bridge eth1 eth2 (pid 42, since ...)"); "" when no
	// one does, or its holder died (RestoreStale gives those back).
	Holder string `json:"holder,omitempty"`
}

// where names the interface in messages: "eth1", or "wl-x-r's wl-p0"
// for one in a named namespace.
func (s State) where() string {
	if s.Netns == "" {
		return s.Name
	}
	return s.Netns + "'s " + s.Name
}

// OwnAddrs returns the addresses of the machine on the interface: every
// IPv4 address and every IPv6 address but the link-local ones, which
// every IPv6 interface has and which name no one's traffic.
func (s State) OwnAddrs() []netip.Prefix {
	var own []netip.Prefix
	for _, a := range s.Addrs {
		if a.Addr().Is4() || !a.Addr().IsLinkLocalUnicast() {
			own = append(own, a)
		}
	}
	return own
}

// RefusedError is an interface wanlab will not take as it is. Its message
// names the problem and the fix; a command reports it as bad input.
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }

func refusef(format string, args ...any) error {
	return &RefusedError{Msg: fmt.Sprintf(format, args...)}
}

// Check judges a and b, as Inspect saw them, as the two ports of a bridge.
// It refuses, with a *RefusedError that names the problem and the fix:
// the same interface twice; the loopback; a link type other than
// Ethernet; a port enslaved to a bridge, bond or VRF; one that another
// bridge holds (naming it); one with a clsact or ingress qdisc already
// (someone else's filters). Unless force, it also
// refuses a port that carries addresses of the machine, its default
// route or VLAN interfaces; with force, it returns what will stop working
// instead, one line each.
func Check(a, b State, force bool) (warnings []string, err error) {
	if a.NetnsID == b.NetnsID && a.Index == b.Index {
		return nil, refusef("%s is given twice: a bridge joins two different interfaces", a.where())
	}
	for _, s := range []State{a, b} {
		if err := checkKind(s); err != nil {
			return nil, err
		}
	}
	for _, s := range []State{a, b} {
		w := inUse(s)
		if len(w) > 0 && !force {
			return nil, refusef("%s: %s; give an interface the machine does not use, or --force to take it anyway", s.where(), strings.Join(w, "; "))
		}
		for _, l := range w {
			warnings = append(warnings, s.where()+": "+l)
		}
	}
	return warnings, nil
}

// checkKind refuses what cannot be a port at all, whatever force says.
func checkKind(s State) error {
	switch {
	case s.LinkType == "loopback":
		return refusef("%s is the loopback interface, which leads nowhere: give an Ethernet interface (a NIC, a veth, a VLAN)", s.where())
	case s.LinkType != "ether":
		return refusef("%s has link type %s, not Ethernet: the bridge's frames carry Ethernet headers; give an Ethernet interface (a NIC, a veth, a VLAN)", s.where(), s.LinkType)
	case s.Master != "":
		return refusef("%s is enslaved to %s %s, which receives its frames: release it first (ip link set %s nomaster)", s.where(), s.MasterKind, s.Master, s.Name)
	case s.Holder != "":
		// Its clsact is the holder's.
		return held(s.where(), s.Holder)
	case s.Clsact:
		return hasClsact(s)
	}
	return nil
}

// hasClsact refuses s, which has a clsact or ingress qdisc already.
func hasClsact(s State) error {
	kind := "a clsact"
	for _, q := range s.Qdiscs {
		if strings.HasPrefix(q, "ingress ") {
			kind = "an ingress"
		}
	}
	return refusef("%s already has %s qdisc, whose filters are someone else's and which wanlab will not remove: remove it if nothing needs it (tc qdisc del dev %s %s), or give another interface",
		s.where(), kind, s.Name, strings.Fields(kind)[1])
}

// inUse says how the machine itself uses s: what stops working while
// wanlab holds it, because every frame arriving there is dropped after
// the router's copy and IPv6 is off on it.
func inUse(s State) []string {
	var w []string
	if own := s.OwnAddrs(); len(own) > 0 {
		w = append(w, fmt.Sprintf("it carries addresses of this machine (%s): its own traffic through them stops while wanlab holds it, and IPv6 is turned off on it meanwhile", joinPrefixes(own)))
	}
	if len(s.DefaultRoute) > 0 {
		w = append(w, fmt.Sprintf("it carries the machine's default route (%s): its traffic to other networks stops while wanlab holds it", strings.Join(s.DefaultRoute, ", ")))
	}
	if len(s.Uppers) > 0 {
		w = append(w, fmt.Sprintf("the interfaces %s receive through it and receive nothing while wanlab holds it", strings.Join(s.Uppers, ", ")))
	}
	return w
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
