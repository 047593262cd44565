// Package lab builds and runs wanlab testbeds: two hosts, "client" and
// "server", each in its own network namespace with a TUN device, joined by
// a router that applies the configured qdisc chain per direction ("up" is
// client to server, "down" the reverse).
//
// A testbed NAME owns the namespaces wl-NAME-c and wl-NAME-s (see
// package netns for the registry that removes what a crashed run left
// behind), a control socket /run/wanlab/NAME.sock through which other
// processes read its counters, change its chains, run programs inside its
// hosts and stop it (Status, Set, Exec, Down), and optionally a pcap file.
//
// Addresses are a point-to-point pair per testbed, 10.X.Y.1 (client) and
// 10.X.Y.2 (server), and fd00:776c:0:XXYY::1 and ::2, with X and Y taken
// from a hash of NAME. They exist only inside the testbed's namespaces, so
// two testbeds whose hashes collide do not disturb each other.
package lab
