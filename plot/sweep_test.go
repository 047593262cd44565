package plot

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
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
			var out bytes.Buffer
			err := DrawSweep(&out, c.s, Options{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if out.Len() != 0 {
				t.Errorf("the failed graph wrote %d bytes", out.Len())
			}
		})
	}
}

// TestSweepPlacesPoints checks the categorical axis: categories in the
// order given, groups spread around each so their bars do not overlap, a
// missing case breaking the line.
func TestSweepPlacesPoints(t *testing.T) {
	s := synthSweep(true)
	s.Categories = []string{"10mbit", "5mbit", "2mbit", "1mbit"}
	s.Groups[0].Points[1].Mean, s.Groups[0].Points[1].Lo, s.Groups[0].Points[1].Hi = math.NaN(), math.NaN(), math.NaN()
	fig, err := sweepFigure(s, newTheme(DefaultWidth, DefaultHeight))
	if err != nil {
		t.Fatal(err)
	}
	lines := fig.panels[0].lines
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3", len(lines))
	}
	// reno at 1mbit (index 3), 2mbit (2, missing), 5mbit (1), 10mbit (0),
	// shifted left of the category as the first of three groups.
	reno := lines[0]
	if len(reno.segs) != 2 {
		t.Fatalf("reno's line has %d segments, want 2 (broken at the missing 2mbit): %v", len(reno.segs), reno.segs)
	}
	first, last := reno.segs[0][0], reno.segs[1][len(reno.segs[1])-1]
	if !(first.x < 0 && first.x > -0.5) || !(last.x < 3 && last.x > 2.5) {
		t.Errorf("reno's points run from x=%v to x=%v; want just left of 0 and of 3", first.x, last.x)
	}
	if bbr := lines[2]; !(bbr.segs[0][0].x > 0) {
		t.Errorf("bbr's first point is at x=%v; want just right of 0", bbr.segs[0][0].x)
	}
}
