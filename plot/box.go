package plot

import (
	"fmt"
	"math"
	"sort"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"wanlab/results"
	"wanlab/stats"
)

// boxStats are what one box of a box plot shows, by matplotlib's rule
// (its boxplot_stats with whis=1.5, which Flent's box plots use): the
// quartiles and the median as numpy.percentile computes them (linear
// interpolation, package stats), whiskers at the furthest values within
// 1.5 interquartile ranges of the box, and the values beyond them.
type boxStats struct {
	q1, median, q3 float64
	lo, hi         float64 // the whiskers' ends
	outliers       []float64
}

// newBoxStats returns the box of vals, which must not be empty.
func newBoxStats(vals []float64) boxStats {
	sorted := append([]float64(nil), vals...)
	sort.Float64s(sorted)
	b := boxStats{
		q1:     stats.Percentile(sorted, 25),
		median: stats.Percentile(sorted, 50),
		q3:     stats.Percentile(sorted, 75),
	}
	iqr := b.q3 - b.q1
	lowFence, highFence := b.q1-1.5*iqr, b.q3+1.5*iqr
	b.lo, b.hi = b.q1, b.q3
	for _, v := range sorted {
		if v >= lowFence {
			b.lo = min(v, b.q1)
			break
		}
	}
	for i := len(sorted) - 1; i >= 0; i-- {
		if sorted[i] <= highFence {
			b.hi = max(sorted[i], b.q3)
			break
		}
	}
	for _, v := range sorted {
		if v < b.lo || v > b.hi {
			b.outliers = append(b.outliers, v)
		}
	}
	return b
}

// boxes draws one box per run at x = 0, 1, ….
type boxes struct {
	stats  []boxStats
	width  vg.Length
	line   draw.LineStyle
	median draw.LineStyle
	fill   draw.LineStyle // its colour fills the box
	dot    draw.GlyphStyle
}

// Plot implements gonum's plot.Plotter.
func (b *boxes) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, s := range b.stats {
		x := trX(float64(i))
		l, r := x-b.width/2, x+b.width/2
		box := []vg.Point{{X: l, Y: trY(s.q1)}, {X: l, Y: trY(s.q3)}, {X: r, Y: trY(s.q3)}, {X: r, Y: trY(s.q1)}, {X: l, Y: trY(s.q1)}}
		c.FillPolygon(b.fill.Color, c.ClipPolygonY(box))
		c.StrokeLines(b.line, c.ClipLinesY(box)...)
		c.StrokeLines(b.line, c.ClipLinesY(
			[]vg.Point{{X: x, Y: trY(s.q3)}, {X: x, Y: trY(s.hi)}},
			[]vg.Point{{X: x - b.width/4, Y: trY(s.hi)}, {X: x + b.width/4, Y: trY(s.hi)}},
			[]vg.Point{{X: x, Y: trY(s.q1)}, {X: x, Y: trY(s.lo)}},
			[]vg.Point{{X: x - b.width/4, Y: trY(s.lo)}, {X: x + b.width/4, Y: trY(s.lo)}},
		)...)
		c.StrokeLines(b.median, c.ClipLinesY([]vg.Point{{X: l, Y: trY(s.median)}, {X: r, Y: trY(s.median)}})...)
		for _, v := range s.outliers {
			if pt := (vg.Point{X: x, Y: trY(v)}); c.ContainsY(pt.Y) {
				c.DrawGlyph(b.dot, pt)
			}
		}
	}
}

// DataRange implements gonum's plot.DataRanger.
func (b *boxes) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for _, s := range b.stats {
		ymin, ymax = min(ymin, s.lo), max(ymax, s.hi)
		for _, v := range s.outliers {
			ymin, ymax = min(ymin, v), max(ymax, v)
		}
	}
	return -0.5, float64(len(b.stats)) - 0.5, ymin, ymax
}

// boxSeries returns the series a Box graph draws: the one Options.Series
// names, or else the runs' latency series (results.Document.LatencySeries):
// the ICMP ping if any run has it, or else the first run's that has one.
func boxSeries(docs []*results.Document, o Options) string {
	if o.Series != "" {
		return o.Series
	}
	name := ""
	for _, d := range docs {
		if s := d.LatencySeries(); s != nil && (name == "" || s.Name == results.ICMPPing) {
			name = s.Name
		}
	}
	if name == "" {
		return results.ICMPPing
	}
	return name
}

func boxPlot(docs []*results.Document, labels []string, o Options, t theme) (*figure, error) {
	name := boxSeries(docs, o)
	b := &boxes{
		width:  t.pt(36),
		line:   draw.LineStyle{Color: palette[len(palette)-1], Width: t.pt(1.25)},
		median: draw.LineStyle{Color: palette[2], Width: t.pt(3)},
		fill:   draw.LineStyle{Color: gridColor},
		dot:    draw.GlyphStyle{Color: palette[len(palette)-1], Radius: t.pt(2), Shape: draw.RingGlyph{}},
	}
	var names []string
	units := map[string]string{}
	var missing []string
	for i, d := range docs {
		s := d.FindSeries(name)
		var vals []float64
		if s != nil {
			vals = windowValues(s)
		}
		if len(vals) == 0 {
			missing = append(missing, labels[i])
			continue
		}
		b.stats = append(b.stats, newBoxStats(vals))
		names = append(names, fmt.Sprintf("%s (n=%d)", labels[i], len(vals)))
		units[labels[i]] = s.Unit
	}
	if len(b.stats) == 0 {
		return nil, fmt.Errorf("plot: %s: %s: choose a series the runs have; the first run has: %s",
			Box, noneHave(docs, labels, fmt.Sprintf("samples of %q inside its load window", name)), docs[0].SeriesList())
	}
	unit, err := oneUnit("box plot of "+name, units)
	if err != nil {
		return nil, err
	}
	pn := t.newPanel()
	pn.p.Add(b)
	pn.p.Y.Label.Text = withUnit(name, unit)
	_, _, lo, hi := b.DataRange()
	pn.p.Y.Min, pn.p.Y.Max = pad(lo, hi, 0.05, false)
	pn.p.X.Min, pn.p.X.Max = -0.5, float64(len(b.stats))-0.5
	pn.p.X.Tick.Marker = boxTicks(names)
	pn.p.X.Tick.Length = 0
	// Labels that would not fit side by side are turned by 30°.
	var total vg.Length
	for _, n := range names {
		total += pn.p.X.Tick.Label.Width(n) + t.pt(12)
	}
	if total > t.width*0.8 {
		pn.p.X.Tick.Label.Rotation = math.Pi / 6
		pn.p.X.Tick.Label.XAlign, pn.p.X.Tick.Label.YAlign = draw.XRight, draw.YTop
	}
	pn.p.X.Label.Text = "Run"
	fig := &figure{theme: t, panels: []*panel{pn}}
	fig.title = name
	if len(docs) == 1 {
		fig.title = labels[0] + ": " + name
	}
	fig.subtitle = "samples inside each run's load window  ·  box: quartiles, bar: median  ·  whiskers: furthest sample within 1.5 IQR  ·  circles: beyond"
	if len(missing) > 0 {
		fig.subtitle += "  ·  no samples: " + strings.Join(missing, ", ")
	}
	return fig, nil
}

// boxTicks labels the boxes at x = 0, 1, ….
func boxTicks(names []string) gplot.ConstantTicks {
	ts := make(gplot.ConstantTicks, len(names))
	for i, n := range names {
		ts[i] = gplot.Tick{Value: float64(i), Label: n}
	}
	return ts
}
