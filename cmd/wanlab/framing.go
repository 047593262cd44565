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
