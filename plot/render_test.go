package plot

import (
	"bytes"
	"image"
	"image/color"
	imagedraw "image/draw"
	"image/png"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg/draw"

	"wanlab/internal/resultstest"
	"wanlab/internal/svgtest"
	"wanlab/results"
)

// renderCase is one graph the render test draws and checks.
type renderCase struct {
	name  string
	kind  Kind
	docs  []*results.Document
	sweep Sweep
	o     Options
	// panels is the number of panels the graph must have.
	panels int
	// legend lists labels that must be in the graph's legends.
	legend []string
}

func (c renderCase) draw(w io.Writer) (layout, error) {
	if c.kind == SweepKind {
		return drawSweep(w, c.sweep, c.o)
	}
	return drawKind(w, c.kind, c.docs, c.o)
}

func renderCases() []renderCase {
	bloated := resultstest.Path{RateMbit: 10, BaseRTTMs: 40, BloatMs: 120}
	fq := resultstest.Path{RateMbit: 10, BaseRTTMs: 40, BloatMs: 8}
	rrulA := resultstest.Run("rrul", "pfifo_fast", 1, bloated)
	rrulB := resultstest.Run("rrul", "fq_codel", 2, fq)
	up := resultstest.Run("tcp_upload", "upload", 3, bloated)
	down := resultstest.Run("tcp_download", "download", 4, bloated)
	nup := resultstest.Run("tcp_nup", "four flows", 5, bloated)
	ping := resultstest.Run("ping", "idle", 6, bloated)
	// A flow's line in a graph of one run names its median RTT at the
	// sender; a flow without TCP_INFO names none.
	setRTT(rrulA, "TCP download BE", 200, 100, 119, 118, 125)
	setRTT(rrulA, "TCP upload EF", 38, 41.6, 42, 30, 50)
	setRTT(up, "TCP upload", 4.16, 4.2, 3, 1, 9)
	setRTT(down, "TCP download")
	docs := func(ds ...*results.Document) []*results.Document { return ds }
	logSweep := synthSweep(false)
	logSweep.XLog = true
	withReference := e1Sweep()
	withReference.Groups = append(withReference.Groups, SweepGroup{Name: "reno: seed 001", Reference: true, Beside: "reno",
		Points: []SweepPoint{{X: 10, Mean: 93.9, Lo: math.NaN(), Hi: math.NaN()}, {X: 50, Mean: 70, Lo: math.NaN(), Hi: math.NaN()}, {X: 100, Mean: 40, Lo: math.NaN(), Hi: math.NaN()}}})
	return []renderCase{
		{name: "all_scaled rrul", kind: AllScaled, docs: docs(rrulA), panels: 3,
			legend: []string{"TCP download BE (RTT 119 ms)", "TCP download avg", "TCP upload EF (RTT 42 ms)", "Ping (ms) ICMP", "Ping (ms) avg", "lost probe", "load start, end"}},
		{name: "all_scaled tcp_upload", kind: AllScaled, docs: docs(up), panels: 2, legend: []string{"TCP upload (RTT 4.2 ms)", "Ping (ms) ICMP"}},
		{name: "all_scaled tcp_download", kind: AllScaled, docs: docs(down), panels: 2, legend: []string{"TCP download"}},
		// With several runs a line is a run's, and its label names no RTT.
		{name: "all_scaled two runs", kind: AllScaled, docs: docs(up, down), panels: 3, legend: []string{"TCP upload · upload", "TCP download · download"}},
		{name: "all_scaled ping", kind: AllScaled, docs: docs(ping), panels: 1, legend: []string{"Ping (ms) ICMP", "Ping (ms) UDP"}},
		{name: "all_scaled three runs", kind: AllScaled, docs: docs(rrulA, rrulB, nup), panels: 3,
			legend: []string{"TCP download avg · pfifo_fast", "TCP download avg · fq_codel", "TCP upload avg · four flows", "Ping (ms) avg · fq_codel", "Ping (ms) ICMP · four flows"}},
		{name: "all_scaled small", kind: AllScaled, docs: docs(rrulA), o: Options{Width: 640, Height: 480}, panels: 3},
		{name: "ping_cdf one run", kind: PingCDF, docs: docs(rrulA), panels: 1, legend: []string{"Ping (ms) UDP EF (2 lost)", "Ping (ms) UDP BE"}},
		{name: "ping_cdf three runs", kind: PingCDF, docs: docs(rrulA, rrulB, up), panels: 1,
			legend: []string{"Ping (ms) UDP BK · pfifo_fast (2 lost)", "Ping (ms) UDP BK · fq_codel"}},
		{name: "box ping", kind: Box, docs: docs(rrulA, rrulB, up, nup), panels: 1},
		{name: "box upload sum", kind: Box, docs: docs(rrulA, rrulB), o: Options{Series: "TCP upload sum", Labels: []string{"FIFO", "FQ"}}, panels: 1},
		{name: "tcp_cwnd_rtt", kind: TCPCwndRTT, docs: docs(rrulA), panels: 2,
			legend: []string{"TCP upload BE (sender)", "TCP upload BE (receiver)", "TCP download EF (sender)"}},
		{name: "router_flows", kind: RouterFlows, docs: docs(nup), panels: 2, legend: []string{"TCP upload::1", "TCP upload::4"}},
		{name: "series of a flow, two runs", kind: SeriesKind, docs: docs(rrulA, rrulB), o: Options{Series: "TCP upload BE::tcp_rtt"}, panels: 1,
			legend: []string{"pfifo_fast", "fq_codel", "load start, end"}},
		{name: "series, one run", kind: SeriesKind, docs: docs(up), o: Options{Series: "Ping (ms) ICMP"}, panels: 1, legend: []string{"upload"}},
		{name: "sweep numeric", kind: SweepKind, sweep: synthSweep(false), panels: 1, legend: []string{"reno", "cubic", "bbr"}},
		{name: "sweep categorical", kind: SweepKind, sweep: synthSweep(true), panels: 1, legend: []string{"reno"}},
		{name: "sweep log", kind: SweepKind, sweep: logSweep, o: Options{Width: 800, Height: 600}, panels: 1},
		{name: "sweep with a reference", kind: SweepKind, sweep: withReference, panels: 1, legend: []string{"reno", "reno: seed 001"}},
	}
}

