package plot

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"wanlab/internal/svgtest"
)

// synthSweep is E2's shape: TCP goodput against the bottleneck rate, per
// congestion control, as means with the range over three repetitions;
// categorical is the same on a categorical axis of rate names.
func synthSweep(categorical bool) Sweep {
	s := Sweep{Title: "E2: goodput through tbf", XLabel: "Bottleneck rate (Mbit/s)", YLabel: "Mean TCP goodput (Mbit/s)"}
	for gi, cc := range []string{"reno", "cubic", "bbr"} {
		g := SweepGroup{Name: cc}
		for _, r := range []float64{1, 2, 5, 10} {
			m := r * (0.8 + 0.05*float64(gi))
			p := SweepPoint{X: r, Mean: m, Lo: m * 0.93, Hi: m * 1.04}
			if categorical {
				p.Category = fmt.Sprintf("%gmbit", r)
			}
			g.Points = append(g.Points, p)
		}
		s.Groups = append(s.Groups, g)
	}
	return s
}

func TestSweepErrors(t *testing.T) {
	mixed := synthSweep(true)
	mixed.Groups[1].Points[2].Category = ""
	badBar := synthSweep(false)
	badBar.Groups[0].Points[1].Lo = badBar.Groups[0].Points[1].Mean + 1
	halfBar := synthSweep(false)
	halfBar.Groups[2].Points[0].Hi = math.NaN()
	logZero := synthSweep(false)
	logZero.XLog = true
	logZero.Groups[1].Points[0].X = 0
	unlisted := synthSweep(true)
	unlisted.Categories = []string{"1mbit", "2mbit", "5mbit"}
	empty := Sweep{Groups: []SweepGroup{{Name: "reno", Points: []SweepPoint{{X: 1, Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}}}}}
	logCats := synthSweep(true)
	logCats.XLog = true
	cases := []struct {
		name string
		s    Sweep
		want []string
	}{
		{"categories on some points only", mixed, []string{"have a category", "have none"}},
		{"a bar that misses its mean", badBar, []string{`group "reno", point at X=2`, "not between Lo", "Lo ≤ Mean ≤ Hi"}},
		{"half an error bar", halfBar, []string{`group "bbr"`, "give both ends"}},
		{"zero on a log axis", logZero, []string{`group "cubic", point at X=0`, "X > 0"}},
		{"a category not listed", unlisted, []string{`"10mbit" is not in Categories`}},
		{"nothing to draw", empty, []string{"nothing to draw"}},
		{"log scale on categories", logCats, []string{"XLog needs a numeric x axis"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRefused(t, func(out *bytes.Buffer) error { return DrawSweep(out, c.s, Options{}) }, c.want)
		})
	}
}

// TestSweepPlacesPoints checks the categorical axis: categories in the
// order given, groups side by side at each so their bars do not overlap,
// no line joining one category to the next, a missing case left out.
func TestSweepPlacesPoints(t *testing.T) {
	s := synthSweep(true)
	s.Categories = []string{"10mbit", "5mbit", "2mbit", "1mbit"}
	s.Groups[0].Points[1].Mean, s.Groups[0].Points[1].Lo, s.Groups[0].Points[1].Hi = math.NaN(), math.NaN(), math.NaN()
	fig, err := sweepFigure(s, newTheme(DefaultWidth, DefaultHeight))
	if err != nil {
		t.Fatal(err)
	}
	pn := fig.panels[0]
	if len(pn.lines) != 0 {
		t.Errorf("%d lines join the categories; want none", len(pn.lines))
	}
	if len(pn.marks) != 3 {
		t.Fatalf("%d groups of markers, want 3", len(pn.marks))
	}
	// reno at 1mbit (index 3), 2mbit (2, missing), 5mbit (1), 10mbit (0),
	// left of each category as the first of three groups.
	var reno []float64
	for _, q := range pn.marks[0].pts {
		if !math.IsNaN(q.y) {
			reno = append(reno, q.x)
		}
	}
	if len(reno) != 3 {
		t.Fatalf("reno has %d points drawn, want 3 (none at the missing 2mbit): %v", len(reno), pn.marks[0].pts)
	}
	if first, last := reno[0], reno[2]; !(first < 0 && first > -0.5) || !(last < 3 && last > 2.5) {
		t.Errorf("reno's points run from x=%v to x=%v; want just left of 0 and of 3", first, last)
	}
	if bbr := pn.marks[2].pts[0].x; !(bbr > 0 && bbr < 0.5) {
		t.Errorf("bbr's first point is at x=%v; want just right of 0", bbr)
	}
	for _, e := range pn.legend {
		for _, th := range e.thumbs {
			if _, ok := th.(*line); ok {
				t.Errorf("the legend of %q shows a line", e.label)
			}
		}
	}
}

