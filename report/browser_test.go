package report

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"wanlab/compare"
	"wanlab/experiment"
	"wanlab/internal/resultstest"
)

// The browser test opens the report in real headless Chromium and reads
// what the browser made of it through the DevTools protocol, over
// --remote-debugging-pipe: the browser reads commands from its fd 3 and
// writes replies and events to its fd 4, each message JSON ended by a NUL
// byte. A pipe, not --remote-debugging-port, because it opens no socket
// (nothing else on the machine can reach the browser, and there is no
// port to pick or race for), and it ends with the process. The protocol,
// not --dump-dom and --enable-logging, because one browser then gives
// everything the test asserts in structured form: console messages and
// uncaught exceptions, every request the page made, the rendered DOM, a
// screenshot, the page at a phone's width and the printed PDF.

// chromiumFlags are the flags every launch uses: headless, as root, and
// without any of the browser's own network traffic (the host resolver
// maps every name to nothing, so not even a lookup leaves the machine).
var chromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-extensions", "--disable-default-apps", "--mute-audio",
	"--host-resolver-rules=MAP * ~NOTFOUND",
	"--remote-debugging-pipe",
}

// browser is a Chromium process driven over its debugging pipe, with one
// page attached.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	out     *os.File // commands to the browser (its fd 3)
	session string   // the page's session

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan cdpMessage
	events  []cdpMessage
	// notify is signalled after each event, for waitEvent.
	notify chan struct{}
	done   chan struct{} // closed when the reader ends
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startBrowser starts Chromium, or skips the test when it is not
// installed.
func startBrowser(t *testing.T) *browser {
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed: .ci/run installs Debian's chromium package for this test (apt-get install chromium)")
	}
	toBrowser, browserIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	browserOut, fromBrowser, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, chromiumFlags...), "--user-data-dir="+t.TempDir(), "about:blank")
	cmd := exec.Command(path, args...)
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser} // fds 3 and 4
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toBrowser.Close()
	fromBrowser.Close()
	b := &browser{t: t, cmd: cmd, out: browserIn, waiting: map[int]chan cdpMessage{},
		notify: make(chan struct{}, 1), done: make(chan struct{})}
	go b.read(browserOut)
	t.Cleanup(func() {
		b.close()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("chromium's stderr:\n%s", lastLines(stderr.String(), 30))
		}
	})

	var target struct{ TargetID string }
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	for _, domain := range []string{"Page", "Runtime", "Log", "Network"} {
		b.call(b.session, domain+".enable", nil, nil)
	}
	return b
}

// read dispatches the browser's messages: replies to their callers,
// events to the list.
func (b *browser) read(r *os.File) {
	defer close(b.done)
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if err := json.Unmarshal(raw[:len(raw)-1], &m); err != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch := b.waiting[m.ID]; ch != nil {
				ch <- m
				delete(b.waiting, m.ID)
			}
		} else {
			b.events = append(b.events, m)
		}
		b.mu.Unlock()
		select {
		case b.notify <- struct{}{}:
		default:
		}
	}
}

// call sends a command and decodes its result into result (if not nil);
// an error reply or a silent browser fails the test.
func (b *browser) call(session, method string, params any, result any) {
	b.t.Helper()
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMessage, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.out.Write(append(data, 0)); err != nil {
		b.t.Fatalf("%s: writing to the browser: %v", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			b.t.Fatalf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				b.t.Fatalf("%s: decoding %s: %v", method, m.Result, err)
			}
		}
	case <-b.done:
		b.t.Fatalf("%s: the browser ended", method)
	case <-time.After(30 * time.Second):
		b.t.Fatalf("%s: no reply in 30 s", method)
	}
}

// eventsSince returns the page's events from index from on, and the next
// index.
func (b *browser) eventsSince(from int) ([]cdpMessage, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []cdpMessage
	for _, e := range b.events[from:] {
		if e.SessionID == b.session {
			out = append(out, e)
		}
	}
	return out, len(b.events)
}

