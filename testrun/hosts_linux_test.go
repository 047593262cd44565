package testrun

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/lab"
	"wanlab/link"
	"wanlab/results"
	"wanlab/tcspec"
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
	// The router report keeps each host's port: c1's up port took the
	// probes through its access link (20 ms of it alone, 21 end to end),
	// and the ingress ports add up to the direction.
	up := routerReport(t, d).Directions[0]
	var sent uint64
	for _, p := range up.Ports {
		if p.Place == "ingress" {
			sent += p.Sent
		}
	}
	i = slices.IndexFunc(up.Ports, func(p results.PortReport) bool { return p.Host == "c1" && p.Place == "ingress" })
	if len(up.Ports) != 5 || i < 0 || sent != up.Sent {
		t.Fatalf("up ports %+v: want 5, c1's among them, the ingress ones adding up to the direction's %d sent", up.Ports, up.Sent)
	}
	if c1 := up.Ports[i]; !strings.Contains(c1.Chain, "delay 20ms") || c1.Delivered == 0 || c1.Delay.P50Ns < 20.5e6 ||
		c1.Access == nil || c1.Access.Delivered != c1.Delivered || c1.Access.Delay.P50Ns < 19.5e6 || c1.Access.Delay.P50Ns > 20.5e6 {
		t.Errorf("c1's up port %+v, access %+v: want its 20 ms access link's figures", c1, c1.Access)
	}
}

// TestRunOnABorrowedDumbbell runs ping with --lab on a running testbed of
// 2 clients and 2 servers: the run opens every host, records them, sets a
// sysctl in one beyond the client and the server and gives it back.
func TestRunOnABorrowedDumbbell(t *testing.T) {
	roottest.NeedRoot(t)
	name := fmt.Sprintf("trd%d", os.Getpid())
	tb, err := lab.Up(context.Background(), lab.Options{Name: name, Clients: 2, Servers: 2,
		Access: []lab.Access{{Host: link.Host{Server: true, N: 2}, Dir: "up"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	o := short("ping", time.Second)
	o.Lab = name
	o.Sysctls = []string{"s2:net.ipv4.tcp_recovery=0"}
	d := runDoc(t, o)
	if len(d.Run.Hosts) != 4 || d.Run.Hosts[3].Name != "s2" || d.Run.Hosts[3].AccessUp != "direct" {
		t.Errorf("run.hosts %+v, want 4 with s2's direct up access link", d.Run.Hosts)
	}
	if d.Run.Sysctls["s2"]["net.ipv4.tcp_recovery"] != "0" {
		t.Errorf("recorded sysctls of s2: %v", d.Run.Sysctls["s2"])
	}
	if v, _ := tb.Namespace("s2").Sysctl("net.ipv4.tcp_recovery"); v == "0" {
		t.Errorf("after the run, s2's tcp_recovery is still 0")
	}
	o.Sysctls = []string{"c3:net.ipv4.tcp_recovery=0"}
	s, err := Prepare(o, tcspec.Options{})
	if err == nil {
		_, err = Run(context.Background(), s, Info{}, Hooks{})
	}
	if err == nil || !strings.Contains(err.Error(), "c3") {
		t.Errorf("--sysctl c3: on a testbed without c3: %v, want an error naming c3", err)
	}
	// A test that needs four servers is bad input on a testbed of two,
	// refused before the testbed is borrowed: its chains and sysctls are
	// as they were, and nothing records a change.
	o = short("rtt_fair4be", time.Second)
	o.Lab = name
	if s, err = Prepare(o, tcspec.Options{}); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), s, Info{}, Hooks{})
	if !IsBadOption(err) || keyOf(err) != "lab" || !strings.Contains(err.Error(), "host s4 is not one of testbed "+name+"'s hosts (client, c2, server, s2)") {
		t.Errorf("rtt_fair4be on 2 servers: %v (key %q), want a bad --lab naming s4 and the hosts", err, keyOf(err))
	}
	if st, err := lab.GetStatus(name, 0); err != nil || len(st.Changed) > 0 {
		t.Errorf("after the refusal: %v, changed %v", err, st.Changed)
	}
}
