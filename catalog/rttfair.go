package catalog

import (
	"fmt"

	"wanlab/link"
)

// Flent's rtt_fair tests (flent/tests/rtt_fair*.conf and rtt_fair.inc,
// Flent 2.1.1): one client and N servers, each server with a TCP upload,
// a TCP download and an ICMP ping of its own, so that flows of different
// RTTs (each server's path its own) share the client's bottleneck. Flent
// takes the servers from its HOSTS list and names every series after its
// host ("TCP upload BE1 s1"); wanlab's hosts are the testbed's servers, s1
// to sN, and a run's Flent data file gives their names as HOSTS.

// rttFair is one of the tests: its description, the number of servers
// (0: Options.Servers, Flent's HOSTS list of any length), each server's
// marking, series label and ping label (Flent's "markings", "labels" and
// "ping_labels" test parameters; empty past their end, where Flent's
// add_stream writes "CS0", "BE" and "ICMP"), and which directions run.
type rttFair struct {
	desc             string
	servers          int
	marks            []Mark
	labels, pings    []string
	upload, download bool
}

var (
	be4      = []Mark{BE, BE, BE, BE}
	icmp4    = []string{"ICMP1", "ICMP2", "ICMP3", "ICMP4"}
	rttFairs = map[string]rttFair{
		"rtt_fair": {"RTT Fair Realtime Response Under Load", 4, []Mark{BE, BE, BK, BK},
			[]string{"BE1", "BE2", "BK1", "BK2"}, icmp4, true, true},
		"rtt_fair4be": {"RTT Fair Realtime Response Under Load", 4, be4,
			[]string{"BE1", "BE2", "BE3", "BE4"}, icmp4, true, true},
		"rtt_fair6be": {"RTT Fair Realtime Response Under Load", 6, []Mark{BE, BE, BE, BE, BE, BE},
			[]string{"BE1", "BE2", "BE3", "BE4", "BE5", "BE6"}, []string{"ICMP1", "ICMP2", "ICMP3", "ICMP4", "ICMP5", "ICMP6"}, true, true},
		"rtt_fair_up": {"RTT Fair upstream only", 4, be4,
			[]string{"BE1", "BE2", "BE3", "BE4"}, icmp4, true, false},
		"rtt_fair_var":      {"RTT Fair - variable number of hosts", 0, nil, nil, nil, true, true},
		"rtt_fair_var_up":   {"RTT Fair - variable number of hosts (upload only)", 0, nil, nil, nil, true, false},
		"rtt_fair_var_down": {"RTT Fair - variable number of hosts (download only)", 0, nil, nil, nil, false, true},
		// Without its data_directions parameter, which wanlab does not
		// take, rtt_fair_var_mixed runs both directions to every host.
		"rtt_fair_var_mixed": {"RTT Fair - variable number of hosts (mixed up and down)", 0, nil, nil, nil, true, true},
	}
)

// RTTFairTests are the rtt_fair tests, in the order of Names.
var RTTFairTests = []string{"rtt_fair", "rtt_fair4be", "rtt_fair6be", "rtt_fair_up",
	"rtt_fair_var", "rtt_fair_var_up", "rtt_fair_var_down", "rtt_fair_var_mixed"}

// VarServers reports whether the test takes its number of servers from
// Options.Servers (Flent's rtt_fair_var and its kin, whose HOSTS list is
// as long as the user makes it).
func VarServers(name string) bool {
	r, ok := rttFairs[name]
	return ok && r.servers == 0
}

// DefaultServers is the number of servers of the rtt_fair_var tests when
// Options.Servers is 0: as many as rtt_fair's own HOSTS list.
const DefaultServers = 4

// item returns element i of list, or def past its end or where empty.
func item[T ~string](list []T, i int, def T) T {
	if i < len(list) && list[i] != "" {
		return list[i]
	}
	return def
}

// rttFairTest returns the rtt_fair test called name, if it is one.
func rttFairTest(name string, o Options) (Test, bool, error) {
	r, ok := rttFairs[name]
	if !ok {
		return Test{}, false, nil
	}
	n := r.servers
	if n == 0 {
		n = DefaultServers
		if o.Servers != 0 {
			n = o.Servers
		}
		if n < 1 || n > link.MaxHosts {
			return Test{}, true, fmt.Errorf("--servers %d is out of range for %s: use 1 to %d (one stream of flows and a ping to each server)", n, name, link.MaxHosts)
		}
	}
	// The fixed tests set their markings, labels and ping labels
	// themselves (set_test_parameter), over the user's; the variable ones
	// take the user's.
	ps := o.PerStream
	if r.servers != 0 {
		ps.Markings, ps.Labels, ps.PingLabels = make([]string, len(r.marks)), r.labels, r.pings
		for i, m := range r.marks {
			ps.Markings[i] = string(m)
		}
	}
	t := Test{Name: name, Description: r.desc, Plot: "all_scaled", Servers: n}
	for i := 0; i < n; i++ {
		host := link.Host{Server: true, N: i + 1}
		label := item(ps.Labels, i, "BE")
		for _, d := range []struct {
			word string
			dir  Direction
			on   bool
		}{{"upload", Up, r.upload}, {"download", Down, r.download}} {
			if d.on {
				f := ps.flow(i, fmt.Sprintf("TCP %s %s %s", d.word, label, host), d.dir, BE)
				f.Server = host.N
				t.Flows = append(t.Flows, f)
			}
		}
		// Flent's ping of a stream has no marking of its own.
		t.Probes = append(t.Probes, Probe{Series: fmt.Sprintf("Ping (ms) %s %s", item(ps.PingLabels, i, "ICMP"), host), Kind: ICMP, Mark: BE, Server: host.N})
	}
	return t, true, nil
}
