package catalog

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The rtt_fair tests as Flent 2.1.1's rtt_fair*.conf define them: per
// server a TCP upload and download (as the test has them) in the server's
// marking, and an ICMP ping, every series named after its host.
func TestRTTFair(t *testing.T) {
	for _, c := range []struct {
		name    string
		o       Options
		servers int
		labels  []string
		marks   []uint8
		pings   []string
		up      bool
		down    bool
	}{
		{"rtt_fair", Options{}, 4, []string{"BE1", "BE2", "BK1", "BK2"}, []uint8{0, 0, 0x20, 0x20}, []string{"ICMP1", "ICMP2", "ICMP3", "ICMP4"}, true, true},
		{"rtt_fair4be", Options{}, 4, []string{"BE1", "BE2", "BE3", "BE4"}, []uint8{0, 0, 0, 0}, []string{"ICMP1", "ICMP2", "ICMP3", "ICMP4"}, true, true},
		{"rtt_fair6be", Options{}, 6, []string{"BE1", "BE2", "BE3", "BE4", "BE5", "BE6"}, []uint8{0, 0, 0, 0, 0, 0},
			[]string{"ICMP1", "ICMP2", "ICMP3", "ICMP4", "ICMP5", "ICMP6"}, true, true},
		{"rtt_fair_up", Options{}, 4, []string{"BE1", "BE2", "BE3", "BE4"}, []uint8{0, 0, 0, 0}, []string{"ICMP1", "ICMP2", "ICMP3", "ICMP4"}, true, false},
		// The variable tests: Flent's add_stream labels BE and ICMP.
		{"rtt_fair_var", Options{Servers: 2}, 2, []string{"BE", "BE"}, []uint8{0, 0}, []string{"ICMP", "ICMP"}, true, true},
		{"rtt_fair_var", Options{}, DefaultServers, []string{"BE", "BE", "BE", "BE"}, []uint8{0, 0, 0, 0}, []string{"ICMP", "ICMP", "ICMP", "ICMP"}, true, true},
		{"rtt_fair_var_up", Options{Servers: 3}, 3, []string{"BE", "BE", "BE"}, []uint8{0, 0, 0}, []string{"ICMP", "ICMP", "ICMP"}, true, false},
		{"rtt_fair_var_down", Options{Servers: 1}, 1, []string{"BE"}, []uint8{0}, []string{"ICMP"}, false, true},
		{"rtt_fair_var_mixed", Options{Servers: 2}, 2, []string{"BE", "BE"}, []uint8{0, 0}, []string{"ICMP", "ICMP"}, true, true},
	} {
		tt, err := Lookup(c.name, c.o)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for i, l := range c.labels {
			if c.up {
				want = append(want, fmt.Sprintf("TCP upload %s s%d", l, i+1))
			}
			if c.down {
				want = append(want, fmt.Sprintf("TCP download %s s%d", l, i+1))
			}
		}
		for i, p := range c.pings {
			want = append(want, fmt.Sprintf("Ping (ms) %s s%d", p, i+1))
		}
		if got := seriesOf(tt); !slices.Equal(got, want) {
			t.Errorf("%s %+v:\n got %q\nwant %q", c.name, c.o, got, want)
		}
		if tt.Servers != c.servers || tt.Clients != 0 || tt.Plot != "all_scaled" || !tt.Flent || !strings.HasPrefix(tt.Description, "RTT Fair") {
			t.Errorf("%s: %d servers, %d clients, plot %s, flent %v, %q", c.name, tt.Servers, tt.Clients, tt.Plot, tt.Flent, tt.Description)
		}
		for _, f := range tt.Flows {
			cl, sv := f.Hosts()
			i := sv.N - 1
			if cl.String() != "c1" || !strings.HasSuffix(f.Series, " "+sv.String()) || f.Mark.TOS() != c.marks[i] || f.Start != LoadStart || f.Stop != LoadStop {
				t.Errorf("%s: %s runs c1 %v > %v, tos %#x, %v to %v", c.name, f.Series, cl, sv, f.Mark.TOS(), f.Start, f.Stop)
			}
		}
		for _, p := range tt.Probes {
			cl, sv := p.Hosts()
			if p.Kind != ICMP || p.Mark != BE || cl.String() != "c1" || !strings.HasSuffix(p.Series, " "+sv.String()) {
				t.Errorf("%s: probe %+v to %v", c.name, p, sv)
			}
		}
		if VarServers(c.name) != strings.HasPrefix(c.name, "rtt_fair_var") {
			t.Errorf("%s: VarServers %v", c.name, VarServers(c.name))
		}
	}
	for _, n := range []int{-1, 17} {
		if _, err := Lookup("rtt_fair_var", Options{Servers: n}); err == nil || !strings.Contains(err.Error(), "--servers") {
			t.Errorf("rtt_fair_var with %d servers: %v", n, err)
		}
	}
	// The fixed tests take no count: --servers sizes the testbed only.
	if tt, err := Lookup("rtt_fair", Options{Servers: 8}); err != nil || tt.Servers != 4 {
		t.Errorf("rtt_fair with 8 servers: %v, %d", err, tt.Servers)
	}
}

// The tests of one host pair run between c1 and s1.
func TestOneHostPair(t *testing.T) {
	tt, _ := Lookup("rrul", Options{})
	for _, f := range tt.Flows {
		if c, s := f.Hosts(); c.String() != "c1" || s.String() != "s1" {
			t.Errorf("%s: %v > %v", f.Series, c, s)
		}
	}
	if tt.Servers != 0 || tt.Clients != 0 {
		t.Errorf("rrul needs %d clients and %d servers", tt.Clients, tt.Servers)
	}
}
