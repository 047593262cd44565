package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"wanlab/plot"
	"wanlab/results"
)

// The structure tests parse the page with an HTML5 parser and read it as a
// browser's DOM would be: elements, attributes and text, never the raw
// markup, so that an escaped title counts as text and a tag as a tag.

// xssTitle is a title that would run a script if the page did not escape it.
const xssTitle = `<script>alert(1)</script>`

// reportCase is one run of the several-run report and what the page must
// say about it.
type reportCase struct {
	test, title string
	fc          fidelityCase
	partial     string // the partial reason, "" for a complete run
	state       fidelityState
	graphs      []plot.Kind
}

var allGraphs = []plot.Kind{plot.AllScaled, plot.PingCDF, plot.TCPCwndRTT, plot.RouterFlows}

var reportCases = []reportCase{
	{test: "rrul", title: "fq_codel at 10 Mbit/s", fc: faithfulRun, state: stateFaithful, graphs: allGraphs},
	{test: "tcp_upload", title: "late releases", fc: lateUp, state: stateUnfaithful, graphs: allGraphs},
	{test: "tcp_nup", title: xssTitle, fc: ringDropsDown, partial: "interrupted by SIGINT after 6.2 s", state: stateUnfaithful, graphs: allGraphs},
	{test: "ping", title: "", fc: noRouter, state: stateAbsent, graphs: []plot.Kind{plot.AllScaled, plot.PingCDF}},
	{test: "tcp_bidirectional", title: "direct", fc: directNoVerdict, partial: "the server host went away", state: stateUnknown, graphs: allGraphs},
}

func caseRuns(cases []reportCase) []Run {
	runs := make([]Run, len(cases))
	for i, c := range cases {
		d := synthRun(c.test, c.title, uint64(i+1), c.fc)
		if c.partial != "" {
			d.Run.Partial, d.Run.PartialReason = true, c.partial
		}
		runs[i] = Run{Source: fmt.Sprintf("runs/%s-%d.json.gz", c.test, i+1), Doc: d}
	}
	return runs
}

