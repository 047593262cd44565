package quicflow

import (
	"encoding/binary"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

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
