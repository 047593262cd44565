package quicflow

import (
	"encoding/binary"
	"fmt"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tosOption returns the socket option of fd's TOS byte, which depends on
// the socket's family.
func tosOption(fd int) (level, opt int, err error) {
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return 0, 0, fmt.Errorf("socket family: %w", err)
	}
	if domain == unix.AF_INET6 {
		return unix.IPPROTO_IPV6, unix.IPV6_TCLASS, nil
	}
	return unix.IPPROTO_IP, unix.IP_TOS, nil
}

// dscpConn is a UDP socket whose outgoing ECN control messages also carry
// a DSCP. quic-go marks the ECN field of each packet with an IP_TOS or
// IPV6_TCLASS control message holding the ECN bits alone, and the kernel
// takes that byte as the packet's whole TOS (ip_cmsg_send in
// net/ipv4/ip_sockglue.c, ip6_datagram_send_ctl in net/ipv6/datagram.c),
// which would clear the socket's DSCP: WriteMsgUDP writes the DSCP into
// that byte first. Everything else is the embedded socket's, so quic-go
// still sees an OOBCapablePacketConn and keeps ECN, GSO and batched reads.
type dscpConn struct {
	*net.UDPConn
	dscp byte // the TOS byte's upper six bits; its ECN bits are 0
}

// WriteMsgUDP sends b with the control messages oob, the DSCP written into
// the TOS control message if there is one. The control messages are
// quic-go's, built for this call, so they are changed in place.
func (c *dscpConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	setDSCP(oob, c.dscp)
	return c.UDPConn.WriteMsgUDP(b, oob, addr)
}

// setDSCP ORs dscp into the data of every IP_TOS and IPV6_TCLASS control
// message in oob, leaving their ECN bits as they are. An IPv4 TOS is one
// byte; an IPv6 traffic class is an int in host byte order.
func setDSCP(oob []byte, dscp byte) {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Len < unix.SizeofCmsghdr || int(h.Len) > len(oob) {
			return
		}
		data := oob[unix.CmsgLen(0):h.Len]
		switch {
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_TOS && len(data) >= 1:
			data[0] |= dscp
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_TCLASS && len(data) >= 4:
			binary.NativeEndian.PutUint32(data, binary.NativeEndian.Uint32(data)|uint32(dscp))
		}
		next := unix.CmsgSpace(int(h.Len) - unix.CmsgLen(0))
		if next >= len(oob) {
			return
		}
		oob = oob[next:]
	}
}

// socketState is what a flow reads back from one of its UDP sockets once
// quic-go has set it up.
type socketState struct {
	tos            int
	sndbuf, rcvbuf int
}

// readSocketState reads back the TOS byte and the buffer sizes of c (the
// kernel's figures, twice what was asked; quic-go asks for 7 MiB each).
func readSocketState(c net.PacketConn) (socketState, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return socketState{}, fmt.Errorf("quicflow: %T gives no access to its socket", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return socketState{}, err
	}
	var s socketState
	var serr error
	err = rc.Control(func(fd uintptr) {
		f := int(fd)
		level, opt, err := tosOption(f)
		if err != nil {
			serr = err
			return
		}
		if s.tos, serr = unix.GetsockoptInt(f, level, opt); serr != nil {
			return
		}
		if s.sndbuf, serr = unix.GetsockoptInt(f, unix.SOL_SOCKET, unix.SO_SNDBUF); serr != nil {
			return
		}
		s.rcvbuf, serr = unix.GetsockoptInt(f, unix.SOL_SOCKET, unix.SO_RCVBUF)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return socketState{}, fmt.Errorf("quicflow: read socket options: %w", err)
	}
	return s, nil
}
