package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Sweep is a statistic against a swept variable, as a table of an
// experiment shows it: one group per column (a transport, a queue
// discipline, a congestion control), each point with an error bar. A
// numeric variable (a delay, a rate: points at X) is drawn on a numeric
// axis in proportion, ticked at the values swept, with a line through each
// group's points; a categorical one (points with a Category) as groups of
// points side by side at each category, never joined, since there is
// nothing between two categories.
type Sweep struct {
	// Title is the graph's title; Options.Title replaces it.
	Title string
	// XLabel and YLabel label the axes ("delay", "mean of TCP upload");
	// XUnit and YUnit are their units ("ms", "Mbits/s"), shown after the
	// label unless it has them already ("Ping (ms) ICMP").
	XLabel, XUnit string
	YLabel, YUnit string
	// Spread says what the error bars show ("min–max across
	// repetitions"), for the subtitle.
	Spread string
	// Note is added to the subtitle: what the caller must say of the
	// figures (runs left out).
	Note string
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

// SweepGroup is one group of a Sweep.
type SweepGroup struct {
	// Name labels the group in the legend; a reference group's names its
	// source.
	Name string
	// Reference says the points are published figures to compare with
	// (a paper's, a seed's), drawn as hollow markers (and on a numeric
	// axis a line in a dash of their own), without error bars. Beside
	// names the group they are figures for, whose colour and marker
	// shape they take; empty for none.
	Reference bool
	Beside    string
	// Points are the group's points, in any order: a numeric axis sorts
	// them by X, a categorical one by category.
	Points []SweepPoint
}

// SweepPoint is one point of a SweepGroup: the statistic at one value of
// the swept variable, with its spread (the range over repetitions, or a
// confidence interval: Sweep.Spread says which).
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
	// to Mean, or both NaN, for a point without one. A bar that reaches
	// below zero for a quantity that cannot (YUnit a rate, a time, a size
	// or a count) is cut at zero, and the subtitle says so.
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
	f, wpx, hpx, err := o.image()
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

// sweepKeys gives each group its colour and dash: a reference group takes
// the colour of the group it is Beside, in a dash of its own.
func sweepKeys(s Sweep) ([]lineKey, error) {
	keys := make([]lineKey, len(s.Groups))
	for gi, g := range s.Groups {
		keys[gi] = lineKey{group: gi}
		if g.Beside == "" {
			continue
		}
		of := slices.IndexFunc(s.Groups, func(o SweepGroup) bool { return !o.Reference && o.Name == g.Beside })
		if !g.Reference || of < 0 {
			return nil, fmt.Errorf("plot: sweep: group %q is Beside %q, which is no group of the sweep's own: only a Reference group is beside one, and it names it", g.Name, g.Beside)
		}
		keys[gi] = lineKey{group: of, member: 1}
	}
	return keys, nil
}

// sweepShapes are the markers of a sweep's groups, one per group in turn,
// so that points are told apart by shape as well as colour; a reference
// group draws the shape of the group it is beside, hollow.
var sweepShapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}

// hollow draws a filled shape as an outline width wide: the shape, then the
// same shape smaller in white. gonum's outlined glyphs are drawn half a
// point wide, too thin to tell from the filled ones in print.
type hollow struct {
	shape draw.GlyphDrawer
	width vg.Length
}

// DrawGlyph implements gonum's draw.GlyphDrawer.
func (h hollow) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	// The canvas is in the glyph's colour (draw.Canvas.DrawGlyph sets it
	// before calling a shape); the inside is drawn over in white.
	h.shape.DrawGlyph(c, sty, pt)
	inner := sty
	inner.Radius = sty.Radius - h.width
	if inner.Radius > 0 {
		c.SetColor(color.White)
		h.shape.DrawGlyph(c, inner, pt)
		c.SetColor(sty.Color)
	}
}

