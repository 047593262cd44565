package report

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"strings"

	"wanlab/plot"
)

//go:embed page.html
var pageHTML string

//go:embed experiment.html
var experimentHTML string

//go:embed page.css
var pageCSS string

// The chart library, vendored through npm at the version
// third_party/package.json pins (third_party/fetch.sh fetches it), and its
// licence beside it.
var (
	//go:embed third_party/uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed third_party/uplot/uPlot.min.css
	uplotCSS string
	//go:embed third_party/uplot/LICENSE
	uplotLicence string
	//go:embed third_party/uplot/VERSION
	uplotVersion string
)

//go:embed charts.js
var chartsJS string

// pageStyle is the page's one stylesheet: the chart library's, then the
// page's own, which may override it.
var pageStyle = uplotCSS + "\n" + pageCSS

// pageScript is the page's one script: the chart library under its
// licence's notice, which the licence asks every copy to carry, then the
// code that draws the page's charts with it.
var pageScript = "/*! uPlot " + strings.TrimSpace(uplotVersion) + "\n" + uplotLicence + "*/\n" + uplotJS + "\n" + chartsJS

// contentPolicy is the page's Content-Security-Policy: nothing may load
// but the page's own stylesheet and script, each named by its hash, and
// images from data: URIs (the static graphs). No other script may run,
// nothing may be fetched or sent (no connect-src: default-src 'none'
// refuses it), no form be sent, no base URL be set. A page that broke the
// rule (an external font, a style attribute, a script of its own) would
// have the browser refuse it and say so in its console, which the browser
// test reads. The script sets its graphs' styles through the CSSOM, which
// style-src does not govern.
var contentPolicy = "default-src 'none'; img-src data:; style-src '" + hash(pageStyle) +
	"'; script-src '" + hash(pageScript) + "'; base-uri 'none'; form-action 'none'"

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// chartConfig is what the charts take from the page once: plot's palette,
// so that they colour their lines as the static graphs do, and the label
// of each unit's axis.
var chartConfig = func() template.JS {
	b, err := json.Marshal(map[string]any{"palette": plot.Palette(), "axes": chartAxes})
	if err != nil {
		panic(err)
	}
	return template.JS(b)
}()

// pageTemplate holds both pages, the report of runs ("page") and of an
// experiment by case ("experiment"), and the parts they share.
// html/template escapes every string from the documents for where it
// appears (text, attribute, URL, script data).
var pageTemplate = func() *template.Template {
	t := template.New("page").Funcs(template.FuncMap{
		// The stylesheet, the script, the charts' configuration and
		// the policy are the package's own constants.
		"css":          func() template.CSS { return template.CSS(pageStyle) },
		"js":           func() template.JS { return template.JS(pageScript) },
		"csp":          func() string { return contentPolicy },
		"chartConfig":  func() template.JS { return chartConfig },
		"uplotVersion": func() string { return strings.TrimSpace(uplotVersion) },
	})
	template.Must(t.Parse(pageHTML))
	template.Must(t.New("experiment").Parse(experimentHTML))
	return t
}()
