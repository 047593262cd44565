package results

import (
	"slices"
	"strings"
	"testing"
)

// mainDoc is a document with series of these names, and these flows: a
// "NAME@up" is a flow of direction up whose label is NAME.
func mainDoc(series []string, flows ...string) *Document {
	d := &Document{Run: Run{Test: "x"}}
	for _, n := range series {
		d.Series = append(d.Series, Series{Name: n, Unit: "Mbits/s"})
	}
	for i, f := range flows {
		at := strings.LastIndex(f, "@")
		d.Flows = append(d.Flows, Flow{ID: i + 1, Label: f[:at], Direction: f[at+1:]})
	}
	return d
}

// The series that stand for a run's throughput, each direction's load and
// its latency, by test.
func TestMainSeries(t *testing.T) {
	for _, c := range []struct {
		name           string
		d              *Document
		main           string
		load           []string
		up, down, ping string
	}{
		{name: "rrul", d: mainDoc([]string{"TCP upload BE", "TCP download BE", "TCP upload sum", "TCP upload avg", "TCP download sum", "TCP totals", "Ping (ms) UDP BE", "Ping (ms) ICMP", "Ping (ms) avg"},
			"TCP upload BE@up", "TCP download BE@down", "Ping (ms) UDP BE@both", "Ping (ms) ICMP@both"),
			main: "TCP totals", up: "TCP upload sum", down: "TCP download sum", ping: "Ping (ms) ICMP"},
		{name: "tcp_nup", d: mainDoc([]string{"TCP upload::1", "TCP upload::2", "TCP upload sum", "Ping (ms) ICMP"}, "TCP upload::1@up", "TCP upload::2@up", "Ping (ms) ICMP@both"),
			main: "TCP upload sum", up: "TCP upload sum", ping: "Ping (ms) ICMP"},
		{name: "tcp_ndown", d: mainDoc([]string{"TCP download::1", "TCP download::2", "TCP download sum"}, "TCP download::1@down", "TCP download::2@down"),
			main: "TCP download sum", down: "TCP download sum"},
		{name: "tcp_upload", d: mainDoc([]string{"TCP upload", "Ping (ms) ICMP"}, "TCP upload@up", "Ping (ms) ICMP@both"),
			main: "TCP upload", up: "TCP upload", ping: "Ping (ms) ICMP"},
		{name: "tcp_bidirectional", d: mainDoc([]string{"TCP download", "TCP upload", "Ping (ms) ICMP"}, "TCP download@down", "TCP upload@up", "Ping (ms) ICMP@both"),
			load: []string{"TCP download", "TCP upload"}, up: "TCP upload", down: "TCP download", ping: "Ping (ms) ICMP"},
		{name: "tfrc_upload", d: mainDoc([]string{"TFRC upload", "Ping (ms) ICMP"}, "TFRC upload@up", "Ping (ms) ICMP@both"),
			main: "TFRC upload", up: "TFRC upload", ping: "Ping (ms) ICMP"},
		{name: "quic_download", d: mainDoc([]string{"QUIC download", "Ping (ms) ICMP"}, "QUIC download@down", "Ping (ms) ICMP@both"),
			main: "QUIC download", down: "QUIC download", ping: "Ping (ms) ICMP"},
		{name: "udp_flood", d: mainDoc([]string{"UDP upload", "Ping (ms) ICMP"}, "UDP upload@up", "Ping (ms) ICMP@both"),
			main: "UDP upload", up: "UDP upload", ping: "Ping (ms) ICMP"},
		// The custom test: what the user's flows delivered, whatever flows
		// it had; a direction without any has no load.
		{name: "custom", d: mainDoc([]string{"Custom upload", "Custom download", "Custom totals", "Custom upload::1", "Custom upload::2", "Ping (ms) ICMP", "Ping (ms) UDP"},
			"Ping (ms) ICMP@both", "Ping (ms) UDP@both", "Custom upload::1@up", "Custom upload::2@up"),
			main: "Custom totals", up: "Custom upload", ping: "Ping (ms) ICMP"},
		{name: "ping", d: mainDoc([]string{"Ping (ms) ICMP", "Ping (ms) UDP"}, "Ping (ms) ICMP@both", "Ping (ms) UDP@both"), ping: "Ping (ms) ICMP"},
		// Without the ICMP ping, the first probe, never an average of
		// probes.
		{name: "no ICMP", d: mainDoc([]string{"Ping (ms) avg", "Ping (ms) UDP EF", "Ping (ms) UDP BK"}), ping: "Ping (ms) UDP EF"},
		// Several flows one way and no sum: nothing stands for them.
		{name: "no sum", d: mainDoc([]string{"TCP upload::1", "TCP upload::2"}, "TCP upload::1@up", "TCP upload::2@up"),
			load: []string{"TCP upload::1", "TCP upload::2"}},
	} {
		name := func(s *Series) string {
			if s == nil {
				return ""
			}
			return s.Name
		}
		main, load := c.d.MainSeries()
		if name(main) != c.main || !slices.Equal(load, c.load) {
			t.Errorf("%s: main series %q, load %q; want %q, %q", c.name, name(main), load, c.main, c.load)
		}
		if up, down := name(c.d.LoadSeries("up")), name(c.d.LoadSeries("down")); up != c.up || down != c.down {
			t.Errorf("%s: load up %q, down %q; want %q, %q", c.name, up, down, c.up, c.down)
		}
		if got := name(c.d.LatencySeries()); got != c.ping {
			t.Errorf("%s: latency %q, want %q", c.name, got, c.ping)
		}
	}
}
