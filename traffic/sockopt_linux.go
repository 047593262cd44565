package traffic

import (
	"errors"
	"fmt"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"wanlab/clock"
)

// sockOpts are the per-socket options a flow asks for. The zero value asks
// for nothing: the namespace's default congestion control, TOS 0 and the
// kernel's buffer autotuning.
type sockOpts struct {
	cc      string // TCP_CONGESTION; "" keeps the namespace default
	tos     int    // IP_TOS or IPV6_TCLASS; 0 keeps the default (also 0)
	sndbuf  int    // SO_SNDBUF in bytes as asked (the kernel doubles it); 0 autotunes
	rcvbuf  int    // SO_RCVBUF likewise
	recvTOS bool   // IP_RECVTOS / IPV6_RECVTCLASS, to read each datagram's TOS
	rxTime  bool   // SO_TIMESTAMPNS, to read when the kernel received each datagram
}

// TOSControl returns the Control that sets the TOS byte of a new socket
// (IP_TOS, or IPV6_TCLASS on an IPv6 socket), for the flows of other
// packages; 0 leaves the default.
func TOSControl(tos int) Control { return sockOpts{tos: tos}.control() }

// control returns the Control that applies o to a new socket.
func (o sockOpts) control() Control {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = o.apply(int(fd)) }); err != nil {
			return err
		}
		return serr
	}
}

// apply sets o on fd. The family is asked of the socket itself, because
// the network name a Control sees ("tcp", "ip6:ipv6-icmp") does not always
// say it.
func (o sockOpts) apply(fd int) error {
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return fmt.Errorf("traffic: socket family: %w", err)
	}
	v6 := domain == unix.AF_INET6
	if o.cc != "" {
		if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.cc); err != nil {
			return ccError(o.cc, err)
		}
	}
	if o.tos != 0 {
		if v6 {
			err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, o.tos)
		} else {
			err = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, o.tos)
		}
		if err != nil {
			return fmt.Errorf("traffic: set TOS %#x: %w", o.tos, err)
		}
	}
	if o.recvTOS {
		if v6 {
			err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
		} else {
			err = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
		}
		if err != nil {
			return fmt.Errorf("traffic: ask for received TOS: %w", err)
		}
	}
	if o.rxTime {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return fmt.Errorf("traffic: ask for receive timestamps: %w", err)
		}
	}
	if err := setBuffer(fd, unix.SO_SNDBUF, unix.SO_SNDBUFFORCE, o.sndbuf); err != nil {
		return fmt.Errorf("traffic: send buffer %d bytes: %w", o.sndbuf, err)
	}
	if err := setBuffer(fd, unix.SO_RCVBUF, unix.SO_RCVBUFFORCE, o.rcvbuf); err != nil {
		return fmt.Errorf("traffic: receive buffer %d bytes: %w", o.rcvbuf, err)
	}
	return nil
}

// setBuffer sets a socket buffer size. The FORCE option (CAP_NET_ADMIN)
// lets an explicit size exceed net.core.wmem_max/rmem_max, which would
// otherwise cap it without a word; without the capability the capped size
// is what the socket gets, and the flow's result shows it read back.
func setBuffer(fd, opt, force, n int) error {
	if n <= 0 {
		return nil
	}
	err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, n)
	if errors.Is(err, unix.EPERM) {
		err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, n)
	}
	return err
}

// ccError explains a failed TCP_CONGESTION setsockopt.
func ccError(cc string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("traffic: congestion control %q is not available in this kernel: pick one from /proc/sys/net/ipv4/tcp_available_congestion_control or load its module (modprobe tcp_%s)", cc, cc)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("traffic: congestion control %q is not in net.ipv4.tcp_allowed_congestion_control and the process lacks CAP_NET_ADMIN: run as root or add it to that sysctl", cc)
	}
	return fmt.Errorf("traffic: set congestion control %q: %w", cc, err)
}

// rawConn returns c's RawConn, for socket options after it is made.
func rawConn(c any) (syscall.RawConn, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("traffic: %T gives no access to its socket (syscall.Conn)", c)
	}
	return sc.SyscallConn()
}

