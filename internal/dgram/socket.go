// Package dgram is the socket side of wanlab's own datagram transports
// (TFRC's, package tfrc/tfrcudp, and the scalable sender's, package
// scalable/scalableudp), the same for both: a paced sender, whose thread
// sleeps in ppoll until its next packet is due while another goroutine
// reads the receiver's feedback, and a receiver, whose read deadline is
// its protocol's timer and which answers where the data comes from.
//
// The protocols stay in their packages (tfrc, scalable, pure and
// steppable); their UDP packages keep the protocol's lock, buffers and
// statistics and hand this package a Pacer or a Handler, which it calls
// on its loops. Nothing here allocates per packet.
package dgram

import (
	"errors"
	"net"
	"net/netip"
)

// Socket wraps a transport's PacketConn. When it is a *net.UDPConn, reads
// and writes go through the netip.AddrPort methods, which allocate nothing
// per datagram; any other PacketConn works through its own methods.
type Socket struct {
	net.PacketConn
	udp *net.UDPConn
}

// Peer is a destination in both forms: ap is valid when addr is a
// *net.UDPAddr (or when the Peer was read from a *net.UDPConn).
type Peer struct {
	addr net.Addr
	ap   netip.AddrPort
}

// NewSocket returns c as a Socket.
func NewSocket(c net.PacketConn) Socket {
	u, _ := c.(*net.UDPConn)
	return Socket{PacketConn: c, udp: u}
}

// NewPeer returns a as a Peer.
func NewPeer(a net.Addr) Peer {
	p := Peer{addr: a}
	if u, ok := a.(*net.UDPAddr); ok {
		p.ap = u.AddrPort()
	}
	return p
}

// Receive reads one datagram into b and, when oob is not nil, its control
// messages into oob (a *net.UDPConn's only: any other socket reports
// none). It returns the datagram's and the control messages' lengths and
// where the datagram came from.
func (s Socket) Receive(b, oob []byte) (n, oobn int, from Peer, err error) {
	if s.udp != nil {
		var ap netip.AddrPort
		if oob != nil {
			n, oobn, _, ap, err = s.udp.ReadMsgUDPAddrPort(b, oob)
		} else {
			n, ap, err = s.udp.ReadFromUDPAddrPort(b)
		}
		return n, oobn, Peer{ap: ap}, err
	}
	n, a, err := s.PacketConn.ReadFrom(b)
	return n, 0, Peer{addr: a}, err
}

// Send writes b to to.
func (s Socket) Send(b []byte, to Peer) error {
	var err error
	if s.udp != nil && to.ap.IsValid() {
		_, err = s.udp.WriteToUDPAddrPort(b, to.ap)
	} else {
		_, err = s.PacketConn.WriteTo(b, to.addr)
	}
	return err
}

// Valid reports whether p names a destination.
func (p Peer) Valid() bool { return p.ap.IsValid() || p.addr != nil }

// isTimeout reports whether err is a read deadline passing: the
// receiver's timer, not a failure.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