// open loads a file into the page and waits for its load event; it
// returns the page's events from the navigation to the load, and a little
// after it, so that late console messages are caught.
func (b *browser) open(path string) []cdpMessage {
	b.t.Helper()
	_, mark := b.eventsSince(0)
	var nav struct{ ErrorText string }
	b.call(b.session, "Page.navigate", map[string]any{"url": fileURL(path)}, &nav)
	if nav.ErrorText != "" {
		b.t.Fatalf("opening %s: %s", path, nav.ErrorText)
	}
	deadline := time.After(30 * time.Second)
	for {
		evs, _ := b.eventsSince(mark)
		for _, e := range evs {
			if e.Method == "Page.loadEventFired" {
				time.Sleep(300 * time.Millisecond)
				evs, _ = b.eventsSince(mark)
				return evs
			}
		}
		select {
		case <-b.notify:
		case <-b.done:
			b.t.Fatal("the browser ended while loading the page")
		case <-deadline:
			b.t.Fatal("the page did not load in 30 s")
		}
	}
}

// eval evaluates a JavaScript expression in the page (the test's own, run
// through the protocol, not the page's) and decodes its
// JSON-serialisable value into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		b.t.Fatalf("evaluating the test's script: %s", r.ExceptionDetails.Text)
	}
	if err := json.Unmarshal(r.Result.Value, out); err != nil {
		b.t.Fatalf("decoding %s: %v", r.Result.Value, err)
	}
}

// viewport sets the page's size in CSS pixels; mobile makes it behave as
// a phone's (the viewport meta tag applies).
func (b *browser) viewport(width, height int, mobile bool) {
	b.call(b.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, nil)
}

// close asks the browser to end and waits for it; after 10 s it kills the
// process it started.
func (b *browser) close() {
	data, _ := json.Marshal(map[string]any{"id": 1 << 30, "method": "Browser.close"})
	b.out.Write(append(data, 0))
	b.out.Close()
	exited := make(chan error, 1)
	go func() { exited <- b.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		<-exited
	}
}

// problems returns the events that show the page misbehaving: console
// messages (the page's script logs nothing, so any is unexpected), uncaught
// exceptions, browser log entries at error level (a refused resource, a
// policy violation), dialogs, and requests for anything but the page
// itself and data: URIs.
func problems(evs []cdpMessage, page string) []string {
	var out []string
	for _, e := range evs {
		switch e.Method {
		case "Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Page.javascriptDialogOpening":
			out = append(out, e.Method+": "+string(e.Params))
		case "Log.entryAdded":
			var p struct {
				Entry struct{ Level, Source, Text, URL string }
			}
			json.Unmarshal(e.Params, &p)
			if p.Entry.Level == "error" || p.Entry.Level == "warning" {
				out = append(out, fmt.Sprintf("console %s (%s): %s %s", p.Entry.Level, p.Entry.Source, p.Entry.Text, p.Entry.URL))
			}
		case "Network.requestWillBeSent":
			var p struct{ Request struct{ URL string } }
			json.Unmarshal(e.Params, &p)
			if u := p.Request.URL; u != fileURL(page) && !strings.HasPrefix(u, "data:") {
				out = append(out, "request for "+u)
			}
		}
	}
	return out
}

// pageFacts is what the test reads from the rendered DOM.
const pageFactsJS = `JSON.stringify({
	title: document.title,
	scripts: document.scripts.length,
	overview: !!document.getElementById("overview"),
	runs: [...document.querySelectorAll("article.run")].map(a => ({
		id: a.id,
		heading: a.querySelector("h2").textContent,
		sections: [...a.querySelectorAll("[data-section]")].map(s => s.dataset.section + ":" + (s.getBoundingClientRect().height > 0)),
		warnings: [...a.querySelectorAll("[data-warning]")].map(w => w.dataset.warning + ":" + (w.getBoundingClientRect().height > 0)),
		verdict: (a.querySelector("[data-verdict]") || {dataset: {}}).dataset.verdict || "",
		graphs: [...a.querySelectorAll("figure[data-graph]")].map(f => f.dataset.graph),
		fairness: [...a.querySelectorAll("p.fairness")].filter(p => p.getBoundingClientRect().height > 0).map(p => p.textContent.replace(/\s+/g, " ")).join(""),
	})),
	images: [...document.images].map(i => ({ok: i.complete && i.naturalWidth > 0, w: i.naturalWidth, shown: i.getBoundingClientRect().width,
		standIn: !!i.closest("figure.interactive")})),
	warningColour: (() => { const w = document.querySelector("[data-warning]"); return w ? getComputedStyle(w).borderTopColor : ""; })(),
})`

