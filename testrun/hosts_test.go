package testrun

import (
	"errors"
	"strings"
	"testing"

	"wanlab/catalog"
	"wanlab/internal/rundir"
	"wanlab/link"
	"wanlab/tcspec"
)

// TestPrepareHosts: the hosts' options become the testbed's hosts, and
// each mistake is refused naming its option (the experiment file's key)
// and the fix.
func TestPrepareHosts(t *testing.T) {
	o := Defaults()
	o.Test = "tcp_upload"
	o.Clients, o.Servers = 3, 2
	o.AccessUp = []string{"c2=netem delay 40ms", "s2="}
	o.AccessDown = []string{"c3=netem delay 10ms"}
	o.HostCC = []string{"c3=bbr"}
	s, err := Prepare(o, tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Hosts
	if h.Clients != 3 || h.Servers != 2 || len(h.Access) != 3 || h.HostCC[link.Host{N: 3}] != "bbr" {
		t.Errorf("hosts %+v", h)
	}
	if a := h.Access[1]; a.Host != (link.Host{Server: true, N: 2}) || a.Dir != "up" || len(a.Chain) != 0 {
		t.Errorf("s2= is %+v, want a direct up access link", a)
	}
	// --ecn is every host's, a --sysctl prefix any host's.
	o.ECN, o.Sysctls = true, []string{"c3:net.ipv4.tcp_sack=0"}
	if s, err = Prepare(o, tcspec.Options{}); err != nil {
		t.Fatal(err)
	}
	var ecn []string
	for _, sc := range s.Sysctls {
		if sc.Key == "net.ipv4.tcp_ecn" {
			ecn = append(ecn, string(sc.Host))
		}
	}
	if strings.Join(ecn, " ") != "client c2 c3 server s2" || s.Sysctls[len(s.Sysctls)-1].Host != "c3" {
		t.Errorf("sysctls %+v, want tcp_ecn in every host and tcp_sack in c3", s.Sysctls)
	}
	rec := s.recordedOptions("tun")
	if rec["clients"] != "3" || !strings.Contains(rec["access_up"], "c2=netem delay 40ms") {
		t.Errorf("recorded options %v, want clients and access_up", rec)
	}

	for _, c := range []struct {
		name string
		mod  func(o *Options)
		key  string
		want string
	}{
		{"17 clients", func(o *Options) { o.Clients = 17 }, "clients", "--clients 17: give 1 to 16 hosts"},
		{"-1 clients", func(o *Options) { o.Clients = -1 }, "clients", "--clients -1: give 1 to 16 hosts"},
		{"-1 servers", func(o *Options) { o.Servers = -1 }, "servers", "--servers -1: give 1 to 16 hosts"},
		{"a host it lacks", func(o *Options) { o.Clients = 4; o.AccessUp = []string{"c5=netem delay 1ms"} }, "access_up", "there are 4 clients (c1..c4)"},
		{"a bad chain", func(o *Options) { o.AccessDown = []string{"s1=fq_codel; netem delay 1ms"} }, "access_down", `--access-down "s1=fq_codel; netem delay 1ms": fq_codel cannot have a child`},
		{"an unknown cc", func(o *Options) { o.HostCC = []string{"c1=nosuchcc"} }, "host_cc", "congestion control nosuchcc is not loaded"},
		{"no cc", func(o *Options) { o.HostCC = []string{"c1="} }, "host_cc", "names no congestion control"},
		{"the packet plane", func(o *Options) { o.Clients = 2; o.DataPlane = "packet" }, "dataplane", "runs on the tun data plane"},
		{"a sysctl of a host it lacks", func(o *Options) { o.Clients = 2; o.Sysctls = []string{"c3:net.ipv4.tcp_sack=0"} }, "sysctls", "the testbed has no host c3 (--clients 2 --servers 1)"},
		{"with --lab", func(o *Options) { o.Lab = "wl-nosuch"; o.Servers = 2 }, "servers", "--lab wl-nosuch runs on one that has its own"},
		{"with --direct", func(o *Options) { o.Direct = true; o.AccessUp = []string{"c1="} }, "access_up", "--direct joins two hosts"},
	} {
		o := Defaults()
		o.Test = "tcp_upload"
		c.mod(&o)
		_, err := Prepare(o, tcspec.Options{})
		var b *BadOption
		if rundir.Rootless() && c.key == "dataplane" && err != nil && strings.Contains(err.Error(), "needs real root") {
			continue // the packet plane, refused first in a user namespace
		}
		if !errors.As(err, &b) || b.Key != c.key || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (key %q); want key %s saying %q", c.name, err, keyOf(err), c.key, c.want)
		}
	}
}

// TestResolveHostsOfTheTest: a test that needs more hosts gets them when
// the counts are not given, and is refused when they are given smaller.
func TestResolveHostsOfTheTest(t *testing.T) {
	s := &Setup{Mode: ModeTestbed, Test: catalog.Test{Name: "rtt_fair", Clients: 1, Servers: 4}}
	if err := s.resolveHosts(Options{}, tcspec.Options{}); err != nil || s.Hosts.Clients != 1 || s.Hosts.Servers != 4 {
		t.Errorf("not given: %v, %d clients %d servers; want 1 and 4", err, s.Hosts.Clients, s.Hosts.Servers)
	}
	if err := s.resolveHosts(Options{Servers: 8}, tcspec.Options{}); err != nil || s.Hosts.Servers != 8 {
		t.Errorf("--servers 8: %v, %d servers", err, s.Hosts.Servers)
	}
	err := s.resolveHosts(Options{Servers: 2}, tcspec.Options{})
	if keyOf(err) != "servers" || !strings.Contains(err.Error(), "--servers 2: rtt_fair runs flows to 4 servers (s1..s4): give --servers 4 or more, or leave --servers out") {
		t.Errorf("--servers 2: %v", err)
	}
}
