package scalableudp

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"

	"wanlab/packet"
)

// udpConn returns c as a *net.UDPConn, or an error naming what to pass.
func udpConn(c net.PacketConn, side string) (*net.UDPConn, error) {
	u, ok := c.(*net.UDPConn)
	if !ok {
		return nil, fmt.Errorf("scalableudp: the %s's socket is a %T: give a *net.UDPConn (net.ListenPacket(\"udp\", ...) makes one), whose ECN field can be set and read", side, c)
	}
	return u, nil
}

// control runs f on c's file descriptor with whether it is an IPv6 socket.
func control(c *net.UDPConn, f func(fd int, v6 bool) error) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		domain, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
		if err != nil {
			ferr = err
			return
		}
		ferr = f(int(fd), domain == unix.AF_INET6)
	}); err != nil {
		return err
	}
	return ferr
}

// setTOS sets the TOS byte (traffic class) of c's packets and reads it
// back: the kernel keeps what it accepted.
func setTOS(c *net.UDPConn, tos int) error {
	return control(c, func(fd int, v6 bool) error {
		level, opt := unix.IPPROTO_IP, unix.IP_TOS
		if v6 {
			level, opt = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
		}
		if err := unix.SetsockoptInt(fd, level, opt, tos); err != nil {
			return fmt.Errorf("scalableudp: set TOS %#x: %w", tos, err)
		}
		got, err := unix.GetsockoptInt(fd, level, opt)
		if err != nil {
			return fmt.Errorf("scalableudp: read the TOS back: %w", err)
		}
		if got != tos {
			return fmt.Errorf("scalableudp: asked for TOS %#x (ECN %v), the kernel kept %#x (ECN %v)", tos, packet.ECN(tos&3), got, packet.ECN(got&3))
		}
		return nil
	})
}

// recvTOS asks for each datagram's TOS byte (traffic class).
func recvTOS(c *net.UDPConn) error {
	return control(c, func(fd int, v6 bool) error {
		level, opt := unix.IPPROTO_IP, unix.IP_RECVTOS
		if v6 {
			level, opt = unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS
		}
		if err := unix.SetsockoptInt(fd, level, opt, 1); err != nil {
			return fmt.Errorf("scalableudp: ask for each datagram's TOS: %w", err)
		}
		return nil
	})
}
