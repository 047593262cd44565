package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"wanlab/lab"
	"wanlab/link"
)

// hostFlagLabels name the host flags in errors.
var hostFlagLabels = lab.HostLabels{Clients: "--clients", Servers: "--servers", AccessUp: "--access-up", AccessDown: "--access-down", HostCC: "--host-cc"}

// registerHostFlags adds the flags of a dumbbell's hosts to fs: how many
// clients and servers, their access links and (with cc) their congestion
// controls, as `wanlab sim` takes the first three.
func registerHostFlags(fs *pflag.FlagSet, h *lab.HostSpecs, cc bool) {
	fs.IntVar(&h.Clients, "clients", 1, fmt.Sprintf("client hosts c1..cN of the dumbbell (1 to %d): c1 is the client", link.MaxHosts))
	fs.IntVar(&h.Servers, "servers", 1, fmt.Sprintf("server hosts s1..sM of the dumbbell (1 to %d): s1 is the server", link.MaxHosts))
	fs.StringArrayVar(&h.AccessUp, "access-up", nil, `a host's access link for up packets (repeatable), HOST=CHAIN: "c2=netem delay 40ms" (the client's link into the bottleneck), "s1=..." (the server's out of it); an empty CHAIN is a direct link`)
	fs.StringArrayVar(&h.AccessDown, "access-down", nil, "a host's access link for down packets (repeatable), HOST=CHAIN, as --access-up")
	if cc {
		fs.StringArrayVar(&h.HostCC, "host-cc", nil, `a host's TCP congestion control (repeatable), HOST=CC: "c2=bbr"; the others have --cc`)
	}
}

// checkHostCounts refuses --clients 0 and --servers 0 where given says
// the flag was given. lab.HostSpecs takes 0 as 1 because an experiment
// file that leaves the key out has 0; a flag's default is 1, so a 0 on
// the command line is a mistake, which would otherwise build a testbed of
// one host a side without a word.
func checkHostCounts(h lab.HostSpecs, given func(flag string) bool) error {
	for _, n := range []struct {
		flag string
		n    int
	}{{"clients", h.Clients}, {"servers", h.Servers}} {
		if n.n == 0 && given(n.flag) {
			return usagef("--%s 0: give 1 to %d hosts (1, the default, is a plain client or server)", n.flag, link.MaxHosts)
		}
	}
	return nil
}