func render(t *testing.T, runs []Run, o Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, runs, o); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func parse(t *testing.T, page []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestSeveralRuns checks every part of a report of several runs: the
// table across runs, and for each run its warnings (exactly when the run
// is unfaithful or partial), setup, command, summary, graphs and
// fidelity check.
func TestSeveralRuns(t *testing.T) {
	runs := caseRuns(reportCases)
	root := parse(t, render(t, runs, Options{}))

	ov := byID(root, "overview")
	if ov == nil {
		t.Fatal("no #overview section in a report of several runs")
	}
	rows := findAll(ov, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-run") != "" })
	if len(rows) != len(runs) {
		t.Fatalf("the overview has %d run rows, want %d", len(rows), len(runs))
	}
	for i, row := range rows {
		d := runs[i].Doc
		cells := text(row)
		if !strings.Contains(cells, runHeading(d)) || !strings.Contains(cells, d.Run.Test) {
			t.Errorf("overview row %d %q lacks the run's heading %q or test", i+1, cells, runHeading(d))
		}
		if p := d.LatencySeries(); !strings.Contains(cells, figure(p.Summary.Median)) {
			t.Errorf("overview row %d %q lacks the ping median %s", i+1, cells, figure(p.Summary.Median))
		}
		if up := d.LoadSeries("up"); up != nil && !strings.Contains(cells, figure(up.Summary.Mean)) {
			t.Errorf("overview row %d %q lacks the mean of %s, %s", i+1, cells, up.Name, figure(up.Summary.Mean))
		}
		wantState := map[fidelityState]string{stateFaithful: "faithful", stateUnfaithful: "NOT FAITHFUL", stateAbsent: "no router data", stateUnknown: "no verdict"}[reportCases[i].state]
		if !strings.Contains(cells, wantState) {
			t.Errorf("overview row %d %q does not say %q", i+1, cells, wantState)
		}
	}
	graphs := findAll(ov, func(n *html.Node) bool { return n.Data == "figure" })
	if got := kindsOf(graphs); !slices.Equal(got, []string{"box", "ping_cdf"}) {
		t.Errorf("overview graphs %v, want box and ping_cdf", got)
	}
	checkImages(t, "overview", graphs)

	articles := findAll(root, func(n *html.Node) bool { return n.Data == "article" })
	if len(articles) != len(runs) {
		t.Fatalf("%d run articles, want %d", len(articles), len(runs))
	}
	for i, a := range articles {
		t.Run(reportCases[i].test, func(t *testing.T) { checkRun(t, a, runs[i], reportCases[i]) })
	}
}

// checkRun checks one run's article against its document.
func checkRun(t *testing.T, a *html.Node, r Run, c reportCase) {
	d := r.Doc
	id := attr(a, "id")
	if h := first(a, tag("h2")); h == nil || !strings.HasSuffix(text(h), runHeading(d)) {
		t.Errorf("heading %q, want it to end in %q", text(h), runHeading(d))
	}
	for _, sec := range []string{"setup", "summary", "graphs", "fidelity"} {
		s := first(a, func(n *html.Node) bool { return attr(n, "data-section") == sec })
		if s == nil {
			t.Errorf("no %s section", sec)
		} else if attr(s, "id") != id+"-"+sec {
			t.Errorf("%s section has id %q, want %q", sec, attr(s, "id"), id+"-"+sec)
		}
	}

	warnings := func(kind string) []*html.Node {
		return findAll(a, func(n *html.Node) bool { return attr(n, "data-warning") == kind })
	}
	wantUnfaithful := 0
	if c.state == stateUnfaithful {
		wantUnfaithful = 1
	}
	if w := warnings("unfaithful"); len(w) != wantUnfaithful {
		t.Errorf("%d unfaithful warnings, want %d", len(w), wantUnfaithful)
	} else if wantUnfaithful == 1 {
		for _, dr := range d.Router.Directions {
			v := dr.Verdict
			for _, cs := range v.Causes {
				if !strings.Contains(text(w[0]), v.Direction+": "+cs.Text) {
					t.Errorf("the warning %q lacks the cause %s: %s", text(w[0]), v.Direction, cs.Text)
				}
			}
		}
	}
	wantPartial := 0
	if c.partial != "" {
		wantPartial = 1
	}
	if w := warnings("partial"); len(w) != wantPartial {
		t.Errorf("%d partial warnings, want %d", len(w), wantPartial)
	} else if wantPartial == 1 && !strings.Contains(text(w[0]), c.partial) {
		t.Errorf("the partial warning %q does not give the reason %q", text(w[0]), c.partial)
	}

	setup := text(byID(a, id+"-setup"))
	for _, want := range []string{d.Run.Path.Up, d.Run.Framing, fmt.Sprint(d.Run.Seed), d.Run.KernelRelease, d.Run.WanlabVersion,
		"net.ipv4.tcp_congestion_control=cubic", "ping_interval=0.2", d.Run.Test} {
		if !strings.Contains(setup, want) {
			t.Errorf("the setup lacks %q", want)
		}
	}
	if cmd := first(a, func(n *html.Node) bool { return hasAttr(n, "data-command") }); cmd == nil {
		t.Error("no command")
	} else if got, want := text(cmd), results.ShellJoin(d.Run.Argv); got != want {
		t.Errorf("command %q, want %q", got, want)
	}

	// One summary row per series, with the document's own figures.
	summary := byID(a, id+"-summary")
	table := first(summary, tag("table"))
	rows := findAll(first(table, tag("tbody")), tag("tr"))
	if len(rows) != len(d.Series) {
		t.Fatalf("summary has %d rows, want one per series (%d)", len(rows), len(d.Series))
	}
	for i, row := range rows {
		s := &d.Series[i]
		cells := findAll(row, func(n *html.Node) bool { return n.Data == "td" || n.Data == "th" })
		got := make([]string, len(cells))
		for j, c := range cells {
			got[j] = text(c)
		}
		want := []string{s.Name, s.Unit}
		if !slices.Equal(got[:2], want) || got[7] != figure(s.Summary.Median) || got[11] != figure(s.Summary.Mean) || got[3] != fmt.Sprint(s.Summary.N) {
			t.Errorf("summary row %d: %q; want %s, median %s, mean %s, n %d", i, got, s.Name, figure(s.Summary.Median), figure(s.Summary.Mean), s.Summary.N)
		}
	}

	figs := findAll(byID(a, id+"-graphs"), tag("figure"))
	want := make([]string, len(c.graphs))
	for i, k := range c.graphs {
		want[i] = string(k)
	}
	if got := kindsOf(figs); !slices.Equal(got, want) {
		t.Errorf("graphs %v, want %v", got, want)
	}
	checkImages(t, id, figs)

	fid := byID(a, id+"-fidelity")
	v := first(fid, func(n *html.Node) bool { return hasAttr(n, "data-verdict") })
	if v == nil || attr(v, "data-verdict") != string(c.state) {
		t.Errorf("verdict %q, want %q", attr(v, "data-verdict"), c.state)
	}
	ft := text(fid)
	switch c.fc {
	case noRouter:
		if !strings.Contains(ft, "No router data") {
			t.Errorf("the fidelity section of a run without router data says %q", ft)
		}
	case directNoVerdict:
		if !strings.Contains(ft, "plain veth pair") {
			t.Errorf("the fidelity section does not show the router data's note: %q", ft)
		}
	default:
		for _, want := range []string{"10.000 Mbit/s", "9.561 Mbit/s", "20.000 ms", "20.010 ms / 47.500 ms / 48.200 ms", "1ms"} {
			if !strings.Contains(ft, want) {
				t.Errorf("the fidelity section lacks %q", want)
			}
		}
	}
	bad := findAll(fid, func(n *html.Node) bool { return n.Data == "td" && attr(n, "class") == "bad" })
	if (len(bad) > 0) != (c.state == stateUnfaithful) {
		t.Errorf("%d figures marked bad in a run whose verdict is %s", len(bad), c.state)
	}
}

// TestTitleIsText: a title made of markup is shown as text wherever it
// appears, and never becomes an element.
func TestTitleIsText(t *testing.T) {
	runs := caseRuns(reportCases[1:3])
	page := render(t, runs, Options{})
	root := parse(t, page)
	checkScripts(t, root)
	found := 0
	for _, n := range findAll(root, func(n *html.Node) bool { return n.Type == html.TextNode }) {
		if strings.Contains(n.Data, xssTitle) {
			found++
		}
	}
	// The contents list, the overview table and the run's heading and
	// setup show the title.
	if found < 4 {
		t.Errorf("the title %q appears as text %d times, want at least 4", xssTitle, found)
	}
	if bytes.Contains(page, []byte(xssTitle)) {
		t.Error("the page's markup holds the title unescaped")
	}
}

// TestSelfContained: nothing in the page refers outside it. Links are
// anchors in the page, images are data: URIs, the one script and the one
// stylesheet are the package's own and inline, there are no frames, no
// element has a style attribute (the policy would refuse it), and the
// policy names the stylesheet's and the script's hashes.
func TestSelfContained(t *testing.T) {
	root := parse(t, render(t, caseRuns(reportCases), Options{}))
	checkSelfContained(t, root)
}

func checkSelfContained(t *testing.T, root *html.Node) {
	t.Helper()
	checkScripts(t, root)
	for _, n := range findAll(root, func(n *html.Node) bool { return n.Type == html.ElementNode }) {
		switch n.Data {
		case "link", "iframe", "object", "embed", "base", "form":
			t.Errorf("the page has a <%s> element", n.Data)
		}
		for _, a := range n.Attr {
			switch a.Key {
			case "href":
				if !strings.HasPrefix(a.Val, "#") || byID(root, a.Val[1:]) == nil {
					t.Errorf("<%s href=%q> is not a link to an element of the page", n.Data, a.Val)
				}
			case "src":
				if !strings.HasPrefix(a.Val, "data:image/svg+xml;base64,") {
					t.Errorf("<%s src=%.40q...> is not a data: URI", n.Data, a.Val)
				}
			case "style", "srcset", "action", "background":
				t.Errorf("<%s %s=%q>", n.Data, a.Key, a.Val)
			}
			if strings.HasPrefix(a.Key, "on") {
				t.Errorf("<%s %s=...>: an event handler", n.Data, a.Key)
			}
		}
	}
	styles := findAll(root, tag("style"))
	if len(styles) != 1 || styles[0].FirstChild == nil || styles[0].FirstChild.Data != pageStyle {
		t.Fatalf("%d style elements; want one holding the package's stylesheet", len(styles))
	}
	csp := first(root, func(n *html.Node) bool { return attr(n, "http-equiv") == "Content-Security-Policy" })
	if csp == nil || attr(csp, "content") != contentPolicy || !strings.Contains(contentPolicy, "default-src 'none'") {
		t.Fatalf("the policy is %q, want %q", attr(csp, "content"), contentPolicy)
	}
	for _, want := range []string{"style-src '" + hash(pageStyle) + "'", "script-src '" + hash(pageScript) + "'"} {
		if !strings.Contains(contentPolicy, want) {
			t.Errorf("the policy %q does not name %s", contentPolicy, want)
		}
	}
}

// checkScripts: the page runs one script, the package's own, inline and
// named by its hash in the policy; every other script element is data
// (JSON a chart names, never run), and every chart names data the page
// has.
func checkScripts(t *testing.T, root *html.Node) {
	t.Helper()
	code, data := 0, map[string]bool{}
	for _, n := range findAll(root, tag("script")) {
		body := ""
		if n.FirstChild != nil {
			body = n.FirstChild.Data
		}
		switch {
		case hasAttr(n, "src"):
			t.Errorf("<script src=%q>: the page loads a script", attr(n, "src"))
		case attr(n, "type") == "application/json":
			if !json.Valid([]byte(body)) {
				t.Errorf("script data %s is not JSON: %.80q", attr(n, "id"), body)
			}
			data[attr(n, "id")] = true
		case attr(n, "type") != "":
			t.Errorf("<script type=%q>", attr(n, "type"))
		case body != pageScript:
			t.Errorf("a script that is not the package's own: %.80q", body)
		default:
			code++
		}
	}
	if code != 1 {
		t.Errorf("%d scripts of the package's in the page, want 1", code)
	}
	for _, c := range findAll(root, func(n *html.Node) bool { return hasAttr(n, "data-chart") }) {
		var spec chartSpec
		if err := json.Unmarshal([]byte(attr(c, "data-chart")), &spec); err != nil || len(spec.Data) == 0 {
			t.Errorf("a chart's spec %q: %v", attr(c, "data-chart"), err)
		}
		for _, id := range spec.Data {
			if !data[id] {
				t.Errorf("a chart names data %q that the page does not have", id)
			}
		}
	}
}

// TestOneRun: a report of one run has no table across runs, and its
// heading is the run's.
func TestOneRun(t *testing.T) {
	runs := caseRuns(reportCases[:1])
	root := parse(t, render(t, runs, Options{}))
	if byID(root, "overview") != nil || first(root, tag("nav")) != nil {
		t.Error("a report of one run has an overview or a contents list")
	}
	if got, want := text(first(root, tag("title"))), "wanlab report: "+runHeading(runs[0].Doc); got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	if got := text(first(root, tag("h2"))); got != runHeading(runs[0].Doc) {
		t.Errorf("run heading %q", got)
	}
	root = parse(t, render(t, runs, Options{Title: "E3 & friends"}))
	if got := text(first(root, tag("h1"))); got != "E3 & friends" {
		t.Errorf("the given title shows as %q", got)
	}
}

// TestGraphMissing: a graph that cannot be drawn is replaced by the
// reason, and the rest of the page is still made.
func TestGraphMissing(t *testing.T) {
	d := synthRun("tcp_upload", "no pings", 9, faithfulRun)
	d.Series = slices.DeleteFunc(d.Series, func(s results.Series) bool { return strings.HasPrefix(s.Name, "Ping") })
	root := parse(t, render(t, []Run{{Doc: d}}, Options{}))
	fig := first(root, func(n *html.Node) bool { return attr(n, "data-graph") == "ping_cdf" })
	if fig == nil {
		t.Fatal("no ping_cdf figure")
	}
	if first(fig, tag("img")) != nil || !strings.Contains(text(fig), "Not drawn:") {
		t.Errorf("the ping_cdf figure of a run without pings shows %q", text(fig))
	}
	if fig := first(root, func(n *html.Node) bool { return attr(n, "data-graph") == "all_scaled" }); fig == nil || first(fig, tag("img")) == nil {
		t.Error("all_scaled is not drawn")
	}
}

// TestWriteRefuses: bad input is an error, and nothing is written.
func TestWriteRefuses(t *testing.T) {
	bad := synthRun("tcp_upload", "bad", 1, noRouter)
	bad.Run.StepS = 0
	for name, runs := range map[string][]Run{
		"no runs":    nil,
		"nil doc":    {{Source: "x.json"}},
		"invalid":    {{Source: "bad.json", Doc: bad}},
		"one of two": {{Doc: synthRun("ping", "", 1, noRouter)}, {Source: "bad.json", Doc: bad}},
	} {
		var buf bytes.Buffer
		err := Write(&buf, runs, Options{})
		if err == nil || buf.Len() != 0 {
			t.Errorf("%s: error %v, %d bytes written", name, err, buf.Len())
		}
	}
}

// TestLoadSeries: the series that stand for a run's load and latency in
// the table across runs.
func TestLoadSeries(t *testing.T) {
	for _, c := range []struct{ test, up, down, ping string }{
		{"rrul", "TCP upload sum", "TCP download sum", "Ping (ms) ICMP"},
		{"tcp_nup", "TCP upload sum", "", "Ping (ms) ICMP"},
		{"tcp_upload", "TCP upload", "", "Ping (ms) ICMP"},
		{"tcp_bidirectional", "TCP upload", "TCP download", "Ping (ms) ICMP"},
		{"ping", "", "", "Ping (ms) ICMP"},
		{"udp_flood", "UDP upload", "", "Ping (ms) ICMP"},
		{"tfrc_upload", "TFRC upload", "", "Ping (ms) ICMP"},
		{"quic_download", "", "QUIC download", "Ping (ms) ICMP"},
		{"custom", "Custom upload", "Custom download", "Ping (ms) ICMP"},
	} {
		d := synthRun(c.test, "", 1, noRouter)
		name := func(s *results.Series) string {
			if s == nil {
				return ""
			}
			return s.Name
		}
		if got := name(d.LoadSeries("up")); got != c.up {
			t.Errorf("%s: upload %q, want %q", c.test, got, c.up)
		}
		if got := name(d.LoadSeries("down")); got != c.down {
			t.Errorf("%s: download %q, want %q", c.test, got, c.down)
		}
		if got := name(d.LatencySeries()); got != c.ping {
			t.Errorf("%s: ping %q, want %q", c.test, got, c.ping)
		}
	}
}

// TestOverviewOwnTests: the table across runs shows the throughput of
// wanlab's own tests (TFRC, QUIC, custom) as it does Flent's: each
// direction's mean and median of the series that stands for its load.
func TestOverviewOwnTests(t *testing.T) {
	cases := []struct{ test, up, down string }{
		{"tfrc_upload", "TFRC upload", ""},
		{"tfrc_download", "", "TFRC download"},
		{"quic_upload", "QUIC upload", ""},
		{"quic_download", "", "QUIC download"},
		{"custom", "Custom upload", "Custom download"},
	}
	var runs []Run
	for i, c := range cases {
		runs = append(runs, Run{Doc: synthRun(c.test, c.test, uint64(i+1), faithfulRun)})
	}
	rows := findAll(byID(parse(t, render(t, runs, Options{})), "overview"), func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-run") != "" })
	if len(rows) != len(cases) {
		t.Fatalf("%d overview rows, want %d", len(rows), len(cases))
	}
	for i, c := range cases {
		d := runs[i].Doc
		cells := findAll(rows[i], tag("td"))
		var got []string
		for _, cell := range cells {
			got = append(got, text(cell))
		}
		// Test, upload mean and median, download mean and median, ping
		// median, fidelity (the run's heading is the row's th).
		want := []string{"—", "—", "—", "—"}
		for j, name := range []string{c.up, c.down} {
			if name != "" {
				s := d.FindSeries(name)
				want[2*j], want[2*j+1] = figure(s.Summary.Mean), figure(s.Summary.Median)
			}
		}
		if len(got) != 7 || !slices.Equal(got[1:5], want) {
			t.Errorf("%s: overview row %q, want upload and download %q", c.test, got, want)
		}
	}
}

// checkImages decodes every graph's data: URI and parses it as SVG of the
// size the img element gives.
func checkImages(t *testing.T, where string, figs []*html.Node) {
	t.Helper()
	for _, f := range figs {
		img := first(f, tag("img"))
		if img == nil {
			t.Errorf("%s: %s is not drawn: %s", where, attr(f, "data-graph"), text(f))
			continue
		}
		data, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(attr(img, "src"), "data:image/svg+xml;base64,"))
		if err != nil {
			t.Errorf("%s: %s: %v", where, attr(f, "data-graph"), err)
			continue
		}
		w, h, err := svgSize(data)
		if err != nil {
			t.Errorf("%s: %s: %v", where, attr(f, "data-graph"), err)
			continue
		}
		if fmt.Sprint(w) != attr(img, "width") || fmt.Sprint(h) != attr(img, "height") {
			t.Errorf("%s: %s: the SVG is %v×%v px, the img says %s×%s", where, attr(f, "data-graph"), w, h, attr(img, "width"), attr(img, "height"))
		}
	}
}

// svgSize parses a whole SVG document and returns its size in CSS pixels
// (package plot writes it in points).
func svgSize(data []byte) (w, h float64, err error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	var root *xml.StartElement
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, fmt.Errorf("not well-formed SVG: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == nil {
			se := se.Copy()
			root = &se
		}
	}
	if root == nil || root.Name.Local != "svg" {
		return 0, 0, fmt.Errorf("the root element is not svg")
	}
	for _, a := range root.Attr {
		var v float64
		if _, err := fmt.Sscanf(strings.TrimSuffix(a.Value, "pt"), "%g", &v); err != nil {
			continue
		}
		switch a.Name.Local {
		case "width":
			w = v * 96 / 72
		case "height":
			h = v * 96 / 72
		}
	}
	return w, h, nil
}

func kindsOf(figs []*html.Node) []string {
	var out []string
	for _, f := range figs {
		out = append(out, attr(f, "data-graph"))
	}
	return out
}

// DOM helpers.

func tag(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == name }
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if n == nil {
		return nil
	}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func first(n *html.Node, match func(*html.Node) bool) *html.Node {
	if all := findAll(n, match); len(all) > 0 {
		return all[0]
	}
	return nil
}

func byID(n *html.Node, id string) *html.Node {
	return first(n, func(n *html.Node) bool { return n.Type == html.ElementNode && attr(n, "id") == id })
}

func attr(n *html.Node, key string) string {
	if n == nil {
		return ""
	}
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

// text returns the text of n and its descendants, with runs of white
// space made single spaces.
func text(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	for _, t := range findAll(n, func(n *html.Node) bool { return n.Type == html.TextNode }) {
		b.WriteString(t.Data)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// TestFairness: a run's flows table gives each load flow's share of its
// direction, and a line gives each direction's Jain's index: four upload
// flows at 3, 1, 3 and 1 Mbit/s have (3+1+3+1)²/(4·(9+1+9+1)) = 0.8 and
// shares of 3/8 and 1/8.
func TestFairness(t *testing.T) {
	d := synthRun("tcp_nup", "3:1", 5, faithfulRun)
	for i, rate := range []float64{3, 1, 3, 1} {
		s := d.FindSeries(fmt.Sprintf("TCP upload::%d", i+1))
		for k := range s.Samples {
			s.Samples[k].V = rate
		}
	}
	d.Summarize()
	root := parse(t, render(t, []Run{{Doc: d}}, Options{}))
	p := first(root, func(n *html.Node) bool { return attr(n, "class") == "fairness" })
	if got := text(p); !strings.Contains(got, "upload 0.8000 over 4 flows.") {
		t.Errorf("fairness line %q", got)
	}
	shares := map[string]string{}
	for _, tr := range findAll(root, tag("tr")) {
		cells := findAll(tr, func(n *html.Node) bool { return n.Type == html.ElementNode && (n.Data == "td" || n.Data == "th") })
		if len(cells) == 7 && (strings.HasPrefix(text(cells[1]), "TCP upload::") || text(cells[1]) == results.ICMPPing) {
			shares[text(cells[1])] = text(cells[6])
		}
	}
	want := map[string]string{"TCP upload::1": "37.5 %", "TCP upload::2": "12.5 %", "TCP upload::3": "37.5 %", "TCP upload::4": "12.5 %", results.ICMPPing: "-"}
	if !maps.Equal(shares, want) {
		t.Errorf("shares %v, want %v", shares, want)
	}
}

// TestHostFairness: where the flows went to several servers, the flows
// table gives each flow's hosts, a table each server's share, and a line
// the servers' index: s1 at 3 Mbit/s and s2 at 1+3+1 have
// 8²/(2·(9+25)) = 0.9412, shares 3/8 and 5/8.
func TestHostFairness(t *testing.T) {
	d := synthRun("tcp_nup", "3:1", 5, faithfulRun)
	for i, rate := range []float64{3, 1, 3, 1} {
		s := d.FindSeries(fmt.Sprintf("TCP upload::%d", i+1))
		for k := range s.Samples {
			s.Samples[k].V = rate
		}
	}
	for i := range d.Flows {
		d.Flows[i].Client, d.Flows[i].Server = "c1", "s2"
		if d.Flows[i].Label == "TCP upload::1" {
			d.Flows[i].Server = "s1"
		}
	}
	d.Summarize()
	root := parse(t, render(t, []Run{{Doc: d}}, Options{}))
	var lines []string
	for _, p := range findAll(root, func(n *html.Node) bool { return attr(n, "class") == "fairness" }) {
		lines = append(lines, text(p))
	}
	if len(lines) != 2 || !strings.Contains(lines[1], "upload 0.9412 over 2 servers.") {
		t.Errorf("fairness lines %q", lines)
	}
	hosts, shares := map[string]string{}, map[string]string{}
	for _, tr := range findAll(root, tag("tr")) {
		cells := findAll(tr, func(n *html.Node) bool { return n.Type == html.ElementNode && (n.Data == "td" || n.Data == "th") })
		switch {
		case len(cells) == 8 && strings.HasPrefix(text(cells[1]), "TCP upload::"):
			hosts[text(cells[1])] = text(cells[3])
		case len(cells) == 5 && text(cells[0]) == "upload":
			shares[text(cells[1])] = text(cells[3]) + " of flows " + text(cells[4])
		}
	}
	if want := map[string]string{"TCP upload::1": "c1 → s1", "TCP upload::2": "c1 → s2", "TCP upload::3": "c1 → s2", "TCP upload::4": "c1 → s2"}; !maps.Equal(hosts, want) {
		t.Errorf("hosts %v, want %v", hosts, want)
	}
	if !strings.HasPrefix(shares["s1"], "37.5 % of flows ") || !strings.HasPrefix(shares["s2"], "62.5 % of flows ") {
		t.Errorf("host shares %v", shares)
	}
}
