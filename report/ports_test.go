package report

import (
	"strings"
	"testing"

	"golang.org/x/net/html"

	"wanlab/results"
)

// TestPortsTable: a dumbbell run's fidelity section has a table of each
// host's path per direction that has ports (its access chain, "direct"
// without one, its packets end to end and their delay, what its access
// link dropped), and says how many packets went to no host; a run of two
// hosts has no such table.
func TestPortsTable(t *testing.T) {
	d := synthRun("rtt_fair4be", "", 1, faithfulRun)
	up := &d.Router.Directions[0]
	up.NoRoute = 4
	up.Ports = []results.PortReport{
		{Host: "c1", Place: "ingress", Sent: 300, Delivered: 290, Dropped: 10, DroppedByReason: map[string]uint64{"limit": 10},
			Delay: results.DelayReport{N: 290, P50Ns: 7.5e6, P99Ns: 20e6}},
		{Host: "s1", Place: "egress", Chain: "netem delay 5ms", Sent: 300, Delivered: 290, Dropped: 10,
			Delay:  results.DelayReport{N: 290, P50Ns: 12.25e6, P99Ns: 25e6},
			Access: &results.AccessReport{Sent: 292, Delivered: 290, Dropped: 2, DroppedByReason: map[string]uint64{"loss": 2}, Delay: results.DelayReport{N: 290, P50Ns: 5e6}}},
	}
	fid := byID(parse(t, render(t, []Run{{Doc: d}}, Options{})), "run-1-fidelity")
	tables := findAll(fid, func(n *html.Node) bool { return tag("table")(n) && attr(n, "data-direction") != "" })
	if len(tables) != 1 || attr(tables[0], "data-direction") != "up" {
		t.Fatalf("%d port tables, want the up direction's", len(tables))
	}
	var rows []string
	for _, tr := range findAll(first(tables[0], tag("tbody")), tag("tr")) {
		var cells []string
		for _, c := range findAll(tr, func(n *html.Node) bool { return tag("th")(n) || tag("td")(n) }) {
			cells = append(cells, text(c))
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	want := []string{
		"c1 | ingress | direct | 300 | 290 | 10 (limit 10) | 7.500 | 20.000 | ",
		"s1 | egress | netem delay 5ms | 300 | 290 | 10 | 12.250 | 25.000 | access link: 2 dropped (loss 2), delay median 5.000 ms",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(text(fid), "4 packets up went to no host's address") {
		t.Errorf("no no-route line in %q", text(fid))
	}

	two := synthRun("tcp_upload", "", 1, faithfulRun)
	if fid := byID(parse(t, render(t, []Run{{Doc: two}}, Options{})), "run-1-fidelity"); strings.Contains(text(fid), "Each host's path") {
		t.Errorf("a two-host run has a port table: %q", text(fid))
	}
}