type pageFacts struct {
	Title    string
	Scripts  int
	Overview bool
	Runs     []struct {
		ID, Heading, Verdict string
		// Fairness is the text of the run's fairness line, if shown.
		Fairness           string
		Sections, Warnings []string
		Graphs             []string
	}
	Images []struct {
		OK    bool
		W     float64
		Shown float64
		// StandIn is the static graph under an interactive one, which
		// the page's script shows in its place on screen.
		StandIn bool
	}
	WarningColour string
}

// openPage writes a page to a file and opens it in a new browser, in a
// window of 1200×900 CSS pixels; whatever the page did wrong while
// loading fails the test. It returns the browser and the file.
func openPage(t *testing.T, page []byte) (*browser, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	b.viewport(1200, 900, false)
	for _, p := range problems(b.open(path), path) {
		t.Errorf("the page: %s", p)
	}
	return b, path
}

// TestInChromium opens a report of several runs in headless Chromium:
// no console message, error or outside request; every run and section
// rendered; warnings exactly where the runs were unfaithful or partial;
// every graph decoded; no horizontal scrolling at a phone's width; a
// screenshot that is not blank; and a PDF print with a page per run.
func TestInChromium(t *testing.T) {
	runs := caseRuns(reportCases)
	b, path := openPage(t, render(t, runs, Options{}))

	var raw string
	b.eval(pageFactsJS, &raw)
	var f pageFacts
	if err := json.Unmarshal([]byte(raw), &f); err != nil {
		t.Fatal(err)
	}
	// The package's script, the charts' configuration, and each run's
	// series for its graph.
	if f.Title != "wanlab report: 5 runs" || f.Scripts != 2+len(runs) || !f.Overview {
		t.Errorf("title %q, %d scripts, overview %v", f.Title, f.Scripts, f.Overview)
	}
	if len(f.Runs) != len(reportCases) {
		t.Fatalf("%d runs rendered, want %d", len(f.Runs), len(reportCases))
	}
	for i, r := range f.Runs {
		c := reportCases[i]
		if want := "sections setup:true summary:true graphs:true fidelity:true"; "sections "+strings.Join(r.Sections, " ") != want {
			t.Errorf("run %d: %v, want %s", i+1, r.Sections, want)
		}
		var want []string
		if c.partial != "" {
			want = append(want, "partial:true")
		}
		if c.state == stateUnfaithful {
			want = append(want, "unfaithful:true")
		}
		if strings.Join(r.Warnings, " ") != strings.Join(want, " ") {
			t.Errorf("run %d (%s): warnings %v, want %v", i+1, c.title, r.Warnings, want)
		}
		if r.Verdict != string(c.state) {
			t.Errorf("run %d: verdict %q, want %q", i+1, r.Verdict, c.state)
		}
		// Runs with two or more flows a way show their fairness.
		fair := runs[i].Doc.FlowFairness()
		if (r.Fairness != "") != (len(fair) > 0) {
			t.Errorf("run %d (%s): fairness line %q shown, for %d directions", i+1, c.test, r.Fairness, len(fair))
		}
		for _, f := range fair {
			if want := fmt.Sprintf("%s %.4f over %d flows", map[string]string{"up": "upload", "down": "download"}[f.Direction], f.Jain, len(f.Flows)); !strings.Contains(r.Fairness, want) {
				t.Errorf("run %d (%s): fairness line %q lacks %q", i+1, c.test, r.Fairness, want)
			}
		}
		if !strings.HasSuffix(r.Heading, runHeading(runs[i].Doc)) {
			t.Errorf("run %d: heading %q", i+1, r.Heading)
		}
		if len(r.Graphs) != len(c.graphs) {
			t.Errorf("run %d: graphs %v", i+1, r.Graphs)
		}
	}
	if f.WarningColour != "rgb(164, 22, 26)" {
		t.Errorf("the warning's border is %q, not the warning colour", f.WarningColour)
	}
	wantImages := 2 // the overview's box plot and CDF
	for _, c := range reportCases {
		wantImages += len(c.graphs)
	}
	if len(f.Images) != wantImages {
		t.Errorf("%d images in the page, want %d", len(f.Images), wantImages)
	}
	for i, img := range f.Images {
		if !img.OK || (img.Shown < 100) != img.StandIn {
			t.Errorf("image %d did not render, or a stand-in shows with the script on: %+v", i, img)
		}
	}

	checkScreenshot(t, b)
	checkChart(t, b, "#run-1-graphs div.chart")

	// At a phone's width the page does not scroll sideways: wide tables
	// scroll in their own boxes and the graphs shrink.
	b.viewport(390, 844, true)
	var phone struct{ ScrollWidth, InnerWidth, Narrowest float64 }
	b.eval(`({scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
		narrowest: Math.min(...[...document.images].filter(i => !i.closest("figure.interactive")).map(i => i.getBoundingClientRect().width))})`, &phone)
	if phone.InnerWidth != 390 || phone.ScrollWidth > phone.InnerWidth || phone.Narrowest > 390 {
		t.Errorf("at 390 px: the page is %v px wide in a %v px window; the narrowest graph is %v px", phone.ScrollWidth, phone.InnerWidth, phone.Narrowest)
	}

	// Printed, each run starts on a page of its own.
	var pdf struct{ Data string }
	b.call(b.session, "Page.printToPDF", map[string]any{"printBackground": false}, &pdf)
	data, err := base64.StdEncoding.DecodeString(pdf.Data)
	if err != nil || !bytes.HasPrefix(data, []byte("%PDF-")) {
		t.Fatalf("printToPDF gave no PDF (%v)", err)
	}
	if pages := pdfPages(data); pages < 1+len(runs) {
		t.Errorf("the PDF has %d pages; want at least %d: the overview, then each run from a new page", pages, 1+len(runs))
	}

	// In print the static graphs stand in for the interactive ones.
	b.viewport(1200, 900, false)
	b.call(b.session, "Emulation.setEmulatedMedia", map[string]any{"media": "print"}, nil)
	var printed struct{ Hidden, Charts int }
	b.eval(`({hidden: [...document.images].filter(i => i.getBoundingClientRect().width < 100).length,
		charts: [...document.querySelectorAll("div.chart")].filter(c => c.getBoundingClientRect().height > 0).length})`, &printed)
	if printed.Hidden != 0 || printed.Charts != 0 {
		t.Errorf("in print, %d static graphs are hidden and %d interactive ones show", printed.Hidden, printed.Charts)
	}

	// Without script every static graph shows.
	b.call(b.session, "Emulation.setEmulatedMedia", map[string]any{"media": ""}, nil)
	b.call(b.session, "Emulation.setScriptExecutionDisabled", map[string]any{"value": true}, nil)
	for _, p := range problems(b.open(path), path) {
		t.Errorf("the page without script: %s", p)
	}
	var noScript struct{ Images, Shown int }
	b.eval(`({images: document.images.length, shown: [...document.images].filter(i => i.getBoundingClientRect().width >= 100).length})`, &noScript)
	if noScript.Images != wantImages || noScript.Shown != wantImages {
		t.Errorf("without script %d of %d graphs show, want %d", noScript.Shown, noScript.Images, wantImages)
	}
}

