package lab

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"wanlab/link"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/rootless"
	"wanlab/tun"
)

// ECNOff asks Options.ECN for tcp_ecn 0 (ECN never used); the zero value
// of ECN keeps the kernel's default.
const ECNOff = -1

// Options configure a testbed. Zero fields keep the defaults.
type Options struct {
	// Name names the testbed, its namespaces (wl-NAME-c, wl-NAME-s) and its
	// control socket; DefaultName if empty. See CheckName.
	Name string
	// Clients and Servers are how many hosts each side of the dumbbell
	// has, 1 to link.MaxHosts; 0 is 1. Client 1 is Client, server 1
	// Server, the others c2..cN and s2..sM (HostRole). Up and Down are
	// the bottlenecks they share.
	Clients, Servers int
	// Access are the hosts' own access links, at most one per host and
	// direction; a host without one is wired straight to the bottleneck.
	Access []Access
	// HostCC is the congestion control of single hosts, replacing CC
	// there.
	HostCC map[link.Host]string
	// Up is the qdisc chain from client to server and Down the reverse, root
	// first, as tcspec.ParseChain returns it; empty is a direct path.
	Up, Down []qdisc.Spec
	// UpTrace and DownTrace, when not nil, limit a direction's capacity
	// to a mahimahi trace's delivery opportunities (link.Config.Trace),
	// counted from the moment the router starts.
	UpTrace, DownTrace *link.Trace
	// CC is net.ipv4.tcp_congestion_control for both hosts ("reno",
	// "cubic", "bbr"); empty keeps the kernel's default.
	CC string
	// TCPRmem and TCPWmem are net.ipv4.tcp_rmem and tcp_wmem for both
	// hosts ("4096 131072 6291456"); empty keeps the kernel's.
	TCPRmem, TCPWmem string
	// ECN is net.ipv4.tcp_ecn for both hosts (1 requests ECN, 2 only
	// accepts it); 0 keeps the kernel's default and ECNOff writes 0.
	ECN int
	// Pcap, when not empty, is a file that receives every packet the
	// router forwards, in both directions (pcap, LINKTYPE_RAW). It is
	// written by package outfile's rules: "-" is the standard output, a
	// FIFO or character device is written through (Up waits for a FIFO's
	// reader), and a regular file is replaced when the testbed closes.
	Pcap string
	// DataPlane is how the router meets the hosts: TUNPlane (the zero
	// value: a TUN device in each host, read by the router from wanlab's
	// process) or PacketPlane (a veth pair from each host to the router's
	// own namespace, read through packet sockets that stamp each packet's
	// arrival in the kernel).
	DataPlane DataPlane
	// DeviceKind selects the TUN implementation of the TUN plane. The
	// zero value is tun.Offload; tun.VNet is the router's fastest (GSO
	// super-packets enter the link whole), and the only one of a
	// dumbbell (more than two hosts, or access links), whose zero value
	// it is.
	DeviceKind tun.Kind
	// RealTimePriority, between 1 and 99, runs the router's loops with
	// SCHED_FIFO at that priority (router.Config.RealTimePriority); 0
	// keeps normal scheduling.
	RealTimePriority int
	// Framing is what the emulated interfaces count in a packet's length:
	// qdisc.FramingEthernet (the zero value: the 14-byte header of an
	// Ethernet interface, as the paths compared with have) or FramingIP.
	Framing qdisc.Framing
	// Granularity is what the qdiscs take as one packet when a GSO
	// super-packet reaches them (router.Config.Granularity): each wire
	// segment (qdisc.GranularitySegment, the zero value, as on the link)
	// or the whole (GranularityGSO, as tc on the sending host's egress).
	Granularity qdisc.Granularity
	// Seed is the run's seed: each direction's qdiscs draw from a stream
	// derived from it and the direction's name (link.DirectionSeed), as in
	// `wanlab sim`, so one seed means the same streams in both.
	Seed uint64
	// Logf, when not nil, is told in one line about each control request
	// and each program run through the control socket.
	Logf func(format string, args ...any)

	// Ports, for Bridge alone, are the two existing Ethernet interfaces
	// of the calling process's own namespace that the router joins: Up
	// carries what arrives on Ports[0] out of Ports[1], Down the reverse.
	Ports [2]string
	// Force, for Bridge alone, takes ports the machine itself uses (its
	// addresses, its default route: bridgeport.Check).
	Force bool
}

