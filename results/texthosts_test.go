package results

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"wanlab/internal/schematest"
)

// dumbbellDirection is the up direction of a run of one client and two
// servers, s1 behind an access link: its ports and packets to no host.
func dumbbellDirection() DirectionReport {
	return DirectionReport{Name: "up", ChainStart: "tbf rate 20mbit burst 32k latency 100ms", ChainEnd: "tbf rate 20mbit burst 32k latency 100ms",
		Sent: 300, Delivered: 290, Dropped: 10, PercentilesSince: "run", NoRoute: 3,
		Ports: []PortReport{
			{Host: "c1", Place: "ingress", If: "wl-x-c1", Sent: 300, BytesIn: 450_000, Delivered: 290, BytesOut: 435_000, Dropped: 10,
				DroppedByReason: map[string]uint64{"limit": 10}, Marked: 1, Reordered: 2,
				Delay: DelayReport{N: 290, MeanNs: 8e6, MinNs: 1e6, P50Ns: 7.5e6, P99Ns: 20e6, MaxNs: 21e6}, RingDrops: 4},
			{Host: "s1", Place: "egress", If: "wl-x-s1", Chain: "netem delay 5ms", Sent: 200, Delivered: 195, Dropped: 5,
				Delay: DelayReport{N: 195, MeanNs: 10e6, P50Ns: 10.25e6, P99Ns: 22e6},
				Access: &AccessReport{Sent: 196, Delivered: 195, Dropped: 1, DroppedByReason: map[string]uint64{"loss": 1}, Marked: 1,
					Delay: DelayReport{N: 195, MeanNs: 5e6, P50Ns: 5e6, P99Ns: 5.5e6}}, WriteDrops: 2},
			{Host: "s2", Place: "egress", If: "wl-x-s2", Sent: 100, Delivered: 95, Dropped: 5,
				Delay: DelayReport{N: 95, MeanNs: 4e6, P50Ns: 3e6, P99Ns: 9e6}},
		},
	}
}

// Every key of a dumbbell's ports is snake_case and documented, and a
// document keeps them as written.
func TestPortReportKeys(t *testing.T) {
	rep := sampleRouter()
	rep.Directions = append(rep.Directions, dumbbellDirection())
	schematest.CheckKeys(t, rep)

	d := &Document{Router: rep}
	var b bytes.Buffer
	if err := d.Encode(&b); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	got := back.Router.Directions[1]
	if got.NoRoute != 3 || len(got.Ports) != 3 || got.Ports[1].Access == nil || got.Ports[1].Access.DroppedByReason["loss"] != 1 ||
		got.Ports[0].Delay.P99Ns != 20e6 || got.Ports[0].RingDrops != 4 || got.Ports[2].Access != nil {
		t.Errorf("ports read back: %+v, no_route %d", got.Ports, got.NoRoute)
	}
}

// A direction of two hosts writes neither ports nor no_route: older
// documents and two-host runs read and write alike.
func TestPortsLeftOutForTwoHosts(t *testing.T) {
	var b bytes.Buffer
	if err := (&Document{Router: sampleRouter()}).Encode(&b); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Contains(s, `"ports"`) || strings.Contains(s, `"no_route"`) {
		t.Errorf("a two-host direction writes ports: %s", s)
	}
}

// The summary's Router section lists each host's port under its
// direction: access chain ("direct" without one), packets end to end and
// their delay, what the access link did itself, the drops at the devices,
// then the packets to no host.
func TestWritePorts(t *testing.T) {
	rep := sampleRouter()
	rep.Directions = []DirectionReport{dumbbellDirection()}
	var b strings.Builder
	if err := WriteSummary(&b, &Document{Router: rep}, false); err != nil {
		t.Fatal(err)
	}
	want := "      hosts (end to end):\n" +
		"       host  place    access                 in  delivered  dropped   median ms   99th % ms\n" +
		"       c1    ingress  direct                300        290       10       7.500      20.000  ring drops 4\n" +
		"       s1    egress   netem delay 5ms       200        195        5      10.250      22.000  access: 1 dropped (loss 1), delay median 5.000 ms; write drops 2\n" +
		"       s2    egress   direct                100         95        5       3.000       9.000\n" +
		"      no route:   3 packets to no host's address, dropped as they entered\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks\n%s\nin\n%s", want, b.String())
	}
}

// The header lists the hosts with their addresses and access links, and
// the sysctls in host order, hosts of the same sysctls on one line.
func TestWriteHostsAndSysctls(t *testing.T) {
	d := &Document{}
	d.Run.Hosts = []RunHost{
		{Name: "client", Addr4: "10.0.0.1", Addr6: "fd00::1", CC: "cubic"},
		{Name: "server", Addr4: "10.0.0.2", Addr6: "fd00::2", AccessUp: "netem delay 5ms"},
		{Name: "s2", Addr4: "10.0.0.202", Addr6: "fd00::202", AccessDown: "direct"},
	}
	same := map[string]string{"net.ipv4.tcp_ecn": "1"}
	d.Run.Sysctls = map[string]map[string]string{"client": same, "s10": same, "s2": same, "server": same, "c2": same,
		"s3": {"net.ipv4.tcp_ecn": "0"}}
	var b strings.Builder
	if err := WriteSummary(&b, d, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		" hosts:\n" +
			"  client  10.0.0.1    fd00::1    access up direct, down direct; cc cubic\n" +
			"  server  10.0.0.2    fd00::2    access up netem delay 5ms, down direct\n" +
			"  s2      10.0.0.202  fd00::202  access up direct, down direct\n",
		" sysctls client, c2, server, s2, s10: net.ipv4.tcp_ecn=1\n sysctls s3: net.ipv4.tcp_ecn=0\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks\n%s\nin\n%s", want, b.String())
		}
	}

	d.Run.Sysctls = map[string]map[string]string{"client": same, "server": same}
	b.Reset()
	WriteSummary(&b, d, false)
	if !strings.Contains(b.String(), " sysctls (every host): net.ipv4.tcp_ecn=1\n") || strings.Contains(b.String(), "sysctls client") {
		t.Errorf("equal sysctls not folded:\n%s", b.String())
	}
}

// Hosts sort as a testbed lists them: clients, then servers, by number.
func TestCompareHosts(t *testing.T) {
	got := []string{"s10", "server", "x", "c2", "s2", "client", "c1", "s1"}
	slices.SortFunc(got, CompareHosts)
	if want := []string{"c1", "client", "c2", "s1", "server", "s2", "s10", "x"}; !slices.Equal(got, want) {
		t.Errorf("sorted %v, want %v", got, want)
	}
}
