package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"wanlab/lab"
)

// hostFlags are the flags of up that set a testbed's hosts, which a bridge
// has none of, each with why bridge refuses it.
var hostFlags = map[string]string{
	"cc":          "sets the TCP congestion control of a testbed's hosts, and a bridge has none: the machines on its ports choose their own",
	"tcp-rmem":    "sets net.ipv4.tcp_rmem of a testbed's hosts, and a bridge has none: set it on the machines on its ports",
	"tcp-wmem":    "sets net.ipv4.tcp_wmem of a testbed's hosts, and a bridge has none: set it on the machines on its ports",
	"ecn":         "sets net.ipv4.tcp_ecn of a testbed's hosts, and a bridge has none: set it on the machines on its ports",
	"device":      "chooses the TUN devices of a testbed, and a bridge reads its ports through packet sockets",
	"dataplane":   "chooses how the router meets a testbed's hosts, and a bridge is always on the packet plane",
	"clients":     "sets how many client hosts a testbed has, and a bridge has none: its ports lead to the machines beside it",
	"servers":     "sets how many server hosts a testbed has, and a bridge has none: its ports lead to the machines beside it",
	"access-up":   "gives a testbed's host an access link, and a bridge has no hosts: shape its paths with --up and --down",
	"access-down": "gives a testbed's host an access link, and a bridge has no hosts: shape its paths with --up and --down",
	"host-cc":     "sets the TCP congestion control of a testbed's host, and a bridge has none: the machines on its ports choose their own",
}

func newBridgeCommand(s *streams) *cobra.Command {
	var o upOptions
	var force bool
	c := &cobra.Command{
		Use:   "bridge IF1 IF2 [--name N] [--up CHAIN] [--down CHAIN] [--force] [-d|--detach] [--pcap FILE] [--json]",
		Short: "Run the router between two interfaces of this machine: IF1 to IF2 is up, the reverse down",
		Long: `bridge runs the router between two existing Ethernet interfaces (NICs,
veths, VLANs) of the namespace it runs in: what arrives on IF1 crosses the
--up chain and leaves through IF2, what arrives on IF2 crosses --down and
leaves through IF1. Put the machine between two others, one on each
interface, and their traffic crosses the emulated path (see the README's
"A machine with two NICs between two hosts").

The router reads each port through a packet socket, which stamps each
frame's arrival in the kernel, and holds it in promiscuous mode through the
socket's membership. While wanlab holds a port, the kernel ignores it: IPv6
is off on it and every frame arriving there is dropped after the router's
copy (a clsact qdisc with a cls_bpf filter). ARP crosses at once, unshaped;
IP packets cross the chains, and so does NDP, which is ICMPv6.

bridge refuses, before it changes anything (exit status 2), the same
interface twice, a missing one, one that is not Ethernet, a bridge's or
bond's port, one with a clsact or ingress qdisc of someone else's, a name
that runs already, and, unless --force, an interface the machine itself
uses (its addresses, its default route, VLANs on it). The settings of a
testbed's hosts (--cc, --tcp-rmem, --tcp-wmem, --ecn, --device,
--dataplane, --clients, --servers, --access-up, --access-down, --host-cc)
are refused: a bridge has none.

The rest is as up: status, set and down by name, the capture, the log
and the fidelity verdict. On down, SIGINT, SIGTERM, SIGHUP, SIGQUIT or a
failure the ports are given back exactly as they were; after SIGKILL, the
next bridge or down (run in the same namespace) gives them back.`,
		Example: `  wanlab bridge eth1 eth2 --up "netem delay 20ms" --down "netem delay 20ms"
  wanlab bridge eth1 eth2 --name wan --both "tbf rate 50mbit burst 32k latency 50ms" -d
  wanlab status wan
  wanlab down wan`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			c.Flags().Visit(func(f *pflag.Flag) { o.changed = append(o.changed, f) })
			for _, f := range o.changed {
				if why := hostFlags[f.Name]; why != "" {
					return usagef("--%s %s (see 'wanlab bridge --help')", f.Name, why)
				}
			}
			lo, err := o.options()
			if err != nil {
				return err
			}
			lo.Ports, lo.Force = [2]string{args[0], args[1]}, force
			return runTestbed(s, &o, lo, []string{"bridge", args[0], args[1]}, lab.Bridge)
		},
	}
	fs := c.Flags()
	o.register(fs, lab.DefaultBridgeName)
	fs.Lookup("name").Usage = "the bridge's name, for status, set and down (a-z, 0-9, '-', '_'; at most 32 bytes)"
	fs.Lookup("up").Usage = `qdisc chain IF1→IF2 in tc syntax, root first: "netem delay 50ms; tbf rate 10mbit burst 32k latency 50ms"`
	fs.Lookup("down").Usage = "qdisc chain IF2→IF1, as --up"
	fs.Lookup("detach").Usage = "run in the background and return once the bridge is ready"
	fs.Lookup("json").Usage = `print {"name", "ports": [{"ifname", "mac", "mtu", "promiscuity"}, ...]} on one line once ready`
	for name := range hostFlags {
		fs.Lookup(name).Hidden = true
	}
	fs.BoolVar(&force, "force", false, "take interfaces the machine itself uses (its addresses, its default route): its own traffic through them stops while the bridge runs")
	return c
}