// setRTT replaces the sender's RTT samples of the flow label of d by ms
// repeated over the load, one per step, so that their median is ms's
// (none: the flow has no tcp_rtt), and summarises them.
func setRTT(d *results.Document, label string, ms ...float64) {
	for i := range d.Flows {
		f := &d.Flows[i]
		if f.Label != label {
			continue
		}
		f.Series = slices.DeleteFunc(f.Series, func(s results.Series) bool { return s.Name == label+"::tcp_rtt" })
		if len(ms) == 0 {
			return
		}
		r := d.Run
		s := results.Series{Name: label + "::tcp_rtt", Unit: "ms", Window: [2]float64{r.LeadS, r.LeadS + r.DurationS}}
		n := int(math.Round(r.DurationS / r.StepS))
		if n%len(ms) != 0 {
			panic("setRTT: the load's steps are not a multiple of the values")
		}
		for k := range n {
			s.Samples = append(s.Samples, results.Sample{T: r.LeadS + float64(k+1)*r.StepS, V: ms[k%len(ms)]})
		}
		s.Summarize(r.StepS)
		f.Series = append(f.Series, s)
		return
	}
	panic("setRTT: no flow " + label)
}

// TestRenderEveryKind draws every kind of graph from synthetic documents
// (several runs for the kinds that overlay them), in PNG and in SVG, and
// checks each image: its size, that it is not blank, that each panel's
// data area shows the colours of its lines, and that the lines of a panel
// can be told apart in grey.
func TestRenderEveryKind(t *testing.T) {
	drawn := map[Kind]bool{}
	for _, c := range renderCases() {
		drawn[c.kind] = true
		for _, f := range Formats() {
			t.Run(c.name+" "+string(f), func(t *testing.T) {
				c.o.Format = f
				var buf bytes.Buffer
				lay, err := c.draw(&buf)
				if err != nil {
					t.Fatal(err)
				}
				w, h, _ := c.o.size()
				checkLayout(t, c, lay, w, h)
				switch f {
				case PNG:
					checkPNG(t, buf.Bytes(), lay, w, h)
				case SVG:
					checkSVG(t, buf.Bytes(), lay, w, h)
				}
			})
		}
	}
	for _, k := range Kinds() {
		if !drawn[k] {
			t.Errorf("no render case draws %s", k)
		}
	}
}

func checkLayout(t *testing.T, c renderCase, lay layout, w, h int) {
	t.Helper()
	if len(lay.panels) != c.panels {
		t.Errorf("%d panels, want %d", len(lay.panels), c.panels)
	}
	var legend []string
	for i, p := range lay.panels {
		legend = append(legend, p.legend...)
		if p.data.Dx() < w/3 || p.data.Dy() < h/(4*max(c.panels, 1)) || !p.data.In(image.Rect(0, 0, w, h)) {
			t.Errorf("panel %d: data area %v is too small or outside the %d×%d image", i, p.data, w, h)
		}
		if len(p.lines) == 0 && len(p.marks) == 0 && c.kind != Box {
			t.Errorf("panel %d draws no line and no marker", i)
		}
		for a := range p.lines {
			for b := a + 1; b < len(p.lines); b++ {
				if !stylesApart(p.lines[a], p.lines[b]) {
					t.Errorf("panel %d: lines %d and %d look alike in grey: %v and %v", i, a, b, p.lines[a], p.lines[b])
				}
			}
		}
	}
	for _, want := range c.legend {
		if !slices.Contains(legend, want) {
			t.Errorf("legend has no %q; it has %q", want, legend)
		}
	}
}

