package results

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"wanlab/internal/errwriter"
)

// CompareHosts orders hosts' names as a testbed lists them: the clients
// first (client or c1, then c2, c3 ...), then the servers (server or s1,
// s2 ...), then any other name alphabetically.
func CompareHosts(a, b string) int {
	sa, na := hostRank(a)
	sb, nb := hostRank(b)
	if c := cmp.Compare(sa, sb); c != 0 {
		return c
	}
	if c := cmp.Compare(na, nb); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// hostRank returns a host's side (0 clients, 1 servers, 2 any other
// name) and its number on that side.
func hostRank(name string) (side, n int) {
	switch name {
	case "client":
		return 0, 1
	case "server":
		return 1, 1
	}
	if len(name) >= 2 && (name[0] == 'c' || name[0] == 's') {
		if k, err := strconv.Atoi(name[1:]); err == nil && k > 0 {
			if name[0] == 'c' {
				return 0, k
			}
			return 1, k
		}
	}
	return 2, 0
}

// writeHosts writes the testbed's hosts (Run.Hosts), one a line: name,
// addresses, access links and congestion control.
func writeHosts(ew *errwriter.Writer, hosts []RunHost) {
	if len(hosts) == 0 {
		return
	}
	w, w4, w6 := 0, 0, 0
	for _, h := range hosts {
		w, w4, w6 = max(w, len(h.Name)), max(w4, len(orDash(h.Addr4))), max(w6, len(orDash(h.Addr6)))
	}
	ew.Printf(" hosts:\n")
	for _, h := range hosts {
		line := fmt.Sprintf("  %-*s  %-*s  %-*s  access up %s, down %s", w, h.Name, w4, orDash(h.Addr4), w6, orDash(h.Addr6),
			accessName(h.AccessUp), accessName(h.AccessDown))
		if h.CC != "" {
			line += "; cc " + h.CC
		}
		ew.Printf("%s\n", line)
	}
}

// accessName names an access link for a reader: "direct" for none.
func accessName(chain string) string {
	if chain == "" {
		return "direct"
	}
	return chain
}

// writeSysctls writes the hosts' sysctls in host order (CompareHosts),
// hosts with the same sysctls folded into one line at the first of them:
// "sysctls client, s2, server: ..." or, when every host has the same,
// "sysctls (every host): ...".
func writeSysctls(ew *errwriter.Writer, sysctls map[string]map[string]string) {
	hosts := slices.SortedFunc(maps.Keys(sysctls), CompareHosts)
	done := make([]bool, len(hosts))
	for i, h := range hosts {
		if done[i] {
			continue
		}
		same := []string{h}
		for j := i + 1; j < len(hosts); j++ {
			if !done[j] && maps.Equal(sysctls[h], sysctls[hosts[j]]) {
				same, done[j] = append(same, hosts[j]), true
			}
		}
		who := strings.Join(same, ", ")
		if len(same) == len(hosts) && len(hosts) > 1 {
			who = "(every host)"
		}
		ew.Printf(" sysctls %s: %s\n", who, joinMap(sysctls[h]))
	}
}

// writePorts writes a direction's host ports (DirectionReport.Ports), one
// a line: host, place, access chain, packets end to end and their delay;
// then the packets to no host.
func writePorts(ew *errwriter.Writer, d DirectionReport) {
	if len(d.Ports) == 0 {
		if d.NoRoute > 0 {
			ew.Printf("      no route:   %d packets to no host's address, dropped as they entered\n", d.NoRoute)
		}
		return
	}
	cw := len("access")
	for _, p := range d.Ports {
		cw = max(cw, len(accessName(p.Chain)))
	}
	ew.Printf("      hosts (end to end):\n")
	ew.Printf("       %-4s  %-7s  %-*s  %8s  %9s  %7s  %10s  %10s\n", "host", "place", cw, "access", "in", "delivered", "dropped", "median ms", "99th % ms")
	for _, p := range d.Ports {
		ew.Printf("       %-4s  %-7s  %-*s  %8d  %9d  %7d  %10.3f  %10.3f%s\n", p.Host, p.Place, cw, accessName(p.Chain),
			p.Sent, p.Delivered, p.Dropped, p.Delay.P50Ns/1e6, p.Delay.P99Ns/1e6, portExtras(p))
	}
	if d.NoRoute > 0 {
		ew.Printf("      no route:   %d packets to no host's address, dropped as they entered\n", d.NoRoute)
	}
}

// portExtras writes what a port's line adds when there is something to
// say: its access link's drops and delay, its ring and write drops.
func portExtras(p PortReport) string {
	var parts []string
	if a := p.Access; a != nil {
		parts = append(parts, fmt.Sprintf("access: %d dropped%s, delay median %.3f ms", a.Dropped, DropReasons(a.DroppedByReason), a.Delay.P50Ns/1e6))
	}
	if p.RingDrops > 0 {
		parts = append(parts, fmt.Sprintf("ring drops %d", p.RingDrops))
	}
	if p.WriteDrops > 0 {
		parts = append(parts, fmt.Sprintf("write drops %d", p.WriteDrops))
	}
	if len(parts) == 0 {
		return ""
	}
	return "  " + strings.Join(parts, "; ")
}
