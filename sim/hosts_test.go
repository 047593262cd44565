package sim

import (
	"strings"
	"testing"
	"time"

	"wanlab/internal/schematest"
	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

func specs(t *testing.T, s string) []qdisc.Spec {
	t.Helper()
	c, err := tcspec.ParseChain(s, tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustFlow(t *testing.T, s string) Flow {
	t.Helper()
	f, err := ParseFlow(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDumbbellHosts runs two clients to two servers through a 10 Mbit/s
// bottleneck: c1 is 10 ms from it, c2 40 ms, and s2 5 ms behind it. A
// 1 Mbit/s flow of 1500-byte packets (one every 12 ms) from each client
// meets the other's at the bottleneck 6 ms apart (40 ms is 30 ms + 10),
// well clear of the 1.2112 ms a packet takes there, so no packet waits:
// c1→s1's delay is 10 ms and c2→s2's 45 ms, exactly. In 1 s each sends 84
// packets (at 0, 12, ..., 996 ms); those sent before 990 ms (83) and
// 955 ms (80) arrive, the rest are still on their access links. The
// down flow from s1 to c2 crosses no access link.
func TestDumbbellHosts(t *testing.T) {
	var recs []PacketRecord
	cfg := Config{
		Duration: time.Second,
		Up:       link.Config{Chain: specs(t, "tbf rate 10mbit burst 1514 limit 100000")},
		Clients:  2, Servers: 2,
		Access: []Access{
			{Host: link.Host{N: 1}, Dir: "up", Chain: specs(t, "netem delay 10ms")},
			{Host: link.Host{N: 2}, Dir: "up", Chain: specs(t, "netem delay 40ms")},
			{Host: link.Host{Server: true, N: 2}, Dir: "up", Chain: specs(t, "netem delay 5ms")},
		},
		Flows: []Flow{
			mustFlow(t, "cbr rate=1mbit size=1500 src=c1 dst=s1"),
			mustFlow(t, "cbr rate=1mbit size=1500 src=c2 dst=s2"),
			mustFlow(t, "cbr rate=1mbit size=1500 src=s1 dst=c2 count=10"),
		},
		OnPacket: func(r PacketRecord) { recs = append(recs, r) },
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		sent, delivered uint64
		delay           float64
		dir             string
	}{{84, 83, 10e6, "up"}, {84, 80, 45e6, "up"}, {10, 10, 0, "down"}} {
		f := res.Flows[i]
		if f.Dir != want.dir || f.Sent != want.sent || f.Delivered != want.delivered || f.Delay.Min != want.delay || f.Delay.Max != want.delay {
			t.Errorf("flow %d: %s sent %d delivered %d delay %+v; want %s %d %d %v ns", i, f.Dir, f.Sent, f.Delivered, f.Delay, want.dir, want.sent, want.delivered, want.delay)
		}
	}
	if res.Up.Sent != 168 || res.Up.Delivered != 163 || res.Up.Queued != 5 {
		t.Errorf("up %+v", res.Up.Counters)
	}
	if b := res.UpBottleneck; b == nil || b.Sent != 163 || b.Delivered != 163 || b.Delay.Max != 0 {
		t.Errorf("up bottleneck %+v: want 163 in and out (the rest still on the clients' access links), none waiting", b)
	}
	hosts := map[string]HostResult{}
	for _, h := range res.Hosts {
		hosts[h.Host] = h
	}
	if len(res.Hosts) != 4 || res.Hosts[0].Host != "c1" || res.Hosts[3].Host != "s2" {
		t.Fatalf("hosts %+v", res.Hosts)
	}
	c1, c2, s1, s2 := hosts["c1"], hosts["c2"], hosts["s1"], hosts["s2"]
	switch {
	case c1.Up.Sent != 84 || c1.UpAccess == nil || c1.UpAccess.Delay.Max != 10e6 || c1.DownAccess != nil:
		t.Errorf("c1 %+v", c1)
	case c2.Up.Delivered != 80 || c2.Down.Delivered != 10 || c2.Up.Delay.Min != 45e6:
		t.Errorf("c2 %+v", c2)
	case s1.Up.Delivered != 83 || s1.Down.Sent != 10 || s1.UpAccess != nil:
		t.Errorf("s1 %+v", s1)
	case s2.Up.Delivered != 80 || s2.UpAccess == nil || s2.UpAccess.Sent != 80 || s2.UpAccess.Delay.Max != 5e6:
		t.Errorf("s2 %+v", s2)
	}
	// The records carry each packet's whole path: sent when it entered
	// its client's access link.
	for _, r := range recs {
		if r.Flow == 1 && r.LeftNs >= 0 && r.LeftNs-r.SentNs != 45e6 {
			t.Fatalf("record %+v: want 45 ms end to end", r)
		}
	}
	schematest.CheckKeys(t, res)
}

// TestDumbbellAddresses checks the hosts' addresses: a flow that gives
// addresses crosses the access links of the hosts that have them.
func TestDumbbellAddresses(t *testing.T) {
	cfg := Config{
		Duration: 100 * time.Millisecond, Clients: 3,
		Access: []Access{{Host: link.Host{N: 3}, Dir: "up", Chain: specs(t, "netem delay 7ms")}},
		Flows: []Flow{
			mustFlow(t, "cbr rate=1mbit size=1500 src=10.0.0.4 count=1"),
			mustFlow(t, "cbr rate=1mbit size=1500 src=10.0.0.9 count=1"),
		},
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Flows[0].Delay; d.Max != 7e6 {
		t.Errorf("flow from 10.0.0.4 (c3): delay %v, want c3's 7 ms", d.Max)
	}
	if d := res.Flows[1].Delay; d.N != 1 || d.Max != 0 {
		t.Errorf("flow from 10.0.0.9 (no host): delay %+v, want c1's path, direct", d)
	}
}

func TestDumbbellErrors(t *testing.T) {
	one := []Flow{CBR{Rate: 1000, Size: 100}}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Clients: 17}, "1 to 16 clients"},
		{Config{Clients: 4, Flows: []Flow{mustFlow(t, "cbr rate=1mbit size=100 src=c5 dst=s1")}}, "src=c5: there are 4 clients (c1..c4)"},
		{Config{Flows: []Flow{mustFlow(t, "cbr rate=1mbit size=100 dst=s2")}}, "dst=s2: there is one server (s1)"},
		{Config{Flows: one, Access: []Access{{Host: link.Host{Server: true, N: 3}, Dir: "up"}}}, "s3: there is one server"},
		{Config{Flows: one, Access: []Access{{Host: link.Host{N: 1}, Dir: "up"}, {Host: link.Host{N: 1}, Dir: "up"}}}, "c1 has two up access links"},
		{Config{Flows: one, Access: []Access{{Host: link.Host{N: 1}, Dir: "sideways"}}}, "use up or down"},
	} {
		c.cfg.Duration = time.Second
		if _, err := Run(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.cfg, err, c.want)
		}
	}
	for s, want := range map[string]string{
		"cbr rate=1mbit size=100 src=s1 dst=s2":         "dst=s2: the receiver of a dir=down flow is a client",
		"cbr rate=1mbit size=100 src=c1 dir=down":       "src=c1: the sender of a dir=down flow is a server",
		"cbr rate=1mbit size=100 src=c17":               "numbered 1 to 16",
		"cbr rate=1mbit size=100 src=x2":                "or a host, c1..c16 or s1..s16",
		"cbr rate=1mbit size=100 src=cx":                "not a host name",
		"cbr rate=1mbit size=100 src=c1 dst=10.0.1.2":   "",
		"cbr rate=1mbit size=100 src=s2 dst=c1 count=1": "",
	} {
		f, err := ParseFlow(s)
		if want == "" {
			if err != nil {
				t.Errorf("ParseFlow(%q): %v", s, err)
			} else if g, err := ParseFlow(f.String()); err != nil || g != f {
				t.Errorf("ParseFlow(%q).String() = %q does not parse back: %v", s, f, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseFlow(%q) = %v; want %q", s, err, want)
		}
	}
	if f := mustFlow(t, "cbr rate=1mbit size=100 src=s2 dst=c1"); f.base().Dir != "down" {
		t.Errorf("a flow from a server is %q, want down", f.base().Dir)
	}
}

// BenchmarkSimHosts measures the simulator on a dumbbell of four clients,
// each with an access link of its own, sending 1 Gbit/s in all through a
// shared bottleneck to one server.
func BenchmarkSimHosts(b *testing.B) {
	cfg := Config{
		Duration: time.Duration(b.N) * 12 * time.Microsecond,
		Up:       link.Config{Chain: specsB(b, "tbf rate 2gbit burst 1m limit 10m; fq_codel")},
		Clients:  4,
	}
	for k := 1; k <= 4; k++ {
		h := link.Host{N: k}
		cfg.Access = append(cfg.Access, Access{Host: h, Dir: "up", Chain: specsB(b, "netem delay "+h.String()[1:]+"0ms limit 100000")})
		cfg.Flows = append(cfg.Flows, CBR{Rate: 125e6 / 4, Size: 1500, SrcHost: h})
	}
	b.ReportAllocs()
	b.ResetTimer()
	res, err := Run(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if res.Up.Sent < uint64(b.N) || res.Up.Dropped != 0 {
		b.Fatalf("sent %d of %d, dropped %d", res.Up.Sent, b.N, res.Up.Dropped)
	}
	b.ReportMetric(float64(res.Up.Sent)/b.Elapsed().Seconds(), "pkts/s")
}

func specsB(b *testing.B, s string) []qdisc.Spec {
	c, err := tcspec.ParseChain(s, tcspec.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return c
}