// checkScreenshot takes a screenshot of the window and checks it is a PNG
// of the window's size with a meaningful share of pixels that are not
// white: text, tables, the warning boxes and graphs, not an empty page.
func checkScreenshot(t *testing.T, b *browser) {
	t.Helper()
	var shot struct{ Data string }
	b.call(b.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	data, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	bounds := img.Bounds()
	if bounds.Dx() != 1200 || bounds.Dy() != 900 {
		t.Errorf("the screenshot is %v, want 1200×900", bounds.Size())
	}
	nonWhite := 0
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				nonWhite++
			}
		}
	}
	share := float64(nonWhite) / float64(bounds.Dx()*bounds.Dy())
	t.Logf("screenshot: %.1f %% of the pixels are not white", share*100)
	if share < 0.03 {
		t.Errorf("the screenshot is nearly blank: %.2f %% of its pixels are not white", share*100)
	}
}

// chartFacts is what the test reads of an interactive graph.
type chartFacts struct {
	Drawn      string
	Canvas     bool
	Live       bool
	Over       struct{ Left, Top, Width, Height float64 }
	Legend     []string
	Off        []bool
	XMin, XMax float64
}

// chartFactsJS reads the chart the selector names, scrolled into view.
const chartFactsJS = `(sel => {
	const el = document.querySelector(sel);
	if (!el) return JSON.stringify({drawn: "no such element " + sel});
	const over = el.querySelector(".u-over");
	const r = over ? over.getBoundingClientRect() : {left: 0, top: 0, width: 0, height: 0};
	return JSON.stringify({
		drawn: el.dataset.drawn || "",
		canvas: !!el.querySelector("canvas"),
		live: el.closest("figure").classList.contains("live"),
		over: {left: r.left, top: r.top, width: r.width, height: r.height},
		legend: [...el.querySelectorAll(".u-legend tr.u-series")].map(tr => tr.textContent),
		off: [...el.querySelectorAll(".u-legend tr.u-series")].map(tr => tr.classList.contains("u-off")),
		xMin: +el.dataset.xmin, xMax: +el.dataset.xmax,
	});
})(%q)`

