package bridgeport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"wanlab/netns"
)

// Inspect returns what the interface ifname in ns (nil: the calling
// process's own namespace) is now: everything Take changes and Check
// judges. An interface that does not exist gives a *RefusedError that
// names the ones that do.
func Inspect(ns *netns.Handle, ifname string) (State, error) {
	s, err := openSpace(ns)
	if err != nil {
		return State{}, err
	}
	defer s.close()
	return s.inspect(ifname)
}

func (s *space) inspect(ifname string) (State, error) {
	if err := netns.CheckIfName(ifname); err != nil {
		return State{}, &RefusedError{Msg: err.Error()}
	}
	l, err := s.nl.LinkByName(ifname)
	if err != nil {
		if errors.As(err, new(netlink.LinkNotFoundError)) {
			return State{}, s.noSuchLink(ifname)
		}
		return State{}, fmt.Errorf("bridgeport: %s: %s: %w", s.label(), ifname, err)
	}
	return s.inspectLink(l)
}

// noSuchLink is the refusal of an interface that does not exist.
func (s *space) noSuchLink(ifname string) error {
	links, err := s.nl.LinkList()
	if err != nil {
		return refusef("%s has no interface %s", s.label(), ifname)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	slices.Sort(names)
	return refusef("%s has no interface %s; it has %s", s.label(), ifname, strings.Join(names, ", "))
}

// inspectLink returns the state of l.
func (s *space) inspectLink(l netlink.Link) (State, error) {
	a := l.Attrs()
	st := State{
		Netns:       s.name,
		NetnsID:     s.id,
		Name:        a.Name,
		Index:       a.Index,
		Kind:        l.Type(),
		LinkType:    a.EncapType,
		Flags:       a.RawFlags,
		Up:          a.RawFlags&unix.IFF_UP != 0,
		Promisc:     a.RawFlags&unix.IFF_PROMISC != 0,
		Promiscuity: a.Promisc,
		MTU:         a.MTU,
		MAC:         a.HardwareAddr.String(),
	}
	fail := func(what string, err error) (State, error) {
		return State{}, fmt.Errorf("bridgeport: %s: %s of %s: %w", s.label(), what, a.Name, err)
	}
	links, err := s.nl.LinkList()
	if err != nil {
		return fail("interfaces", err)
	}
	for _, o := range links {
		oa := o.Attrs()
		switch {
		case a.MasterIndex != 0 && oa.Index == a.MasterIndex:
			st.Master, st.MasterKind = oa.Name, o.Type()
		case oa.ParentIndex == a.Index && isUpper(o.Type()):
			st.Uppers = append(st.Uppers, oa.Name)
		}
	}
	if a.MasterIndex != 0 && st.Master == "" {
		st.Master, st.MasterKind = fmt.Sprintf("interface %d", a.MasterIndex), "a master"
	}
	addrs, err := s.nl.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return fail("addresses", err)
	}
	for _, ad := range addrs {
		if p, ok := prefixOf(ad.IPNet); ok {
			st.Addrs = append(st.Addrs, p)
		}
	}
	slices.SortFunc(st.Addrs, func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) })
	routes, err := s.nl.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return fail("routes", err)
	}
	for _, r := range routes {
		if !routeUses(r, a.Index) {
			continue
		}
		if r.Table == unix.RT_TABLE_MAIN {
			st.Routes = append(st.Routes, formatRoute(r))
		}
		if isDefault(r) {
			fam := "IPv4"
			if r.Family == netlink.FAMILY_V6 {
				fam = "IPv6"
			}
			if !slices.Contains(st.DefaultRoute, fam) {
				st.DefaultRoute = append(st.DefaultRoute, fam)
			}
		}
	}
	slices.Sort(st.Routes)
	slices.Sort(st.DefaultRoute)
	if st.DisableIPv6, err = s.disableIPv6(a.Name); err != nil {
		return State{}, err
	}
	qs, err := s.nl.QdiscList(l)
	if err != nil {
		return fail("qdiscs", err)
	}
	for _, q := range qs {
		qa := q.Attrs()
		st.Qdiscs = append(st.Qdiscs, fmt.Sprintf("%s %s parent %s", q.Type(), netlink.HandleStr(qa.Handle), netlink.HandleStr(qa.Parent)))
		if qa.Parent == netlink.HANDLE_CLSACT {
			st.Clsact = true
		}
	}
	// Records are replaced by rename: one read without the lock is
	// whole. One that cannot be read is Take's and RestoreStale's to
	// report.
	if r, err := readRecord(recordPath(s.id, a.Index)); err == nil && r.Owner.Alive() {
		st.Holder = r.holder()
	}
	return st, nil
}

// isUpper reports whether an interface of kind receives through its
// parent (IFLA_LINK): a veth's IFLA_LINK is its peer, which is no upper.
func isUpper(kind string) bool {
	switch kind {
	case "vlan", "macvlan", "macvtap", "ipvlan", "ipvtap":
		return true
	}
	return false
}

// routeUses reports whether r goes out of the interface index, alone or
// as one of its next hops.
func routeUses(r netlink.Route, index int) bool {
	if r.LinkIndex == index {
		return true
	}
	for _, nh := range r.MultiPath {
		if nh.LinkIndex == index {
			return true
		}
	}
	return false
}

// isDefault reports whether r is a default route that carries traffic
// (not a blackhole or unreachable one).
func isDefault(r netlink.Route) bool {
	if r.Dst != nil {
		if ones, _ := r.Dst.Mask.Size(); ones != 0 {
			return false
		}
	}
	return r.Type == unix.RTN_UNICAST
}

// prefixOf converts an address with its prefix length.
func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(ip.Unmap(), ones), true
}

// addrOf converts an address, the zero Addr for none.
func addrOf(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// formatRoute shows r much as `ip route` does.
func formatRoute(r netlink.Route) string {
	var b strings.Builder
	if p, ok := prefixOf(r.Dst); ok && p.Bits() > 0 {
		b.WriteString(p.String())
	} else {
		b.WriteString("default")
	}
	if gw := addrOf(r.Gw); gw.IsValid() {
		b.WriteString(" via " + gw.String())
	}
	for _, nh := range r.MultiPath {
		fmt.Fprintf(&b, " nexthop via %s dev %d", addrOf(nh.Gw), nh.LinkIndex)
	}
	if src := addrOf(r.Src); src.IsValid() {
		b.WriteString(" src " + src.String())
	}
	fmt.Fprintf(&b, " proto %s scope %s metric %d", r.Protocol, r.Scope, r.Priority)
	return b.String()
}
