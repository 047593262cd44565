package plot

import (
	"bytes"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"wanlab/internal/resultstest"
	"wanlab/results"
)

// without returns a copy of d without the top-level series and flow series
// for which drop is true.
func without(d *results.Document, drop func(name string) bool) *results.Document {
	c := *d
	c.Series = nil
	for _, s := range d.Series {
		if !drop(s.Name) {
			c.Series = append(c.Series, s)
		}
	}
	c.Flows = nil
	for _, f := range d.Flows {
		g := f
		g.Series = nil
		for _, s := range f.Series {
			if !drop(s.Name) {
				g.Series = append(g.Series, s)
			}
		}
		c.Flows = append(c.Flows, g)
	}
	return &c
}

// checkRefused checks that draw refuses, with an error that says each of
// want, and writes nothing.
func checkRefused(t *testing.T, draw func(out *bytes.Buffer) error, want []string) {
	t.Helper()
	var out bytes.Buffer
	err := draw(&out)
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if out.Len() != 0 {
		t.Errorf("the failed graph wrote %d bytes", out.Len())
	}
}

func TestErrorsNameWhatIsMissing(t *testing.T) {
	path := resultstest.DefaultPath
	rrul := resultstest.Run("rrul", "rrul run", 1, path)
	up := resultstest.Run("tcp_upload", "upload run", 2, path)
	bidir := resultstest.Run("tcp_bidirectional", "bidirectional", 4, path)
	rrul2 := resultstest.Run("rrul", "rrul again", 5, path)
	noSeries := without(up, func(string) bool { return true })
	lostPings := without(up, func(n string) bool { return strings.HasPrefix(n, "Ping") })
	for _, s := range up.Series {
		if strings.HasPrefix(s.Name, "Ping") {
			s.Samples = append(results.Samples(nil), s.Samples...)
			for i := range s.Samples {
				s.Samples[i].V = math.NaN()
			}
			lostPings.Series = append(lostPings.Series, s)
		}
	}
	noTCPInfo := without(rrul, func(n string) bool { return strings.Contains(n, "tcp_") })
	noRouter := without(rrul, func(n string) bool { return strings.Contains(n, "::router_") })
	invalid := *up
	invalid.Run.StepS = 0
	msUnit := resultstest.Run("tcp_upload", "seconds", 3, path)
	for i := range msUnit.Series {
		if strings.HasPrefix(msUnit.Series[i].Name, "Ping") {
			msUnit.Series[i].Unit = "s"
		}
	}

	cases := []struct {
		name string
		kind Kind
		docs []*results.Document
		o    Options
		want []string
	}{
		{"all_scaled without series", AllScaled, []*results.Document{noSeries}, Options{},
			[]string{`run "upload run" has no series to draw`, "TCP, UDP, TFRC, QUIC, L4S scalable UDP or Custom upload… or download…", "Ping (ms)…", "the first run has: none"}},
		{"all_scaled, several runs without series", AllScaled, []*results.Document{noSeries, noSeries}, Options{},
			[]string{"none of the 2 runs has series to draw"}},
		{"ping_cdf with every probe lost", PingCDF, []*results.Document{lostPings}, Options{},
			[]string{"no latency samples inside its load window", "Ping (ms)…", "TCP upload"}},
		{"box of a series the run lacks", Box, []*results.Document{up}, Options{Series: "TCP upload BE"},
			[]string{`no samples of "TCP upload BE"`, "choose a series the runs have", "the first run has: \"TCP upload\", \"Ping (ms) ICMP\""}},
		{"tcp_cwnd_rtt without TCP_INFO", TCPCwndRTT, []*results.Document{noTCPInfo}, Options{},
			[]string{`run "rrul run" has no TCP_INFO series`, "LABEL::tcp_cwnd", "LABEL::receiver_tcp_rtt", "its flows are: TCP upload BE"}},
		{"router_flows without router series", RouterFlows, []*results.Document{noRouter}, Options{},
			[]string{"no router per-flow series", "LABEL::router_delivered_bytes", "LABEL::router_queue_delay"}},
		{"series without --series", SeriesKind, []*results.Document{up}, Options{},
			[]string{"series needs --series NAME", "TFRC upload::tfrc_p", "the first run has: \"TCP upload\", \"Ping (ms) ICMP\"", "wanlab show FILE --flow-series"}},
		{"series the runs lack", SeriesKind, []*results.Document{up, rrul}, Options{Series: "TFRC upload::tfrc_p"},
			[]string{`none of the 2 runs has samples of "TFRC upload::tfrc_p"`, "choose a series the runs have", "--flow-series"}},
		{"one-run kind given two", RouterFlows, []*results.Document{rrul, up}, Options{},
			[]string{"router_flows draws one run", "2 results documents"}},
		{"no documents", AllScaled, nil, Options{}, []string{"give at least one results file"}},
		{"a nil document", PingCDF, []*results.Document{up, nil}, Options{}, []string{"document 2 of 2 is missing"}},
		{"an invalid document", AllScaled, []*results.Document{&invalid}, Options{}, []string{"document 1 of 1", "step_s"}},
		{"an unknown kind", Kind("totals"), []*results.Document{up}, Options{}, []string{`unknown graph "totals"`, "all_scaled"}},
		{"an unknown format", AllScaled, []*results.Document{up}, Options{Format: "gif"}, []string{`"gif"`, "png or svg"}},
		{"a tiny image", AllScaled, []*results.Document{up}, Options{Width: 10, Height: 10}, []string{"10×10", "give a width"}},
		{"labels of the wrong count", AllScaled, []*results.Document{up, rrul}, Options{Labels: []string{"a"}}, []string{"1 labels for 2"}},
		{"two units on one axis", PingCDF, []*results.Document{up, msUnit}, Options{},
			[]string{"latency CDF", "in ms", "in s", "one axis shows one unit"}},
		// E3's finding: RRUL's per-flow average beside one flow of
		// another test.
		{"an average of four flows beside one flow", AllScaled, []*results.Document{rrul, bidir, rrul2}, Options{},
			[]string{`the download panel would draw tcp_bidirectional's "TCP download", one flow (1 run) and rrul's "TCP download avg", the average of 4 flows (2 runs)`,
				"not the same quantity", "draw the runs of one test", "--kind series --series NAME"}},
		{"groups of the wrong count", Box, []*results.Document{up, rrul}, Options{Groups: []string{"a"}}, []string{"1 groups for 2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRefused(t, func(out *bytes.Buffer) error { return Draw(out, c.kind, c.docs, c.o) }, c.want)
		})
	}
	var me *MixedError
	if err := Draw(io.Discard, AllScaled, []*results.Document{rrul, bidir}, Options{}); !errors.As(err, &me) || !slices.Equal(me.Tests, []string{"tcp_bidirectional", "rrul"}) {
		t.Errorf("the refusal of rrul beside tcp_bidirectional: %v (%+v)", err, me)
	}
	// Runs of one test, or of tests with as many flows, overlay.
	if err := Draw(io.Discard, AllScaled, []*results.Document{up, resultstest.Run("quic_upload", "quic", 6, path)}, Options{}); err != nil {
		t.Errorf("a TCP and a QUIC upload, one flow each: %v", err)
	}
}

