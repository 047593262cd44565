package plot

import (
	"fmt"
	"image/color"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette is the colours lines take, in order. They were chosen so that
// the luma of any two differs by at least 0.1 (a tenth of the way from
// black to white) under both weightings greyscale conversions use, Rec. 709
// (0.2126 R′ + 0.7152 G′ + 0.0722 B′) and Rec. 601 (0.299 R′ + 0.587 G′ +
// 0.114 B′), so that lines stay apart when a graph is printed in grey; and
// no luma is above 0.66, so that every line stands out from the white
// background. The hues (blue, orange, maroon, lavender, green, black) also
// stay apart for the common colour-vision deficiencies. The first colours
// are the furthest apart in grey, because most graphs have few lines.
// TestPaletteSurvivesGreyscale checks these claims.
var palette = []color.RGBA{
	{0x24, 0x71, 0xa8, 0xff}, // blue, luma 0.395 (709) / 0.377 (601)
	{0xf3, 0x9b, 0x20, 0xff}, // orange, 0.646 / 0.656
	{0x52, 0x0f, 0x14, 0xff}, // maroon, 0.116 / 0.140
	{0x8a, 0x78, 0xe2, 0xff}, // lavender, 0.516 / 0.539
	{0x1d, 0x58, 0x22, 0xff}, // dark green, 0.281 / 0.252
	{0x00, 0x00, 0x00, 0xff}, // black, 0 / 0
}

// Palette returns the colours lines take, in order, as CSS colours
// ("#2471a8"), so that graphs drawn elsewhere (the report's interactive
// ones) colour their lines as these do.
func Palette() []string {
	out := make([]string, len(palette))
	for i, c := range palette {
		out[i] = fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
	}
	return out
}

// dashes are the dash patterns lines take, in points at the default size:
// solid, dashed, dotted, dash-dot and dash-dot-dot. Their count is prime
// to the palette's, so line i's pair (palette[i%6], dashes[i%5]) repeats
// only after 30 lines, and two lines of one colour always differ in dash.
var dashes = [][]float64{
	nil,
	{6, 3},
	{1.5, 2.5},
	{7, 2.5, 1.5, 2.5},
	{7, 2.5, 1.5, 2.5, 1.5, 2.5},
}

// Line widths in points at the default size: a series, and an aggregate
// (a run's average over its flows), drawn wider so it reads as the
// summary of the thinner lines around it.
const (
	lineWidth      = 1.5
	aggregateWidth = 3
)

// theme holds the sizes of one graph's text and lines, scaled with the
// image: a graph of half the default size is a half-size copy.
type theme struct {
	scale float64
	// width is the image's width.
	width vg.Length
}

func newTheme(w, h int) theme {
	s := min(float64(w)/DefaultWidth, float64(h)/DefaultHeight)
	return theme{scale: min(max(s, 0.5), 3), width: pxToPt(w)}
}

// pt returns v points at the default size, scaled.
func (t theme) pt(v float64) vg.Length { return vg.Points(v * t.scale) }

// Font sizes in points at the default size.
const (
	titleSize    = 15
	subtitleSize = 10.5
	labelSize    = 12
	tickSize     = 10.5
	legendSize   = 10.5
)

// sans is the typeface of every text: Liberation Sans ships with gonum,
// and a sans-serif face stays legible at small sizes.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// text returns a black text style of size points (at the default size).
func (t theme) text(size float64) text.Style {
	return text.Style{
		Color:   color.Black,
		Font:    font.From(sans, t.pt(size)),
		Handler: gplot.DefaultTextHandler,
	}
}

// slot is a line's place in the palette and in the dash patterns.
type slot struct{ colour, dash int }

// lineKey names a line of a graph by the group it belongs to (a run, a
// flow) and its member number in the group (its series in the run, the
// flow's end).
type lineKey struct{ group, member int }

// assignSlots gives each line its colour and dash. When the lines come in
// groups of several (the ping series of each of several runs, the two
// ends of each flow), the colour tells the group and the dash the member,
// so that a reader follows a run or a flow by its colour; otherwise line i
// takes palette[i%6] and dashes[i%5], so that colour and dash both change
// from line to line. Either way no two of the first 30 lines look alike,
// and two lines of one colour differ in dash. The groups take colours in
// the order they first appear.
func assignSlots(keys []lineKey) []slot {
	rank := map[int]int{}
	members := 0
	for _, k := range keys {
		if _, ok := rank[k.group]; !ok {
			rank[k.group] = len(rank)
		}
		members = max(members, k.member+1)
	}
	c, d := len(palette), len(dashes)
	groups := len(rank)
	grouped := groups >= 2 && members >= 2 && (groups+c-1)/c*members <= d
	out := make([]slot, len(keys))
	for i, k := range keys {
		if grouped {
			g := rank[k.group]
			out[i] = slot{colour: g % c, dash: g/c*members + k.member}
		} else {
			out[i] = slot{colour: i % c, dash: i % d}
		}
	}
	return out
}

// line returns the style of a line in slot s; an aggregate is wider.
func (t theme) line(s slot, aggregate bool) draw.LineStyle {
	w := lineWidth
	if aggregate {
		w = aggregateWidth
	}
	var ds []vg.Length
	for _, d := range dashes[s.dash%len(dashes)] {
		ds = append(ds, t.pt(d*w/lineWidth))
	}
	return draw.LineStyle{Color: palette[s.colour%len(palette)], Width: t.pt(w), Dashes: ds}
}

// crossGlyph is a diagonal cross drawn with strokes as wide as a line's,
// so that it stays visible at the foot of a panel (gonum's CrossGlyph is
// drawn half a point wide).
type crossGlyph struct{ width vg.Length }

// DrawGlyph implements gonum's draw.GlyphDrawer.
func (g crossGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	ls := draw.LineStyle{Color: sty.Color, Width: g.width}
	c.StrokeLine2(ls, pt.X-r, pt.Y-r, pt.X+r, pt.Y+r)
	c.StrokeLine2(ls, pt.X-r, pt.Y+r, pt.X+r, pt.Y-r)
}

// Colours of what is not data: the load period's marks and the grid.
var (
	markColor = color.RGBA{0x70, 0x70, 0x70, 0xff}
	gridColor = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
)

// newPlot returns an empty gonum plot in the theme's fonts, with a light
// grid behind the data.
func (t theme) newPlot() *gplot.Plot {
	p := gplot.New()
	p.Title.TextStyle = t.text(labelSize)
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle = t.text(labelSize)
		a.Tick.Label = t.text(tickSize)
		a.Label.Padding = t.pt(4)
		a.Padding = t.pt(4)
		a.LineStyle.Width = t.pt(0.75)
		a.Tick.LineStyle.Width = t.pt(0.75)
		a.Tick.Length = t.pt(5)
	}
	p.X.Label.TextStyle.XAlign, p.X.Label.TextStyle.YAlign = draw.XCenter, draw.YBottom
	p.Y.Label.TextStyle.XAlign, p.Y.Label.TextStyle.YAlign = draw.XCenter, draw.YBottom
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XCenter, draw.YTop
	p.Y.Tick.Label.XAlign, p.Y.Tick.Label.YAlign = draw.XRight, draw.YCenter
	return p
}
