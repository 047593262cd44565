// Package svgtest reads back the SVG images package plot writes, so that
// tests can check what a graph shows, not only that it was drawn: its
// texts and its straight strokes (axes, ticks, grid lines, lines, error
// bars) where they are. It reads the subset of SVG that gonum's vgsvg
// writes. It is for tests only.
package svgtest

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Image is what an SVG shows, in points from its bottom left corner (as
// gonum draws, the y axis pointing up).
type Image struct {
	Texts []Text
	Paths []Path
}

// Text is a text drawn at X, Y: the left end of its baseline.
type Text struct {
	X, Y float64
	S    string
}

// Path is a path made of straight segments only (a curve, such as a
// round marker, is left out), with its stroke and fill colours as the SVG
// writes them ("#2471A8"; "" for none) and its stroke's width.
type Path struct {
	Points       [][2]float64
	Stroke, Fill string
	Width        float64
	Closed       bool
}

var (
	numRE   = regexp.MustCompile(`[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?`)
	styleRE = regexp.MustCompile(`(stroke|fill|stroke-width):([^;]+)`)
)

// StartElements returns the start tags of the SVG in data in document
// order, its root first, or an error if data is not well-formed XML.
func StartElements(data []byte) ([]xml.StartElement, error) {
	var elems []xml.StartElement
	err := eachToken(data, func(tok xml.Token) {
		if se, ok := tok.(xml.StartElement); ok {
			elems = append(elems, se.Copy())
		}
	})
	return elems, err
}

// Read reads an SVG as gonum's vgsvg writes it.
func Read(data []byte) (*Image, error) {
	img := &Image{}
	var inText *Text
	err := eachToken(data, func(tok xml.Token) {
		switch t := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range t.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch t.Name.Local {
			case "text":
				x, _ := strconv.ParseFloat(attr["x"], 64)
				y, _ := strconv.ParseFloat(attr["y"], 64)
				// Texts are drawn flipped back (scale(1, -1)): their y is
				// the negative of the height above the bottom.
				inText = &Text{X: x, Y: -y}
			case "path":
				if p, ok := readPath(attr["d"], attr["style"]); ok {
					img.Paths = append(img.Paths, p)
				}
			}
		case xml.CharData:
			if inText != nil {
				inText.S += string(t)
			}
		case xml.EndElement:
			if t.Name.Local == "text" && inText != nil {
				img.Texts = append(img.Texts, *inText)
				inText = nil
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return img, nil
}

// eachToken hands visit the tokens of data in document order, each valid
// until visit returns, and returns an error if data is not well-formed
// XML.
func eachToken(data []byte, visit func(xml.Token)) error {
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("svgtest: not well-formed: %v", err)
		}
		visit(tok)
	}
}

func readPath(d, style string) (Path, bool) {
	var p Path
	for _, m := range styleRE.FindAllStringSubmatch(style, -1) {
		switch m[1] {
		case "stroke":
			p.Stroke = m[2]
		case "fill":
			if m[2] != "none" {
				p.Fill = m[2]
			}
		case "stroke-width":
			p.Width, _ = strconv.ParseFloat(m[2], 64)
		}
	}
	for i := 0; i < len(d); {
		c := d[i]
		switch c {
		case 'M', 'L':
			j := i + 1
			for j < len(d) && !strings.ContainsRune("MLZAQC", rune(d[j])) {
				j++
			}
			nums := numRE.FindAllString(d[i+1:j], -1)
			if len(nums) != 2 {
				return Path{}, false
			}
			x, _ := strconv.ParseFloat(nums[0], 64)
			y, _ := strconv.ParseFloat(nums[1], 64)
			p.Points = append(p.Points, [2]float64{x, y})
			i = j
		case 'Z':
			p.Closed = true
			i++
		default:
			return Path{}, false // a curve
		}
	}
	return p, len(p.Points) > 0
}

// Vertical reports whether the path is one vertical segment, and its x
// and the y of its ends, lower first.
func (p Path) Vertical() (x, lo, hi float64, ok bool) {
	if len(p.Points) != 2 || p.Closed || math.Abs(p.Points[0][0]-p.Points[1][0]) > 0.01 {
		return 0, 0, 0, false
	}
	lo, hi = p.Points[0][1], p.Points[1][1]
	return p.Points[0][0], min(lo, hi), max(lo, hi), true
}

// Horizontal reports whether the path is one horizontal segment, and its
// y and the x of its ends, left first.
func (p Path) Horizontal() (y, left, right float64, ok bool) {
	if len(p.Points) != 2 || p.Closed || math.Abs(p.Points[0][1]-p.Points[1][1]) > 0.01 {
		return 0, 0, 0, false
	}
	left, right = p.Points[0][0], p.Points[1][0]
	return p.Points[0][1], min(left, right), max(left, right), true
}

// TextsAt returns the texts whose baseline is at y, left to right.
func (img *Image) TextsAt(y float64) []Text {
	var out []Text
	for _, t := range img.Texts {
		if math.Abs(t.Y-y) < 0.01 {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].X < out[j].X })
	return out
}

// Find returns the first text that is s, and whether there is one.
func (img *Image) Find(s string) (Text, bool) {
	for _, t := range img.Texts {
		if t.S == s {
			return t, true
		}
	}
	return Text{}, false
}

// StrokedIn returns the paths stroked in colour ("#DDDDDD", any case).
func (img *Image) StrokedIn(colour string) []Path {
	var out []Path
	for _, p := range img.Paths {
		if strings.EqualFold(p.Stroke, colour) {
			out = append(out, p)
		}
	}
	return out
}

// Tick is a labelled tick of an axis: its label and where its mark is.
type Tick struct {
	Label string
	At    float64
}

// XTickLabels returns the labels of the x axis' ticks, left to right:
// the lowest row of several texts (the axis' own label is alone below
// them).
func (img *Image) XTickLabels() ([]Text, error) {
	rows := map[float64]int{}
	for _, t := range img.Texts {
		rows[math.Round(t.Y*100)/100]++
	}
	rowY := math.Inf(1)
	for y, n := range rows {
		if n >= 2 && y < rowY {
			rowY = y
		}
	}
	if math.IsInf(rowY, 1) {
		return nil, fmt.Errorf("svgtest: no row of tick labels")
	}
	return img.TextsAt(rowY), nil
}

// XTicks returns the labelled ticks of the x axis, left to right: their
// labels (XTickLabels) and their marks, the longest of the short black
// vertical strokes just above the labels (the y axis' line is long), one
// per label.
func (img *Image) XTicks() ([]Tick, error) {
	labels, err := img.XTickLabels()
	if err != nil {
		return nil, err
	}
	rowY := labels[0].Y
	type mark struct{ x, length float64 }
	var marks []mark
	longest := 0.0
	for _, p := range img.StrokedIn("#000000") {
		x, lo, hi, ok := p.Vertical()
		if !ok || lo < rowY || lo > rowY+20 || hi-lo > 20 {
			continue
		}
		marks = append(marks, mark{x, hi - lo})
		longest = max(longest, hi-lo)
	}
	var at []float64
	for _, m := range marks {
		if m.length > longest-0.01 {
			at = append(at, m.x)
		}
	}
	sort.Float64s(at)
	if len(at) != len(labels) {
		return nil, fmt.Errorf("svgtest: %d x tick labels (%v) and %d labelled tick marks", len(labels), labels, len(at))
	}
	ticks := make([]Tick, len(at))
	for i := range at {
		ticks[i] = Tick{Label: labels[i].S, At: at[i]}
	}
	return ticks, nil
}

// YTicks returns the labelled ticks of the y axis (the leftmost one),
// bottom to top: each label and the height of its mark. Their marks are
// the longest of the black horizontal strokes whose right end is the
// leftmost of such strokes' ends; each label is the text nearest its mark
// and left of it.
func (img *Image) YTicks() ([]Tick, error) {
	type mark struct{ y, right, length float64 }
	var marks []mark
	for _, p := range img.StrokedIn("#000000") {
		if y, left, right, ok := p.Horizontal(); ok {
			marks = append(marks, mark{y, right, right - left})
		}
	}
	if len(marks) == 0 {
		return nil, fmt.Errorf("svgtest: no horizontal strokes")
	}
	// The y axis' tick marks end at the axis, the leftmost such end among
	// the short strokes (the x axis' line is long).
	axis, longest := math.Inf(1), 0.0
	for _, m := range marks {
		if m.length < 20 {
			axis = min(axis, m.right)
		}
	}
	for _, m := range marks {
		if math.Abs(m.right-axis) < 0.01 {
			longest = max(longest, m.length)
		}
	}
	var ticks []Tick
	for _, m := range marks {
		if math.Abs(m.right-axis) > 0.01 || m.length < longest-0.01 {
			continue
		}
		best, dist := "", math.Inf(1)
		for _, t := range img.Texts {
			if d := math.Abs(t.Y - m.y); t.X < axis && d < dist {
				best, dist = t.S, d
			}
		}
		ticks = append(ticks, Tick{Label: best, At: m.y})
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].At < ticks[j].At })
	return ticks, nil
}

// YTickAt returns the height of the y axis' tick labelled label.
func (img *Image) YTickAt(label string) (float64, error) {
	ticks, err := img.YTicks()
	if err != nil {
		return 0, err
	}
	for _, tk := range ticks {
		if tk.Label == label {
			return tk.At, nil
		}
	}
	return 0, fmt.Errorf("svgtest: the y axis has no tick labelled %q: %v", label, ticks)
}
