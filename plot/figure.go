package plot

import (
	"bytes"
	"image"
	"image/color"
	"io"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// figure is a graph built and checked but not yet drawn: a title, panels
// stacked from top to bottom, each with its legend to its right.
type figure struct {
	theme    theme
	title    string
	subtitle string
	panels   []*panel
	// sharedX says the panels share the x axis: they must have the same
	// range, and only the bottom one shows tick labels and the axis label.
	sharedX bool
	// missing are the runs of a graph of several that it has nothing of,
	// for lack of missingWhat.
	missing     []string
	missingWhat string
}

// panel is one plot of a figure and its legend.
type panel struct {
	p      *gplot.Plot
	legend []legendEntry
	// lines are the data lines drawn in p; marks the markers of points
	// drawn without a line (a sweep's categories).
	lines []*line
	marks []*markers
	// boxes are a box plot's boxes.
	boxes *boxes
}

// legendEntry is one line of a legend: a label and what its thumbnail
// shows.
type legendEntry struct {
	label  string
	thumbs []gplot.Thumbnailer
}

// newPanel returns a panel with the theme's fonts, a light grid, and
// niceTicks on both axes.
func (t theme) newPanel() *panel {
	p := t.newPlot()
	p.X.Tick.Marker = niceTicks{n: 10}
	p.Y.Tick.Marker = niceTicks{n: 5}
	g := plotter.NewGrid()
	g.Vertical = draw.LineStyle{Color: gridColor, Width: t.pt(0.5)}
	g.Horizontal = g.Vertical
	p.Add(g)
	return &panel{p: p}
}

// draw draws l in the panel, unlisted in the legend.
func (pn *panel) draw(l *line) {
	pn.p.Add(l)
	pn.lines = append(pn.lines, l)
}

// add draws l in the panel and lists it in the legend under label.
func (pn *panel) add(label string, l *line) {
	pn.draw(l)
	pn.legend = append(pn.legend, legendEntry{label: label, thumbs: []gplot.Thumbnailer{l}})
}

// layout records what a figure drew where, so that tests can look at the
// right pixels.
type layout struct {
	panels []panelLayout
}

// panelLayout is what a panel drew.
type panelLayout struct {
	// data is the panel's data area, in pixels from the image's top left.
	data image.Rectangle
	// lines are the styles of the data lines drawn in it; marks the
	// styles of its markers.
	lines []draw.LineStyle
	marks []draw.GlyphStyle
	// legend is its legend's labels.
	legend []string
}

// write draws the figure in format f at w×h pixels and writes it to out.
func (fig *figure) write(out io.Writer, f Format, w, h int) (layout, error) {
	c, lay := fig.render(f, w, h)
	if f != SVG {
		_, err := c.WriteTo(out)
		return lay, err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return lay, err
	}
	_, err := out.Write(bytes.ReplaceAll(buf.Bytes(), []byte(svgFont), []byte(svgFontFallback)))
	return lay, err
}

// An SVG names its font, Liberation Sans, which a viewer may not have.
// Arial and Helvetica have the same metrics (Liberation Sans was drawn to
// match Arial), so naming them next keeps the layout where Liberation is
// missing.
const (
	svgFont         = "font-family:Liberation Sans;"
	svgFontFallback = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"
)

// render draws the figure on a new canvas.
func (fig *figure) render(f Format, w, h int) (vg.CanvasWriterTo, layout) {
	t := fig.theme
	c := newCanvas(f, w, h)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())

	margin := t.pt(10)
	area := draw.Crop(dc, margin, -margin, margin/2, -margin)
	width := area.Max.X - area.Min.X

	for _, head := range []struct {
		text string
		size float64
	}{{fig.title, titleSize}, {fig.subtitle, subtitleSize}} {
		if head.text == "" {
			continue
		}
		sty := t.text(head.size)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		s := fitLines(sty, head.text, width, 2)
		area.FillText(sty, vg.Point{X: area.Center().X, Y: area.Max.Y}, s)
		area.Max.Y -= sty.Height(s) + t.pt(4)
	}
	area.Max.Y -= t.pt(6)

	// The legends go in a column right of the panels, as wide as the
	// widest; a label longer than a third of the image is shortened.
	gap := t.pt(12)
	legends := make([]*gplot.Legend, len(fig.panels))
	var legendW vg.Length
	for i, pn := range fig.panels {
		if len(pn.legend) == 0 {
			continue
		}
		l := t.legend(legendSize, pn.legend, width/3)
		legends[i] = l
		legendW = max(legendW, l.Rectangle(area).Size().X)
	}
	plotArea := area
	if legendW > 0 {
		plotArea.Max.X -= legendW + gap
	}

	if fig.sharedX {
		for _, pn := range fig.panels[:len(fig.panels)-1] {
			pn.p.X.Label.Text = ""
			pn.p.X.Tick.Marker = unlabelled{pn.p.X.Tick.Marker}
		}
	}
	rows := make([][]*gplot.Plot, len(fig.panels))
	for i, pn := range fig.panels {
		rows[i] = []*gplot.Plot{pn.p}
	}
	tiles := draw.Tiles{Rows: len(rows), Cols: 1, PadY: t.pt(10)}
	cells := gplot.Align(rows, tiles, plotArea)

	var lay layout
	for i, pn := range fig.panels {
		cell := cells[i][0]
		pn.p.Draw(cell)
		dataC := pn.p.DataCanvas(cell)
		pl := panelLayout{data: pxRect(dataC.Rectangle, h)}
		for _, l := range pn.lines {
			pl.lines = append(pl.lines, l.style)
		}
		for _, m := range pn.marks {
			pl.marks = append(pl.marks, m.glyph)
		}
		for _, e := range pn.legend {
			pl.legend = append(pl.legend, e.label)
		}
		lay.panels = append(lay.panels, pl)
		if legends[i] == nil {
			continue
		}
		// The legend starts level with the top of the data area and may
		// run down into the panel's axis area; if it is longer still, its
		// text shrinks until it fits.
		avail := dataC.Max.Y - cell.Min.Y
		l := legends[i]
		for size := legendSize; l.Rectangle(area).Size().Y > avail && size > 6; {
			size *= 0.9
			l = t.legend(size, pn.legend, width/3)
		}
		lc := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: plotArea.Max.X + gap, Y: cell.Min.Y},
			Max: vg.Point{X: area.Max.X, Y: dataC.Max.Y},
		}}
		l.Draw(lc)
	}
	return c, lay
}

