package router

import "net/netip"

// routeTable chooses a packet's egress port on a router of many hosts: the
// receiving host whose address is the packet's destination. A dumbbell has
// at most link.MaxHosts hosts on a side, each with a few addresses, so a
// linear scan of a flat table is as fast as a map and allocates nothing.
type routeTable struct {
	addrs []netip.Addr
	ports []uint8
}

// add routes addr to port.
func (t *routeTable) add(addr netip.Addr, port int) {
	t.addrs = append(t.addrs, addr.Unmap())
	t.ports = append(t.ports, uint8(port))
}

// lookup returns the egress port of the IP packet pkt, or false when no
// host has its destination address (or pkt is too short to have one).
func (t *routeTable) lookup(pkt []byte) (int, bool) {
	var dst netip.Addr
	switch {
	case len(pkt) >= 20 && pkt[0]>>4 == 4:
		dst = netip.AddrFrom4([4]byte(pkt[16:20]))
	case len(pkt) >= 40 && pkt[0]>>4 == 6:
		dst = netip.AddrFrom16([16]byte(pkt[24:40]))
	default:
		return 0, false
	}
	for i, a := range t.addrs {
		if a == dst {
			return int(t.ports[i]), true
		}
	}
	return 0, false
}
