package qdisc

import "wanlab/packet"

// ipTOS2Prio is the kernel's ip_tos2prio (net/ipv4/route.c), indexed by
// IPTOS_TOS(tos)>>1: TC_PRIO_BESTEFFORT (0), TC_PRIO_BULK (2),
// TC_PRIO_INTERACTIVE (6) and TC_PRIO_INTERACTIVE_BULK (4).
var ipTOS2Prio = [16]uint8{0, 0, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4}

// forwardPriority returns the skb->priority that the kernel's forwarding
// path leaves on the IP packet starting at b, which pfifo_fast's and
// prio's priomaps index: for IPv4, ip_forward sets it to
// ip_tos2prio[(tos&0x1E)>>1] (net.ipv4.ip_forward_update_priority
// defaults to 1); ip6_forward does not touch it, so IPv6 and non-IP
// packets keep priority 0. It is below 16 (TC_PRIO_MAX+1), so it never
// names a class of htb or prio, as a priority set by a socket could.
func forwardPriority(b []byte) uint8 {
	if packet.IPVersion(b) != 4 {
		return 0
	}
	return ipTOS2Prio[(b[1]&0x1E)>>1]
}
