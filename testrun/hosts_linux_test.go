package testrun

import (
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/results"
)

// TestRunOnADumbbell runs ping on a testbed of 3 clients and 2 servers
// whose client has an access delay: the probe crosses it, the results
// record every host with its addresses, access links and congestion
// control, and nothing of the hosts is left.
func TestRunOnADumbbell(t *testing.T) {
	o := short("ping", 2*time.Second)
	o.Up, o.Down = "netem delay 1ms", "netem delay 1ms"
	o.Clients, o.Servers = 3, 2
	o.AccessUp = []string{"c1=netem delay 20ms"}
	o.AccessDown = []string{"s2="}
	o.HostCC = []string{"c3=bbr"}
	d := runDoc(t, o)
	names := make([]string, len(d.Run.Hosts))
	for i, h := range d.Run.Hosts {
		names[i] = h.Name
	}
	if strings.Join(names, " ") != "client c2 c3 server s2" {
		t.Fatalf("run.hosts %v, want client c2 c3 server s2", names)
	}
	i := slices.IndexFunc(d.Run.Hosts, func(h results.RunHost) bool { return h.Name == "c3" })
	if c3 := d.Run.Hosts[i]; c3.CC != "bbr" || !strings.HasSuffix(c3.Addr4, ".103") {
		t.Errorf("c3 recorded as %+v, want cc bbr and address .103", c3)
	}
	if c1 := d.Run.Hosts[0]; !strings.Contains(c1.AccessUp, "delay 20ms") || c1.AccessDown != "" {
		t.Errorf("c1 recorded as %+v, want its up access link", c1)
	}
	if d.Run.Options["clients"] != "3" || d.Run.Options["servers"] != "2" {
		t.Errorf("run.options %v, want clients 3 and servers 2", d.Run.Options)
	}
	ping := series(t, d, "Ping (ms) ICMP")
	if v := windowValues(ping); len(v) == 0 || slices.Min(v) < 22 {
		t.Errorf("ping %v ms, want at least 22 (20 ms of c1's access link and 1 ms each way)", v)
	}
}
