package results

import (
	"slices"
	"sort"
)

// flentTest is what wanlab needs to know of one of Flent's tests: the
// series Flent computes from the others, and the test parameter that sets
// how many per-flow series it has. The entries follow Flent 2.1.1's
// flent/tests/*.conf (DATA_SETS), plus the fairness series Flent 2.3 added
// to tcp_nup and tcp_ndown.
type flentTest struct {
	// computed lists the computed series in Flent's DATA_SETS order.
	computed []computedSeries
	// streamsParam names the test parameter that says how many series match
	// streamsGlob (tcp_nup's upload_streams); empty if the test has none.
	streamsParam, streamsGlob string
}

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

// rrulComputed are rrul's and rrul_be's computed series.
var rrulComputed = []computedSeries{
	{"TCP upload avg", reduceAverage, "TCP upload*", []string{"TCP upload sum"}, "Mbits/s"},
	{"TCP upload sum", reduceSum, "TCP upload*", []string{"TCP upload avg"}, "Mbits/s"},
	{"TCP download avg", reduceAverage, "TCP download*", []string{"TCP download sum"}, "Mbits/s"},
	{"TCP download sum", reduceSum, "TCP download*", []string{"TCP download avg"}, "Mbits/s"},
	{"TCP totals", reduceSum, "TCP*", []string{"TCP download avg", "TCP download sum", "TCP upload avg", "TCP upload sum"}, "Mbits/s"},
	{"Ping (ms) avg", reduceAverage, "Ping (ms)*", nil, "ms"},
}

// flentTests are the Flent tests wanlab runs, by Flent's name.
var flentTests = map[string]flentTest{
	"ping":              {},
	"tcp_upload":        {},
	"tcp_download":      {},
	"tcp_bidirectional": {},
	"udp_flood":         {},
	"rrul":              {computed: rrulComputed},
	"rrul_be":           {computed: rrulComputed},
	"tcp_nup": {
		computed: []computedSeries{
			{"TCP upload avg", reduceAverage, "TCP upload::*", []string{"TCP upload sum"}, "Mbits/s"},
			{"TCP upload sum", reduceSum, "TCP upload::*", []string{"TCP upload avg"}, "Mbits/s"},
			{"TCP upload fairness", reduceFairness, "TCP upload::*", nil, "Idx"},
		},
		streamsParam: "upload_streams", streamsGlob: "TCP upload::*",
	},
	"tcp_ndown": {
		computed: []computedSeries{
			{"TCP download avg", reduceAverage, "TCP download::*", []string{"TCP download sum"}, "Mbits/s"},
			{"TCP download sum", reduceSum, "TCP download::*", []string{"TCP download avg"}, "Mbits/s"},
			{"TCP download fairness", reduceFairness, "TCP download::*", nil, "Idx"},
		},
		streamsParam: "download_streams", streamsGlob: "TCP download::*",
	},
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
func FlentTests() []string {
	names := make([]string, 0, len(flentTests))
	for n := range flentTests {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

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

// selectSeries returns the names among names that c combines, in order.
func (c *computedSeries) selectSeries(names []string) []string {
	var out []string
	for _, n := range names {
		if n == c.name || !globMatch(c.glob, n) {
			continue
		}
		if slices.ContainsFunc(c.exclude, func(e string) bool { return excludeMatch(e, n) }) {
			continue
		}
		out = append(out, n)
	}
	return out
}
