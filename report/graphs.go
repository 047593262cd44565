package report

import (
	"bytes"
	"encoding/base64"
	"html/template"
	"strings"

	"wanlab/plot"
	"wanlab/results"
)

// graph is one graph of the page: an SVG image in a data: URI, or, when it
// could not be drawn, why not.
type graph struct {
	Kind    plot.Kind
	Caption string
	// Src is the image as a data: URI; empty when Err is set.
	Src template.URL
	// Width and Height are the image's size in CSS pixels, so the page
	// keeps its layout while it loads.
	Width, Height int
	// Err says why the graph is missing.
	Err string
	// Chart, when set, is the spec of an interactive graph of the same
	// series (chartSpec), which the page's script draws in the static
	// image's place on screen; the image stays for print and for a page
	// read without script. A graph may be interactive only: no Src, no
	// Err.
	Chart string
}

// Graph sizes in CSS pixels: wide enough for the legends beside the data,
// and scaled down by the page on a narrow screen.
const (
	graphWidth     = 1100
	timelineHeight = 760 // three stacked panels
	panelsHeight   = 620 // two stacked panels
	singleHeight   = 480
)

// runGraphs draws a run's graphs: all_scaled and ping_cdf always (a run
// without their series gets a note instead), tcp_cwnd_rtt and
// router_flows only when some flow has their series.
// chart, when not empty, is the spec of the interactive graph that
// all_scaled stands in for.
func runGraphs(d *results.Document, chart string) []graph {
	docs := []*results.Document{d}
	out := []graph{
		draw(plot.AllScaled, docs, singleRun, timelineHeight, plot.Options{}),
		draw(plot.PingCDF, docs, singleRun, singleHeight, plot.Options{}),
	}
	out[0].Chart = chart
	if hasFlowSeries(d, "tcp_cwnd", "tcp_rtt", "receiver_tcp_cwnd", "receiver_tcp_rtt") {
		out = append(out, draw(plot.TCPCwndRTT, docs, singleRun, panelsHeight, plot.Options{}))
	}
	if hasFlowSeries(d, "router_delivered_bytes", "router_queue_delay") {
		out = append(out, draw(plot.RouterFlows, docs, singleRun, panelsHeight, plot.Options{}))
	}
	return out
}

// captions describe each kind of graph under it.
var captions = map[plot.Kind]string{
	plot.AllScaled:   "Throughput and latency over time (Flent's all_scaled); the marks on the time axis bound the load.",
	plot.PingCDF:     "Distribution of the latency probes during the load (Flent's ping_cdf).",
	plot.TCPCwndRTT:  "TCP congestion window and smoothed RTT of each flow, at the sender and the receiver.",
	plot.RouterFlows: "The router's view of each flow: the rate it delivered the flow at, and the flow's queueing delay.",
	plot.Box:         "Latency during the load, one box per run: quartiles and median, whiskers to 1.5 interquartile ranges, outliers as dots.",
}

const (
	singleRun = false
	manyRuns  = true
)

// draw renders one graph as SVG. many says the graph overlays several
// runs, whose captions say so.
func draw(kind plot.Kind, docs []*results.Document, many bool, height int, o plot.Options) graph {
	o.Format, o.Width, o.Height = plot.SVG, graphWidth, height
	gr := graph{Kind: kind, Caption: captions[kind], Width: o.Width, Height: o.Height}
	if many && kind != plot.Box {
		gr.Caption += " All runs overlaid."
	}
	var buf bytes.Buffer
	if err := plot.Draw(&buf, kind, docs, o); err != nil {
		gr.Err = strings.TrimPrefix(err.Error(), "plot: ")
		return gr
	}
	gr.Src = svgURI(buf.Bytes())
	return gr
}

// svgURI is an SVG image as a data: URI, which the page's policy admits.
func svgURI(svg []byte) template.URL {
	return template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svg))
}

// hasFlowSeries reports whether a flow of the document has a series with
// one of the keys (the part of its name after the flow's label and "::").
func hasFlowSeries(d *results.Document, keys ...string) bool {
	for _, f := range d.Flows {
		for _, s := range f.Series {
			for _, k := range keys {
				if s.Name == f.Label+"::"+k && len(s.Samples) > 0 {
					return true
				}
			}
		}
	}
	return false
}
