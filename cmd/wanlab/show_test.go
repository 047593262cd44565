package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"wanlab/fidelity"
	"wanlab/internal/outfile"
	"wanlab/internal/resultstest"
	"wanlab/results"
)

// showDumbbell writes a synthetic run of a client and three servers, s1
// and s3 behind access links, with its hosts, their sysctls and the
// router's ports, and returns what `wanlab show` prints of it.
func showDumbbell(t *testing.T, ports bool) string {
	t.Helper()
	d := resultstest.Run("rtt_fair4be", "", 1, resultstest.DefaultPath)
	d.Run.Hosts = []results.RunHost{
		{Name: "client", Addr4: "10.1.0.1", Addr6: "fd00::1", CC: "cubic"},
		{Name: "server", Addr4: "10.1.0.2", Addr6: "fd00::2", AccessUp: "netem delay 5ms", CC: "cubic"},
		{Name: "s2", Addr4: "10.1.0.202", Addr6: "fd00::202", CC: "cubic"},
		{Name: "s3", Addr4: "10.1.0.203", Addr6: "fd00::203", AccessDown: "netem delay 40ms", CC: "cubic"},
	}
	same := map[string]string{"net.ipv4.tcp_congestion_control": "cubic", "net.ipv4.tcp_ecn": "2"}
	d.Run.Sysctls = map[string]map[string]string{"client": same, "server": same, "s2": same, "s3": same}
	yes := true
	up := results.DirectionReport{Name: "up", ChainStart: "tbf rate 20mbit burst 32k latency 100ms", ChainEnd: "tbf rate 20mbit burst 32k latency 100ms",
		ConfiguredRateBps: 20_000_000, Sent: 600, Delivered: 590, Dropped: 10, PercentilesSince: "run",
		Verdict: fidelity.Verdict{Direction: "up", Faithful: true}}
	down := results.DirectionReport{Name: "down", PercentilesSince: "run", Sent: 900, Delivered: 900,
		Verdict: fidelity.Verdict{Direction: "down", Faithful: true}}
	if ports {
		up.Ports = []results.PortReport{
			{Host: "c1", Place: "ingress", Sent: 600, Delivered: 590, Dropped: 10, Delay: results.DelayReport{N: 590, P50Ns: 6e6, P99Ns: 30e6}},
			{Host: "s1", Place: "egress", Chain: "netem delay 5ms", Sent: 200, Delivered: 196, Dropped: 4, Delay: results.DelayReport{N: 196, P50Ns: 11e6, P99Ns: 35e6},
				Access: &results.AccessReport{Sent: 196, Delivered: 196, Delay: results.DelayReport{N: 196, P50Ns: 5e6}}},
			{Host: "s2", Place: "egress", Sent: 200, Delivered: 197, Dropped: 3, Delay: results.DelayReport{N: 197, P50Ns: 6e6, P99Ns: 30e6}},
			{Host: "s3", Place: "egress", Sent: 200, Delivered: 197, Dropped: 3, Delay: results.DelayReport{N: 197, P50Ns: 6e6, P99Ns: 30e6}},
		}
		up.NoRoute = 2
	}
	d.Router = &results.RouterReport{Mode: results.RouterTestbed, Testbed: "wl-x", Faithful: &yes, Directions: []results.DirectionReport{up, down}}
	path := filepath.Join(t.TempDir(), "run.json.gz")
	if err := results.WriteFile(context.Background(), path, d, outfile.Options{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runWanlab(t, "show", path)
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	return out
}

// `wanlab show` of a dumbbell run lists its hosts with their addresses
// and access links, folds the hosts' equal sysctls into one line, and
// prints each host's path under each direction of the Router section; a
// document without ports (older, or of two hosts) prints no such table.
func TestShowDumbbell(t *testing.T) {
	out := showDumbbell(t, true)
	for _, want := range []string{
		" hosts:\n" +
			"  client  10.1.0.1    fd00::1    access up direct, down direct; cc cubic\n" +
			"  server  10.1.0.2    fd00::2    access up netem delay 5ms, down direct; cc cubic\n" +
			"  s2      10.1.0.202  fd00::202  access up direct, down direct; cc cubic\n" +
			"  s3      10.1.0.203  fd00::203  access up direct, down netem delay 40ms; cc cubic\n",
		" sysctls (every host): net.ipv4.tcp_congestion_control=cubic net.ipv4.tcp_ecn=2\n",
		"      hosts (end to end):\n" +
			"       host  place    access                 in  delivered  dropped   median ms   99th % ms\n" +
			"       c1    ingress  direct                600        590       10       6.000      30.000\n" +
			"       s1    egress   netem delay 5ms       200        196        4      11.000      35.000  access: 0 dropped, delay median 5.000 ms\n" +
			"       s2    egress   direct                200        197        3       6.000      30.000\n" +
			"       s3    egress   direct                200        197        3       6.000      30.000\n" +
			"      no route:   2 packets to no host's address, dropped as they entered\n" +
			" down (no qdisc)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks\n%s\nin\n%s", want, out)
		}
	}
	if n := strings.Count(out, " sysctls "); n != 1 {
		t.Errorf("%d sysctls lines, want 1", n)
	}
	if old := showDumbbell(t, false); strings.Contains(old, "hosts (end to end)") || strings.Contains(old, "no route") {
		t.Errorf("a document without ports shows them:\n%s", old)
	}
}