func (b *browser) chart(sel string) chartFacts {
	b.t.Helper()
	var raw string
	b.eval(fmt.Sprintf(chartFactsJS, sel), &raw)
	var f chartFacts
	if err := json.Unmarshal([]byte(raw), &f); err != nil {
		b.t.Fatal(err)
	}
	return f
}

// mouse dispatches a mouse event at a point of the window, as a user's
// hand would: the page cannot tell it from a real one.
func (b *browser) mouse(kind string, x, y float64, pressed bool) {
	p := map[string]any{"type": kind, "x": x, "y": y, "pointerType": "mouse"}
	if kind != "mouseMoved" || pressed {
		p["button"], p["buttons"] = "left", 1
		if kind == "mouseReleased" {
			p["buttons"] = 0
		}
		if kind != "mouseMoved" {
			p["clickCount"] = 1
		}
	}
	b.call(b.session, "Input.dispatchMouseEvent", p, nil)
}

// checkChart scrolls to the interactive graph the selector names and uses
// it as a reader would: it is drawn (a canvas, the static stand-in
// replaced); hovering over it shows the series' values at that time in
// its legend; a click on a series' name hides the series; and a drag
// across the plot zooms into that time range, which a double click
// undoes.
func checkChart(t *testing.T, b *browser, sel string) {
	t.Helper()
	b.eval(fmt.Sprintf(`(document.querySelector(%q).scrollIntoView({block: "center"}), true)`, sel), new(bool))
	var f chartFacts
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if f = b.chart(sel); f.Drawn != "" {
			break
		}
	}
	if f.Drawn != "1" || !f.Canvas || !f.Live || f.Over.Width < 100 || len(f.Legend) < 2 {
		t.Fatalf("%s: the chart was not drawn: %+v", sel, f)
	}
	before := f

	// Hover: the legend reads the values under the cursor.
	x, y := f.Over.Left+f.Over.Width*0.5, f.Over.Top+f.Over.Height*0.5
	b.mouse("mouseMoved", x, y, false)
	f = b.chart(sel)
	valued := 0
	for _, l := range f.Legend[1:] {
		if regexp.MustCompile(`[0-9]\.?[0-9]* (Mbits/s|ms)$`).MatchString(l) {
			valued++
		}
	}
	if !regexp.MustCompile(`[0-9.]+ s$`).MatchString(f.Legend[0]) || valued == 0 {
		t.Errorf("%s: hovering shows no values: legend %q", sel, f.Legend)
	}
	t.Logf("%s: hovering at the middle reads %q", sel, f.Legend)

	// A click on the second series' name hides it. The hand leaves the
	// plot first, as a reader's would on the way to the legend.
	b.mouse("mouseMoved", 1, 1, false)
	var at struct{ X, Y float64 }
	var raw string
	b.eval(fmt.Sprintf(`JSON.stringify((r => ({x: r.left + 10, y: r.top + r.height / 2}))(document.querySelector(%q).querySelectorAll(".u-legend tr.u-series")[1].querySelector("th").getBoundingClientRect()))`, sel), &raw)
	json.Unmarshal([]byte(raw), &at)
	b.mouse("mousePressed", at.X, at.Y, true)
	b.mouse("mouseReleased", at.X, at.Y, true)
	if f = b.chart(sel); len(f.Off) < 2 || !f.Off[1] {
		t.Errorf("%s: a click on the legend's %q did not hide it: %v", sel, f.Legend[1], f.Off)
	}

	// A drag from a quarter to a half of the width zooms in.
	x0, x1 := f.Over.Left+f.Over.Width*0.25, f.Over.Left+f.Over.Width*0.5
	b.mouse("mouseMoved", x0, y, false)
	b.mouse("mousePressed", x0, y, true)
	b.mouse("mouseMoved", (x0+x1)/2, y, true)
	b.mouse("mouseMoved", x1, y, true)
	b.mouse("mouseReleased", x1, y, true)
	f = b.chart(sel)
	span := before.XMax - before.XMin
	if !(f.XMin > before.XMin+span*0.2 && f.XMax < before.XMax-span*0.4) {
		t.Errorf("%s: a drag over the second quarter left the time axis at %v–%v (before %v–%v)", sel, f.XMin, f.XMax, before.XMin, before.XMax)
	}
	t.Logf("%s: the drag zoomed %v–%v s into %v–%v s", sel, before.XMin, before.XMax, f.XMin, f.XMax)
	b.call(b.session, "Input.dispatchMouseEvent", map[string]any{"type": "mousePressed", "x": x0, "y": y, "button": "left", "buttons": 1, "clickCount": 2}, nil)
	b.call(b.session, "Input.dispatchMouseEvent", map[string]any{"type": "mouseReleased", "x": x0, "y": y, "button": "left", "buttons": 0, "clickCount": 2}, nil)
	if f = b.chart(sel); f.XMin != before.XMin || f.XMax != before.XMax {
		t.Errorf("%s: a double click left the time axis at %v–%v, not back at %v–%v", sel, f.XMin, f.XMax, before.XMin, before.XMax)
	}
}

