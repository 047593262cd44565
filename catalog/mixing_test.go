package catalog

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The expectations below are transcribed from Flent 2.1.1's
// flent/tests/*.conf (and, for rrul_N_up_M_down, Flent's pull request
// #61). testrun's TestCatalogMatchesFlent checks every test against the
// definitions the installed Flent loads.

func seriesOf(tt Test) []string {
	var got []string
	for _, f := range tt.Flows {
		got = append(got, f.Series)
	}
	for _, p := range tt.Probes {
		got = append(got, p.Series)
	}
	return got
}

// span is a flow's start and stop for DELAY 5 s and LENGTH 60 s, Flent's
// defaults, in seconds.
func span(f Flow) [2]float64 {
	d, l := 5*time.Second, 60*time.Second
	return [2]float64{f.Start.At(d, l).Seconds(), f.Stop.At(d, l).Seconds()}
}

// The square-wave and delayed tests: each flow's 'delay' and 'delay' plus
// 'length', its congestion control, and the run's TOTAL_LENGTH.
func TestSchedules(t *testing.T) {
	type flow struct {
		series string
		cc     string
		span   [2]float64
	}
	for _, c := range []struct {
		name  string
		total float64 // for LENGTH 60, DELAY 5
		flows []flow
	}{
		// TOTAL_LENGTH=max(LENGTH,DELAY*6)
		{"tcp_2up_square", 60, []flow{{"TCP cubic", "cubic", [2]float64{0, 60}}, {"TCP cubic 2", "cubic", [2]float64{5, 10}},
			{"TCP reno", "reno", [2]float64{15, 20}}, {"TCP westwood", "westwood", [2]float64{25, 30}}}},
		{"tcp_2up_square_westwood", 60, []flow{{"TCP westwood baseline", "westwood", [2]float64{0, 60}}, {"TCP cubic 2", "cubic", [2]float64{5, 10}},
			{"TCP reno", "reno", [2]float64{15, 20}}, {"TCP westwood", "westwood", [2]float64{25, 30}}}},
		// TOTAL_LENGTH=LENGTH+DELAY
		{"tcp_2up_delay", 65, []flow{{"TCP stream 1", "", [2]float64{0, 65}}, {"TCP stream 2", "", [2]float64{5, 65}}}},
		// TOTAL_LENGTH=(LENGTH + DELAY*6)
		{"tcp_4up_squarewave", 90, []flow{{"TCP bbr 1", "bbr", [2]float64{0, 60}}, {"TCP cubic 2", "cubic", [2]float64{5, 65}},
			{"TCP cubic 3", "cubic", [2]float64{25, 85}}, {"TCP bbr 4", "bbr", [2]float64{15, 75}}}},
	} {
		tt, err := Lookup(c.name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !tt.Scheduled() || tt.Length(5*time.Second, 60*time.Second) != time.Duration(c.total)*time.Second || len(tt.Probes) != 0 || tt.Plot != "totals" {
			t.Errorf("%s: scheduled %v, length %v, %d probes, plot %s; want a schedule of %vs, no probe, totals",
				c.name, tt.Scheduled(), tt.Length(5*time.Second, 60*time.Second), len(tt.Probes), tt.Plot, c.total)
		}
		var got []flow
		for _, f := range tt.Flows {
			if f.Dir != Up || f.Transport != TCP {
				t.Errorf("%s: %s is not a TCP upload", c.name, f.Series)
			}
			got = append(got, flow{f.Series, f.CC, span(f)})
		}
		if !slices.Equal(got, c.flows) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, c.flows)
		}
	}
	// With a long DELAY the square wave outlasts LENGTH.
	sq, _ := Lookup("tcp_2up_square", Options{})
	if l := sq.Length(20*time.Second, 60*time.Second); l != 120*time.Second {
		t.Errorf("tcp_2up_square with DELAY 20 s: %v, want DELAY*6", l)
	}
	if s := (Time{Delays: 1, Lengths: 1}).String() + " " + (Time{Delays: 3}).String() + " " + (Time{}).String(); s != "LENGTH+DELAY DELAY*3 0" {
		t.Errorf("Time.String: %s", s)
	}
}