// drawSVG draws s as an SVG and reads it back.
func drawSVG(t *testing.T, s Sweep, o Options) *svgtest.Image {
	t.Helper()
	o.Format = SVG
	var buf bytes.Buffer
	if err := DrawSweep(&buf, s, o); err != nil {
		t.Fatal(err)
	}
	img, err := svgtest.Read(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// e1Sweep is E1's shape: goodput against one-way delays that are not
// equally spaced (10, 30, 50, 70, 100 ms).
func e1Sweep() Sweep {
	s := Sweep{Title: "e1", XLabel: "delay", XUnit: "ms", YLabel: "mean of TCP upload", YUnit: "Mbits/s", Spread: "min–max across repetitions"}
	for gi, cc := range []string{"reno", "cubic"} {
		g := SweepGroup{Name: cc}
		for _, d := range []float64{10, 30, 50, 70, 100} {
			m := 90 - d*0.5 - float64(gi)
			g.Points = append(g.Points, SweepPoint{X: d, Mean: m, Lo: m - 2, Hi: m + 1})
		}
		s.Groups = append(s.Groups, g)
	}
	return s
}

// checkProportional checks that the ticks are labelled with values and
// placed in proportion to them (to their logarithms on a log axis), within
// half a percent of the axis.
func checkProportional(t *testing.T, ticks []svgtest.Tick, want []string, log bool) {
	t.Helper()
	var labels []string
	for _, tk := range ticks {
		labels = append(labels, tk.Label)
	}
	if !slices.Equal(labels, want) {
		t.Fatalf("x tick labels %q, want %q", labels, want)
	}
	v := func(i int) float64 {
		x, err := strconv.ParseFloat(ticks[i].Label, 64)
		if err != nil {
			t.Fatal(err)
		}
		if log {
			return math.Log(x)
		}
		return x
	}
	n := len(ticks) - 1
	for i := 1; i < n; i++ {
		got := (ticks[i].At - ticks[0].At) / (ticks[n].At - ticks[0].At)
		wantF := (v(i) - v(0)) / (v(n) - v(0))
		if math.Abs(got-wantF) > 0.005 {
			t.Errorf("tick %s is %.3f of the way from %s to %s; its value is %.3f of the way", ticks[i].Label, got, ticks[0].Label, ticks[n].Label, wantF)
		}
	}
}

// TestSweepNumericAxis reads a sweep's x axis back from the SVG: the
// delays swept are its ticks, placed in proportion to their values (10 ms
// to 30 ms is a fifth of 10 ms to 100 ms, not a quarter as on a
// categorical axis), with the unit in the axis' label.
func TestSweepNumericAxis(t *testing.T) {
	img := drawSVG(t, e1Sweep(), Options{})
	ticks, err := img.XTicks()
	if err != nil {
		t.Fatal(err)
	}
	checkProportional(t, ticks, []string{"10", "30", "50", "70", "100"}, false)
	if _, ok := img.Find("delay (ms)"); !ok {
		t.Error(`no x axis label "delay (ms)"`)
	}

	logSweep := synthSweep(false)
	logSweep.XLog = true
	ticks, err = drawSVG(t, logSweep, Options{}).XTicks()
	if err != nil {
		t.Fatal(err)
	}
	checkProportional(t, ticks, []string{"1", "2", "5", "10"}, true)
}

// TestSweepYLabelUnitOnce: a series whose name has its unit already is
// not labelled with it twice.
func TestSweepYLabelUnitOnce(t *testing.T) {
	s := e1Sweep()
	s.YLabel, s.YUnit = "median of Ping (ms) ICMP", "ms"
	img := drawSVG(t, s, Options{})
	for _, tx := range img.Texts {
		if strings.Contains(tx.S, "ICMP (ms)") {
			t.Errorf("the label %q repeats the unit", tx.S)
		}
	}
	if _, ok := img.Find("mean of TCP upload (Mbit/s)"); !ok {
		if _, ok := img.Find("median of Ping (ms) ICMP"); !ok {
			t.Error("no y axis label")
		}
	}
}

// TestSweepErrorBarsNeverBelowZero: a rate whose standard deviation
// across repetitions is larger than its mean (QUIC at 100 ms in E1) has
// error bars cut at 0, never below it, and the graph says so.
func TestSweepErrorBarsNeverBelowZero(t *testing.T) {
	s := e1Sweep()
	s.Spread = "± sample std dev across repetitions"
	quic := SweepGroup{Name: "quic"}
	for _, d := range []float64{10, 30, 50, 70, 100} {
		m := 40 - d*0.38 // 2 Mbit/s at 100 ms
		quic.Points = append(quic.Points, SweepPoint{X: d, Mean: m, Lo: m - 7, Hi: m + 7})
	}
	s.Groups = append(s.Groups, quic)
	img := drawSVG(t, s, Options{})
	zero, err := img.YTickAt("0")
	if err != nil {
		t.Fatal(err)
	}
	bars := 0
	for _, c := range palette[:3] {
		for _, p := range img.StrokedIn(fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B)) {
			if x, lo, _, ok := p.Vertical(); ok {
				bars++
				if lo < zero-0.01 {
					t.Errorf("an error bar at x=%v reaches %.2f pt below 0", x, zero-lo)
				}
			}
		}
	}
	if bars < 15 {
		t.Errorf("%d error bars read back, want 15", bars)
	}
	if !slices.ContainsFunc(img.Texts, func(tx svgtest.Text) bool { return strings.Contains(tx.S, "cut at 0: a rate cannot be negative") }) {
		t.Error("the graph does not say that error bars were cut at 0")
	}
}

// TestSweepReference: published figures are a group of their own, in the
// legend with their source, hollow, beside the group they are for.
func TestSweepReference(t *testing.T) {
	s := e1Sweep()
	s.Groups = append(s.Groups, SweepGroup{Name: "reno: seed 001, table 2", Reference: true, Beside: "reno",
		Points: []SweepPoint{{X: 10, Mean: 93.9, Lo: math.NaN(), Hi: math.NaN()}, {X: 100, Mean: 40, Lo: math.NaN(), Hi: math.NaN()}}})
	fig, err := sweepFigure(s, newTheme(DefaultWidth, DefaultHeight))
	if err != nil {
		t.Fatal(err)
	}
	pn := fig.panels[0]
	ref := pn.marks[2]
	if _, ok := ref.glyph.Shape.(hollow); !ok || ref.glyph.Color != pn.marks[0].glyph.Color {
		t.Errorf("the reference's markers are %T in %v; want hollow, in reno's %v", ref.glyph.Shape, ref.glyph.Color, pn.marks[0].glyph.Color)
	}
	if !stylesApart(pn.lines[0].style, pn.lines[2].style) {
		t.Error("the reference's line looks like reno's")
	}
	if pn.legend[2].label != "reno: seed 001, table 2" {
		t.Errorf("legend %q", pn.legend[2].label)
	}
	bad := s
	bad.Groups = append(slices.Clone(s.Groups[:2]), SweepGroup{Name: "x", Reference: true, Beside: "vegas", Points: s.Groups[2].Points})
	if _, err := sweepFigure(bad, newTheme(DefaultWidth, DefaultHeight)); err == nil || !strings.Contains(err.Error(), `"vegas"`) {
		t.Errorf("a reference beside no group: %v", err)
	}
}
