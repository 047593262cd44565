package tfrcudp

import (
	"net"
	"net/netip"
)

// socket wraps the caller's PacketConn. When it is a *net.UDPConn, reads
// and writes go through the netip.AddrPort methods, which allocate nothing
// per datagram; any other PacketConn works through its own methods.
type socket struct {
	net.PacketConn
	udp *net.UDPConn
}

// peer is a destination in both forms: ap is valid when addr is a
// *net.UDPAddr.
type peer struct {
	addr net.Addr
	ap   netip.AddrPort
}

func newSocket(c net.PacketConn) socket {
	u, _ := c.(*net.UDPConn)
	return socket{PacketConn: c, udp: u}
}

func newPeer(a net.Addr) peer {
	p := peer{addr: a}
	if u, ok := a.(*net.UDPAddr); ok {
		p.ap = u.AddrPort()
	}
	return p
}

func (s socket) read(b []byte) (int, peer, error) {
	if s.udp != nil {
		n, ap, err := s.udp.ReadFromUDPAddrPort(b)
		return n, peer{ap: ap}, err
	}
	n, a, err := s.PacketConn.ReadFrom(b)
	return n, peer{addr: a}, err
}

func (s socket) write(b []byte, to peer) error {
	var err error
	if s.udp != nil && to.ap.IsValid() {
		_, err = s.udp.WriteToUDPAddrPort(b, to.ap)
	} else {
		_, err = s.PacketConn.WriteTo(b, to.addr)
	}
	return err
}

// valid reports whether p names a destination.
func (p peer) valid() bool { return p.ap.IsValid() || p.addr != nil }
