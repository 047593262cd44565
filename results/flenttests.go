package results

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// flentTest is what wanlab needs to know of one of Flent's tests: the
// series Flent computes from the others, and the test parameters that set
// how many per-flow series it has. The entries follow Flent 2.1.1's
// flent/tests/*.conf (DATA_SETS), plus the fairness series Flent 2.3 added
// to tcp_nup and tcp_ndown, and the rrul_N_up_M_down tests of Flent's pull
// request #61, which no Flent release has.
type flentTest struct {
	// computed lists the computed series in Flent's DATA_SETS order.
	computed []computedSeries
	// counts are the test parameters that say how many series match a
	// glob (tcp_nup's upload_streams): Flent rebuilds that many from them.
	counts []countParam
}

// countParam is a test parameter that counts the series matching glob.
type countParam struct{ param, glob string }

// reduction is how a computed series combines its sources' values at one
// grid point.
type reduction int

const (
	reduceSum reduction = iota
	reduceAverage
	reduceFairness
)

// computedSeries is one series Flent computes on the grid (its "sum",
// "average" and "fairness" runners): at each grid point, the reduction of
// the values of the series that match glob and none of exclude, the series
// itself excluded.
type computedSeries struct {
	name    string
	reduce  reduction
	glob    string
	exclude []string
	unit    string
}

// perDirection are the averages and sums of the TCP flows of each
// direction whose series match the globs, each sum and average left out of
// the other: what rrul and the tests built like it compute.
func perDirection(upGlob, downGlob string) []computedSeries {
	return []computedSeries{
		{"TCP upload avg", reduceAverage, upGlob, []string{"TCP upload sum"}, "Mbits/s"},
		{"TCP upload sum", reduceSum, upGlob, []string{"TCP upload avg"}, "Mbits/s"},
		{"TCP download avg", reduceAverage, downGlob, []string{"TCP download sum"}, "Mbits/s"},
		{"TCP download sum", reduceSum, downGlob, []string{"TCP download avg"}, "Mbits/s"},
	}
}

// tcpTotals is rrul's sum of every TCP flow of the glob, each way.
func tcpTotals(glob string) computedSeries {
	return computedSeries{"TCP totals", reduceSum, glob, []string{"TCP download avg", "TCP download sum", "TCP upload avg", "TCP upload sum"}, "Mbits/s"}
}

// pingAvg is the average of the pings of the glob.
func pingAvg(glob string) computedSeries {
	return computedSeries{"Ping (ms) avg", reduceAverage, glob, nil, "ms"}
}

// rrulComputed are rrul's and rrul_be's computed series.
var rrulComputed = append(perDirection("TCP upload*", "TCP download*"), tcpTotals("TCP*"), pingAvg("Ping (ms)*"))

// smackdownComputed are those of cubic_bbr and its kin, and of
// reno_cubic_westwood_cdg and its: rrul's without the totals.
var smackdownComputed = append(perDirection("TCP upload*", "TCP download*"), pingAvg("Ping (ms)*"))

// nComputed are tcp_nup's (up) or tcp_ndown's computed series.
func nComputed(word string) flentTest {
	glob := "TCP " + word + "::*"
	param := map[string]string{"upload": "upload_streams", "download": "download_streams"}[word]
	return flentTest{
		computed: []computedSeries{
			{"TCP " + word + " avg", reduceAverage, glob, []string{"TCP " + word + " sum"}, "Mbits/s"},
			{"TCP " + word + " sum", reduceSum, glob, []string{"TCP " + word + " avg"}, "Mbits/s"},
			{"TCP " + word + " fairness", reduceFairness, glob, nil, "Idx"},
		},
		counts: []countParam{{param, glob}},
	}
}

// rttFairComputed are the computed series of rtt_fair.inc for the
// directions its test keeps (rtt_fair_up deletes the download's): per
// direction the average, sum and fairness of the TCP flows, each left
// out of the others, and the pings' average.
func rttFairComputed(up, down bool) []computedSeries {
	var cs []computedSeries
	for _, d := range []struct {
		word string
		on   bool
	}{{"upload", up}, {"download", down}} {
		if !d.on {
			continue
		}
		p := "TCP " + d.word + " "
		cs = append(cs,
			computedSeries{p + "avg", reduceAverage, "TCP " + d.word + "*", []string{p + "sum", p + "fairness"}, "Mbits/s"},
			computedSeries{p + "sum", reduceSum, "TCP " + d.word + "*", []string{p + "avg", p + "fairness"}, "Mbits/s"},
			computedSeries{p + "fairness", reduceFairness, "TCP " + d.word + "*", []string{p + "avg", p + "sum"}, "Idx"})
	}
	return append(cs, pingAvg("Ping (ms)*"))
}

