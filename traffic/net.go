package traffic

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// Control sets options on a socket after it is created and before it is
// bound or connected, as net.Dialer.Control and net.ListenConfig.Control
// do: congestion control, TOS and buffer sizes must be in place before the
// handshake, because the window scale is chosen from the receive buffer
// then.
type Control func(network, address string, c syscall.RawConn) error

// Net makes the sockets of one host. Every call behaves as the standard
// library's net.Dialer.DialContext, net.ListenConfig.Listen and
// net.ListenConfig.ListenPacket do in the host's network namespace, with
// control applied before bind and connect; a socket stays in the namespace
// it was made in and may then be used from any goroutine. ListenPacket also
// takes raw ICMP networks ("ip4:icmp", "ip6:ipv6-icmp"), which need
// CAP_NET_RAW.
type Net interface {
	// Dial connects to raddr over network ("tcp", "tcp4", "tcp6", "udp",
	// ...). A non-empty laddr is the local address to bind first ("host"
	// or "host:port").
	Dial(ctx context.Context, network, laddr, raddr string, control Control) (net.Conn, error)
	// Listen listens for stream connections on address.
	Listen(ctx context.Context, network, address string, control Control) (net.Listener, error)
	// ListenPacket opens a packet socket bound to address.
	ListenPacket(ctx context.Context, network, address string, control Control) (net.PacketConn, error)
}

// Local is the Net of the calling process's own network namespace.
type Local struct{}

var _ Net = Local{}

// Dial connects from the calling process's namespace.
func (Local) Dial(ctx context.Context, network, laddr, raddr string, control Control) (net.Conn, error) {
	d := net.Dialer{Control: control}
	if laddr != "" {
		a, err := localAddr(network, laddr)
		if err != nil {
			return nil, err
		}
		d.LocalAddr = a
	}
	return d.DialContext(ctx, network, raddr)
}

// Listen listens in the calling process's namespace.
func (Local) Listen(ctx context.Context, network, address string, control Control) (net.Listener, error) {
	lc := net.ListenConfig{Control: control}
	return lc.Listen(ctx, network, address)
}

// ListenPacket opens a packet socket in the calling process's namespace.
func (Local) ListenPacket(ctx context.Context, network, address string, control Control) (net.PacketConn, error) {
	lc := net.ListenConfig{Control: control}
	return lc.ListenPacket(ctx, network, address)
}

// localAddr resolves laddr for binding a socket of network before dialing.
// A bare address (no port) binds port 0.
func localAddr(network, laddr string) (net.Addr, error) {
	ap, err := netip.ParseAddrPort(laddr)
	if err != nil {
		a, aerr := netip.ParseAddr(laddr)
		if aerr != nil {
			return nil, fmt.Errorf("traffic: local address %q: want an IP address, optionally with a port", laddr)
		}
		ap = netip.AddrPortFrom(a, 0)
	}
	switch network {
	case "tcp", "tcp4", "tcp6":
		return net.TCPAddrFromAddrPort(ap), nil
	case "udp", "udp4", "udp6":
		return net.UDPAddrFromAddrPort(ap), nil
	}
	return nil, fmt.Errorf("traffic: cannot bind a local address for network %q", network)
}

// Host is one end of a flow: the Net that makes its sockets and the
// address it is reached at (and binds to, when it is the side that
// connects). An invalid (zero) Addr on the connecting side leaves the
// choice of source address to the kernel.
type Host struct {
	Net  Net
	Addr netip.Addr
}

// bindAddr returns the local address the connecting side binds, or "" to
// let the kernel choose.
func (h Host) bindAddr() string {
	if !h.Addr.IsValid() {
		return ""
	}
	return h.Addr.String()
}

// listenAddr returns h's address with port 0, for a listening socket.
func (h Host) listenAddr() string {
	return netip.AddrPortFrom(h.Addr, 0).String()
}

// Direction says which host sends a flow's data.
type Direction int

const (
	// Up: the client sends to the server.
	Up Direction = iota
	// Down: the server sends to the client.
	Down
)

// String returns "up" or "down".
func (d Direction) String() string {
	switch d {
	case Up:
		return "up"
	case Down:
		return "down"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// MarshalText encodes d as "up" or "down", for JSON.
func (d Direction) MarshalText() ([]byte, error) {
	if d != Up && d != Down {
		return nil, fmt.Errorf("traffic: invalid direction %d", int(d))
	}
	return []byte(d.String()), nil
}
