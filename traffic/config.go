package traffic

import (
	"fmt"
	"net"
	"net/netip"
)

// CheckHosts checks the two ends of a flow labelled label, for the flows
// of this package and others: both have a Net, the server has an address,
// and a client address, if given, is of the same family.
func CheckHosts(label string, client, server Host) error {
	if client.Net == nil || server.Net == nil {
		return fmt.Errorf("traffic: flow %q: both hosts need a Net (traffic.Local{} for this process's namespace)", label)
	}
	if !server.Addr.IsValid() {
		return fmt.Errorf("traffic: flow %q: the server has no address: set Server.Addr", label)
	}
	if client.Addr.IsValid() && client.Addr.Is4() != server.Addr.Is4() {
		return fmt.Errorf("traffic: flow %q: client address %v and server address %v are of different IP versions: use two IPv4 or two IPv6 addresses", label, client.Addr, server.Addr)
	}
	return nil
}

// CheckTOS checks that tos, the TOS byte of the flow labelled label, is a
// byte.
func CheckTOS(label string, tos int) error {
	if tos < 0 || tos > 255 {
		return fmt.Errorf("traffic: flow %q: TOS %d is not a byte: give the DSCP shifted left by two (EF is 0xb8)", label, tos)
	}
	return nil
}

// AddrPort returns a socket address as a netip.AddrPort (an IPv4 address
// as such, not mapped into IPv6), or the zero value if it is not an IP
// address.
func AddrPort(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch a := a.(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	case *net.UDPAddr:
		ap = a.AddrPort()
	case nil:
		return ap
	default:
		ap, _ = netip.ParseAddrPort(a.String())
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