// flentTests are the Flent tests wanlab runs, by Flent's name.
var flentTests = func() map[string]flentTest {
	m := map[string]flentTest{
		"ping":              {},
		"tcp_upload":        {},
		"tcp_download":      {},
		"tcp_bidirectional": {},
		"udp_flood":         {},
		"rrul":              {computed: rrulComputed},
		"rrul_be":           {computed: rrulComputed},
		"tcp_nup":           nComputed("upload"),
		"tcp_ndown":         nComputed("download"),
		"tcp_1up":           {},
		"tcp_1down":         {},
		// The square-wave and delayed tests compute nothing.
		"tcp_2up_delay":           {},
		"tcp_2up_square":          {},
		"tcp_2up_square_westwood": {},
		"tcp_4up_squarewave":      {},
		"cubic_ledbat_1":          {},
		"ledbat_cubic_1":          {},
		"rrul_be_nflows": {
			computed: append(perDirection("TCP upload BE::*", "TCP download BE::*"), tcpTotals("TCP * BE::*"), pingAvg("Ping (ms)*")),
			counts:   []countParam{{"upload_streams", "TCP upload BE::*"}, {"download_streams", "TCP download BE::*"}},
		},
		"rrul_var": {
			computed: append(perDirection("TCP upload::*", "TCP download::*"), tcpTotals("TCP *::*"), pingAvg("Ping (ms)::*")),
			counts:   []countParam{{"bidir_streams", "TCP upload::*"}},
		},
	}
	// The rtt_fair tests name their series after Flent's HOSTS, which
	// the data file lists (the servers the flows ran to).
	for _, n := range []string{"rtt_fair", "rtt_fair4be", "rtt_fair6be", "rtt_fair_var", "rtt_fair_var_mixed"} {
		m[n] = flentTest{computed: rttFairComputed(true, true)}
	}
	m["rtt_fair_up"] = flentTest{computed: rttFairComputed(true, false)}
	m["rtt_fair_var_up"] = flentTest{computed: rttFairComputed(true, false)}
	m["rtt_fair_var_down"] = flentTest{computed: rttFairComputed(false, true)}
	// tcp_4up is tcp_nup with upload_streams 4 (tcp_4up.conf sets it
	// and includes tcp_nup.conf).
	for _, n := range []int{2, 4, 6, 8, 12} {
		m[fmt.Sprintf("tcp_%dup", n)] = nComputed("upload")
		m[fmt.Sprintf("tcp_%ddown", n)] = nComputed("download")
	}
	for _, alg := range []string{"bbr", "cdg", "dctcp", "ledbat", "reno", "westwood"} {
		m["cubic_"+alg] = flentTest{computed: smackdownComputed}
	}
	for _, alg := range []string{"cdg", "ledbat", "lp"} {
		m["reno_cubic_westwood_"+alg] = flentTest{computed: smackdownComputed}
	}
	for _, ud := range [][2]int{{2, 4}, {2, 6}, {2, 8}, {2, 12}, {4, 4}, {4, 6}, {4, 8}, {4, 12}, {6, 6}, {6, 8}, {6, 12}, {8, 8}, {8, 12}, {10, 12}, {12, 12}} {
		m[fmt.Sprintf("rrul_%d_up_%d_down", ud[0], ud[1])] = flentTest{computed: rrulComputed}
	}
	return m
}()

// FlentComputed returns the names of the series Flent computes in its test
// test (sums, averages, fairness), in Flent's order; nil for a test it
// does not know.
func FlentComputed(test string) []string {
	var names []string
	for _, c := range flentTests[test].computed {
		names = append(names, c.name)
	}
	return names
}

// flentLayout is how a run of one of wanlab's own tests goes into a Flent
// data file: as a run of the Flent test whose series layout it shares,
// its series renamed to that test's names, so that Flent rebuilds the
// series list, the units and the plots that test defines. Every other
// series keeps its name, so that nothing of the run is lost.
type flentLayout struct {
	// as is the Flent test (a key of flentTests).
	as string
	// rename maps a series of the run (and the flow it is the main series
	// of) to Flent's name for it.
	rename map[string]string
}

