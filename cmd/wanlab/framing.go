package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"wanlab/lab"
	"wanlab/qdisc"
)

// parsedValue is a flag whose value parse reads into *p: --framing,
// --granularity, --dataplane.
type parsedValue[T fmt.Stringer] struct {
	p     *T
	typ   string
	parse func(string) (T, error)
}

func (v parsedValue[T]) String() string { return (*v.p).String() }
func (v parsedValue[T]) Type() string   { return v.typ }
func (v parsedValue[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

// registerFraming adds --framing to fs, writing to f: what the emulated
// interfaces count in each packet's length.
func registerFraming(fs *pflag.FlagSet, f *qdisc.Framing) {
	fs.Var(parsedValue[qdisc.Framing]{f, "ethernet|ip", qdisc.ParseFraming}, "framing", "what the emulated interfaces count in a packet's length: ethernet (IP length + the 14-byte Ethernet header, as Linux's qdiscs on an Ethernet interface) or ip (the IP length alone, as on a TUN device)")
}

// registerGranularity adds --granularity to fs, writing to g: what the
// qdiscs take as one packet when a GSO super-packet reaches them.
func registerGranularity(fs *pflag.FlagSet, g *qdisc.Granularity) {
	fs.Var(parsedValue[qdisc.Granularity]{g, "segment|gso", qdisc.ParseGranularity}, "granularity", "what the qdiscs take as one packet when the kernel hands the router a GSO super-packet: segment (each wire segment, as a link carrying them sees it: per-segment loss, jitter, limits; the default) or gso (the super-packet whole, as tc on the sending host's own egress sees it: one packet in a limit, lost or delayed whole)")
}

// registerDataPlane adds --dataplane to fs, writing to p: how the router
// meets a testbed's hosts.
func registerDataPlane(fs *pflag.FlagSet, p *lab.DataPlane) {
	fs.Var(parsedValue[lab.DataPlane]{p, "tun|packet", lab.ParseDataPlane}, "dataplane", "how the router meets the hosts: tun (a TUN device in each host, read by the router from wanlab's process; the default) or packet (a veth pair from each host to the router's namespace wl-NAME-r, read through packet sockets, which stamp each packet's arrival in the kernel)")
}
