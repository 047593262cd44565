package plot

import (
	"math"
	"strings"
	"testing"

	"wanlab/internal/resultstest"
	"wanlab/results"
)

// Where the flows went to several servers, a flow's legend gives its
// path's base RTT too: the least round trip of the probe between its
// hosts over the whole run (idle in the lead, not queued behind the load). A flow whose hosts no probe ran between gives its own RTT alone.
func TestRTTNoteBaseRTT(t *testing.T) {
	d := resultstest.Run("tcp_bidirectional", "two servers", 7, resultstest.DefaultPath)
	setRTT(d, "TCP upload", 60)
	setRTT(d, "TCP download", 90)
	for i := range d.Flows {
		f := &d.Flows[i]
		f.Client, f.Server = "c1", "s1"
		if f.Label == "TCP download" {
			f.Server = "s2"
		}
	}
	d.Summarize()
	// The least of the whole run, lead and tail included: the path idle.
	ping := d.FindSeries(results.ICMPPing)
	base := math.Inf(1)
	for _, x := range ping.Samples {
		if x.V < base {
			base = x.V
		}
	}
	if base >= ping.Summary.Min {
		t.Fatalf("the synthetic run's ping is no lower outside the load (%v, window's least %v): the test needs it to be", base, ping.Summary.Min)
	}
	if !(base > 0) {
		t.Fatalf("the ping's minimum is %v", base)
	}
	var up, down *results.Series = d.FindSeries("TCP upload"), d.FindSeries("TCP download")
	if got, want := rttNote(d, up), " (RTT 60 ms, base "+formatMs(base)+" ms)"; got != want {
		t.Errorf("upload: %q, want %q", got, want)
	}
	if got := rttNote(d, down); got != " (RTT 90 ms)" {
		t.Errorf("download: %q", got)
	}
	// One server: the RTT alone, as before.
	for i := range d.Flows {
		d.Flows[i].Server = "s1"
	}
	if got := rttNote(d, up); strings.Contains(got, "base") {
		t.Errorf("one server: %q", got)
	}
}

// A legend's times keep a decimal from 10 ms to 20 ms: a 10.3 ms path is
// not an 11 ms one; whole ms above, two significant digits below.
func TestFormatMs(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want string
	}{{0.314, "0.31"}, {4.24, "4.2"}, {10.3, "10.3"}, {10.96, "11.0"}, {19.94, "19.9"}, {20.4, "20"}, {119.2, "119"}} {
		if got := formatMs(c.ms); got != c.want {
			t.Errorf("formatMs(%v) = %q, want %q", c.ms, got, c.want)
		}
	}
}

// A run's subtitle says which hosts had access links with qdiscs, runs
// of three or more shortened; a host whose link is direct, or none, is
// not named, and a run without any says nothing of them.
func TestSubtitleAccessLinks(t *testing.T) {
	d := resultstest.Run("rtt_fair4be", "", 1, resultstest.DefaultPath)
	if strings.Contains(runSubtitle(d), "access") {
		t.Errorf("no hosts: %q", runSubtitle(d))
	}
	d.Run.Hosts = []results.RunHost{{Name: "client", AccessUp: "direct"}, {Name: "server", AccessUp: "netem delay 5ms"},
		{Name: "s2", AccessDown: "netem delay 10ms"}, {Name: "s3", AccessUp: "netem delay 1ms"}, {Name: "s5", AccessUp: "netem delay 1ms"}}
	if got := runSubtitle(d); !strings.Contains(got, "  ·  + access links of s1..s3, s5  ·  ") {
		t.Errorf("subtitle %q", got)
	}
	d.Run.Hosts = d.Run.Hosts[:3]
	if got := accessHosts(d.Run.Hosts); got != "s1, s2" {
		t.Errorf("two hosts: %q", got)
	}
	d.Run.Hosts[0].AccessUp = "netem delay 2ms"
	if got := accessHosts(d.Run.Hosts); got != "c1, s1, s2" {
		t.Errorf("a client too: %q", got)
	}
}