// flentLayouts are wanlab's own tests by name. Each has one load series
// per direction and the ICMP ping, as the Flent test named: a TFRC, QUIC
// or built-in L4S upload is one flow's throughput, as tcp_upload's TCP
// upload is, and a custom run's per-direction sums over the user's flows stand as
// tcp_bidirectional's TCP upload and download (its per-flow series, its
// UDP ping and its totals go along under their own names).
var flentLayouts = map[string]flentLayout{
	"tfrc_upload":   {"tcp_upload", map[string]string{"TFRC upload": "TCP upload"}},
	"tfrc_download": {"tcp_download", map[string]string{"TFRC download": "TCP download"}},
	"quic_upload":   {"tcp_upload", map[string]string{"QUIC upload": "TCP upload"}},
	"quic_download": {"tcp_download", map[string]string{"QUIC download": "TCP download"}},
	"l4s_upload":    {"tcp_upload", map[string]string{"L4S scalable UDP upload": "TCP upload"}},
	"l4s_download":  {"tcp_download", map[string]string{"L4S scalable UDP download": "TCP download"}},
	"custom":        {"tcp_bidirectional", map[string]string{"Custom upload": "TCP upload", "Custom download": "TCP download"}},
}

// FlentLayout returns the Flent test under which a run of test is written
// as a Flent data file: the test itself for one of Flent's, the test
// whose series layout it shares for one of wanlab's own (tfrc_upload goes
// as tcp_upload). An unknown test has none: Flent loads a data file by
// running the test the file names, so the error names the tests that
// export.
func FlentLayout(test string) (string, error) {
	if _, ok := flentTests[test]; ok {
		return test, nil
	}
	if l, ok := flentLayouts[test]; ok {
		return l.as, nil
	}
	own := make([]string, 0, len(flentLayouts))
	for n := range flentLayouts {
		own = append(own, n)
	}
	sort.Strings(own)
	return "", fmt.Errorf("a %s run: Flent has no such test and none with its series, and it loads a data file by running the test the file names (wanlab exports runs of Flent's %s, and of its own %s under the Flent test of the same series); wanlab show, plot and report read the results file",
		test, strings.Join(FlentTests(), ", "), strings.Join(own, ", "))
}

// isComputed reports whether a series of this name is one Flent computes
// from others, in any of its tests.
func isComputed(name string) bool {
	for _, t := range flentTests {
		for _, c := range t.computed {
			if c.name == name {
				return true
			}
		}
	}
	return false
}

// FlentTests returns the names of the Flent tests this package knows (the
// ones WriteFlent exports), sorted.
func FlentTests() []string { return slices.Sorted(maps.Keys(flentTests)) }

// globMatch reports whether name matches a Flent series glob: "**" matches
// anything, "*" anything but ':' (so "TCP upload*" does not reach into
// "TCP upload BE::tcp_cwnd"), every other character itself.
func globMatch(pattern, name string) bool {
	return match(pattern, name, false)
}

// excludeMatch reports whether name matches an exclude pattern, which Flent
// applies with fnmatch: "*" matches anything.
func excludeMatch(pattern, name string) bool {
	return match(pattern, name, true)
}

func match(p, s string, starCrossesColon bool) bool {
	for len(p) > 0 {
		if p[0] != '*' {
			if len(s) == 0 || s[0] != p[0] {
				return false
			}
			p, s = p[1:], s[1:]
			continue
		}
		crossColon := starCrossesColon
		if len(p) > 1 && p[1] == '*' {
			crossColon, p = true, p[2:]
		} else {
			p = p[1:]
		}
		for i := 0; i <= len(s); i++ {
			if match(p, s[i:], starCrossesColon) {
				return true
			}
			if i < len(s) && s[i] == ':' && !crossColon {
				return false
			}
		}
		return false
	}
	return len(s) == 0
}

// selectSeries returns the names among names that c combines, in order;
// wanlab's own series (the hosts' fairness) are never Flent's sources.
func (c *computedSeries) selectSeries(names []string) []string {
	var out []string
	for _, n := range names {
		if n == c.name || !globMatch(c.glob, n) || IsWanlabSeries(n) {
			continue
		}
		if slices.ContainsFunc(c.exclude, func(e string) bool { return excludeMatch(e, n) }) {
			continue
		}
		out = append(out, n)
	}
	return out
}
