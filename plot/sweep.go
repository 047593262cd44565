package plot

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Sweep is a statistic against a swept variable: one line per group (a
// transport, a queue discipline, a congestion control), each point with an
// error bar, as a table of an experiment would show it. The x axis is
// numeric (points at X) or, when the points have a Category, categorical
// ("10ms", "30ms", … in the order of Categories).
type Sweep struct {
	// Title is the graph's title; Options.Title replaces it.
	Title string
	// XLabel and YLabel label the axes, units included: "One-way delay
	// (ms)", "Mean TCP goodput (Mbit/s)".
	XLabel, YLabel string
	// Categories orders a categorical x axis; empty means the order in
	// which the categories first appear, group by group. Every point's
	// Category must be among them.
	Categories []string
	// XLog draws a numeric x axis on a logarithmic scale, for variables
	// swept by factors (rates of 1, 2, 5 and 10 Mbit/s); every X must then
	// be positive.
	XLog bool
	// Groups are the lines, drawn in order.
	Groups []SweepGroup
}

// SweepGroup is one line of a Sweep.
type SweepGroup struct {
	// Name labels the line in the legend.
	Name string
	// Points are the line's points, in any order: a numeric axis sorts
	// them by X, a categorical one by category.
	Points []SweepPoint
}

// SweepPoint is one point of a SweepGroup: the statistic at one value of
// the swept variable, with its spread (the range over repetitions, or a
// confidence interval: the caller says which in YLabel or Title).
type SweepPoint struct {
	// X is the variable's value on a numeric axis; ignored on a
	// categorical one.
	X float64
	// Category is the variable's value on a categorical axis. Either every
	// point of a Sweep has one, or none has.
	Category string
	// Mean is the statistic; NaN for a case without a value (one that
	// failed or did not run), where the line breaks.
	Mean float64
	// Lo and Hi are the ends of the error bar, Lo ≤ Mean ≤ Hi; both equal
	// to Mean, or both NaN, for a point without one.
	Lo, Hi float64
}

// DrawSweep renders the sweep and writes it to w in o's format and size
// (Options.Labels and Series do not apply). Nothing is written when it
// returns an error, which names the group and point at fault.
func DrawSweep(w io.Writer, s Sweep, o Options) error {
	_, err := drawSweep(w, s, o)
	return err
}

// drawSweep is DrawSweep, returning the layout for tests.
func drawSweep(w io.Writer, s Sweep, o Options) (layout, error) {
	f, err := o.format()
	if err != nil {
		return layout{}, err
	}
	wpx, hpx, err := o.size()
	if err != nil {
		return layout{}, err
	}
	fig, err := sweepFigure(s, newTheme(wpx, hpx))
	if err != nil {
		return layout{}, err
	}
	if o.Title != "" {
		fig.title = o.Title
	}
	return fig.write(w, f, wpx, hpx)
}

// sweepCategories returns the sweep's categories in axis order, or nil for
// a numeric axis, and checks that every point is placed the same way.
func sweepCategories(s Sweep) ([]string, error) {
	var withCat, without int
	var order []string
	for _, g := range s.Groups {
		for _, p := range g.Points {
			if p.Category == "" {
				without++
				continue
			}
			withCat++
			if !slices.Contains(order, p.Category) {
				order = append(order, p.Category)
			}
		}
	}
	switch {
	case withCat > 0 && without > 0:
		return nil, fmt.Errorf("plot: sweep: %d points have a category and %d have none: give every point a Category (categorical x axis) or none (numeric X)", withCat, without)
	case withCat == 0:
		if len(s.Categories) > 0 {
			return nil, fmt.Errorf("plot: sweep: Categories are given but no point has a Category: set each point's Category, or drop Categories for a numeric x axis")
		}
		return nil, nil
	case s.XLog:
		return nil, fmt.Errorf("plot: sweep: XLog needs a numeric x axis, and the points have categories: drop XLog or give numeric X values")
	case len(s.Categories) == 0:
		return order, nil
	}
	for _, c := range order {
		if !slices.Contains(s.Categories, c) {
			return nil, fmt.Errorf("plot: sweep: category %q is not in Categories %q: add it there", c, s.Categories)
		}
	}
	return s.Categories, nil
}

func sweepFigure(s Sweep, t theme) (*figure, error) {
	cats, err := sweepCategories(s)
	if err != nil {
		return nil, err
	}
	pn := t.newPanel()
	var xs, ys []float64
	// On a categorical axis the groups' points are spread a little around
	// each category, so that their error bars do not hide each other.
	dodge := 0.0
	if cats != nil && len(s.Groups) > 1 {
		dodge = min(0.08, 0.5/float64(len(s.Groups)-1))
	}
	keys := make([]lineKey, len(s.Groups))
	for gi := range keys {
		keys[gi] = lineKey{group: gi}
	}
	slots := assignSlots(keys)
	for gi, g := range s.Groups {
		var pts []xy
		var bars []errBar
		for _, p := range g.Points {
			x := p.X
			if cats != nil {
				x = float64(slices.Index(cats, p.Category)) + dodge*(float64(gi)-float64(len(s.Groups)-1)/2)
			}
			if err := checkSweepPoint(s, g, p, x); err != nil {
				return nil, err
			}
			pts = append(pts, xy{x, p.Mean})
			if !math.IsNaN(p.Mean) {
				xs, ys = append(xs, x), append(ys, p.Mean)
			}
			if !math.IsNaN(p.Lo) && (p.Lo != p.Mean || p.Hi != p.Mean) {
				bars = append(bars, errBar{x, p.Lo, p.Hi})
				ys = append(ys, p.Lo, p.Hi)
			}
		}
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		style := t.line(slots[gi], false)
		l := newLine(pts, style)
		glyph := draw.GlyphStyle{Color: style.Color, Radius: t.pt(3.5), Shape: glyphShapes[gi%len(glyphShapes)]}
		m := &markers{pts: pts, glyph: glyph}
		eb := &errBars{bars: bars, style: draw.LineStyle{Color: style.Color, Width: t.pt(1.25)}, cap: t.pt(8)}
		pn.p.Add(eb)
		pn.draw(l)
		pn.p.Add(m)
		pn.legend = append(pn.legend, legendEntry{label: g.Name, thumbs: []gplot.Thumbnailer{l, m}})
	}
	if len(xs) == 0 {
		return nil, fmt.Errorf("plot: sweep has nothing to draw: give at least one group with a point whose Mean is a number")
	}
	allNonNeg := !slices.ContainsFunc(ys, func(v float64) bool { return v < 0 })
	pn.p.Y.Min, pn.p.Y.Max = fullRange(ys, allNonNeg)
	pn.p.Y.Label.Text = s.YLabel
	pn.p.X.Label.Text = s.XLabel
	switch {
	case cats != nil:
		ticks := make(gplot.ConstantTicks, len(cats))
		for i, c := range cats {
			ticks[i] = gplot.Tick{Value: float64(i), Label: c}
		}
		pn.p.X.Tick.Marker = ticks
		pn.p.X.Min, pn.p.X.Max = -0.5, float64(len(cats))-0.5
	case s.XLog:
		pn.p.X.Scale = gplot.LogScale{}
		pn.p.X.Tick.Marker = gplot.LogTicks{Prec: -1}
		lo, hi := slices.Min(xs), slices.Max(xs)
		f := math.Pow(hi/lo, 0.05)
		if hi == lo {
			f = 2
		}
		pn.p.X.Min, pn.p.X.Max = lo/f, hi*f
	default:
		pn.p.X.Min, pn.p.X.Max = pad(slices.Min(xs), slices.Max(xs), 0.05, false)
	}
	return &figure{theme: t, title: s.Title, panels: []*panel{pn}}, nil
}

// checkSweepPoint refuses a point that cannot be drawn; x is where it
// goes on the axis.
func checkSweepPoint(s Sweep, g SweepGroup, p SweepPoint, x float64) error {
	where := fmt.Sprintf("plot: sweep: group %q, point at %s", g.Name, pointName(p))
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return fmt.Errorf("%s: X is not a number: give a finite X", where)
	case s.XLog && x <= 0:
		return fmt.Errorf("%s: a logarithmic x axis needs X > 0: drop XLog or leave the point out", where)
	case math.IsInf(p.Mean, 0) || math.IsInf(p.Lo, 0) || math.IsInf(p.Hi, 0):
		return fmt.Errorf("%s: Mean, Lo and Hi must be finite (or NaN for no value)", where)
	case math.IsNaN(p.Lo) != math.IsNaN(p.Hi):
		return fmt.Errorf("%s: Lo is %v and Hi %v: give both ends of the error bar, or neither (NaN)", where, p.Lo, p.Hi)
	case !math.IsNaN(p.Lo) && math.IsNaN(p.Mean):
		return fmt.Errorf("%s: an error bar from %v to %v around no Mean: give the Mean, or NaN for Lo and Hi", where, p.Lo, p.Hi)
	case !math.IsNaN(p.Lo) && !(p.Lo <= p.Mean && p.Mean <= p.Hi):
		return fmt.Errorf("%s: Mean %v is not between Lo %v and Hi %v: Lo ≤ Mean ≤ Hi", where, p.Mean, p.Lo, p.Hi)
	}
	return nil
}

