package results

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// hostsDoc is a run of one client and three servers: s1 has two upload
// flows at 3 and 1 Mbit/s, s2 one at 2 and s3 one at 1; s1 and s2 a
// download at 2 Mbit/s each; and a ping to each server, which is no
// load.
func hostsDoc() *Document {
	all := func(float64) bool { return true }
	load := [2]float64{0, 10}
	d := &Document{
		Run: Run{Test: "rtt_fair_var", Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), DurationS: 10, StepS: 0.5, Framing: "ip"},
		Series: []Series{
			rateSeries("TCP upload BE s1", load, 3, all),
			rateSeries("TCP upload BE2 s1", load, 1, all),
			rateSeries("TCP upload BE s2", load, 2, all),
			rateSeries("TCP upload BE s3", load, 1, all),
			rateSeries("TCP download BE s1", load, 2, all),
			rateSeries("TCP download BE s2", load, 2, all),
			{Name: "Ping (ms) ICMP s1", Unit: "ms", Window: load, Samples: Samples{{1, 40}, {2, 41}}},
		},
		Flows: []Flow{
			{ID: 1, Label: "TCP upload BE s1", Direction: "up", Protocol: "tcp", Client: "c1", Server: "s1"},
			{ID: 2, Label: "TCP upload BE2 s1", Direction: "up", Protocol: "tcp", Client: "c1", Server: "s1"},
			{ID: 3, Label: "TCP upload BE s2", Direction: "up", Protocol: "tcp", Client: "c1", Server: "s2"},
			{ID: 4, Label: "TCP upload BE s3", Direction: "up", Protocol: "tcp", Client: "c1", Server: "s3"},
			{ID: 5, Label: "TCP download BE s1", Direction: "down", Protocol: "tcp", Client: "c1", Server: "s1"},
			{ID: 6, Label: "TCP download BE s2", Direction: "down", Protocol: "tcp", Client: "c1", Server: "s2"},
			{ID: 7, Label: "Ping (ms) ICMP s1", Direction: "both", Protocol: "icmp", Client: "c1", Server: "s1"},
		},
	}
	d.Summarize()
	return d
}

