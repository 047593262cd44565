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
	n              int // the number of values
	q1, median, q3 float64
	lo, hi         float64 // the whiskers' ends
	outliers       []float64
}

// newBoxStats returns the box of vals, which must not be empty.
func newBoxStats(vals []float64) boxStats {
	sorted := append([]float64(nil), vals...)
	sort.Float64s(sorted)
	b := boxStats{
		n:      len(sorted),
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

// boxGroup is the documents one box is drawn over.
type boxGroup struct {
	name string
	docs []int
}

// boxGroups gathers the documents into boxes: by Options.Groups, in the
// order their names first appear, or one box per document.
func boxGroups(docs []*results.Document, labels []string, o Options) ([]boxGroup, error) {
	if o.Groups == nil {
		gs := make([]boxGroup, len(docs))
		for i := range docs {
			gs[i] = boxGroup{name: labels[i], docs: []int{i}}
		}
		return gs, nil
	}
	if len(o.Groups) != len(docs) {
		return nil, fmt.Errorf("plot: %d groups for %d results documents: give one group per document, in order", len(o.Groups), len(docs))
	}
	var gs []boxGroup
	at := map[string]int{}
	for i, g := range o.Groups {
		k, ok := at[g]
		if !ok {
			k = len(gs)
			at[g] = k
			gs = append(gs, boxGroup{name: g})
		}
		gs[k].docs = append(gs[k].docs, i)
	}
	return gs, nil
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
	groups, err := boxGroups(docs, labels, o)
	if err != nil {
		return nil, err
	}
	units := map[string]string{}
	drawn := make([]bool, len(docs))
	var missing []string
	var drawnGroups []boxGroup
	runsPerBox := map[int]bool{}
	for _, g := range groups {
		var vals []float64
		var runs []int
		for _, i := range g.docs {
			s := docs[i].FindSeries(name)
			if s == nil {
				continue
			}
			if v := windowValues(s); len(v) > 0 {
				vals = append(vals, v...)
				units[labels[i]] = s.Unit
				drawn[i] = true
				runs = append(runs, i)
			}
		}
		if len(vals) == 0 {
			missing = append(missing, g.name)
			continue
		}
		b.stats = append(b.stats, newBoxStats(vals))
		drawnGroups = append(drawnGroups, boxGroup{name: g.name, docs: runs})
		runsPerBox[len(runs)] = true
	}
	if len(b.stats) == 0 {
		return nil, fmt.Errorf("plot: %s: %s: choose a series the runs have; the first run has: %s",
			Box, noneHave(docs, labels, fmt.Sprintf("samples of %q inside its load window", name)), docs[0].SeriesList())
	}
	unit, err := oneUnit("box plot of "+name, units)
	if err != nil {
		return nil, err
	}
	// A box of one run is labelled with its number of samples; a box of a
	// group with its number of runs, unless every box has as many, which
	// the subtitle then says once.
	names := make([]string, len(drawnGroups))
	for i, g := range drawnGroups {
		switch {
		case o.Groups == nil:
			names[i] = fmt.Sprintf("%s (n=%d)", g.name, b.stats[i].n)
		case len(runsPerBox) > 1:
			names[i] = fmt.Sprintf("%s (%s)", g.name, plural(len(g.docs), "run"))
		default:
			names[i] = g.name
		}
	}
	// Boxes are as wide as there is room for: many cases make narrow
	// boxes, not overlapping ones (the data area is about seven tenths of
	// the image's width).
	b.width = min(b.width, t.width*0.7/vg.Length(len(b.stats))*0.7)
	pn := t.newPanel()
	pn.p.Add(b)
	pn.boxes = b
	pn.p.Y.Label.Text = withUnit(name, unit)
	_, _, lo, hi := b.DataRange()
	pn.p.Y.Min, pn.p.Y.Max = pad(lo, hi, 0.05, false)
	pn.p.X.Min, pn.p.X.Max = -0.5, float64(len(b.stats))-0.5
	pn.p.X.Tick.Marker = boxTicks(names)
	pn.p.X.Tick.Length = 0
	boxLabelsFit(&pn.p.X, names, t)
	pn.p.X.Label.Text = "Run"
	if o.Groups != nil {
		pn.p.X.Label.Text = o.GroupAxis
	}
	fig := &figure{theme: t, panels: []*panel{pn}}
	fig.title = name
	if len(docs) == 1 {
		fig.title = labels[0] + ": " + name
	}
	what := "samples inside each run's load window"
	if o.Groups != nil {
		what = "each box: the samples inside the load windows of its runs"
		if len(runsPerBox) == 1 {
			for n := range runsPerBox {
				what = fmt.Sprintf("each box: the samples inside the load windows of its %s", plural(n, "run"))
			}
		}
	}
	fig.subtitle = what + "  ·  box: quartiles, bar: median  ·  whiskers: furthest sample within 1.5 IQR  ·  circles: beyond"
	fig.leftOut(labels, drawn, fmt.Sprintf("samples of %q inside its load window", name))
	if len(missing) > 0 {
		fig.subtitle += "  ·  no samples: " + strings.Join(missing, ", ")
	}
	return fig, nil
}

// boxLabelsFit turns the boxes' labels so that they do not run into each
// other: by 30° when they do not fit side by side, upright when even that
// leaves them overlapping (many boxes), in a smaller size if need be.
func boxLabelsFit(ax *gplot.Axis, names []string, t theme) {
	var total, widest vg.Length
	for _, n := range names {
		w := ax.Tick.Label.Width(n)
		total += w + t.pt(12)
		widest = max(widest, w)
	}
	// The data area is about seven tenths of the image's width.
	slot := t.width * 0.7 / vg.Length(len(names))
	height := ax.Tick.Label.Height("0")
	switch {
	case total <= t.width*0.8:
	case slot >= height*2.5:
		ax.Tick.Label.Rotation = math.Pi / 6
		ax.Tick.Label.XAlign, ax.Tick.Label.YAlign = draw.XRight, draw.YTop
	default:
		ax.Tick.Label.Rotation = math.Pi / 2
		ax.Tick.Label.XAlign, ax.Tick.Label.YAlign = draw.XRight, draw.YCenter
		if slot < height*1.1 {
			size := ax.Tick.Label.Font.Size * slot / (height * 1.1)
			ax.Tick.Label.Font.Size = max(size, t.pt(5))
		}
	}
}

// boxTicks labels the boxes at x = 0, 1, ….
func boxTicks(names []string) gplot.ConstantTicks {
	ts := make(gplot.ConstantTicks, len(names))
	for i, n := range names {
		ts[i] = gplot.Tick{Value: float64(i), Label: n}
	}
	return ts
}
