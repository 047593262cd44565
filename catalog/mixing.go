package catalog

import (
	"fmt"
	"strings"
)

// Flent's tests that mix flows between one client and one server: several
// TCP flows in one or both directions, of different congestion controls,
// marks or start times, as flent/tests/*.conf define them (Flent 2.1.1;
// the rrul_N_up_M_down family is from Flent's pull request #61, in no
// release). The tests of one client and several servers (rtt_fair and its
// kin) are rttfair.go's.

// fixedStreams are the stream counts of Flent's tcp_2up ... tcp_12up and
// tcp_2down ... tcp_12down, which are tcp_nup and tcp_ndown with
// upload_streams or download_streams set (tcp_1up and tcp_1down are tests
// of their own, with one series named without "::1").
var fixedStreams = []int{2, 4, 6, 8, 12}

// upDown are the upload and download counts of the rrul_N_up_M_down tests.
var upDown = [][2]int{{2, 4}, {2, 6}, {2, 8}, {2, 12}, {4, 4}, {4, 6}, {4, 8}, {4, 12}, {6, 6}, {6, 8}, {6, 12}, {8, 8}, {8, 12}, {10, 12}, {12, 12}}

// smackdowns are Flent's cubic_ALG tests: the contender's name in its
// series, its congestion control, the test's description, and whether the
// CUBIC flows set cubic themselves (cubic_westwood's and cubic_ledbat's
// leave the hosts' default).
var smackdowns = []struct {
	name, word, cc, desc string
	cubicSet             bool
}{
	{"cubic_bbr", "BBR", "bbr", "Cubic VS BBR smackdown", true},
	{"cubic_cdg", "CDG", "cdg", "Cubic VS CDG smackdown", true},
	{"cubic_dctcp", "dctcp", "dctcp", "Cubic VS DCTCP smackdown", true},
	{"cubic_ledbat", "Ledbat", "ledbat", "Cubic VS Ledbat smackdown", false},
	{"cubic_reno", "Reno", "reno", "Cubic VS Reno smackdown", true},
	{"cubic_westwood", "Westwood", "westwood", "Cubic VS Westwood", false},
}

// renoCubicWestwood are the fourth congestion controls of Flent's
// reno_cubic_westwood_ALG tests.
var renoCubicWestwood = []string{"cdg", "ledbat", "lp"}

// ScheduledTests are the tests whose flows start and stop on a schedule of
// their own (Test.Schedule).
var ScheduledTests = []string{"tcp_2up_delay", "tcp_2up_square", "tcp_2up_square_westwood", "tcp_4up_squarewave"}

// mixingNames are the names of the tests of this file, in the order of
// Names.
func mixingNames() []string {
	names := []string{"tcp_1up"}
	for _, n := range fixedStreams {
		names = append(names, fmt.Sprintf("tcp_%dup", n))
	}
	names = append(names, "tcp_1down")
	for _, n := range fixedStreams {
		names = append(names, fmt.Sprintf("tcp_%ddown", n))
	}
	names = append(names, ScheduledTests...)
	for _, s := range smackdowns {
		names = append(names, s.name)
	}
	names = append(names, "cubic_ledbat_1", "ledbat_cubic_1")
	for _, cc := range renoCubicWestwood {
		names = append(names, "reno_cubic_westwood_"+cc)
	}
	names = append(names, "rrul_be_nflows", "rrul_var")
	for _, ud := range upDown {
		names = append(names, fmt.Sprintf("rrul_%d_up_%d_down", ud[0], ud[1]))
	}
	return names
}