// Each server's sum of its flows, and Jain's index over the servers: up,
// 4, 2 and 1 Mbit/s give 49/(3·21); down, 2 and 2 give 1.
func TestFairnessOverHosts(t *testing.T) {
	d := hostsDoc()
	side, hosts := d.HostsSide()
	if side != "server" || !slices.Equal(hosts, []string{"s1", "s2", "s3"}) {
		t.Fatalf("HostsSide = %s %v", side, hosts)
	}
	hf := d.FairnessOverHosts()
	if len(hf) != 2 || hf[0].Direction != "up" || hf[1].Direction != "down" || hf[0].Side != "server" {
		t.Fatalf("FairnessOverHosts = %+v", hf)
	}
	up := hf[0]
	if math.Abs(up.Jain-49.0/63) > 1e-12 || len(up.Hosts) != 3 {
		t.Errorf("up: Jain %v over %d hosts; want %v over 3", up.Jain, len(up.Hosts), 49.0/63)
	}
	want := []HostShare{
		{Host: "s1", Flows: []int{1, 2}, Mean: 4, Unit: "Mbits/s", Share: 4.0 / 7},
		{Host: "s2", Flows: []int{3}, Mean: 2, Unit: "Mbits/s", Share: 2.0 / 7},
		{Host: "s3", Flows: []int{4}, Mean: 1, Unit: "Mbits/s", Share: 1.0 / 7},
	}
	for i, h := range up.Hosts {
		w := want[i]
		if h.Host != w.Host || !slices.Equal(h.Flows, w.Flows) || math.Abs(h.Mean-w.Mean) > 1e-9 || h.Unit != w.Unit || math.Abs(h.Share-w.Share) > 1e-9 {
			t.Errorf("up host %d: %+v, want %+v", i, h, w)
		}
	}
	if hf[1].Jain != 1 || len(hf[1].Hosts) != 2 {
		t.Errorf("down: %+v", hf[1])
	}
	// The flows' own index differs: 3, 1, 2 and 1 give 49/(4·15).
	if v, _ := d.RunStat("jain_up"); math.Abs(v-49.0/60) > 1e-12 {
		t.Errorf("jain_up = %v", v)
	}
	if v, ok := d.RunStat("jain_hosts_up"); !ok || math.Abs(v-49.0/63) > 1e-12 {
		t.Errorf("jain_hosts_up = %v, %v", v, ok)
	}
	if f, _ := d.RunStatFairness("jain_hosts_down"); f == nil || f.Jain != 1 || len(f.Flows) != 2 {
		t.Errorf("jain_hosts_down: %+v", f)
	}
	if RunStatDirection("jain_hosts_down") != "down" || !RunStatOverHosts("jain_hosts_up") || RunStatOverHosts("jain_up") {
		t.Error("RunStatDirection or RunStatOverHosts")
	}
	// Summarize records it, and it goes through the file.
	var b bytes.Buffer
	if err := d.Encode(&b); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"host_fairness":[{"direction":"up","side":"server","jain":0.77`, `"client":"c1","server":"s2"`} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("the document lacks %s", w)
		}
	}
	got, err := Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.HostFairness) != 2 || got.HostFairness[0].Hosts[0].Host != "s1" || got.Flows[3].Server != "s3" {
		t.Errorf("decoded %+v, flows %+v", got.HostFairness, got.Flows)
	}
}

// Flows of one client and one server, named or not, have no hosts'
// fairness; flows of several clients to one server are counted by client.
func TestFairnessOverHostsSides(t *testing.T) {
	d := fairnessDoc()
	if side, _ := d.HostsSide(); side != "" || d.FairnessOverHosts() != nil || len(d.HostFairness) != 0 {
		t.Errorf("one host pair: side %q, %+v", side, d.FairnessOverHosts())
	}
	if v, ok := d.RunStat("jain_hosts_up"); !ok || !math.IsNaN(v) {
		t.Errorf("jain_hosts_up of one host pair = %v, %v; want NaN", v, ok)
	}
	d = hostsDoc()
	for i := range d.Flows {
		d.Flows[i].Client, d.Flows[i].Server = strings.Replace(d.Flows[i].Server, "s", "c", 1), "s1"
	}
	d.Summarize()
	if side, hosts := d.HostsSide(); side != "client" || len(hosts) != 3 || len(d.HostFairness) != 2 || d.HostFairness[0].Hosts[2].Host != "c3" {
		t.Errorf("three clients: side %q %v, %+v", side, hosts, d.HostFairness)
	}
}

// wanlab show gives each flow's hosts and each host's share where a side
// has several.
func TestWriteSummaryHosts(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummary(&b, hostsDoc(), false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"\n  id  label               dir   hosts    prot  tos        share  congestion control\n",
		"\n   2  TCP upload BE2 s1   up    c1>s1    tcp   tos 0x00   14.3%  -\n",
		"\n   7  Ping (ms) ICMP s1   both  c1>s1    icmp  tos 0x00       -  -\n",
		"\nHosts (each server's sum of its flows' mean goodput):\n",
		"\n up    s1         4.000000  Mbits/s    57.1%  1, 2\n",
		"\n down  s2         2.000000  Mbits/s    50.0%  6\n",
		"\n fairness up:  Jain's index 0.7778 over the 3 servers' upload goodput\n",
		"\n fairness down: Jain's index 1.0000 over the 2 servers' download goodput\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := WriteSummary(&b, fairnessDoc(), false); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "hosts") || strings.Contains(out, "Hosts") {
		t.Errorf("a run of one host pair has hosts:\n%s", out)
	}
}

// Flent's HOSTS are the servers the flows ran to, which the rtt_fair
// tests name their series after; "server" for a document that names none.
func TestFlentHosts(t *testing.T) {
	for _, c := range []struct {
		d    *Document
		want []any
	}{{hostsDoc(), []any{"s1", "s2", "s3"}}, {fairnessDoc(), []any{"server"}}} {
		c.d.Run.Test = "rtt_fair_var"
		var b bytes.Buffer
		if err := WriteFlent(&b, c.d); err != nil {
			t.Fatal(err)
		}
		var f struct{ Metadata map[string]any }
		if err := json.Unmarshal(b.Bytes(), &f); err != nil {
			t.Fatal(err)
		}
		if got := f.Metadata["HOSTS"].([]any); !slices.Equal(got, c.want) || f.Metadata["HOST"] != c.want[0] {
			t.Errorf("HOSTS %v, HOST %v; want %v", got, f.Metadata["HOST"], c.want)
		}
	}
}
