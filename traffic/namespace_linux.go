package traffic

import (
	"context"
	"net"

	"wanlab/netns"
)

// InNamespace returns the Net of the network namespace h, as the lab's
// hosts use: each call makes its socket on a thread in the namespace
// (netns.Do), and the socket stays there.
func InNamespace(h *netns.Handle) Net { return nsNet{h} }

// nsNet is the Net of one namespace.
type nsNet struct{ h *netns.Handle }

func (n nsNet) Dial(ctx context.Context, network, laddr, raddr string, control Control) (c net.Conn, err error) {
	err = netns.Do(n.h, func() (e error) { c, e = Local{}.Dial(ctx, network, laddr, raddr, control); return e })
	return c, err
}

func (n nsNet) Listen(ctx context.Context, network, address string, control Control) (l net.Listener, err error) {
	err = netns.Do(n.h, func() (e error) { l, e = Local{}.Listen(ctx, network, address, control); return e })
	return l, err
}

func (n nsNet) ListenPacket(ctx context.Context, network, address string, control Control) (c net.PacketConn, err error) {
	err = netns.Do(n.h, func() (e error) { c, e = Local{}.ListenPacket(ctx, network, address, control); return e })
	return c, err
}