// TestExperimentInChromium opens the report of a sweep of 12 runs (four
// cases of three repetitions, with a comparison of two of its cases) in
// headless Chromium: no console message, error or request for anything
// outside the page; the table's sweep graph decoded; the comparison's
// rows shown; a section per case; the case's graph of its runs and, a
// run's details opened by a click, the run's own graph read by hovering,
// a series hidden from the legend and a time range zoomed; a screenshot
// that is not blank; no sideways scrolling at a phone's width; and a PDF
// print.
func TestExperimentInChromium(t *testing.T) {
	vars, cases := sweepCases()
	dir := t.TempDir()
	e := writeExperiment(t, dir, vars, cases, 3, resultstest.Short, nil)
	// A comparison of two of its cases, for the section it makes.
	rs, err := experiment.OpenRuns(dir, experiment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	side := compare.FromExperiment(dir, rs)
	res, err := compare.Compare(side, side, compare.Options{WhereA: map[string][]string{"delay": {"10ms"}}, WhereB: map[string][]string{"delay": {"70ms"}}})
	if err != nil {
		t.Fatal(err)
	}
	b, path := openPage(t, renderExperiment(t, e, Options{Compare: res}))
	var f struct {
		Cases, Runs, Open, Compared int
		Images                      []bool
	}
	b.eval(`({cases: document.querySelectorAll("section.case").length, runs: document.querySelectorAll("details[data-run]").length,
		open: document.querySelectorAll("details[open]").length,
		compared: [...document.querySelectorAll("#comparison tbody tr")].filter(r => r.getBoundingClientRect().height > 0).length,
		images: [...document.images].map(i => i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 100)})`, &f)
	if f.Cases != 4 || f.Runs != 12 || f.Open != 0 || len(f.Images) != 1 || !f.Images[0] {
		t.Errorf("%d cases, %d runs (%d open), images %v; want 4, 12 (none open) and the sweep graph", f.Cases, f.Runs, f.Open, f.Images)
	}
	if f.Compared != len(res.Pairs[0].Rows) {
		t.Errorf("the comparison shows %d rows, want %d", f.Compared, len(res.Pairs[0].Rows))
	}
	checkChart(t, b, "#case-2 div.chart")
	// The screen of the case's figures and graph, drawn.
	checkScreenshot(t, b)

	// A click on a run's line opens its details, and its graph draws.
	// The line is found once the graphs scrolled into view with it are
	// drawn, as a reader would find it.
	b.eval(`(document.querySelector("#c3-r2 > summary").scrollIntoView({block: "center"}), true)`, new(bool))
	time.Sleep(300 * time.Millisecond)
	var at struct{ X, Y float64 }
	b.eval(`(r => ({x: r.left + 20, y: r.top + r.height / 2}))(document.querySelector("#c3-r2 > summary").getBoundingClientRect())`, &at)
	b.mouse("mouseMoved", at.X, at.Y, false)
	b.mouse("mousePressed", at.X, at.Y, true)
	b.mouse("mouseReleased", at.X, at.Y, true)
	var open bool
	b.eval(`document.getElementById("c3-r2").open`, &open)
	if !open {
		t.Fatal("a click on a run's line did not open its details")
	}
	checkChart(t, b, "#c3-r2 div.chart")

	b.viewport(390, 844, true)
	var phone struct{ ScrollWidth, InnerWidth float64 }
	b.eval(`({scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth})`, &phone)
	if phone.ScrollWidth > phone.InnerWidth {
		t.Errorf("at 390 px the page is %v px wide", phone.ScrollWidth)
	}
	var pdf struct{ Data string }
	b.call(b.session, "Page.printToPDF", map[string]any{"printBackground": false}, &pdf)
	if data, err := base64.StdEncoding.DecodeString(pdf.Data); err != nil || pdfPages(data) < 2 {
		t.Errorf("printToPDF: %d pages (%v)", pdfPages(data), err)
	}
	// Nothing the page did after loading (drawing, hovering, zooming)
	// logged a message or asked for anything.
	evs, _ := b.eventsSince(0)
	for _, p := range problems(evs, path) {
		t.Errorf("the page, in use: %s", p)
	}
}

// TestChromiumReportsViolations checks the harness itself: a page that
// breaks the report's policy (a style attribute, an image from outside,
// a script of its own that would fetch from outside) must show up as
// problems, or a clean result from TestInChromium would mean nothing.
func TestChromiumReportsViolations(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.html")
	page := `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="` + strings.ReplaceAll(contentPolicy, "'", "&#39;") + `">
<title>bad</title></head><body><p style="color: red">styled</p><img src="http://wanlab.invalid/x.png" alt="x">
<script>fetch("http://wanlab.invalid/data")</script></body></html>`
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	found := problems(b.open(path), path)
	joined := strings.Join(found, "\n")
	if !strings.Contains(joined, "style") || !strings.Contains(joined, "wanlab.invalid") || !strings.Contains(joined, "inline script") {
		t.Errorf("the browser's problems with a page that breaks the policy were not all seen:\n%s", joined)
	}
}

// fileURL is the file: URL of an absolute path.
func fileURL(path string) string { return (&url.URL{Scheme: "file", Path: path}).String() }

// pdfPages returns the page count of a PDF: the largest /Count of its
// page tree, which the root's is.
func pdfPages(data []byte) int {
	n := 0
	for _, m := range regexp.MustCompile(`/Count (\d+)`).FindAllSubmatch(data, -1) {
		if c, err := strconv.Atoi(string(m[1])); err == nil && c > n {
			n = c
		}
	}
	return n
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