// DataPlane is how a testbed's router meets its hosts.
type DataPlane uint8

// The data planes.
const (
	// TUNPlane gives each host a TUN device whose other side the router
	// reads and writes from wanlab's process. A packet arrives at the
	// router when the router reads it.
	TUNPlane DataPlane = iota
	// PacketPlane joins each host by a veth pair to the router's own
	// namespace (wl-NAME-r), whose ends the router reads and writes
	// through packet sockets, as `wanlab bridge` does two NICs: each
	// packet arrives when the kernel took it in.
	PacketPlane
)

// dataPlaneNames are the planes' names, as --dataplane takes them.
var dataPlaneNames = []string{TUNPlane: "tun", PacketPlane: "packet"}

// String returns the plane's name: "tun" or "packet".
func (p DataPlane) String() string {
	if int(p) < len(dataPlaneNames) {
		return dataPlaneNames[p]
	}
	return fmt.Sprintf("DataPlane(%d)", p)
}

// ParseDataPlane reads a plane's name: "tun" or "packet".
func ParseDataPlane(s string) (DataPlane, error) {
	for i, n := range dataPlaneNames {
		if s == n {
			return DataPlane(i), nil
		}
	}
	return 0, fmt.Errorf("data plane %q is unknown: use tun or packet", s)
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = DefaultName
	}
	// The router carries a dumbbell on VNet TUNs only: the zero kind is
	// VNet there (Check refuses another given kind).
	if o.dumbbell() && o.DeviceKind == tun.Offload {
		o.DeviceKind = tun.VNet
	}
	return o
}

// Check reports whether o can make a testbed, as Up checks it before it
// builds anything; its errors are ErrBadInput. The defaults (an empty Name
// is DefaultName) are applied first.
func (o Options) Check() error {
	o = o.withDefaults()
	if err := CheckName(o.Name); err != nil {
		return bad(err)
	}
	if err := o.checkHosts(); err != nil {
		return bad(err)
	}
	if o.ECN < ECNOff {
		return bad(fmt.Errorf("ECN %d is invalid: use 0 (kernel default), %d (off), 1 (request) or 2 (accept)", o.ECN, ECNOff))
	}
	if err := checkCCName(o.CC); err != nil {
		return bad(err)
	}
	for _, m := range []struct{ key, val string }{{"net.ipv4.tcp_rmem", o.TCPRmem}, {"net.ipv4.tcp_wmem", o.TCPWmem}} {
		if m.val == "" {
			continue
		}
		if err := CheckTCPMem(m.val); err != nil {
			return bad(fmt.Errorf("%s %q: %w", m.key, m.val, err))
		}
	}
	switch o.DeviceKind {
	case tun.Offload, tun.Raw, tun.VNet:
	default:
		return bad(fmt.Errorf("device kind %d is unknown: use tun.Offload, tun.Raw or tun.VNet", o.DeviceKind))
	}
	if o.DataPlane > PacketPlane {
		return bad(fmt.Errorf("data plane %d is unknown: use TUNPlane or PacketPlane", o.DataPlane))
	}
	if o.dumbbell() && (o.DataPlane != TUNPlane || o.DeviceKind != tun.VNet) {
		return bad(fmt.Errorf("a testbed of more than two hosts, or with access links, runs on the tun data plane with vnet devices (not %s): leave the data plane and the device kind as they are", o.planeText()))
	}
	if o.RealTimePriority < 0 || o.RealTimePriority > 99 {
		return bad(fmt.Errorf("real-time priority %d is out of range: use 1 to 99, or 0 for normal scheduling", o.RealTimePriority))
	}
	// What a user namespace cannot do is refused here, before anything
	// is built (package rootless).
	if err := rootless.CheckRTPriority(o.RealTimePriority); err != nil {
		return bad(err)
	}
	// A bridge's (Ports) packet plane is its own, which CheckBridge
	// words; a bridge is real root's anyway.
	if o.DataPlane == PacketPlane && o.Ports == [2]string{} {
		if err := rootless.CheckPacketPlane(); err != nil {
			return bad(err)
		}
	}
	for _, d := range []struct {
		name  string
		chain []qdisc.Spec
	}{{"up", o.Up}, {"down", o.Down}} {
		if err := CheckChain(d.chain); err != nil {
			return bad(fmt.Errorf("%s: %w", d.name, err))
		}
	}
	return nil
}

