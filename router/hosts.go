package router

import (
	"net/netip"

	"wanlab/link"
)

// Host is one host's port on a router between many hosts (a dumbbell:
// Config.Clients and Config.Servers). Client N is port N-1 of the up
// direction's ingress and of the down direction's egress; server N the
// other way round (link.Host.Port).
type Host struct {
	// Name is the host's name in the dumbbell (c1, s2).
	Name link.Host
	// Device is the host's side of the router, opened by the caller in
	// the host's namespace; all hosts' devices are of one plane.
	Device Device
	// If is the interface's name, for reports.
	If string
	// Addrs are the host's addresses, at least one: a packet whose
	// destination is one of them leaves the router by this host's port.
	// A packet to no host's address (multicast too: IPv6 router
	// solicitations, MLD) is dropped and counted (PortSnapshot is per
	// host; DirSnapshot.NoRoute). No address may be two hosts'.
	Addrs []netip.Addr
	// Up and Down are the host's access links in each direction, nil for
	// none (the host is wired straight to the bottleneck). A client's Up
	// is its link into the up bottleneck and its Down its link out of the
	// down one; a server's Up is its link out of the up bottleneck and its
	// Down its link into the down one. Their Env is set as the
	// bottleneck's (Framing, Granularity, Pool) by the router; an empty
	// Name becomes Host.LinkName ("up:c2") and a zero Env.Seed one derived
	// from the bottleneck's and that name (link.DirectionSeed). Only a
	// host given an access link in a direction can have its chain changed
	// there (Router.SetAccessChain): give an empty Chain for a direct link
	// that may change later.
	Up, Down *link.Config
	// Ring, when set, reads the kernel's figures for the ring in front of
	// the host's device (see Config.UpRing); the direction the host sends
	// in reports them in its port and adds them into its own Ring.
	Ring func() (RingCounters, error)
}

// PortSnapshot is one host's part of a direction: the packets that
// entered the direction from the host (Place "ingress") or left it to the
// host (Place "egress"), and the host's access link there.
type PortSnapshot struct {
	// Host is the host's name (c1, s2), Place "ingress" or "egress", If
	// its interface.
	Host  string `json:"host"`
	Place string `json:"place"`
	If    string `json:"if"`
	// Chain is the access link's chain in tc syntax, "" for none or a
	// direct link.
	Chain string `json:"chain"`
	// Counters are end to end for the packets of this port (entered from
	// it, or left by it), as DirSnapshot.Counters are for all; Access are
	// the access link's own (nil without one).
	Counters link.Counters  `json:"counters"`
	Access   *link.Counters `json:"access,omitempty"`
	// Ring is the kernel's ring in front of an ingress port's device.
	Ring RingSnapshot `json:"ring"`
	// WriteDrops counts segments the egress port's device refused.
	WriteDrops uint64 `json:"write_drops"`
}
