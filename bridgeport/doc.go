// Package bridgeport readies two existing interfaces to be the ports of
// `wanlab bridge IF1 IF2`, and gives them back exactly as they were.
//
// The router reads a port through an AF_PACKET socket, which receives a
// copy of every frame while the kernel goes on processing the original.
// So while wanlab holds a port, the kernel must neither act on what
// arrives there nor send anything of its own out of it. Take makes it so:
//
//   - IPv6 off on the port (net.ipv6.conf.IF.disable_ipv6=1): no
//     link-local address, no NDP, MLD or router solicitation of the
//     kernel's own. (Turning it off removes the port's IPv6 addresses and
//     routes; Take records those set by hand or a daemon, and Release puts
//     them back.)
//   - A clsact qdisc with one cls_bpf filter in direct-action mode at
//     ingress, whose two-instruction program returns TC_ACT_SHOT: every
//     frame is dropped after the packet taps have seen it, so the kernel
//     neither answers, nor forwards, nor delivers it (ARP included).
//   - The port up.
//
// Its promiscuity is not set here: the packet socket's PACKET_MR_PROMISC
// membership gives it, and the kernel takes it back when the socket
// closes, however the process ends.
//
// # Why the tap sees the frame before the filter drops it
//
// In __netif_receive_skb_core (net/core/dev.c), a received frame goes
// first (after generic XDP and VLAN untagging) to the taps on the
// namespace's and the device's ptype_all lists, then to
// sch_handle_ingress, which runs the clsact filters: a TC_ACT_SHOT there
// frees the frame before the protocol handlers on the ptype_base and
// ptype_specific lists (ip_rcv, ipv6_rcv, arp_rcv) and any rx_handler
// (bridge, bond) see it. A packet socket is on a ptype_all list only when
// it is bound to protocol ETH_P_ALL; bound to one protocol (ETH_P_IP), it
// sits on ptype_base or the device's ptype_specific, after the filter, and
// sees nothing. Two
// exceptions pass no tap at all: a frame allocated from the emergency
// reserves (pfmemalloc, under memory pressure) skips the taps and is then
// dropped by the filter, and an XDP program on the port sees frames first
// and may keep them.
//
// # Giving the port back
//
// Before it changes anything, Take writes a restore record under
// /run/wanlab/ports/ (atomically and durably, through internal/outfile):
// the namespace, the interface, what it is about to change and the
// values before, and its owner (pid and start time, so a reused pid is
// not mistaken for it). Release undoes exactly that and removes the
// record; a Take that fails half-way undoes what it did. If the owner
// dies without Release (SIGKILL), RestoreStale, which the next `wanlab
// bridge` and `wanlab down` call, finds the record of a dead owner and
// restores the port. A record held by a live owner refuses the port to
// anyone else, naming the owner. A record that is a symbolic link or a
// directory is never followed or removed: wanlab writes only regular
// files there, so it refuses it and says so.
//
// Ignore makes the same changes to a port of a namespace its caller made
// and deletes with everything in it (the router's namespace of a testbed
// on the packet plane, see package lab): there is nothing to give back,
// so it writes no record.
//
// Nothing here removes what it did not add: a port that already carries a
// clsact or ingress qdisc is refused, since its filters are someone
// else's.
package bridgeport
