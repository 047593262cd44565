package catalog

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Flent's per-stream parameters: stream i takes entry i of each list, a
// stream past a list's end the test's own; a late stream still stops with
// the load.
func TestPerStream(t *testing.T) {
	ps := PerStream{Markings: []string{"CS1", "ef"}, CCAlgos: []string{"reno"}, Delays: []time.Duration{0, 0, 2 * time.Second}}
	tt, err := Lookup("tcp_nup", Options{Streams: 4, PerStream: ps})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range tt.Flows {
		got = append(got, f.Series+" "+string(f.Mark)+" "+f.CC+" "+f.Start.String()+" "+f.Stop.String())
	}
	want := []string{"TCP upload::1 CS1 reno DELAY LENGTH+DELAY", "TCP upload::2 ef  DELAY LENGTH+DELAY",
		"TCP upload::3 CS0  DELAY+2s LENGTH+DELAY", "TCP upload::4 CS0  DELAY LENGTH+DELAY"}
	if !slices.Equal(got, want) {
		t.Errorf("tcp_nup:\n got %q\nwant %q", got, want)
	}
	if s := span(tt.Flows[2]); s != [2]float64{7, 65} {
		t.Errorf("a stream 2 s late runs %v", s)
	}
	if tt.Flows[1].Mark.TOS() != 0xb8 {
		t.Errorf("ef: tos %#x", tt.Flows[1].Mark.TOS())
	}
	// tcp_4up takes them as tcp_nup does.
	if tt, _ := Lookup("tcp_4up", Options{PerStream: ps}); tt.Flows[0].CC != "reno" || tt.Flows[2].Start.Offset != 2*time.Second {
		t.Errorf("tcp_4up: %+v", tt.Flows)
	}

	// rrul_var: labels name the streams; a marking names an unlabelled
	// one and marks its ping too.
	tt, err = Lookup("rrul_var", Options{Streams: 2, PerStream: PerStream{Labels: []string{"voice"}, Markings: []string{"EF", "CS1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := seriesOf(tt), []string{"TCP upload::voice", "TCP download::voice", "TCP upload::1 (CS1)", "TCP download::1 (CS1)",
		"Ping (ms)::ICMP", "Ping (ms)::UDP voice", "Ping (ms)::UDP 1 (CS1)"}; !slices.Equal(got, want) {
		t.Errorf("rrul_var:\n got %q\nwant %q", got, want)
	}
	if tt.Probes[2].Mark.TOS() != 0x20 || tt.Flows[1].Mark.TOS() != 0xb8 {
		t.Errorf("rrul_var marks: %+v %+v", tt.Probes[2], tt.Flows[1])
	}

	// rtt_fair sets its own marks and labels over the ones given; the
	// variable tests take them.
	given := PerStream{Markings: []string{"EF"}, Labels: []string{"X"}, PingLabels: []string{"P"}, CCAlgos: []string{"bbr"}}
	tt, _ = Lookup("rtt_fair", Options{PerStream: given})
	if f := tt.Flows[0]; f.Series != "TCP upload BE1 s1" || f.Mark != BE || f.CC != "bbr" || tt.Probes[0].Series != "Ping (ms) ICMP1 s1" {
		t.Errorf("rtt_fair: %+v, %+v", f, tt.Probes[0])
	}
	tt, _ = Lookup("rtt_fair_var", Options{Servers: 2, PerStream: given})
	if f := tt.Flows[0]; f.Series != "TCP upload X s1" || f.Mark != EF || tt.Flows[2].Series != "TCP upload BE s2" || tt.Probes[0].Series != "Ping (ms) P s1" {
		t.Errorf("rtt_fair_var: %+v, %q", f, seriesOf(tt))
	}

	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"tcp_nup", Options{PerStream: PerStream{Markings: []string{"CS9"}}}, `markings: "CS9" is no DSCP name`},
		{"tcp_nup", Options{PerStream: PerStream{Delays: []time.Duration{-time.Second}}}, "stream_delays: -1s is negative"},
		{"rrul_var", Options{Streams: 2, PerStream: PerStream{Labels: []string{"a", "a"}}}, `labels: "a" names two streams`},
	} {
		if _, err := Lookup(c.name, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want %q", c.name, c.o.PerStream, err, c.want)
		}
	}
}

// TestStreamParams checks which tests take which per-stream parameters,
// as their Flent files read them.
func TestStreamParams(t *testing.T) {
	for name, want := range map[string]string{
		"tcp_nup": "markings cc_algos stream_delays", "tcp_4down": "markings cc_algos stream_delays",
		"rrul_var":     "markings cc_algos stream_delays labels",
		"rtt_fair_var": "markings cc_algos stream_delays labels ping_labels",
		"rtt_fair4be":  "cc_algos stream_delays",
		"rrul":         "", "tcp_upload": "", "tcp_2up_square": "", "rrul_be_nflows": "",
	} {
		if got := strings.Join(StreamParams(name), " "); got != want {
			t.Errorf("StreamParams(%s) = %q, want %q", name, got, want)
		}
	}
}
