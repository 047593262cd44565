// Package lab builds and runs wanlab testbeds: two hosts, "client" and
// "server", each in its own network namespace, joined by a router that
// applies the configured qdisc chain per direction ("up" is client to
// server, "down" the reverse).
//
// # Dumbbells
//
// A testbed may have up to 16 clients and 16 servers (Options.Clients
// and Servers), sharing the up and down chains, the bottlenecks; each
// host may have an access link of its own per direction (Options.Access),
// crossed before the bottleneck (a sending host's) or after it (a
// receiving host's). Client 1 is the client and server 1 the server, with
// the names and addresses a testbed of two hosts gives them, so that two
// hosts cost what they always did and nothing scripted against them
// changes. The others, c2..c16 and s2..s16 (HostRole, ParseRole), have:
//
//   - the namespace wl-NAME-c2 (wl-NAME-s3, ...);
//   - the interface wl-NAME-c2, shortened as IfName says for long NAMEs;
//     on the packet plane its veth's other end is wl-NAME-rc2;
//   - the addresses 10.X.Y.(100+N) for client N and 10.X.Y.(200+N) for
//     server N, in the testbed's /24, and the same digits at the end of
//     its IPv6 /64: c2 is 10.X.Y.102 and fd00:776c:0:XXYY::102, s16
//     10.X.Y.216 and fd00:776c:0:XXYY::216.
//
// In a dumbbell every host has its addresses as /32 and /128 and a route
// through its interface to each host of the other side; the hosts of its
// own side it cannot reach, as the router carries packets between the
// sides only. The sysctls (congestion control, which Options.HostCC sets
// per host, tcp_rmem, tcp_wmem, tcp_ecn) are each host's own. The hosts
// are built a few at once; 16+16 take about a second to build and
// remove.
//
// A testbed NAME owns the namespaces wl-NAME-c and wl-NAME-s (see
// package netns for the registry that removes what a crashed run left
// behind), a control socket /run/wanlab/NAME.sock through which other
// processes read its counters, change its chains, run programs inside its
// hosts and stop it (Status, Set, Exec, Down), and optionally a pcap file.
//
// # Data planes
//
// How the router meets the hosts is the testbed's data plane
// (Options.DataPlane). On the TUN plane each host has a TUN device, whose
// other side the router reads and writes from wanlab's own process; a
// packet arrives at the router when the router reads it. On the packet
// plane each host has one end of a veth pair, the interface a TUN would
// be (same name, same addresses), whose other end is in a third
// namespace, the router's, wl-NAME-r: there the kernel ignores the ends
// (bridgeport.Ignore: no addresses, IPv6 off, every frame dropped after
// the packet taps) and the router reads and writes them through packet
// sockets (package packetsock), which stamp each packet's arrival in the
// kernel, so that time a packet waited for the router counts in its
// delay. The hosts' ends have ARP off (IFF_NOARP, as a TUN has), and the
// hosts know each other's MAC addresses from the start (permanent
// neighbour entries): no ARP, NDP, MLD or duplicate address detection
// crosses the router, and, as on the TUN plane, only what the hosts send
// each other does.
//
// Addresses are a point-to-point pair per testbed, 10.X.Y.1 (client) and
// 10.X.Y.2 (server), and fd00:776c:0:XXYY::1 and ::2, with X and Y taken
// from a hash of NAME, on either plane. They exist only inside the
// testbed's namespaces, so two testbeds whose hashes collide do not
// disturb each other.
//
// # Bridges
//
// Bridge runs the same router between two existing Ethernet interfaces of
// the calling process's own namespace (`wanlab bridge IF1 IF2`), taken
// with package bridgeport and given back as they were. A bridge is
// registered and controlled as a testbed (status, set, down), with ports
// instead of hosts: it has no namespaces and no hosts to run programs in.
package lab
