package report

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"wanlab/fidelity"
	"wanlab/results"
)

// TestStateOf: a run's fidelity as its router report says it; a
// direction's verdict that is not faithful wins over the overall figure.
func TestStateOf(t *testing.T) {
	yes, no := true, false
	unfaithfulUp := []results.DirectionReport{{Name: "up", Verdict: fidelity.Verdict{Direction: "up"}}, {Name: "down", Verdict: fidelity.Verdict{Direction: "down", Faithful: true}}}
	for _, c := range []struct {
		name string
		rep  *results.RouterReport
		want fidelityState
	}{
		{"absent", nil, stateAbsent},
		{"direct", synthRouter(directNoVerdict, ""), stateUnknown},
		{"no readings", &results.RouterReport{Mode: results.RouterTestbed, Note: "reading the router failed"}, stateUnknown},
		{"faithful", synthRouter(faithfulRun, ""), stateFaithful},
		{"ring drops", synthRouter(ringDropsDown, ""), stateUnfaithful},
		{"overall false", &results.RouterReport{Faithful: &no}, stateUnfaithful},
		{"disagreement", &results.RouterReport{Faithful: &yes, Directions: unfaithfulUp}, stateUnfaithful},
	} {
		if got := stateOf(c.rep); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// fidelityRows returns a one-run report's fidelity table: each row's
// cells by the row's heading.
func fidelityRows(t *testing.T, d *results.Document) map[string][]string {
	t.Helper()
	fid := byID(parse(t, render(t, []Run{{Doc: d}}, Options{})), "run-1-fidelity")
	rows := map[string][]string{}
	for _, tr := range findAll(first(fid, tag("tbody")), tag("tr")) {
		var cells []string
		for _, td := range findAll(tr, tag("td")) {
			cells = append(cells, text(td))
		}
		rows[text(first(tr, tag("th")))] = cells
	}
	return rows
}

// TestTraceRate: the rate configured of a direction a trace limits is the
// trace's, as the run recorded it, though the direction's chain sets
// none; a report shows what `wanlab show` shows. The run is a stored one
// (results' testdata): a tcp_upload whose up direction a trace of
// 6 Mbit/s limited, written by version 1; and the same in version 2, as
// a synthetic run.
func TestTraceRate(t *testing.T) {
	stored, err := results.ReadFile(filepath.Join("..", "results", "testdata", "v1-trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	rows := fidelityRows(t, stored)
	for what, want := range map[string][]string{
		"Chain (tc syntax)":                   {"netem limit 1000 delay 5ms", "netem limit 1000 delay 5ms"},
		"Rate configured":                     {"6.000 Mbit/s", "no limit"},
		"Rate achieved during the load":       {"5.988 Mbit/s", "0.138 Mbit/s"},
		"Delay configured (netem)":            {"5.000 ms", "5.000 ms"},
		"Delay achieved: min / median / mean": {"5.379 ms / 35.389 ms / 32.023 ms", "5.000 ms / 5.023 ms / 5.069 ms"},
	} {
		if got := rows[what]; !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}

	d := synthRun("tcp_upload", "trace", 1, faithfulRun)
	d.Run.Path = results.Path{Up: "netem delay 20ms", Down: "netem delay 20ms"}
	d.Run.Options["trace_up"] = "lte.trace"
	d.Router.Directions[0].ConfiguredRateBps = 4_500_000
	d.Router.Directions[1].ConfiguredRateBps = 0
	if got, want := fidelityRows(t, d)["Rate configured"], []string{"4.500 Mbit/s", "no limit"}; !slices.Equal(got, want) {
		t.Errorf("rate configured %q, want %q", got, want)
	}
}

// TestReadConfigured: what a chain asks for, as the fidelity table shows
// it beside what the router achieved.
func TestReadConfigured(t *testing.T) {
	for _, c := range []struct {
		chain string
		want  configured
		ok    bool
	}{
		{"", configured{}, true},
		{"netem delay 20ms; tbf rate 10mbit burst 32k latency 300ms", configured{RateBps: 10_000_000, Delay: 20 * time.Millisecond}, true},
		{"netem delay 5ms loss 10%; netem delay 7ms rate 2mbit loss 10%", configured{RateBps: 2_000_000, Delay: 12 * time.Millisecond, Loss: 0.19}, true},
		{"netem loss state 0.01", configured{LossModel: "state"}, true},
		{"netem delay 10ms 2ms distribution mytable", configured{}, false},
	} {
		got, ok := readConfigured(c.chain)
		if ok != c.ok || got.RateBps != c.want.RateBps || got.Delay != c.want.Delay || got.LossModel != c.want.LossModel ||
			got.Loss < c.want.Loss-1e-9 || got.Loss > c.want.Loss+1e-9 {
			t.Errorf("%q: %+v %v, want %+v %v", c.chain, got, ok, c.want, c.ok)
		}
	}
}
