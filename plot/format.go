package plot

import (
	"fmt"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Format is an image format a graph is written in.
type Format string

// The formats Draw and DrawSweep write.
const (
	// PNG is a raster image of Options.Width × Options.Height pixels.
	PNG Format = "png"
	// SVG is a vector image of the same size in CSS pixels: its width and
	// height attributes are in points (Width × 72/96 pt), which a browser
	// shows as Width px.
	SVG Format = "svg"
)

// Formats lists the formats, in the order help texts show them.
func Formats() []Format { return []Format{PNG, SVG} }

// ParseFormat returns the format named s ("png" or "svg", any case).
func ParseFormat(s string) (Format, error) {
	f := Format(strings.ToLower(strings.TrimSpace(s)))
	for _, known := range Formats() {
		if f == known {
			return f, nil
		}
	}
	return "", fmt.Errorf("plot: unknown image format %q: use png or svg", s)
}

// FormatFor returns the format a file name's extension asks for: ".png" or
// ".svg" (any case).
func FormatFor(path string) (Format, error) {
	ext := strings.TrimPrefix(filepath.Ext(path), ".")
	if ext == "" {
		return "", fmt.Errorf("plot: %q has no extension to tell the image format: end the name in .png or .svg", path)
	}
	f, err := ParseFormat(ext)
	if err != nil {
		return "", fmt.Errorf("plot: %q: the extension .%s is not an image format wanlab writes: end the name in .png or .svg", path, ext)
	}
	return f, nil
}

// Image sizes, in pixels.
const (
	// DefaultWidth and DefaultHeight are the size of a graph whose
	// Options leave it unset: big enough for three stacked panels with
	// readable legends.
	DefaultWidth, DefaultHeight = 1200, 800
	// MinWidth and MinHeight are the smallest size that still leaves room
	// for the axes and a legend.
	MinWidth, MinHeight = 320, 240
	// MaxSide is the largest width or height: a PNG of MaxSide² pixels
	// already takes 256 MB of memory to draw.
	MaxSide = 8000
	// DPI is the resolution of a PNG, in pixels per inch. Fonts and line
	// widths are set in points, so at 96 DPI a 10 pt label is 13.3 px
	// high, as a browser shows it; an SVG uses the same layout.
	DPI = 96
)

// Options says how to draw a graph. The zero value draws a PNG of the
// default size with titles and labels taken from the documents.
type Options struct {
	// Format is the image format; empty means PNG.
	Format Format
	// Width and Height are the image's size in pixels; 0 means
	// DefaultWidth or DefaultHeight. Fonts and lines scale with the size,
	// so a small image is a smaller copy of the default one.
	Width, Height int
	// Title replaces the graph's title; empty means a title made from the
	// documents (the run's title, or its test and start time).
	Title string
	// Labels, when given, name the documents in the legend and on the
	// axes instead of their titles: one label per document, in order.
	Labels []string
	// Series names the series a Box or SeriesKind graph draws ("Ping (ms)
	// ICMP", "TCP upload sum", or a flow's "TFRC upload::tfrc_p"). For Box,
	// empty means the run's ICMP ping, or else its first ping series;
	// SeriesKind needs it. Other kinds ignore it.
	Series string
	// Groups, when given, gathers the documents of a Box graph into
	// boxes: Groups[i] names the box of document i (an experiment's case,
	// "10ms · reno"), and each box is drawn over the samples of all its
	// documents, the boxes in the order their names first appear.
	// GroupAxis labels the x axis under them ("delay · transport"). Other
	// kinds ignore them.
	Groups    []string
	GroupAxis string
	// Warnf, if not nil, is told of the runs a graph of several leaves
	// out for lack of what it draws (a series they do not have).
	Warnf func(format string, args ...any)
}

// size returns the image's width and height in pixels, after defaults,
// or an error naming the allowed range.
func (o Options) size() (w, h int, err error) {
	w, h = o.Width, o.Height
	if w == 0 {
		w = DefaultWidth
	}
	if h == 0 {
		h = DefaultHeight
	}
	if w < MinWidth || h < MinHeight || w > MaxSide || h > MaxSide {
		return 0, 0, fmt.Errorf("plot: image size %d×%d px is out of range: give a width from %d to %d and a height from %d to %d px",
			w, h, MinWidth, MaxSide, MinHeight, MaxSide)
	}
	return w, h, nil
}

// format returns the image format, after the default.
func (o Options) format() (Format, error) {
	if o.Format == "" {
		return PNG, nil
	}
	return ParseFormat(string(o.Format))
}

// image returns the image's format and its size in pixels, after the
// defaults, or why o gives neither: what every graph checks first.
func (o Options) image() (f Format, w, h int, err error) {
	if f, err = o.format(); err != nil {
		return "", 0, 0, err
	}
	w, h, err = o.size()
	return f, w, h, err
}

// pxToPt converts pixels to points at DPI.
func pxToPt(px int) vg.Length { return vg.Length(px) * vg.Inch / DPI }

// newCanvas returns an empty canvas of w×h pixels that writes itself out
// in format f.
func newCanvas(f Format, w, h int) vg.CanvasWriterTo {
	width, height := pxToPt(w), pxToPt(h)
	switch f {
	case SVG:
		return vgsvg.New(width, height)
	default:
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(DPI))}
	}
}
