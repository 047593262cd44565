package main

import (
	"github.com/spf13/pflag"

	"wanlab/qdisc"
)

// framingValue is the --framing flag: what the emulated interfaces count
// in each packet's length.
type framingValue struct{ f *qdisc.Framing }

func (v framingValue) String() string { return v.f.String() }
func (v framingValue) Type() string   { return "ethernet|ip" }
func (v framingValue) Set(s string) error {
	f, err := qdisc.ParseFraming(s)
	if err != nil {
		return err
	}
	*v.f = f
	return nil
}

// registerFraming adds --framing to fs, writing to f.
func registerFraming(fs *pflag.FlagSet, f *qdisc.Framing) {
	fs.Var(framingValue{f}, "framing", "what the emulated interfaces count in a packet's length: ethernet (IP length + the 14-byte Ethernet header, as Linux's qdiscs on an Ethernet interface) or ip (the IP length alone, as on a TUN device)")
}

// granularityValue is the --granularity flag: what the qdiscs take as one
// packet when a GSO super-packet reaches them.
type granularityValue struct{ g *qdisc.Granularity }

func (v granularityValue) String() string { return v.g.String() }
func (v granularityValue) Type() string   { return "segment|gso" }
func (v granularityValue) Set(s string) error {
	g, err := qdisc.ParseGranularity(s)
	if err != nil {
		return err
	}
	*v.g = g
	return nil
}

// registerGranularity adds --granularity to fs, writing to g.
func registerGranularity(fs *pflag.FlagSet, g *qdisc.Granularity) {
	fs.Var(granularityValue{g}, "granularity", "what the qdiscs take as one packet when the kernel hands the router a GSO super-packet: segment (each wire segment, as a link carrying them sees it: per-segment loss, jitter, limits; the default) or gso (the super-packet whole, as tc on the sending host's own egress sees it: one packet in a limit, lost or delayed whole)")
}