func pointName(p SweepPoint) string {
	if p.Category != "" {
		return fmt.Sprintf("%q", p.Category)
	}
	return fmt.Sprintf("X=%v", p.X)
}

// errBar is one vertical error bar.
type errBar struct{ x, lo, hi float64 }

// errBars draws vertical error bars with caps.
type errBars struct {
	bars  []errBar
	style draw.LineStyle
	cap   vg.Length
}

// Plot implements gonum's plot.Plotter.
func (e *errBars) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, b := range e.bars {
		x, lo, hi := trX(b.x), trY(b.lo), trY(b.hi)
		c.StrokeLines(e.style, c.ClipLinesXY(
			[]vg.Point{{X: x, Y: lo}, {X: x, Y: hi}},
			[]vg.Point{{X: x - e.cap/2, Y: lo}, {X: x + e.cap/2, Y: lo}},
			[]vg.Point{{X: x - e.cap/2, Y: hi}, {X: x + e.cap/2, Y: hi}},
		)...)
	}
}

// markers draws a glyph at each point whose y is a number.
type markers struct {
	pts   []xy
	glyph draw.GlyphStyle
}

// Plot implements gonum's plot.Plotter.
func (m *markers) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, q := range m.pts {
		if math.IsNaN(q.y) {
			continue
		}
		if pt := (vg.Point{X: trX(q.x), Y: trY(q.y)}); c.Contains(pt) {
			c.DrawGlyph(m.glyph, pt)
		}
	}
}

// Thumbnail implements gonum's plot.Thumbnailer.
func (m *markers) Thumbnail(c *draw.Canvas) { c.DrawGlyph(m.glyph, c.Center()) }