// mixing returns the test called name if it is one of this file's: n is
// --streams resolved, icmp the ICMP probe of Flent's tests.
func mixing(name string, o Options, n int, icmp Probe) (Test, bool, error) {
	switch name {
	case "tcp_1up":
		return Test{Name: name, Description: "Single TCP upload stream w/ping", Plot: "totals",
			Flows: []Flow{{Series: "TCP upload", Dir: Up}}, Probes: []Probe{icmp}}, true, nil
	case "tcp_1down":
		return Test{Name: name, Description: "Single TCP download stream w/ping", Plot: "totals",
			Flows: []Flow{{Series: "TCP download", Dir: Down}}, Probes: []Probe{icmp}}, true, nil
	case "tcp_2up_delay":
		// TOTAL_LENGTH=LENGTH+DELAY: the first stream runs for all of it,
		// the second for LENGTH after DELAY.
		return Test{Name: name, Description: "Two TCP upload streams; 2nd stream started delayed", Plot: "totals",
			Schedule: []Time{{Delays: 1, Lengths: 1}},
			Flows: []Flow{
				{Series: "TCP stream 1", Dir: Up, Stop: Time{Delays: 1, Lengths: 1}},
				{Series: "TCP stream 2", Dir: Up, Start: Time{Delays: 1}, Stop: Time{Delays: 1, Lengths: 1}},
			}}, true, nil
	case "tcp_2up_square", "tcp_2up_square_westwood":
		// TOTAL_LENGTH=max(LENGTH,DELAY*6): a baseline flow for LENGTH
		// from 0, and three flows of DELAY each, DELAY apart.
		base := Flow{Series: "TCP cubic", Dir: Up, CC: "cubic", Stop: Time{Lengths: 1}}
		if name == "tcp_2up_square_westwood" {
			base.Series, base.CC = "TCP westwood baseline", "westwood"
		}
		return Test{Name: name, Description: "Two TCP upload streams; 2nd stream started delayed", Plot: "totals",
			Schedule: []Time{{Lengths: 1}, {Delays: 6}},
			Flows: []Flow{base,
				{Series: "TCP cubic 2", Dir: Up, CC: "cubic", Start: Time{Delays: 1}, Stop: Time{Delays: 2}},
				{Series: "TCP reno", Dir: Up, CC: "reno", Start: Time{Delays: 3}, Stop: Time{Delays: 4}},
				{Series: "TCP westwood", Dir: Up, CC: "westwood", Start: Time{Delays: 5}, Stop: Time{Delays: 6}},
			}}, true, nil
	case "tcp_4up_squarewave":
		// TOTAL_LENGTH=LENGTH+DELAY*6: four flows of LENGTH each, from 0,
		// DELAY, DELAY*5 and DELAY*3.
		return Test{Name: name, Description: "Four TCP upload streams; 2nd streams started delayed, cubic vs BBR", Plot: "totals",
			Schedule: []Time{{Delays: 6, Lengths: 1}},
			Flows: []Flow{
				{Series: "TCP bbr 1", Dir: Up, CC: "bbr", Stop: Time{Lengths: 1}},
				{Series: "TCP cubic 2", Dir: Up, CC: "cubic", Start: Time{Delays: 1}, Stop: Time{Delays: 1, Lengths: 1}},
				{Series: "TCP cubic 3", Dir: Up, CC: "cubic", Start: Time{Delays: 5}, Stop: Time{Delays: 5, Lengths: 1}},
				{Series: "TCP bbr 4", Dir: Up, CC: "bbr", Start: Time{Delays: 3}, Stop: Time{Delays: 3, Lengths: 1}},
			}}, true, nil
	case "cubic_ledbat_1", "ledbat_cubic_1":
		flows := []Flow{{Series: "TCP cubic", Dir: Up, CC: "cubic"}, {Series: "TCP ledbat", Dir: Up, CC: "ledbat"}}
		if name == "ledbat_cubic_1" {
			flows[0], flows[1] = flows[1], flows[0]
		}
		return Test{Name: name, Description: "Cubic vs LEDBAT upload streams w/ping", Plot: "totals",
			Flows: flows, Probes: []Probe{icmp}}, true, nil
	case "rrul_be_nflows":
		up, err := streams("--upload-streams", o.UploadStreams)
		if err != nil {
			return Test{}, true, err
		}
		down, err := streams("--download-streams", o.DownloadStreams)
		if err != nil {
			return Test{}, true, err
		}
		t := Test{Name: name, Description: "Realtime Response Under Load - Best Effort, configurable no of flows", Plot: "all_scaled",
			Probes: []Probe{{Series: "Ping (ms) UDP BE", Kind: UDP, Mark: BE}, icmp}}
		// Flent's 'duplicates': the data set's name, "::" and its number.
		for i := 1; i <= up; i++ {
			t.Flows = append(t.Flows, Flow{Series: fmt.Sprintf("TCP upload BE::%d", i), Dir: Up, Mark: BE})
		}
		for i := 1; i <= down; i++ {
			t.Flows = append(t.Flows, Flow{Series: fmt.Sprintf("TCP download BE::%d", i), Dir: Down, Mark: BE})
		}
		return t, true, nil
	case "rrul_var":
		// Stream i (from 0) is labelled "i (MARKING)" unless labels
		// names it, its marking CS0 by default: a UDP ping and a TCP
		// flow each way.
		t := Test{Name: name, Description: "Realtime Response Under Load - variable configurable streams", Plot: "all_scaled",
			Probes: []Probe{{Series: "Ping (ms)::ICMP", Kind: ICMP, Mark: BE}}}
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			st := o.PerStream.stream(i, BE)
			label := item(o.PerStream.Labels, i, fmt.Sprintf("%d (%s)", i, st.mark))
			if seen[label] {
				return Test{}, true, fmt.Errorf("labels: %q names two streams: give each stream a label of its own", label)
			}
			seen[label] = true
			t.Flows = append(t.Flows, o.PerStream.flow(i, "TCP upload::"+label, Up, BE), o.PerStream.flow(i, "TCP download::"+label, Down, BE))
			t.Probes = append(t.Probes, Probe{Series: "Ping (ms)::UDP " + label, Kind: UDP, Mark: st.mark})
		}
		return t, true, nil
	}
	for _, s := range smackdowns {
		if name != s.name {
			continue
		}
		cubic := ""
		if s.cubicSet {
			cubic = "cubic"
		}
		t := Test{Name: name, Description: s.desc, Plot: "all_scaled",
			Probes: []Probe{{Series: "Ping (ms) UDP BE", Kind: UDP, Mark: BE}, {Series: "Ping (ms) UDP CS1", Kind: UDP, Mark: BK},
				{Series: "Ping (ms) UDP CS6", Kind: UDP, Mark: CS6}, icmp}}
		for _, d := range []struct {
			word string
			dir  Direction
		}{{"upload", Up}, {"download", Down}} {
			for _, m := range []struct {
				id   string
				mark Mark
			}{{"BE", BE}, {"CS1", BK}} {
				t.Flows = append(t.Flows,
					Flow{Series: fmt.Sprintf("TCP %s Cubic %s", d.word, m.id), Dir: d.dir, Mark: m.mark, CC: cubic},
					Flow{Series: fmt.Sprintf("TCP %s %s %s", d.word, s.word, m.id), Dir: d.dir, Mark: m.mark, CC: s.cc})
			}
		}
		return t, true, nil
	}
	if cc, ok := strings.CutPrefix(name, "reno_cubic_westwood_"); ok {
		for _, c := range renoCubicWestwood {
			if cc != c {
				continue
			}
			t := Test{Name: name, Description: "Realtime Response Under Load\n(with different congestion control algs)", Plot: "all_scaled",
				Probes: []Probe{{Series: "Ping (ms) UDP EF", Kind: UDP, Mark: EF}, {Series: "Ping (ms) UDP BK", Kind: UDP, Mark: BK},
					{Series: "Ping (ms) UDP BE", Kind: UDP, Mark: BE}, icmp}}
			for _, d := range []struct {
				word string
				dir  Direction
			}{{"upload", Up}, {"download", Down}} {
				for _, alg := range []string{"reno", "westwood", "cubic", cc} {
					t.Flows = append(t.Flows, Flow{Series: fmt.Sprintf("TCP %s %s", d.word, strings.ToUpper(alg)), Dir: d.dir, CC: alg})
				}
			}
			return t, true, nil
		}
	}
	for _, k := range fixedStreams {
		for _, d := range []struct {
			word, suffix string
			dir          Direction
		}{{"upload", "up", Up}, {"download", "down", Down}} {
			if name != fmt.Sprintf("tcp_%d%s", k, d.suffix) {
				continue
			}
			// tcp_4up.conf sets upload_streams and includes tcp_nup.conf,
			// which takes the per-stream parameters.
			t := Test{Name: name, Description: fmt.Sprintf("TCP %s - %d streams w/ping", d.word, k), Plot: "totals", Probes: []Probe{icmp}}
			for i := 0; i < k; i++ {
				t.Flows = append(t.Flows, o.PerStream.flow(i, fmt.Sprintf("TCP %s::%d", d.word, i+1), d.dir, BE))
			}
			return t, true, nil
		}
	}
	for _, ud := range upDown {
		if name != fmt.Sprintf("rrul_%d_up_%d_down", ud[0], ud[1]) {
			continue
		}
		// As rrul_be, with more flows: all best effort, and one UDP ping
		// fewer than the downloads, beside the ICMP one.
		t := Test{Name: name, Description: fmt.Sprintf("%d up & %d down - exclusively Best Effort", ud[0], ud[1]), Plot: "all_scaled"}
		id := func(i int) string {
			if i == 1 {
				return "BE"
			}
			return fmt.Sprintf("BE%d", i)
		}
		for i := 1; i <= ud[0]; i++ {
			t.Flows = append(t.Flows, Flow{Series: "TCP upload " + id(i), Dir: Up, Mark: BE})
		}
		for i := 1; i <= ud[1]; i++ {
			t.Flows = append(t.Flows, Flow{Series: "TCP download " + id(i), Dir: Down, Mark: BE})
		}
		for i := 1; i < ud[1]; i++ {
			t.Probes = append(t.Probes, Probe{Series: fmt.Sprintf("Ping (ms) UDP BE%d", i), Kind: UDP, Mark: BE})
		}
		t.Probes = append(t.Probes, icmp)
		return t, true, nil
	}
	return Test{}, false, nil
}
