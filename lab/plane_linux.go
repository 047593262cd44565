package lab

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"

	"wanlab/bridgeport"
	"wanlab/netns"
	"wanlab/packetsock"
	"wanlab/router"
)

// attachVeth joins host r's namespace h to the router's namespace with a
// veth pair, the router's device on the packet plane: the host's end gets
// the name a TUN device would have, the router's end no address, the
// kernel's disregard (bridgeport.Ignore: IPv6 off, every frame dropped
// after the packet taps) and a packet socket, which the router reads and
// writes. The pair is made from inside h with its peer put straight into
// the router's namespace, so that no end ever exists outside the
// testbed's namespaces.
func (t *Testbed) attachVeth(h *netns.Handle, r Role, k int) error {
	hi := t.info.Host(r)
	f, err := os.Open(t.rns.Path())
	if err != nil {
		return fmt.Errorf("testbed %s: open the router's namespace: %w", t.opts.Name, err)
	}
	defer f.Close()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: hi.IfName}, PeerName: hi.RouterIf, PeerNamespace: netlink.NsFd(int(f.Fd()))}
	if err := h.Netlink().LinkAdd(v); err != nil {
		return fmt.Errorf("testbed %s: veth %s (%s) - %s (%s): %w", t.opts.Name, hi.IfName, h.Name(), hi.RouterIf, t.rns.Name(), err)
	}
	for _, d := range []struct {
		h   *netns.Handle
		ifn string
	}{{h, hi.IfName}, {t.rns, hi.RouterIf}} {
		if err := t.nt.AddDevice(d.h, d.ifn); err != nil {
			return err
		}
	}
	// No ARP or NDP on the host's end (IFF_NOARP, as on a TUN): the
	// hosts find each other through permanent neighbour entries
	// (introduce), and an interface without them joins no solicited-node
	// groups and runs no duplicate address detection, so it sends no
	// MLD reports or neighbour solicitations of its own into the router.
	l, err := h.Netlink().LinkByName(hi.IfName)
	if err == nil {
		err = h.Netlink().LinkSetARPOff(l)
	}
	if err != nil {
		return fmt.Errorf("testbed %s: %s: arp off on %s: %w", t.opts.Name, h.Name(), hi.IfName, err)
	}
	if err := bridgeport.Ignore(t.rns, hi.RouterIf); err != nil {
		return err
	}
	dev, err := packetsock.Open(t.rns, hi.RouterIf, packetsock.Options{})
	if err != nil {
		return err
	}
	t.devs[k] = dev
	t.rings[k] = router.PacketRing(dev)
	return nil
}

// introduce gives each host, on the packet plane, a permanent neighbour
// entry for the addresses of every host of the other side with the MAC
// address of that host's veth end: the hosts have no ARP or NDP to find
// each other with (see attachVeth), so, as on the TUN plane, only what
// they send to each other crosses the router (neighbour discovery would
// cross its chains, NDP being ICMPv6, and a lossy chain would make the
// hosts lose each other).
func (t *Testbed) introduce() error {
	all := t.info.All()
	macs := make([]net.HardwareAddr, len(all))
	index := make([]int, len(all))
	for k, hi := range all {
		l, err := t.hosts[hi.Name].Netlink().LinkByName(hi.IfName)
		if err != nil {
			return fmt.Errorf("testbed %s: %s: %w", t.opts.Name, hi.IfName, err)
		}
		macs[k], index[k] = l.Attrs().HardwareAddr, l.Attrs().Index
	}
	for k, hi := range all {
		h := t.hosts[hi.Name]
		for p, peer := range all {
			if peer.Name.Host().Server == hi.Name.Host().Server {
				continue
			}
			for _, a := range []netip.Addr{peer.Addr4, peer.Addr6} {
				n := &netlink.Neigh{LinkIndex: index[k], IP: net.IP(a.AsSlice()), HardwareAddr: macs[p], State: netlink.NUD_PERMANENT}
				if err := h.Netlink().NeighAdd(n); err != nil {
					return fmt.Errorf("testbed %s: %s: neighbour %s at %s: %w", t.opts.Name, h.Name(), a, macs[p], err)
				}
			}
		}
	}
	return nil
}
