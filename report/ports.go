package report

import (
	"fmt"
	"strconv"
	"strings"

	"wanlab/results"
)

// portTable is one direction's host ports as the page shows them (a run
// of more than two hosts, or with access links): a row per port, and the
// packets to no host.
type portTable struct {
	Direction string
	Rows      []portRow
	NoRoute   uint64
}

// portRow is one host's port: its access chain ("direct" without one),
// its packets end to end and their delay in ms, and what its access link
// and its device did themselves.
type portRow struct {
	Host, Place, Access          string
	In, Delivered, Dropped       string
	DelayMedian, DelayP99, Extra string
}

// buildPorts returns the router report's host ports, per direction that
// has them; none for a run of two hosts.
func buildPorts(rep *results.RouterReport) []portTable {
	if rep == nil {
		return nil
	}
	var out []portTable
	for _, d := range rep.Directions {
		if len(d.Ports) == 0 {
			continue
		}
		t := portTable{Direction: d.Name, NoRoute: d.NoRoute}
		for _, p := range d.Ports {
			access := p.Chain
			if access == "" {
				access = "direct"
			}
			t.Rows = append(t.Rows, portRow{Host: p.Host, Place: p.Place, Access: access,
				In: strconv.FormatUint(p.Sent, 10), Delivered: strconv.FormatUint(p.Delivered, 10),
				Dropped:     strconv.FormatUint(p.Dropped, 10) + results.DropReasons(p.DroppedByReason),
				DelayMedian: fmt.Sprintf("%.3f", p.Delay.P50Ns/1e6), DelayP99: fmt.Sprintf("%.3f", p.Delay.P99Ns/1e6),
				Extra: portExtra(p)})
		}
		out = append(out, t)
	}
	return out
}

// portExtra says what a port's access link and device did themselves,
// "" when there is nothing to say.
func portExtra(p results.PortReport) string {
	var parts []string
	if a := p.Access; a != nil {
		parts = append(parts, fmt.Sprintf("access link: %d dropped%s, delay median %.3f ms", a.Dropped, results.DropReasons(a.DroppedByReason), a.Delay.P50Ns/1e6))
	}
	if p.RingDrops > 0 {
		parts = append(parts, fmt.Sprintf("ring drops %d", p.RingDrops))
	}
	if p.WriteDrops > 0 {
		parts = append(parts, fmt.Sprintf("write drops %d", p.WriteDrops))
	}
	return strings.Join(parts, "; ")
}