func sweepFigure(s Sweep, t theme) (*figure, error) {
	cats, err := sweepCategories(s)
	if err != nil {
		return nil, err
	}
	keys, err := sweepKeys(s)
	if err != nil {
		return nil, err
	}
	bounded := boundedBelow(s.YUnit)
	floor := bounded != ""
	pn := t.newPanel()
	var xs, ys []float64
	// On a categorical axis the groups' points stand side by side at each
	// category, so that their error bars do not hide each other.
	dodge := 0.0
	if cats != nil && len(s.Groups) > 1 {
		dodge = min(0.15, 0.7/float64(len(s.Groups)-1))
	}
	slots := assignSlots(keys)
	cut, bars := 0, 0
	for gi, g := range s.Groups {
		var pts []xy
		var eb []errBar
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
			if g.Reference || math.IsNaN(p.Lo) || (p.Lo == p.Mean && p.Hi == p.Mean) {
				continue
			}
			b := errBar{x: x, lo: p.Lo, hi: p.Hi}
			if floor && b.lo < 0 {
				b.lo, b.cut = 0, true
				cut++
			}
			bars++
			eb = append(eb, b)
			ys = append(ys, b.lo, b.hi)
		}
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		style := t.line(slots[gi], false)
		shape := sweepShapes[keys[gi].group%len(sweepShapes)]
		radius := t.pt(3.5)
		if g.Reference {
			shape, radius = hollow{shape: shape, width: t.pt(1.5)}, t.pt(4.5)
		}
		m := &markers{pts: pts, glyph: draw.GlyphStyle{Color: style.Color, Radius: radius, Shape: shape}}
		thumbs := []gplot.Thumbnailer{m}
		if len(eb) > 0 {
			pn.p.Add(&errBars{bars: eb, style: draw.LineStyle{Color: style.Color, Width: t.pt(1.25)}, cap: t.pt(8)})
		}
		if cats == nil {
			l := newLine(pts, style)
			pn.draw(l)
			thumbs = []gplot.Thumbnailer{l, m}
		}
		pn.p.Add(m)
		pn.marks = append(pn.marks, m)
		pn.legend = append(pn.legend, legendEntry{label: g.Name, thumbs: thumbs})
	}
	if len(xs) == 0 {
		return nil, fmt.Errorf("plot: sweep has nothing to draw: give at least one group with a point whose Mean is a number")
	}
	allNonNeg := !slices.ContainsFunc(ys, func(v float64) bool { return v < 0 })
	pn.p.Y.Min, pn.p.Y.Max = fullRange(ys, floor || allNonNeg)
	pn.p.Y.Label.Text = withUnit(s.YLabel, s.YUnit)
	pn.p.X.Label.Text = withUnit(s.XLabel, s.XUnit)
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
		lo, hi := slices.Min(xs), slices.Max(xs)
		f := math.Pow(hi/lo, 0.05)
		if hi == lo {
			f = 2
		}
		pn.p.X.Min, pn.p.X.Max = lo/f, hi*f
	default:
		pn.p.X.Min, pn.p.X.Max = pad(slices.Min(xs), slices.Max(xs), 0.05, false)
	}
	if cats == nil {
		pn.p.X.Tick.Marker = sweptTicks(s, pn.p.X, t)
	}
	fig := &figure{theme: t, title: s.Title, panels: []*panel{pn}}
	var sub []string
	if bars > 0 && s.Spread != "" {
		sub = append(sub, "error bars: "+s.Spread)
	}
	if cut > 0 {
		sub = append(sub, fmt.Sprintf("%s cut at 0: %s cannot be negative", plural(cut, "error bar"), bounded))
	}
	if s.Note != "" {
		sub = append(sub, s.Note)
	}
	fig.subtitle = strings.Join(sub, "  ·  ")
	return fig, nil
}

// sweptTicks ticks a numeric x axis at the values swept, so that a reader
// sees where the measurements are. A label that would run into the one
// before it is left out (its tick stays); the axis' ends keep theirs.
func sweptTicks(s Sweep, ax gplot.Axis, t theme) gplot.ConstantTicks {
	var vals []float64
	for _, g := range s.Groups {
		for _, p := range g.Points {
			if !slices.Contains(vals, p.X) {
				vals = append(vals, p.X)
			}
		}
	}
	sort.Float64s(vals)
	// Where each value falls along the data area, as a share of it.
	pos := func(v float64) float64 { return ax.Norm(v) }
	// The data area takes about seven tenths of the image's width (the
	// legend and the y axis the rest); a little less is assumed, so that
	// labels are left out rather than overlap.
	width := t.width * 0.65
	sty := t.text(tickSize)
	gap := t.pt(6)
	ticks := make(gplot.ConstantTicks, len(vals))
	for i, v := range vals {
		ticks[i] = gplot.Tick{Value: v, Label: tickLabel(v)}
	}
	half := func(i int) vg.Length { return sty.Width(ticks[i].Label) / 2 }
	at := func(i int) vg.Length { return width * vg.Length(pos(ticks[i].Value)) }
	last := -1
	for i := range ticks {
		if last >= 0 && at(i)-half(i) < at(last)+half(last)+gap {
			if i != len(ticks)-1 {
				ticks[i].Label = ""
				continue
			}
			ticks[last].Label = "" // the last value is labelled before its neighbour
		}
		last = i
	}
	return ticks
}

// tickLabel writes a swept value as short as it reads: 10, 0.5, 1.25e+06.
func tickLabel(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e7 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
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

// errBar is one vertical error bar; cut says its foot was raised to the
// least value the quantity can take, and is drawn without a cap.
type errBar struct {
	x, lo, hi float64
	cut       bool
}

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
		lines := [][]vg.Point{
			{{X: x, Y: lo}, {X: x, Y: hi}},
			{{X: x - e.cap/2, Y: hi}, {X: x + e.cap/2, Y: hi}},
		}
		if !b.cut {
			lines = append(lines, []vg.Point{{X: x - e.cap/2, Y: lo}, {X: x + e.cap/2, Y: lo}})
		}
		c.StrokeLines(e.style, c.ClipLinesXY(lines...)...)
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
