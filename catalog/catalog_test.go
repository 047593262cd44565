package catalog

import (
	"slices"
	"testing"
)

// TestSeriesNames pins the series names, which are the contract with
// Flent's plots (flent/tests/*.conf).
func TestSeriesNames(t *testing.T) {
	want := map[string][]string{
		"ping":              {"Ping (ms) ICMP", "Ping (ms) UDP"},
		"tcp_upload":        {"TCP upload", "Ping (ms) ICMP"},
		"tcp_download":      {"TCP download", "Ping (ms) ICMP"},
		"tcp_bidirectional": {"TCP download", "TCP upload", "Ping (ms) ICMP"},
		"tcp_nup":           {"TCP upload::1", "TCP upload::2", "TCP upload::3", "TCP upload::4", "Ping (ms) ICMP"},
		"rrul": {"TCP upload BE", "TCP upload BK", "TCP upload CS5", "TCP upload EF",
			"TCP download BE", "TCP download BK", "TCP download CS5", "TCP download EF",
			"Ping (ms) UDP EF", "Ping (ms) UDP BK", "Ping (ms) UDP BE", "Ping (ms) ICMP"},
		"rrul_be": {"TCP upload BE", "TCP upload BE2", "TCP upload BE3", "TCP upload BE4",
			"TCP download BE", "TCP download BE2", "TCP download BE3", "TCP download BE4",
			"Ping (ms) UDP BE1", "Ping (ms) UDP BE2", "Ping (ms) UDP BE3", "Ping (ms) ICMP"},
		"udp_flood":     {"UDP upload", "Ping (ms) ICMP"},
		"tfrc_upload":   {"TFRC upload", "Ping (ms) ICMP"},
		"tfrc_download": {"TFRC download", "Ping (ms) ICMP"},
		"quic_upload":   {"QUIC upload", "Ping (ms) ICMP"},
		"quic_download": {"QUIC download", "Ping (ms) ICMP"},
		"l4s_upload":    {"L4S scalable UDP upload", "Ping (ms) ICMP"},
		"l4s_download":  {"L4S scalable UDP download", "Ping (ms) ICMP"},
		"l4s_cubic":     {"L4S scalable UDP upload", "TCP upload", "Ping (ms) ICMP"},
		"custom":        {"Ping (ms) ICMP", "Ping (ms) UDP"},
	}
	for name, series := range want {
		tt, err := Lookup(name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range tt.Flows {
			got = append(got, f.Series)
		}
		for _, p := range tt.Probes {
			got = append(got, p.Series)
		}
		if !slices.Equal(got, series) {
			t.Errorf("%s: series %q, want %q", name, got, series)
		}
	}
	mixed := mixingNames()
	for _, n := range Names() {
		if _, ok := want[n]; !ok && n != "tcp_ndown" && !slices.Contains(mixed, n) && !slices.Contains(RTTFairTests, n) {
			t.Errorf("test %s has no expected series here", n)
		}
	}
}

func TestRRULMarksAndDirections(t *testing.T) {
	tt, _ := Lookup("rrul", Options{})
	var up, down int
	for _, f := range tt.Flows {
		if f.Dir == Up {
			up++
		} else {
			down++
		}
	}
	if up != 4 || down != 4 {
		t.Errorf("rrul: %d up and %d down flows, want 4 and 4", up, down)
	}
	if tt.Flows[3].Mark.TOS() != 0xb8 || tt.Flows[1].Mark.TOS() != 0x20 || tt.Flows[2].Mark.TOS() != 0xa0 || tt.Flows[0].Mark.TOS() != 0 {
		t.Errorf("rrul marks: %+v", tt.Flows[:4])
	}
	if tt.Probes[0].Mark != EF || tt.Probes[0].Kind != UDP || tt.Probes[3].Kind != ICMP {
		t.Errorf("rrul probes: %+v", tt.Probes)
	}
}

func TestStreams(t *testing.T) {
	tt, err := Lookup("tcp_ndown", Options{Streams: 8})
	if err != nil {
		t.Fatal(err)
	}
	if len(tt.Flows) != 8 || tt.Flows[7].Series != "TCP download::8" || tt.Flows[0].Dir != Down {
		t.Errorf("tcp_ndown 8: %+v", tt)
	}
	for _, n := range []int{-1, MaxStreams + 1} {
		if _, err := Lookup("tcp_nup", Options{Streams: n}); err == nil {
			t.Errorf("Streams %d accepted", n)
		}
	}
	if _, err := Lookup("rrul_cs8", Options{}); err == nil {
		t.Error("an unknown test was accepted")
	}
}

// wanlab's own tests carry their transport and direction, and only Flent's
// tests can be written as Flent data files.
func TestOwnTests(t *testing.T) {
	for _, c := range []struct {
		name string
		tr   Transport
		dir  Direction
	}{
		{"tfrc_upload", TFRC, Up}, {"tfrc_download", TFRC, Down},
		{"quic_upload", QUIC, Up}, {"quic_download", QUIC, Down},
	} {
		tt, err := Lookup(c.name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(tt.Flows) != 1 || tt.Flows[0].Transport != c.tr || tt.Flows[0].Dir != c.dir || tt.Flent || tt.Custom {
			t.Errorf("%s: %+v", c.name, tt)
		}
	}
	tt, _ := Lookup("custom", Options{})
	if !tt.Custom || tt.Flent || len(tt.Flows) != 0 || tt.NoLoad {
		t.Errorf("custom: %+v", tt)
	}
	for _, n := range []string{"ping", "rrul", "tcp_nup", "udp_flood"} {
		if tt, _ := Lookup(n, Options{}); !tt.Flent {
			t.Errorf("%s is Flent's test", n)
		}
	}
	if TFRC.String() != "tfrc" || QUIC.String() != "quic" || UDPFlood.String() != "udp" || TCP.String() != "tcp" {
		t.Error("transport names")
	}
}
