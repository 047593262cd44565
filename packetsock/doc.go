// Package packetsock opens AF_PACKET sockets on Ethernet interfaces inside
// network namespaces: the router's window onto real network interfaces and
// veth pairs, as package tun is onto TUN devices.
//
// A Device is one socket bound to one interface. It receives every frame
// that arrives on the interface through a memory-mapped TPACKET_V2 ring,
// one frame per slot, each slot large enough for a GSO super-packet of
// 64 KiB: with PACKET_VNET_HDR the kernel hands super-packets over whole,
// with a virtio-net header that says how to segment them, as a TUN device
// with IFF_VNET_HDR does, and takes them back whole on send. Each frame
// carries the kernel's timestamp of its arrival (CLOCK_REALTIME), taken in
// the receive path whatever the reader was doing at the time, so a reader
// that comes late still knows when each frame arrived.
//
// Why TPACKET_V2 and not V3: V3 packs frames into blocks and hands a block
// to userspace only once it is full or its retire timeout passes, a timeout
// counted in jiffies (4 ms at HZ=250). A router reading V3 would see a
// frame arriving alone up to that late; V2 hands over each frame as soon
// as the kernel has written it.
//
// The socket is a tap, not a diversion: the kernel still processes every
// frame itself (an interface that carries no addresses and does not
// forward drops them). What the socket sends goes straight to the driver
// (PACKET_QDISC_BYPASS), past the interface's qdisc and past every other
// tap on it (tcpdump on the interface does not see it); what the host
// sends out of the interface is not read back (PACKET_IGNORE_OUTGOING).
// The interface is put in promiscuous mode through a PACKET_MR_PROMISC
// membership, which the kernel drops when the socket is closed, also when
// its process is killed: Open changes nothing else on the interface, and
// nothing stays changed once the socket is gone.
//
// Frames are returned without their Ethernet header, which comes apart in
// the Frame (a VLAN tag the kernel took off into the frame's metadata put
// back in its place), so that the data at the buffer's offset is the IP
// packet, its virtio-net header in front of it exactly as a TUN device's:
// offsets count from the start of the IP header. WriteOne puts a header
// back in front.
package packetsock
