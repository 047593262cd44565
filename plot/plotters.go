package plot

import (
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// xy is one point of a line in data coordinates.
type xy struct{ x, y float64 }

// line is one series drawn as a line. A lost probe (a NaN value) breaks
// it: the segments on either side are not joined, and a point with no
// neighbour in its segment is drawn as a dot, so that it does not vanish.
//
// Unlike gonum's plotter.Line it reports no glyph boxes, so the data area
// of a panel does not depend on where its lines touch the edges, and
// stacked panels stay aligned on their shared time axis.
type line struct {
	segs  [][]xy
	style draw.LineStyle
}

// newLine returns a line through pts, broken at points whose y is NaN.
func newLine(pts []xy, style draw.LineStyle) *line {
	l := &line{style: style}
	var seg []xy
	for _, p := range pts {
		if math.IsNaN(p.y) || math.IsInf(p.y, 0) || math.IsNaN(p.x) {
			if len(seg) > 0 {
				l.segs = append(l.segs, seg)
				seg = nil
			}
			continue
		}
		seg = append(seg, p)
	}
	if len(seg) > 0 {
		l.segs = append(l.segs, seg)
	}
	return l
}

// empty reports whether the line has no point to draw.
func (l *line) empty() bool { return len(l.segs) == 0 }

// Plot implements gonum's plot.Plotter.
func (l *line) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	dot := draw.GlyphStyle{Color: l.style.Color, Radius: l.style.Width, Shape: draw.CircleGlyph{}}
	for _, seg := range l.segs {
		if len(seg) == 1 {
			pt := vg.Point{X: trX(seg[0].x), Y: trY(seg[0].y)}
			if c.Contains(pt) {
				c.DrawGlyph(dot, pt)
			}
			continue
		}
		pts := make([]vg.Point, len(seg))
		for i, q := range seg {
			pts[i] = vg.Point{X: trX(q.x), Y: trY(q.y)}
		}
		c.StrokeLines(l.style, c.ClipLinesXY(pts)...)
	}
}

// DataRange implements gonum's plot.DataRanger.
func (l *line) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, seg := range l.segs {
		for _, q := range seg {
			xmin, xmax = min(xmin, q.x), max(xmax, q.x)
			ymin, ymax = min(ymin, q.y), max(ymax, q.y)
		}
	}
	return xmin, xmax, ymin, ymax
}

// Thumbnail implements gonum's plot.Thumbnailer: a stretch of the line.
func (l *line) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(l.style, c.Min.X, y, c.Max.X, y)
}

// values returns the y values of the line's points.
func (l *line) values() []float64 {
	var vs []float64
	for _, seg := range l.segs {
		for _, q := range seg {
			vs = append(vs, q.y)
		}
	}
	return vs
}

// vmark is a vertical line across the data area at x: the start or end of
// a load period. It does not widen the axes.
type vmark struct {
	x     float64
	style draw.LineStyle
}

// Plot implements gonum's plot.Plotter.
func (m vmark) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(m.x)
	if x < c.Min.X || x > c.Max.X {
		return
	}
	c.StrokeLine2(m.style, x, c.Min.Y, x, c.Max.Y)
}

// Thumbnail implements gonum's plot.Thumbnailer: a short vertical stroke.
func (m vmark) Thumbnail(c *draw.Canvas) {
	x := c.Center().X
	c.StrokeLine2(m.style, x, c.Min.Y, x, c.Max.Y)
}

// footMarks are glyphs along the foot of the data area at the given x
// values: the times of lost probes, which have no y value. They do not
// widen the axes.
type footMarks struct {
	xs    []float64
	glyph draw.GlyphStyle
}

// Plot implements gonum's plot.Plotter.
func (m footMarks) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, _ := p.Transforms(&c)
	y := c.Min.Y + m.glyph.Radius*2
	for _, x := range m.xs {
		pt := vg.Point{X: trX(x), Y: y}
		if c.ContainsX(pt.X) {
			c.DrawGlyph(m.glyph, pt)
		}
	}
}

// Thumbnail implements gonum's plot.Thumbnailer: one glyph.
func (m footMarks) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(m.glyph, c.Center())
}

// niceTicks places about n major ticks at round values (1, 2, 2.5 or 5
// times a power of ten) with a minor tick between each two, and labels
// them with no more decimals than the step needs. gonum's default aims at
// three ticks, too few to read a value off a wide time axis.
type niceTicks struct{ n int }

// Ticks implements gonum's plot.Ticker.
func (t niceTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return nil
	}
	raw := (hi - lo) / float64(max(t.n, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	decimals := 0
	if step < 1 {
		decimals = int(math.Ceil(-math.Log10(step) - 1e-9))
		if math.Abs(step*math.Pow(10, float64(decimals))-math.Round(step*math.Pow(10, float64(decimals)))) > 1e-9 {
			decimals++ // 0.25 needs two decimals, not one
		}
	} else if step != math.Trunc(step) {
		decimals = 1 // 2.5
	}
	var ticks []gplot.Tick
	first := math.Ceil(lo/step-1e-9) - 1
	for k := first; ; k++ {
		major := k * step
		if major > hi+step*1e-9 {
			break
		}
		if major >= lo-step*1e-9 {
			v := major
			if math.Abs(v) < step*1e-9 {
				v = 0 // no "-0"
			}
			ticks = append(ticks, gplot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
		}
		if minor := major + step/2; minor >= lo && minor <= hi {
			ticks = append(ticks, gplot.Tick{Value: minor})
		}
	}
	return ticks
}

// unlabelled keeps a ticker's ticks and drops their labels: the upper
// panels of a graph whose panels share the time axis at the bottom.
type unlabelled struct{ gplot.Ticker }

// Ticks implements gonum's plot.Ticker.
func (u unlabelled) Ticks(lo, hi float64) []gplot.Tick {
	ts := u.Ticker.Ticks(lo, hi)
	for i := range ts {
		ts[i].Label = ""
	}
	return ts
}