// planeText names o's data plane and, on the TUN plane, its device kind.
func (o Options) planeText() string {
	if o.DataPlane != TUNPlane {
		return o.DataPlane.String() + " plane"
	}
	return o.DeviceKind.String() + " devices"
}

// checkCCName reports whether cc can name a kernel congestion control
// ("" keeps the kernel's).
func checkCCName(cc string) error {
	for _, c := range []byte(cc) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("congestion control %q is not a kernel algorithm name (reno, cubic, bbr, ...)", cc)
		}
	}
	return nil
}

// CheckChain reports whether the router can build chain: tcspec reads
// each discipline on its own, while some errors, such as a child below a
// discipline that takes none, show only when the tree is built. An empty
// chain is a direct path.
func CheckChain(chain []qdisc.Spec) error {
	if len(chain) == 0 {
		return nil
	}
	// A pool, as the router's, since netem's duplicate refuses to build
	// without one to clone packets from.
	_, err := qdisc.Build(chain, &qdisc.Env{Pool: packet.NewPool(2048, 128)})
	return err
}

// CheckTCPMem reports whether v can be net.ipv4.tcp_rmem or tcp_wmem:
// three sizes in bytes, min, default and max, each at least 1 and in
// order. The kernel would take one or two numbers, or four, without a word,
// and keep its own values for the rest.
func CheckTCPMem(v string) error {
	const want = `give three sizes in bytes, "min default max", e.g. "4096 131072 6291456"`
	f := strings.Fields(v)
	if len(f) != 3 {
		return fmt.Errorf("%d values; %s", len(f), want)
	}
	var n [3]int64
	for i, s := range f {
		x, err := strconv.ParseInt(s, 10, 32)
		if err != nil || x < 1 {
			return fmt.Errorf("%q is not a size from 1 to %d; %s", s, math.MaxInt32, want)
		}
		n[i] = x
	}
	if n[0] > n[1] || n[1] > n[2] {
		return fmt.Errorf("the sizes are not in order (min <= default <= max); %s", want)
	}
	return nil
}

// Info describes a running testbed, as `wanlab up --json` prints it. A
// bridge (Bridge) has a Name and no hosts.
type Info struct {
	Name   string   `json:"name"`
	Client HostInfo `json:"client,omitzero"`
	Server HostInfo `json:"server,omitzero"`
	// Hosts are, on a dumbbell of more hosts or with access links, every
	// host, the clients first (c1 is Client, s1 Server); none on a
	// testbed of two hosts without access links (see All).
	Hosts []HostInfo `json:"hosts,omitempty"`
	// RouterNS is, on the packet plane, the router's namespace, which
	// holds the other ends of the hosts' veth pairs; "" on the TUN
	// plane, whose router reads the TUNs from wanlab's own process.
	RouterNS string `json:"router_ns,omitempty"`
	// Ports are a bridge's two interfaces, the one Up reads first.
	Ports []PortInfo `json:"ports,omitempty"`
}

// PortInfo describes a port of a bridge as it is now.
type PortInfo struct {
	IfName string `json:"ifname"`
	MAC    string `json:"mac"`
	MTU    int    `json:"mtu"`
	// Promiscuity is the kernel's promiscuity count of the port: the
	// router's packet socket holds one of it (a PACKET_MR_PROMISC
	// membership, which the kernel drops when the socket closes, however
	// wanlab ends), others (tcpdump, `ip link set promisc on`) the rest.
	Promiscuity int `json:"promiscuity"`
	// Err says why the port could not be read, if it could not.
	Err string `json:"err,omitempty"`
}