// stylesApart reports whether two line styles differ in grey: by luma,
// dash pattern or width.
func stylesApart(a, b draw.LineStyle) bool {
	ca, cb := rgba(a.Color), rgba(b.Color)
	if math.Abs(luma709(ca)-luma709(cb)) >= minGreyStep && math.Abs(luma601(ca)-luma601(cb)) >= minGreyStep {
		return true
	}
	return !slices.Equal(a.Dashes, b.Dashes) || a.Width != b.Width
}

func rgba(c color.Color) color.RGBA {
	r, g, b, a := c.RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}

// shows reports whether pixel p is colour c drawn over white with at least
// 70% coverage: anti-aliasing blends a line's edge with the background.
func shows(p, c color.RGBA) bool {
	alpha := -1.0
	for _, ch := range [][2]uint8{{p.R, c.R}, {p.G, c.G}, {p.B, c.B}} {
		pv, cv := float64(ch[0]), float64(ch[1])
		if cv > 245 {
			continue // a component near white says nothing of coverage
		}
		a := (255 - pv) / (255 - cv)
		if alpha < 0 {
			alpha = a
		} else if math.Abs(a-alpha) > 0.12 {
			return false
		}
	}
	return alpha >= 0.7 && alpha <= 1.05
}

func checkPNG(t *testing.T, data []byte, lay layout, w, h int) {
	t.Helper()
	decoded, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the PNG does not decode: %v", err)
	}
	if b := decoded.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("the PNG is %d×%d, want %d×%d", b.Dx(), b.Dy(), w, h)
	}
	img := image.NewRGBA(decoded.Bounds())
	imagedraw.Draw(img, img.Bounds(), decoded, decoded.Bounds().Min, imagedraw.Src)
	inked := 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if img.RGBAAt(x, y) != (color.RGBA{255, 255, 255, 255}) {
				inked++
			}
		}
	}
	// Axes, text and lines cover a few percent of a graph; a blank or
	// nearly blank image does not reach 2%.
	if share := float64(inked) / float64(w*h); share < 0.02 {
		t.Errorf("only %.2f%% of the pixels are not background", 100*share)
	}
	for i, p := range lay.panels {
		colours := map[color.RGBA]bool{}
		for _, l := range p.lines {
			colours[rgba(l.Color)] = true
		}
		for _, m := range p.marks {
			colours[rgba(m.Color)] = true
		}
		for c := range colours {
			n := 0
			for y := p.data.Min.Y; y < p.data.Max.Y; y++ {
				for x := p.data.Min.X; x < p.data.Max.X; x++ {
					if shows(img.RGBAAt(x, y), c) {
						n++
					}
				}
			}
			// A line across a panel covers hundreds of pixels; 40 rules out
			// a stray legend thumbnail or a few anti-aliased edges.
			if n < 40 {
				t.Errorf("panel %d: %d pixels of line or marker colour %v in the data area %v, want at least 40", i, n, c, p.data)
			}
		}
	}
}

var (
	strokeRE = regexp.MustCompile(`stroke:#([0-9A-Fa-f]{6})`)
	fillRE   = regexp.MustCompile(`fill:#([0-9A-Fa-f]{6})`)
)

