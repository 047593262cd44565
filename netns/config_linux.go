package netns

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// link looks up an interface of the namespace by name.
func (h *Handle) link(ifname string) (netlink.Link, error) {
	if err := CheckIfName(ifname); err != nil {
		return nil, err
	}
	l, err := h.nl.LinkByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("netns: %s: no interface %s: %w", h.name, ifname, err)
	}
	return l, nil
}

// LoopbackUp brings up the namespace's loopback interface, which a new
// namespace has down.
func (h *Handle) LoopbackUp() error { return h.SetLinkUp("lo") }

// SetLinkUp sets the interface administratively up.
func (h *Handle) SetLinkUp(ifname string) error {
	return h.setLink(ifname, "set "+ifname+" up", h.nl.LinkSetUp)
}

// setLink applies set to the interface ifname; what says what set does,
// for its error.
func (h *Handle) setLink(ifname, what string, set func(netlink.Link) error) error {
	l, err := h.link(ifname)
	if err != nil {
		return err
	}
	if err := set(l); err != nil {
		return fmt.Errorf("netns: %s: %s: %w", h.name, what, err)
	}
	return nil
}

// SetMTU sets the interface's MTU in bytes.
func (h *Handle) SetMTU(ifname string, mtu int) error {
	return h.setLink(ifname, fmt.Sprintf("set MTU of %s to %d", ifname, mtu), func(l netlink.Link) error { return h.nl.LinkSetMTU(l, mtu) })
}

// SetTxQueueLen sets the interface's txqueuelen in packets. On a TUN device
// it is also the size of the ring between the kernel and the reader.
func (h *Handle) SetTxQueueLen(ifname string, n int) error {
	if n < 0 {
		return fmt.Errorf("netns: txqueuelen %d of %s must not be negative", n, ifname)
	}
	return h.setLink(ifname, fmt.Sprintf("set txqueuelen of %s to %d", ifname, n), func(l netlink.Link) error { return h.nl.LinkSetTxQLen(l, n) })
}

// LinkStats returns the interface's kernel counters (ip -s link).
func (h *Handle) LinkStats(ifname string) (netlink.LinkStatistics, error) {
	l, err := h.link(ifname)
	if err != nil {
		return netlink.LinkStatistics{}, err
	}
	if l.Attrs().Statistics == nil {
		return netlink.LinkStatistics{}, fmt.Errorf("netns: %s: kernel sent no statistics for %s", h.name, ifname)
	}
	return *l.Attrs().Statistics, nil
}

// AddAddr assigns addr (for instance 10.1.0.1/24 or fd00::1/64) to the
// interface. IPv6 addresses skip duplicate address detection (nodad), so they
// are usable at once.
func (h *Handle) AddAddr(ifname string, addr netip.Prefix) error {
	return h.addAddr(ifname, addr, netip.Prefix{})
}

// AddPeerAddr assigns local to a point-to-point interface and names the peer
// at its other end, like `ip addr add LOCAL peer PEER dev IFNAME`. The kernel
// then routes peer through the interface without a separate route. IPv6
// addresses skip duplicate address detection. An IPv6 peer address needs
// the interface up (SetLinkUp) first: Linux installs the route to an IPv6
// peer only when the address is added to an interface that is up, and does
// not restore it when the interface comes up later.
func (h *Handle) AddPeerAddr(ifname string, local netip.Addr, peer netip.Prefix) error {
	if !peer.IsValid() {
		return fmt.Errorf("netns: peer of %s on %s is not a valid prefix", local, ifname)
	}
	if local.Is6() {
		l, err := h.link(ifname)
		if err != nil {
			return err
		}
		if l.Attrs().Flags&net.FlagUp == 0 {
			return fmt.Errorf("netns: %s: set %s up before adding the IPv6 peer address %s, or the kernel installs no route to peer %s",
				h.name, ifname, local, peer)
		}
	}
	return h.addAddr(ifname, netip.PrefixFrom(local, local.BitLen()), peer)
}

func (h *Handle) addAddr(ifname string, local, peer netip.Prefix) error {
	if !local.IsValid() {
		return fmt.Errorf("netns: address for %s is not a valid prefix", ifname)
	}
	if peer.IsValid() && peer.Addr().Is4() != local.Addr().Is4() {
		return fmt.Errorf("netns: local %s and peer %s on %s are of different IP versions", local, peer, ifname)
	}
	l, err := h.link(ifname)
	if err != nil {
		return err
	}
	a := &netlink.Addr{IPNet: ipNet(local)}
	if peer.IsValid() {
		a.Peer = ipNet(peer)
	}
	if local.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD
	}
	if err := h.nl.AddrAdd(l, a); err != nil {
		return fmt.Errorf("netns: %s: add address %s to %s: %w", h.name, local, ifname, err)
	}
	return nil
}

// Route is a route in a namespace's main table.
type Route struct {
	// Dst is the destination; 0.0.0.0/0 or ::/0 is the default route.
	Dst netip.Prefix
	// Dev is the outgoing interface.
	Dev string
	// Via is the next hop; the zero value makes the route on-link (scope
	// link), which is how a TUN or a point-to-point peer is reached.
	Via netip.Addr
	// Src is the preferred source address; zero lets the kernel choose.
	Src netip.Addr
}

// AddRoute adds r to the namespace's main routing table.
func (h *Handle) AddRoute(r Route) error {
	if !r.Dst.IsValid() {
		return fmt.Errorf("netns: route via %s has no valid destination", r.Dev)
	}
	l, err := h.link(r.Dev)
	if err != nil {
		return err
	}
	nr := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: ipNet(r.Dst.Masked())}
	if r.Via.IsValid() {
		nr.Gw = net.IP(r.Via.AsSlice())
	} else {
		nr.Scope = netlink.SCOPE_LINK
	}
	if r.Src.IsValid() {
		nr.Src = net.IP(r.Src.AsSlice())
	}
	if err := h.nl.RouteAdd(nr); err != nil {
		return fmt.Errorf("netns: %s: add route %s dev %s: %w", h.name, r.Dst, r.Dev, err)
	}
	return nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
