package report

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html/template"
)

//go:embed page.html
var pageHTML string

//go:embed page.css
var pageCSS string

// contentPolicy is the page's Content-Security-Policy: nothing may load
// but the page's own stylesheet, named by its hash, and images from data:
// URIs (the graphs). No script may run, no form be sent, no base URL be
// set. A page that broke the rule (an external font, a style attribute,
// a script) would have the browser refuse it and say so in its console,
// which the browser test reads.
var contentPolicy = func() string {
	sum := sha256.Sum256([]byte(pageCSS))
	return "default-src 'none'; img-src data:; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; base-uri 'none'; form-action 'none'"
}()

// pageTemplate is the page. html/template escapes every string from the
// documents for where it appears (text, attribute, URL).
var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	// The stylesheet and the policy are the package's own constants.
	"css": func() template.CSS { return template.CSS(pageCSS) },
	"csp": func() string { return contentPolicy },
}).Parse(pageHTML))