func checkSVG(t *testing.T, data []byte, lay layout, w, h int) {
	t.Helper()
	elems, err := svgtest.StartElements(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(elems) == 0 || elems[0].Name.Local != "svg" {
		t.Fatalf("the SVG's root element is %v, want svg", elems)
	}
	root := elems[0]
	strokes := map[color.RGBA]int{}
	fills := map[color.RGBA]int{}
	paths := 0
	for _, se := range elems {
		if se.Name.Local != "path" {
			continue
		}
		paths++
		for _, a := range se.Attr {
			if a.Name.Local == "style" {
				for re, count := range map[*regexp.Regexp]map[color.RGBA]int{strokeRE: strokes, fillRE: fills} {
					if m := re.FindStringSubmatch(a.Value); m != nil {
						v, _ := strconv.ParseUint(m[1], 16, 32)
						count[color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}]++
					}
				}
			}
		}
	}
	size := map[string]float64{}
	for _, a := range root.Attr {
		if a.Name.Local == "width" || a.Name.Local == "height" {
			pt, err := strconv.ParseFloat(strings.TrimSuffix(a.Value, "pt"), 64)
			if err != nil || !strings.HasSuffix(a.Value, "pt") {
				t.Fatalf("svg %s=%q is not in points", a.Name.Local, a.Value)
			}
			size[a.Name.Local] = pt * DPI / 72 // CSS pixels
		}
	}
	if math.Abs(size["width"]-float64(w)) > 0.5 || math.Abs(size["height"]-float64(h)) > 0.5 {
		t.Errorf("the SVG is %v×%v px, want %d×%d", size["width"], size["height"], w, h)
	}
	if !bytes.Contains(data, []byte(svgFontFallback)) {
		t.Errorf("the SVG does not name the fallback fonts %q", svgFontFallback)
	}
	lines := 0
	for i, p := range lay.panels {
		for _, l := range p.lines {
			lines++
			c := rgba(l.Color)
			if !hasColour(strokes, c) {
				t.Errorf("panel %d: no path is stroked in line colour %v", i, c)
			}
		}
	}
	if paths < lines {
		t.Errorf("%d path elements for %d lines", paths, lines)
	}
	for i, p := range lay.panels {
		for _, m := range p.marks {
			if !hasColour(fills, rgba(m.Color)) && !hasColour(strokes, rgba(m.Color)) {
				t.Errorf("panel %d: no path is filled or stroked in marker colour %v", i, rgba(m.Color))
			}
		}
	}
}

// hasColour reports whether the colours counted include c. gonum writes
// 8-bit colours through a float and may be off by one.
func hasColour(counted map[color.RGBA]int, c color.RGBA) bool {
	for s, n := range counted {
		if n > 0 && near(s.R, c.R) && near(s.G, c.G) && near(s.B, c.B) {
			return true
		}
	}
	return false
}

// near reports whether two 8-bit colour components differ by at most one.
// The difference is taken largest first: one of two uint8s wraps (0-255
// is 1, which made black match white).
func near(a, b uint8) bool { return max(a, b)-min(a, b) <= 1 }

func TestNear(t *testing.T) {
	for _, c := range []struct {
		a, b uint8
		want bool
	}{{0, 0, true}, {3, 4, true}, {4, 3, true}, {254, 255, true}, {3, 5, false}, {5, 3, false}, {0, 255, false}, {255, 0, false}, {1, 255, false}} {
		if got := near(c.a, c.b); got != c.want {
			t.Errorf("near(%d, %d) = %v", c.a, c.b, got)
		}
	}
}

// TestDrawWritesOnlyWholeImages checks that an error writes nothing, and
// that Draw's output is the one drawKind checks in the render test.
func TestDrawWritesOnlyWholeImages(t *testing.T) {
	d := resultstest.Run("tcp_upload", "x", 1, resultstest.DefaultPath)
	var a, b bytes.Buffer
	if err := Draw(&a, AllScaled, []*results.Document{d}, Options{Format: SVG}); err != nil {
		t.Fatal(err)
	}
	if _, err := drawKind(&b, AllScaled, []*results.Document{d}, Options{Format: SVG}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("Draw and drawKind drew different images")
	}
	var out bytes.Buffer
	if err := Draw(&out, TCPCwndRTT, []*results.Document{d, d}, Options{}); err == nil || out.Len() != 0 {
		t.Errorf("an error (%v) wrote %d bytes", err, out.Len())
	}
}

func TestTitleOption(t *testing.T) {
	d := resultstest.Run("tcp_upload", "x", 1, resultstest.DefaultPath)
	var buf bytes.Buffer
	if err := Draw(&buf, AllScaled, []*results.Document{d}, Options{Format: SVG, Title: "My own <title>"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte("My own &lt;title&gt;")) {
		t.Error("the SVG does not carry the title given in Options, escaped")
	}
}

// TestDrawsSavedDocuments checks that a graph drawn from a results file
// read back (lost probes written as null) is the graph drawn from the
// document in memory: plots depend on nothing but the document.
func TestDrawsSavedDocuments(t *testing.T) {
	d := resultstest.Run("rrul", "saved", 1, resultstest.DefaultPath)
	var file bytes.Buffer
	if err := d.EncodeGzip(&file); err != nil {
		t.Fatal(err)
	}
	back, err := results.Decode(&file)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []Kind{AllScaled, TCPCwndRTT} {
		var a, b bytes.Buffer
		if err := Draw(&a, k, []*results.Document{d}, Options{Format: SVG}); err != nil {
			t.Fatal(err)
		}
		if err := Draw(&b, k, []*results.Document{back}, Options{Format: SVG}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: the document read back draws another graph", k)
		}
	}
}
