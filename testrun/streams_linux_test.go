package testrun

import (
	"math"
	"testing"
	"time"

	"wanlab/results"
)

// TestRunStreamOptions runs Flent's per-stream parameters through real
// namespaces and kernel TCP: tcp_2up's streams with a congestion control,
// a mark and a start each (the kernel's TCP_CONGESTION read back from each
// socket), and rrul_var's named by --labels with their own congestion
// controls. run.options records them under Flent's names.
func TestRunStreamOptions(t *testing.T) {
	flow := func(t *testing.T, d *results.Document, label string) *results.Flow {
		t.Helper()
		for i := range d.Flows {
			if d.Flows[i].Label == label {
				return &d.Flows[i]
			}
		}
		t.Fatalf("no flow %q", label)
		return nil
	}
	t.Run("tcp_2up", func(t *testing.T) {
		o := short("tcp_2up", 2*time.Second)
		o.Both = catalogPath
		setOptions(t, &o, "cc_algos", "reno,cubic", "markings", "CS1;EF", "stream_delays", "0,1")
		d := runDoc(t, o)
		for _, c := range []struct {
			label, cc string
			tos       int
			start     float64 // seconds into the run
		}{{"TCP upload::1", "reno", 8 << 2, 0.4}, {"TCP upload::2", "cubic", 46 << 2, 1.4}} {
			f := flow(t, d, c.label)
			if f.CongestionControl != c.cc || f.TOS != c.tos || f.Span == nil || math.Abs(f.Span[0]-c.start) > 0.05 {
				t.Errorf("%s: congestion control %q, TOS %#x, span %v; want %s, %#x, from %.1f s", c.label, f.CongestionControl, f.TOS, f.Span, c.cc, c.tos, c.start)
			}
			if s := series(t, d, c.label); s.Summary.N == 0 || s.Summary.Mean <= 0 {
				t.Errorf("%s carried nothing: %+v", c.label, s.Summary)
			}
		}
		for k, want := range map[string]string{"cc_algos": "reno,cubic", "markings": "CS1,EF", "stream_delays": "0,1"} {
			if d.Run.Options[k] != want {
				t.Errorf("run.options[%s] = %q, want %q", k, d.Run.Options[k], want)
			}
		}
	})
	t.Run("rrul_var", func(t *testing.T) {
		o := short("rrul_var", 2*time.Second)
		o.Both, o.Streams = catalogPath, 2
		setOptions(t, &o, "cc_algos", "reno,cubic", "labels", "a,b")
		d := runDoc(t, o)
		for label, cc := range map[string]string{"TCP upload::a": "reno", "TCP download::a": "reno", "TCP upload::b": "cubic", "TCP download::b": "cubic"} {
			if f := flow(t, d, label); f.CongestionControl != cc {
				t.Errorf("%s: congestion control %q, want %s", label, f.CongestionControl, cc)
			}
			if s := series(t, d, label); s.Summary.N == 0 || s.Summary.Mean <= 0 {
				t.Errorf("%s carried nothing: %+v", label, s.Summary)
			}
		}
		series(t, d, "Ping (ms)::UDP b")
		if d.Run.Options["labels"] != "a,b" || d.Run.Options["cc_algos"] != "reno,cubic" {
			t.Errorf("run.options %v", d.Run.Options)
		}
	})
}