// TestDrawsWhatExists checks that a run missing some series does not stop
// the graph of the others, and that the graph says which runs it left out.
func TestDrawsWhatExists(t *testing.T) {
	path := resultstest.DefaultPath
	rrul := resultstest.Run("rrul", "full", 1, path)
	bare := without(resultstest.Run("rrul", "bare", 2, path), func(string) bool { return true })
	var svg bytes.Buffer
	lay, err := drawKind(&svg, AllScaled, []*results.Document{rrul, bare}, Options{Format: SVG})
	if err != nil {
		t.Fatal(err)
	}
	if len(lay.panels) != 3 {
		t.Errorf("%d panels, want 3", len(lay.panels))
	}
	if !strings.Contains(svg.String(), "nothing to draw for: bare") {
		t.Error("the timeline does not say that run \"bare\" has nothing to draw")
	}
	svg.Reset()
	if _, err := drawKind(&svg, Box, []*results.Document{rrul, bare}, Options{Format: SVG}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), "no samples: bare") {
		t.Error("the box plot does not say that run \"bare\" has no samples")
	}
}

// TestPingHasNoLoadMarks checks that Flent's ping test, which has no load,
// gets no marks of a load period.
func TestPingHasNoLoadMarks(t *testing.T) {
	lay, err := drawKind(&bytes.Buffer{}, AllScaled, []*results.Document{resultstest.Run("ping", "idle", 1, resultstest.Path{RateMbit: 10, BaseRTTMs: 40, BloatMs: 0})}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range lay.panels {
		for _, l := range p.legend {
			if l == "load start, end" {
				t.Errorf("the ping test's timeline marks a load period")
			}
		}
	}
}