// HostInfo describes one host of a testbed.
type HostInfo struct {
	// Name is the host's role, as ParseRole reads it: "client",
	// "server", or a dumbbell's "c2", "s3".
	Name Role `json:"name,omitempty"`
	// NS is the host's namespace, usable with `ip netns exec`.
	NS string `json:"ns"`
	// IfName is the host's interface that leads to the router: a TUN
	// device, or on the packet plane its end of a veth pair.
	IfName string `json:"ifname"`
	// Addr4 and Addr6 are the host's addresses on IfName.
	Addr4 netip.Addr `json:"addr4"`
	Addr6 netip.Addr `json:"addr6"`
	// RouterIf is, on the packet plane, the router's end of the host's
	// veth pair, in Info.RouterNS, whose packet socket the router reads.
	RouterIf string `json:"router_ifname,omitempty"`
	// AccessUp and AccessDown are the host's access links as the testbed
	// was built with them, in tc syntax ("" for none).
	AccessUp   string `json:"access_up,omitempty"`
	AccessDown string `json:"access_down,omitempty"`
	// CC is the host's own TCP congestion control (Options.HostCC), ""
	// where it has the testbed's.
	CC string `json:"cc,omitempty"`
}

// Host returns the description of host r, and the zero HostInfo if the
// testbed has no such host (see Has).
func (i Info) Host(r Role) HostInfo {
	switch r {
	case Client:
		return i.Client
	case Server:
		return i.Server
	}
	for _, h := range i.Hosts {
		if h.Name == r {
			return h
		}
	}
	return HostInfo{}
}

// All returns every host, the clients first: Hosts, or the client and
// the server of a testbed of two (none for a bridge).
func (i Info) All() []HostInfo {
	if len(i.Hosts) > 0 {
		return i.Hosts
	}
	if i.Client.NS == "" {
		return nil
	}
	c, s := i.Client, i.Server
	c.Name, s.Name = Client, Server
	return []HostInfo{c, s}
}

// Has reports whether the testbed has host r, and if not, says so naming
// the hosts it has.
func (i Info) Has(r Role) error {
	all := i.All()
	names := make([]string, len(all))
	for k, h := range all {
		if h.Name == r {
			return nil
		}
		names[k] = string(h.Name)
	}
	if len(all) == 0 {
		return fmt.Errorf("testbed %s has no hosts (a bridge has ports)", i.Name)
	}
	return fmt.Errorf("host %s is not one of testbed %s's hosts (%s)", r, i.Name, strings.Join(names, ", "))
}

// InfoOf returns the Info of the testbed called name, running or not, on
// the TUN plane: names and addresses follow from the name alone, and are
// the same on the packet plane, which adds the router's (see onPlane).
func InfoOf(name string) Info {
	return Info{Name: name, Client: HostInfoOf(name, Client), Server: HostInfoOf(name, Server)}
}

// HostInfoOf returns the description of host r of the testbed called
// name on the TUN plane, whether the testbed has it or not: its names and
// addresses follow from the name alone. Name is set for the hosts of a
// dumbbell beyond the client and the server.
func HostInfoOf(name string, r Role) HostInfo {
	v4, v6 := Addrs(name, r)
	h := HostInfo{NS: NamespaceName(name, r), IfName: IfName(name, r), Addr4: v4, Addr6: v6}
	if r != Client && r != Server {
		h.Name = r
	}
	return h
}

// onPlane returns i as a testbed on plane p has it: on the packet plane,
// with the router's namespace and its ends of the veth pairs.
func (i Info) onPlane(p DataPlane) Info {
	if p != PacketPlane {
		return i
	}
	i.RouterNS = RouterNamespaceName(i.Name)
	i.Client.RouterIf = RouterIfName(i.Name, Client)
	i.Server.RouterIf = RouterIfName(i.Name, Server)
	i.Hosts = slices.Clone(i.Hosts)
	for k := range i.Hosts {
		i.Hosts[k].RouterIf = RouterIfName(i.Name, i.Hosts[k].Name)
	}
	return i
}
