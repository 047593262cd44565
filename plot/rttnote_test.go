package plot

import (
	"strings"
	"testing"

	"wanlab/internal/resultstest"
	"wanlab/results"
)

// Where the flows went to several servers, a flow's legend gives its
// path's base RTT too: the least round trip of the probe between its
// hosts. A flow whose hosts no probe ran between gives its own RTT alone.
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
	ping := d.FindSeries(results.ICMPPing)
	base := ping.Summary.Min
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