// legend returns a legend of the entries in the theme's style, its text
// of size points (at the default size): text after the thumbnails,
// entries from the top, labels wider than maxW wrapped onto a second line
// and shortened after it.
func (t theme) legend(size float64, entries []legendEntry, maxW vg.Length) *gplot.Legend {
	l := gplot.NewLegend()
	l.TextStyle = t.text(size)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = t.pt(30)
	l.Padding = t.pt(size / 4)
	for _, e := range entries {
		l.Add(fitLines(l.TextStyle, e.label, maxW, 2), e.thumbs...)
	}
	return &l
}

// fitLines returns s wrapped at spaces onto at most n lines no wider than
// w in style sty, the last shortened with an ellipsis after its last
// whole word if the text goes on; a word wider than w on its own is cut.
// Labels are names (runs' titles, variables' values), which a cut through
// a word would turn into another name.
func fitLines(sty text.Style, s string, w vg.Length, n int) string {
	if sty.Width(s) <= w {
		return s
	}
	words := strings.Fields(s)
	var lines []string
	for len(words) > 0 && len(lines) < n {
		k := 1
		for k < len(words) && sty.Width(strings.Join(words[:k+1], " ")) <= w {
			k++
		}
		line := strings.Join(words[:k], " ")
		words = words[k:]
		if len(lines) == n-1 && len(words) > 0 {
			line = ellipsis(sty, line, w)
		} else if sty.Width(line) > w {
			line = cutWord(sty, line, w)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// ellipsis ends line with "…", dropping its last words until it fits in
// w; a first word that does not fit even alone is cut.
func ellipsis(sty text.Style, line string, w vg.Length) string {
	words := strings.Fields(line)
	for k := len(words); k > 0; k-- {
		if t := strings.Join(words[:k], " ") + " …"; sty.Width(t) <= w {
			return t
		}
	}
	return cutWord(sty, line, w)
}

// cutWord returns s cut to fit in w with an ellipsis: the last resort for
// a single word too wide for the space.
func cutWord(sty text.Style, s string, w vg.Length) string {
	r := []rune(s)
	for len(r) > 1 {
		r = r[:len(r)-1]
		if t := string(r) + "…"; sty.Width(t) <= w {
			return t
		}
	}
	return "…"
}

// pxRect converts a rectangle on the canvas (points from the bottom left)
// to pixels from the top left of an image h pixels high.
func pxRect(r vg.Rectangle, h int) image.Rectangle {
	px := func(l vg.Length) int { return int(l.Dots(DPI) + 0.5) }
	return image.Rect(px(r.Min.X), h-px(r.Max.Y), px(r.Max.X), h-px(r.Min.Y))
}
