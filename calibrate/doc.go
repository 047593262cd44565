// Package calibrate measures wanlab against the Linux kernel: it runs the
// same test through a chain of the kernel's own qdiscs and through wanlab's
// emulation of the same chain, and compares what the traffic saw.
//
// The kernel side is a forwarding hop like the lab's: client, router and
// server namespaces joined by two veth pairs, with the chain on the
// router's egress veth towards the server (tc qdisc add dev ... root, each
// next qdisc the child of the one before, as wanlab's chains are). TSO,
// GSO and GRO are off on all four veth ends, so that the kernel's qdiscs
// see one packet per wire segment, as wanlab's do (wanlab's router splits
// GSO super-packets into segments before a discipline that needs them, and
// counts every figure in segments). Both sides count 14 bytes of Ethernet
// header per packet (veth is an Ethernet device; wanlab's default framing).
// IPv6 is off in the kernel side's namespaces so that nothing but the test
// crosses the hop.
//
// The wanlab side is a testbed as `wanlab up` makes it, on either data
// plane (Config.DataPlane), with the chain on the client-to-server
// direction; its netem draws correlated values as the kernel's does
// (wanlab's "correlation kernel").
//
// Tests: "tcp" is one bulk TCP flow from client to server, or
// Config.Flows of them (congestion control per socket, cubic by default),
// beside a UDP latency probe every 100 ms, all through the chain; "udp" is
// a constant-rate UDP flood from
// client to server at 120 % of the chain's smallest rate (or 20 Mbit/s for
// a chain without one). Each reports goodput, delay under load and the
// qdiscs' drops; Compare sets the two engines side by side with their
// ratio.
package calibrate
