package plot

import (
	"math"
	"slices"
	"strings"
	"testing"

	"wanlab/results"
)

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"png": PNG, "SVG": SVG, " svg ": SVG} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseFormat("pdf"); err == nil || !strings.Contains(err.Error(), "png or svg") {
		t.Errorf("ParseFormat(pdf): %v; want an error naming png and svg", err)
	}
	for in, want := range map[string]Format{"a/b.png": PNG, "x.SVG": SVG} {
		if got, err := FormatFor(in); err != nil || got != want {
			t.Errorf("FormatFor(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"graph", "graph.jpg"} {
		if _, err := FormatFor(in); err == nil || !strings.Contains(err.Error(), ".png or .svg") {
			t.Errorf("FormatFor(%q): %v; want an error saying to end the name in .png or .svg", in, err)
		}
	}
}

func TestOptionsSize(t *testing.T) {
	w, h, err := Options{}.size()
	if err != nil || w != DefaultWidth || h != DefaultHeight {
		t.Errorf("default size %d×%d, %v", w, h, err)
	}
	for _, o := range []Options{{Width: 100}, {Height: 10}, {Width: MaxSide + 1}, {Width: -5}} {
		if _, _, err := o.size(); err == nil || !strings.Contains(err.Error(), "give a width") {
			t.Errorf("size %d×%d: %v; want an error giving the allowed range", o.Width, o.Height, err)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	cases := []struct {
		lo, hi float64
		n      int
		want   []string
	}{
		{0, 14, 10, []string{"0", "2", "4", "6", "8", "10", "12", "14"}},
		{0, 1, 5, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{43, 161, 5, []string{"50", "75", "100", "125", "150"}},
		{-0.3, 0.3, 5, []string{"-0.2", "0.0", "0.2"}},
		{0, 0.9, 4, []string{"0.00", "0.25", "0.50", "0.75"}},
	}
	for _, c := range cases {
		var got []string
		for _, tk := range (niceTicks{n: c.n}).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("ticks of [%v, %v] with n=%d: %q, want %q", c.lo, c.hi, c.n, got, c.want)
		}
	}
}

func TestNewLineBreaksAtLostProbes(t *testing.T) {
	l := newLine([]xy{{0, 1}, {1, 2}, {2, math.NaN()}, {3, 4}, {4, math.NaN()}, {5, 6}, {6, 7}}, newTheme(DefaultWidth, DefaultHeight).line(slot{}, false))
	if len(l.segs) != 3 || len(l.segs[0]) != 2 || len(l.segs[1]) != 1 || len(l.segs[2]) != 2 {
		t.Errorf("segments %v; want [0,1] [3] [5,6]", l.segs)
	}
	if xmin, xmax, ymin, ymax := l.DataRange(); xmin != 0 || xmax != 6 || ymin != 1 || ymax != 7 {
		t.Errorf("DataRange = %v %v %v %v", xmin, xmax, ymin, ymax)
	}
}

func TestScaledRange(t *testing.T) {
	vals := make([]float64, 101)
	for i := range vals {
		vals[i] = float64(i) // 5th percentile 5, 95th 95
	}
	vals[100] = 1e6 // an outlier the scaled range leaves out
	lo, hi := scaledRange(vals, false)
	if math.Abs(lo-(5-0.9)) > 1e-9 || math.Abs(hi-(95+0.9)) > 1e-9 {
		t.Errorf("scaledRange = [%v, %v], want [4.1, 95.9]", lo, hi)
	}
	if lo, _ := scaledRange(vals, true); lo != 0 {
		t.Errorf("scaledRange from zero starts at %v", lo)
	}
	if lo, hi := fullRange([]float64{3, 3}, false); !(lo < 3 && hi > 3) {
		t.Errorf("fullRange of one value = [%v, %v]", lo, hi)
	}
}

func TestWithUnit(t *testing.T) {
	for _, c := range [][3]string{
		{"Download", "Mbits/s", "Download (Mbit/s)"},
		{"Ping (ms) ICMP", "ms", "Ping (ms) ICMP"},
		{"Congestion window", "packets", "Congestion window (packets)"},
		{"Fairness", "", "Fairness"},
	} {
		if got := withUnit(c[0], c[1]); got != c[2] {
			t.Errorf("withUnit(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

// wanlab's own tests' throughput series join the upload and download
// panels as Flent's do; the custom test's sums are its aggregates and its
// total is left out.
func TestClassifyOwnTests(t *testing.T) {
	for name, want := range map[string]struct {
		panel timelinePanel
		agg   bool
	}{
		"TFRC upload":      {uploadPanel, false},
		"QUIC download":    {downloadPanel, false},
		"Custom upload::2": {uploadPanel, false},
		"Custom upload":    {uploadPanel, true},
		"Custom download":  {downloadPanel, true},
		"Custom totals":    {noPanel, false},
		"TCP upload avg":   {uploadPanel, true},
	} {
		p, agg := classify(&results.Series{Name: name, Unit: "Mbits/s"})
		if p != want.panel || agg != want.agg {
			t.Errorf("classify(%q) = %v, %v; want %v, %v", name, p, agg, want.panel, want.agg)
		}
	}
}

// Fairness indices, Flent's over the flows and wanlab's over the hosts,
// are on no throughput panel: the series plot draws them.
func TestClassifyFairness(t *testing.T) {
	for _, name := range []string{"TCP upload fairness", "TCP download fairness", results.HostFairnessSeries("up"), results.HostFairnessSeries("down")} {
		for _, unit := range []string{results.RunStatUnit, "Mbits/s"} {
			if p, agg := classify(&results.Series{Name: name, Unit: unit}); p != noPanel || agg {
				t.Errorf("classify(%q in %s) = %v, %v; want no panel", name, unit, p, agg)
			}
		}
	}
}

// A load flow whose name says no direction (tcp_4up_squarewave's "TCP
// bbr 1") goes in the panel of the direction its flow records.
func TestPanelOfFlowDirection(t *testing.T) {
	d := &results.Document{
		Series: []results.Series{{Name: "TCP bbr 1", Unit: "Mbits/s"}, {Name: "TCP cubic 2", Unit: "Mbits/s"}, {Name: "TCP stray", Unit: "Mbits/s"}},
		Flows:  []results.Flow{{ID: 1, Label: "TCP bbr 1", Direction: "up"}, {ID: 2, Label: "TCP cubic 2", Direction: "down"}},
	}
	for i, want := range []timelinePanel{uploadPanel, downloadPanel, noPanel} {
		if p, agg := panelOf(d, &d.Series[i]); p != want || agg {
			t.Errorf("panelOf(%q) = %v, %v; want %v", d.Series[i].Name, p, agg, want)
		}
	}
}

// TestFitLinesKeepsWords: a label too long for a legend is wrapped at
// spaces and shortened after a whole word, never cut through one (run
// legends were cut mid-word: "…rate=100mbit qdisc=pfifo_f…").
func TestFitLinesKeepsWords(t *testing.T) {
	th := newTheme(DefaultWidth, DefaultHeight)
	sty := th.text(legendSize)
	label := "TCP download avg · e3-fq-codel rate=100mbit qdisc=pfifo_fast tcp_bidirectional #3 of a long experiment's name"
	words := strings.Fields(label)
	for _, w := range []float64{120, 200, 400, 2000} {
		width := th.pt(w)
		got := fitLines(sty, label, width, 2)
		lines := strings.Split(got, "\n")
		if len(lines) > 2 {
			t.Errorf("width %v: %d lines: %q", w, len(lines), got)
		}
		for _, l := range lines {
			if sty.Width(l) > width {
				t.Errorf("width %v: %q is wider", w, l)
			}
			for _, word := range strings.Fields(l) {
				if word != "…" && !slices.Contains(words, word) {
					t.Errorf("width %v: %q is not a word of the label (%q)", w, word, got)
				}
			}
		}
		if w == 2000 && got != label {
			t.Errorf("a label that fits is changed: %q", got)
		}
	}
	if got := fitLines(sty, "supercalifragilisticexpialidocious", th.pt(40), 2); !strings.HasSuffix(got, "…") || sty.Width(got) > th.pt(40) {
		t.Errorf("a single word too wide: %q", got)
	}
}