// SocketState is what a flow reads back from one of its sockets once it
// is set up: what the kernel actually applied.
type SocketState struct {
	// CC is the congestion control, of a TCP socket.
	CC string
	// TOS is the TOS byte (IP_TOS) or the traffic class (IPV6_TCLASS).
	TOS int
	// SendBuffer and ReceiveBuffer are SO_SNDBUF and SO_RCVBUF, the
	// kernel's figures: twice what was asked, to cover its bookkeeping
	// (socket(7)).
	SendBuffer, ReceiveBuffer int
}

// ReadSocketState reads back the TOS byte and buffer sizes of c, a socket
// (a net.Conn or a net.PacketConn that is a syscall.Conn), and, if tcp, its
// congestion control.
func ReadSocketState(c any, tcp bool) (SocketState, error) {
	rc, err := rawConn(c)
	if err != nil {
		return SocketState{}, err
	}
	var s SocketState
	var serr error
	err = rc.Control(func(fd uintptr) {
		f := int(fd)
		domain, err := unix.GetsockoptInt(f, unix.SOL_SOCKET, unix.SO_DOMAIN)
		if err != nil {
			serr = err
			return
		}
		if domain == unix.AF_INET6 {
			s.TOS, err = unix.GetsockoptInt(f, unix.IPPROTO_IPV6, unix.IPV6_TCLASS)
		} else {
			s.TOS, err = unix.GetsockoptInt(f, unix.IPPROTO_IP, unix.IP_TOS)
		}
		if err != nil {
			serr = err
			return
		}
		if s.SendBuffer, serr = unix.GetsockoptInt(f, unix.SOL_SOCKET, unix.SO_SNDBUF); serr != nil {
			return
		}
		if s.ReceiveBuffer, serr = unix.GetsockoptInt(f, unix.SOL_SOCKET, unix.SO_RCVBUF); serr != nil {
			return
		}
		if tcp {
			s.CC, serr = unix.GetsockoptString(f, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return SocketState{}, fmt.Errorf("traffic: read socket options: %w", err)
	}
	return s, nil
}

// ReceivedTOS returns the TOS byte (IPv4) or traffic class (IPv6) that
// IP_RECVTOS or IPV6_RECVTCLASS put among a datagram's control messages,
// or -1 if there is none. It allocates nothing, for receive loops.
func ReceivedTOS(oob []byte) int {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Len < unix.SizeofCmsghdr || int(h.Len) > len(oob) {
			return -1
		}
		data := oob[unix.CmsgLen(0):h.Len]
		switch {
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_TOS && len(data) >= 1:
			return int(data[0])
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_TCLASS && len(data) >= 4:
			return int(*(*int32)(unsafe.Pointer(&data[0])))
		}
		next := unix.CmsgSpace(int(h.Len) - unix.CmsgLen(0))
		if next > len(oob) {
			break
		}
		oob = oob[next:]
	}
	return -1
}

// receivedAt returns when the kernel received a datagram, on clk: now
// less the time the datagram has waited for its reader, which the
// kernel's receive timestamp (SO_TIMESTAMPNS, in oob) gives. The
// goroutine that reads wakes up a while after the datagram arrived (a
// tenth of a millisecond on a busy machine), and a probe's one-way delay
// must not include that. The kernel stamps in wall-clock time; only the
// wait is taken from it, measured against a wall-clock reading taken
// together with clk's (a reading of clk taken earlier, before a
// preemption, would put the arrival early by the preemption: one-way
// delays came out negative on loopback; the wall clock is read first, so
// that the few nanoseconds between the two readings make the arrival
// late, never early), so a wall clock being slewed changes nothing
// measurable. A datagram without a timestamp, or one the wall clock was
// stepped across, gets the time of the call.
func receivedAt(oob []byte, clk *clock.Real) clock.Time {
	wallNow := time.Now()
	now := clk.Now()
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Len < unix.SizeofCmsghdr || int(h.Len) > len(oob) {
			return now
		}
		data := oob[unix.CmsgLen(0):h.Len]
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			waited := wallNow.Sub(time.Unix(ts.Unix()))
			if waited < 0 || waited > time.Second {
				return now
			}
			return now.Add(-waited)
		}
		next := unix.CmsgSpace(int(h.Len) - unix.CmsgLen(0))
		if next > len(oob) {
			break
		}
		oob = oob[next:]
	}
	return now
}