// Every flow of a test without a schedule runs over the load.
func TestLoadFlowsRunOverTheLoad(t *testing.T) {
	for _, n := range Names() {
		tt, err := Lookup(n, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range tt.Flows {
			if !tt.Scheduled() && (f.Start != LoadStart || f.Stop != LoadStop) {
				t.Errorf("%s: %s runs from %v to %v", n, f.Series, f.Start, f.Stop)
			}
		}
		if tt.Scheduled() != slices.Contains(ScheduledTests, n) {
			t.Errorf("%s: scheduled %v", n, tt.Scheduled())
		}
	}
}

// cubic_ALG: two CUBIC and two ALG flows each way, one of each in CS0 and
// in CS1; UDP pings in CS0, CS1 and CS6 and the ICMP ping. cubic_westwood
// and cubic_ledbat leave the CUBIC flows' congestion control unset.
func TestSmackdowns(t *testing.T) {
	for _, c := range []struct{ name, word, cc, cubic string }{
		{"cubic_bbr", "BBR", "bbr", "cubic"}, {"cubic_reno", "Reno", "reno", "cubic"}, {"cubic_dctcp", "dctcp", "dctcp", "cubic"},
		{"cubic_cdg", "CDG", "cdg", "cubic"}, {"cubic_westwood", "Westwood", "westwood", ""}, {"cubic_ledbat", "Ledbat", "ledbat", ""},
	} {
		tt, err := Lookup(c.name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, dir := range []string{"upload", "download"} {
			want = append(want, "TCP "+dir+" Cubic BE", "TCP "+dir+" "+c.word+" BE", "TCP "+dir+" Cubic CS1", "TCP "+dir+" "+c.word+" CS1")
		}
		want = append(want, "Ping (ms) UDP BE", "Ping (ms) UDP CS1", "Ping (ms) UDP CS6", "Ping (ms) ICMP")
		if got := seriesOf(tt); !slices.Equal(got, want) || tt.Plot != "all_scaled" {
			t.Errorf("%s: %q (plot %s)", c.name, got, tt.Plot)
		}
		for i, f := range tt.Flows {
			wantCC, wantTOS, wantDir := c.cubic, uint8(0), Up
			if i%2 == 1 {
				wantCC = c.cc
			}
			if i%4 >= 2 {
				wantTOS = 0x20 // CS1
			}
			if i >= 4 {
				wantDir = Down
			}
			if f.CC != wantCC || f.Mark.TOS() != wantTOS || f.Dir != wantDir {
				t.Errorf("%s: %s: cc %q tos %#x dir %v", c.name, f.Series, f.CC, f.Mark.TOS(), f.Dir)
			}
		}
		if tt.Probes[2].Mark.TOS() != 0xc0 || tt.Probes[1].Mark.TOS() != 0x20 || tt.Probes[3].Kind != ICMP {
			t.Errorf("%s: probes %+v", c.name, tt.Probes)
		}
		if ccs := tt.CongestionControls(); !slices.Contains(ccs, c.cc) {
			t.Errorf("%s: congestion controls %v", c.name, ccs)
		}
	}
}

func TestRenoCubicWestwood(t *testing.T) {
	tt, err := Lookup("reno_cubic_westwood_lp", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"TCP upload RENO", "TCP upload WESTWOOD", "TCP upload CUBIC", "TCP upload LP",
		"TCP download RENO", "TCP download WESTWOOD", "TCP download CUBIC", "TCP download LP",
		"Ping (ms) UDP EF", "Ping (ms) UDP BK", "Ping (ms) UDP BE", "Ping (ms) ICMP"}
	if got := seriesOf(tt); !slices.Equal(got, want) {
		t.Errorf("series %q", got)
	}
	if ccs := tt.CongestionControls(); !slices.Equal(ccs, []string{"reno", "westwood", "cubic", "lp"}) {
		t.Errorf("congestion controls %v", ccs)
	}
	if tt.Probes[0].Mark.TOS() != 0xb8 || tt.Probes[1].Mark.TOS() != 0x20 || tt.Flows[5].Dir != Down || tt.Flows[5].CC != "westwood" {
		t.Errorf("%+v", tt)
	}
}

func TestFixedStreamTests(t *testing.T) {
	for _, c := range []struct {
		name, first, last string
		n                 int
	}{
		{"tcp_1up", "TCP upload", "TCP upload", 1}, {"tcp_1down", "TCP download", "TCP download", 1},
		{"tcp_2up", "TCP upload::1", "TCP upload::2", 2}, {"tcp_12up", "TCP upload::1", "TCP upload::12", 12},
		{"tcp_6down", "TCP download::1", "TCP download::6", 6}, {"tcp_8down", "TCP download::1", "TCP download::8", 8},
	} {
		tt, err := Lookup(c.name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(tt.Flows) != c.n || tt.Flows[0].Series != c.first || tt.Flows[c.n-1].Series != c.last || len(tt.Probes) != 1 || tt.Probes[0].Series != "Ping (ms) ICMP" || tt.Plot != "totals" {
			t.Errorf("%s: %+v", c.name, tt)
		}
	}
	tt, _ := Lookup("tcp_4up", Options{})
	if tt.Description != "TCP upload - 4 streams w/ping" {
		t.Errorf("tcp_4up: %q", tt.Description)
	}
}

// rrul_be_nflows's 'duplicates' and rrul_var's labelled streams.
func TestConfigurableRRUL(t *testing.T) {
	tt, err := Lookup("rrul_be_nflows", Options{UploadStreams: 2, DownloadStreams: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"TCP upload BE::1", "TCP upload BE::2", "TCP download BE::1", "TCP download BE::2", "TCP download BE::3", "Ping (ms) UDP BE", "Ping (ms) ICMP"}
	if got := seriesOf(tt); !slices.Equal(got, want) {
		t.Errorf("rrul_be_nflows 2/3: %q", got)
	}
	if _, err := Lookup("rrul_be_nflows", Options{DownloadStreams: MaxStreams + 1}); err == nil || !strings.Contains(err.Error(), "--download-streams") {
		t.Errorf("too many downloads: %v", err)
	}
	tt, err = Lookup("rrul_var", Options{Streams: 2})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"TCP upload::0 (CS0)", "TCP download::0 (CS0)", "TCP upload::1 (CS0)", "TCP download::1 (CS0)",
		"Ping (ms)::ICMP", "Ping (ms)::UDP 0 (CS0)", "Ping (ms)::UDP 1 (CS0)"}
	if got := seriesOf(tt); !slices.Equal(got, want) || tt.Flows[1].Dir != Down {
		t.Errorf("rrul_var 2: %q", got)
	}
}

// rrul_N_up_M_down (Flent's pull request #61): N uploads and M downloads,
// all CS0, named as rrul_be's (BE, BE2, ...), M-1 UDP pings BE1... and the
// ICMP ping.
func TestRRULUpDown(t *testing.T) {
	count := 0
	for _, n := range Names() {
		var up, down int
		if _, err := fmt.Sscanf(n, "rrul_%d_up_%d_down", &up, &down); err != nil {
			continue
		}
		count++
		tt, err := Lookup(n, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var u, d, udp int
		for _, f := range tt.Flows {
			if f.Dir == Up {
				u++
			} else {
				d++
			}
			if f.Mark.TOS() != 0 || f.CC != "" {
				t.Errorf("%s: %+v", n, f)
			}
		}
		for _, p := range tt.Probes {
			if p.Kind == UDP {
				udp++
			}
		}
		last := tt.Flows[up-1].Series
		if u != up || d != down || udp != down-1 || tt.Probes[len(tt.Probes)-1].Kind != ICMP || !strings.HasSuffix(last, fmt.Sprintf("BE%d", up)) ||
			tt.Description != fmt.Sprintf("%d up & %d down - exclusively Best Effort", up, down) {
			t.Errorf("%s: %d up, %d down, %d UDP pings, last upload %q, %q", n, u, d, udp, last, tt.Description)
		}
	}
	if count != 15 {
		t.Errorf("%d rrul_N_up_M_down tests, want the pull request's 15", count)
	}
}
