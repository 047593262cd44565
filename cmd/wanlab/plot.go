package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"wanlab/internal/outfile"
	"wanlab/plot"
	"wanlab/results"
)

type plotOptions struct {
	kind          string
	output        string
	format        string
	width, height int
	title         string
	series        string
}

func newPlotCommand(s *streams) *cobra.Command {
	var o plotOptions
	var kinds strings.Builder
	for _, k := range plot.Kinds() {
		fmt.Fprintf(&kinds, "  %-13s %s\n", k, k.Description())
	}
	c := &cobra.Command{
		Use:   "plot FILE... | DIR [--kind K] [-o OUT.png|OUT.svg]",
		Short: "Draw a graph of one or more runs as PNG or SVG",
		Long: `plot draws a graph from results files (as wanlab run writes them) or from
every results file in a directory (as report reads them: a file that holds
no whole run is left out with a warning). Several runs overlay in one
graph, as Flent's -i a -i b, labelled by their titles.

Graphs (--kind):
` + kinds.String() + `
The format follows the output's extension (.png or .svg); --format chooses
it for stdout (-o -) or a name without one. Without -o the graph is
written beside the first input, named after it, the kind and the format
(RUN.all_scaled.png, or DIR/all_scaled.png for a directory), never over
or through an existing file or link: a taken name gets -2, -3, ...
(RUN.all_scaled-2.png).`,
		Example: `  wanlab plot wanlab-rrul-20260304-050607.json.gz
  wanlab plot fifo.json.gz fq_codel.json.gz --kind ping_cdf -o latency.svg
  wanlab plot results/e3/ --kind box --series "Ping (ms) ICMP" -o e3-box.png
  wanlab plot e2-tbf-results/c00[5-8]-*-r1.json.gz --kind series --series "TFRC upload::tfrc_p" -o loss.svg
  wanlab plot run.json.gz --kind tcp_cwnd_rtt --width 1600 --height 900 -o - --format svg > cwnd.svg`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runPlot(s, &o, args) },
	}
	fs := c.Flags()
	fs.StringVar(&o.kind, "kind", string(plot.AllScaled), "the graph: "+kindNames())
	fs.StringVarP(&o.output, "output", "o", "", "the image file to write, .png or .svg (- for stdout; default beside the first input)")
	fs.StringVar(&o.format, "format", "", "png or svg, for an output whose name has no extension (default png; otherwise the extension's)")
	fs.IntVar(&o.width, "width", plot.DefaultWidth, fmt.Sprintf("the image's width in pixels (%d to %d)", plot.MinWidth, plot.MaxSide))
	fs.IntVar(&o.height, "height", plot.DefaultHeight, fmt.Sprintf("the image's height in pixels (%d to %d)", plot.MinHeight, plot.MaxSide))
	fs.StringVar(&o.title, "title", "", "the graph's title (default: made from the runs)")
	fs.StringVar(&o.series, "series", "", `the series a box plot (default "Ping (ms) ICMP") or the series graph draws; a flow's own as LABEL::key, e.g. "TFRC upload::tfrc_p"`)
	return c
}

func runPlot(s *streams, o *plotOptions, args []string) error {
	if err := checkImageSize(o.width, o.height); err != nil {
		return err
	}
	kind, err := plot.ParseKind(o.kind)
	if err != nil {
		return usagef("--kind: %s", strings.TrimPrefix(err.Error(), "plot: "))
	}
	format, err := plotFormat(o.output, o.format)
	if err != nil {
		return err
	}
	runs, err := readRuns(args, s.err)
	if err != nil {
		return err
	}
	docs := make([]*results.Document, len(runs))
	for i, r := range runs {
		docs[i] = r.Doc
	}
	out := outfile.Options{Label: "--output", Suggest: string(kind) + "." + string(format), Stdout: s.out}
	path := o.output
	if path == "" {
		path = graphPathBeside(args[0], kind, format)
		out.NoClobber, out.ClobberHint = true, "give another name with -o FILE"
	}
	if err := outfile.Check(path, out); err != nil {
		return usagef("%v", err)
	}
	if err := notAnInput(path, runs); err != nil {
		return err
	}
	var img bytes.Buffer
	err = plot.Draw(&img, kind, docs, plot.Options{
		Format: format, Width: o.width, Height: o.height, Title: o.title, Series: o.series,
	})
	if err != nil {
		// Every error of Draw is about its input: a kind that draws one
		// run given several, a series the documents lack, a size out of
		// range. The message names what to change.
		return usagef("%s", strings.TrimPrefix(err.Error(), "plot: "))
	}
	written, err := writeOutput(path, out, img.Bytes())
	if err != nil {
		return err
	}
	if written != "-" {
		fmt.Fprintf(s.out, "%s graph of %s: %s\n", kind, plural(len(runs), "run"), outfile.Printable(written))
	}
	return nil
}

// checkImageSize refuses a --width or --height out of plot's range. 0
// would mean the default to plot.Options; on the command line the default
// is the flag's own, so a 0 is a mistake.
func checkImageSize(width, height int) error {
	for _, f := range []struct {
		name     string
		v, least int
	}{{"--width", width, plot.MinWidth}, {"--height", height, plot.MinHeight}} {
		if f.v < f.least || f.v > plot.MaxSide {
			return usagef("%s %d: give %d to %d pixels", f.name, f.v, f.least, plot.MaxSide)
		}
	}
	return nil
}

// plotFormat returns the image format: the output's extension's, or
// --format's for an output without one (stdout, a device, a FIFO), PNG by
// default. An extension that is not an image format, or one that
// contradicts --format, is refused.
func plotFormat(output, flag string) (plot.Format, error) {
	var chosen plot.Format
	if flag != "" {
		f, err := plot.ParseFormat(flag)
		if err != nil {
			return "", usagef("--format %q: give png or svg", flag)
		}
		chosen = f
	}
	if output == "" || output == "-" || filepath.Ext(output) == "" {
		if chosen == "" {
			chosen = plot.PNG
		}
		return chosen, nil
	}
	f, err := plot.FormatFor(output)
	if err != nil {
		return "", usagef("-o %s", strings.TrimPrefix(err.Error(), "plot: "))
	}
	if chosen != "" && chosen != f {
		return "", usagef("-o %s is a .%s name but --format is %s: make them agree, or leave --format out", output, f, chosen)
	}
	return f, nil
}

// graphPathBeside is a graph's default name: beside a results file, its
// name without .json(.gz) plus the kind and the format
// (RUN.all_scaled.png); inside a directory, the kind and the format.
func graphPathBeside(input string, kind plot.Kind, f plot.Format) string {
	name := string(kind) + "." + string(f)
	if isDir(input) {
		return filepath.Join(input, name)
	}
	return resultsStem(input) + "." + name
}

func kindNames() string {
	names := make([]string, 0, len(plot.Kinds()))
	for _, k := range plot.Kinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}
