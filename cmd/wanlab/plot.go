package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"wanlab/experiment"
	"wanlab/internal/outfile"
	"wanlab/plot"
	"wanlab/report"
	"wanlab/results"
)

type plotOptions struct {
	kind          string
	output        string
	format        string
	width, height int
	title         string
	series        string
	where         []string
	// The table a sweep graph draws, and how.
	rows, cols, stat, spread, reference string
	sweep                               sweepFlags
}

// sweepFlags are the options of a sweep graph's own that wanlab table
// --plot and wanlab plot --kind sweep share (the table's are each
// command's).
type sweepFlags struct {
	logX bool
}

func (f *sweepFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.logX, "log-x", false, "draw the variable along x on a logarithmic scale (a numeric one: rates of 1, 2, 5, 10 Mbit/s)")
}

// sweepOnly are the flags that only a sweep graph takes.
var sweepOnly = []string{"rows", "cols", "stat", "spread", "log-x", "reference"}

func newPlotCommand(s *streams) *cobra.Command {
	var o plotOptions
	var kinds strings.Builder
	for _, k := range plot.Kinds() {
		fmt.Fprintf(&kinds, "  %-13s %s\n", k, k.Description())
	}
	c := &cobra.Command{
		Use:   "plot FILE... | DIR [--kind K] [--where VAR=VALUE] [-o OUT.png|OUT.svg]",
		Short: "Draw a graph of one or more runs, or of an experiment, as PNG or SVG",
		Long: `plot draws a graph from results files (as wanlab run writes them) or from
the results files of a directory (as report reads them: a file that holds
no whole run is left out with a warning). Several runs overlay in one
graph, as Flent's -i a -i b, labelled by their titles. Runs whose series
are not the same quantity are not drawn on one axis (RRUL's average of
four flows beside one flow of tcp_bidirectional): plot says which runs to
choose instead.

Graphs (--kind):
` + kinds.String() + `
An experiment's results directory (wanlab experiment run) is read through
its index: --where VAR=VALUE keeps the runs of some of its cases (as for
wanlab table), the runs are labelled by their case, and a box plot draws
one box per case over its repetitions. --kind sweep draws one of its
tables, as wanlab table --plot does, from the directory or from its
summary file (wanlab experiment summarize), with table's --rows, --cols,
--series, --stat and --spread, and --log-x and --reference.

The format follows the output's extension (.png or .svg); --format chooses
it for stdout (-o -) or a name without one. Without -o the graph is
written beside the first input, named after it, the kind and the format
(RUN.all_scaled.png, or DIR/all_scaled.png for a directory), never over
or through an existing file or link: a taken name gets -2, -3, ...
(RUN.all_scaled-2.png). A sweep of several tables writes one graph per
table, named after the variables it is for (DIR/sweep-jitter.png).`,
		Example: `  wanlab plot wanlab-rrul-20260304-050607.json.gz
  wanlab plot fifo.json.gz fq_codel.json.gz --kind ping_cdf -o latency.svg
  wanlab plot e3-fq-codel-results --where test=rrul --kind box --series "Ping (ms) ICMP" -o e3-box.png
  wanlab plot e2-tbf-results --where transport=tfrc_q5,tfrc_q0 --where rate=2mbit --kind series --series "TFRC upload::tfrc_p" -o loss.svg
  wanlab plot e1-results --kind sweep --where variant=jitter --spread minmax -o e1-jitter.svg
  wanlab plot run.json.gz --kind tcp_cwnd_rtt --width 1600 --height 900 -o - --format svg > cwnd.svg`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			for _, name := range sweepOnly {
				if c.Flags().Changed(name) && o.kind != string(plot.SweepKind) {
					return usagef("--%s is an option of the sweep graph: add --kind sweep, or leave it out", name)
				}
			}
			return runPlot(s, &o, args)
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.kind, "kind", string(plot.AllScaled), "the graph: "+kindNames())
	fs.StringVarP(&o.output, "output", "o", "", "the image file to write, .png or .svg (- for stdout; default beside the first input)")
	fs.StringVar(&o.format, "format", "", "png or svg, for an output whose name has no extension (default png; otherwise the extension's)")
	fs.IntVar(&o.width, "width", plot.DefaultWidth, fmt.Sprintf("the image's width in pixels (%d to %d)", plot.MinWidth, plot.MaxSide))
	fs.IntVar(&o.height, "height", plot.DefaultHeight, fmt.Sprintf("the image's height in pixels (%d to %d)", plot.MinHeight, plot.MaxSide))
	fs.StringVar(&o.title, "title", "", "the graph's title (default: made from the runs, or for a sweep from the table and the variables it holds fixed)")
	fs.StringVar(&o.series, "series", "", `the series a box plot (default "Ping (ms) ICMP"), the series graph or a sweep draws; a flow's own as LABEL::key, e.g. "TFRC upload::tfrc_p"`)
	fs.StringArrayVar(&o.where, "where", nil, "VAR=VALUE[,VALUE...]: of an experiment's results directory, only the runs with one of these values (repeatable), as for wanlab table")
	fs.StringVar(&o.rows, "rows", "", "sweep: the variable along x (default: the first that varies)")
	fs.StringVar(&o.cols, "cols", "", "sweep: the variable with a line or group per value (default: the second that varies)")
	fs.StringVar(&o.stat, "stat", "mean", "sweep: the statistic of each run's series: "+strings.Join(experiment.Stats, ", "))
	fs.StringVar(&o.spread, "spread", "", "sweep: the error bars across repetitions: "+strings.Join(experiment.Spreads, ", ")+" (default "+experiment.DefaultSpread+")")
	fs.StringVar(&o.reference, "reference", "", "sweep: a CSV of published figures to draw beside the experiment's, as points of their own with their source (docs/experiments.md)")
	o.sweep.register(fs)
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
	where, err := parseWhere("--where", o.where)
	if err != nil {
		return err
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
	draw := plot.Options{Format: format, Width: o.width, Height: o.height, Title: o.title, Series: o.series,
		Warnf: func(format string, args ...any) { fmt.Fprintf(s.err, "wanlab: warning: "+format+"\n", args...) }}
	if kind.FromTable() {
		return plotSweep(s, o, args, where, path, out, draw)
	}
	var runs []report.Run
	var exp *experimentRuns
	if len(args) == 1 && isExperimentDir(args[0]) {
		exp, err = readExperimentRuns(args[0], where, s.err)
		if err != nil {
			return err
		}
		runs = exp.runs
		draw.Labels = exp.labels
		if kind == plot.Box && exp.caseAxis != "" {
			// A box per case; the runs of one case get a box each.
			draw.Groups, draw.GroupAxis = exp.cases, exp.caseAxis
		}
	} else {
		if len(where) > 0 {
			return usagef("--where chooses among the runs of an experiment: give its results directory (with its index.json), not results files")
		}
		if runs, err = readRuns(args, s.err); err != nil {
			return err
		}
	}
	docs := make([]*results.Document, len(runs))
	for i, r := range runs {
		docs[i] = r.Doc
	}
	if err := notAnInput("-o", path, args...); err != nil {
		return err
	}
	var img bytes.Buffer
	if err := plot.Draw(&img, kind, docs, draw); err != nil {
		// Every error of Draw is about its input: a kind that draws one
		// run given several, a series the documents lack, a size out of
		// range, runs whose series are not one quantity. The message
		// names what to change.
		msg := strings.TrimPrefix(err.Error(), "plot: ")
		var mixed *plot.MixedError
		if errors.As(err, &mixed) && exp != nil && len(mixed.Tests) > 1 {
			msg += fmt.Sprintf(" (here: --where test=%s)", strings.Join(mixed.Tests, " or --where test="))
		}
		return usagef("%s", msg)
	}
	ctx, stop := outputContext()
	defer stop()
	written, err := writeOutput(ctx, path, out, img.Bytes())
	if err != nil {
		return err
	}
	if written != "-" {
		fmt.Fprintf(s.out, "%s graph of %s: %s\n", kind, plural(len(runs), "run"), outfile.Printable(written))
	}
	return nil
}

// plotSweep draws an experiment's table (plot --kind sweep), as table
// --plot does.
func plotSweep(s *streams, o *plotOptions, args []string, where map[string][]string, path string, out outfile.Options, draw plot.Options) error {
	if len(args) != 1 {
		return usagef("--kind sweep draws one experiment: give its results directory or summary file, not %d arguments", len(args))
	}
	if !isExperimentDir(args[0]) && !experiment.IsSummaryFile(args[0]) {
		return usagef("--kind sweep draws an experiment's table: give the results directory of wanlab experiment run, or its summary file")
	}
	to := experiment.TableOptions{Rows: o.rows, Cols: o.cols, Series: o.series, Stat: o.stat, Spread: o.spread, Where: where, Warnf: draw.Warnf}
	var err error
	if to.Reference, err = readReference(o.reference); err != nil {
		return err
	}
	tables, err := readTables(args[0], to)
	if err != nil {
		return err
	}
	graphs, err := drawSweeps(tables, sweepOutput{path: path, file: out, draw: draw, flags: o.sweep})
	if err != nil {
		return err
	}
	ctx, stop := outputContext()
	defer stop()
	written, err := graphs.write(ctx)
	for _, w := range written {
		if w != "-" {
			fmt.Fprintf(s.out, "sweep graph: %s\n", outfile.Printable(w))
		}
	}
	return err
}

// readTables lays out an experiment's tables; an option that does not fit
// the experiment is a usage error.
func readTables(dir string, o experiment.TableOptions) ([]*experiment.Table, error) {
	tables, err := experiment.Tables(dir, o)
	if err != nil {
		var ce *experiment.ChoiceError
		var de *experiment.DirError
		if errors.As(err, &ce) || errors.As(err, &de) || errors.Is(err, experiment.ErrNoIndex) {
			return nil, usagef("%v", err)
		}
		return nil, err
	}
	return tables, nil
}

// readReference reads --reference's file; none for "".
func readReference(path string) (*experiment.Reference, error) {
	if path == "" {
		return nil, nil
	}
	ref, err := experiment.ReadReference(path)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return ref, nil
}

// sweepOutput is how sweep graphs are drawn and where they go.
type sweepOutput struct {
	// path is the image file; several tables go to one file each, named
	// after it and the variables each is for.
	path  string
	file  outfile.Options
	draw  plot.Options
	flags sweepFlags
}

// sweepImages are sweep graphs drawn and not yet written.
type sweepImages struct {
	paths  []string
	images [][]byte
	file   outfile.Options
}

// drawSweeps draws each table as a sweep graph, checking every output
// path, and writes nothing: a table that cannot be drawn, or a name that
// cannot be written, is refused before any file is made.
func drawSweeps(tables []*experiment.Table, so sweepOutput) (*sweepImages, error) {
	si := &sweepImages{paths: []string{so.path}, file: so.file}
	if len(tables) > 1 {
		if so.path == "-" {
			return nil, usagef("%s are one graph each and the output is stdout: choose one table with %s, or give a file name", plural(len(tables), "table"), strings.Join(tables[0].Selection(), " "))
		}
		si.paths = make([]string, len(tables))
		for i, t := range tables {
			si.paths[i] = tablePath(so.path, t)
			if err := outfile.Check(si.paths[i], so.file); err != nil {
				return nil, usagef("%v", err)
			}
		}
	}
	for _, t := range tables {
		sw, err := plot.FromTable(t, plot.TableGraph{LogX: so.flags.logX})
		if err != nil {
			return nil, usagef("%s", strings.TrimPrefix(err.Error(), "plot: "))
		}
		o := so.draw
		if o.Title != "" && len(tables) > 1 {
			o.Title += " (" + strings.Join(tableFor(t), ", ") + ")"
		}
		var img bytes.Buffer
		if err := plot.DrawSweep(&img, sw, o); err != nil {
			return nil, usagef("%s", strings.TrimPrefix(err.Error(), "plot: "))
		}
		si.images = append(si.images, img.Bytes())
	}
	return si, nil
}

// write writes the graphs and returns the files written, in order, also
// when it fails partway (the error says why). A signal (ctx done) ends
// it between two files, and ends a FIFO's wait for its reader.
func (si *sweepImages) write(ctx context.Context) ([]string, error) {
	var written []string
	for i, img := range si.images {
		if ctx.Err() != nil {
			return written, fmt.Errorf("interrupted: %d of %d graphs written", len(written), len(si.images))
		}
		w, err := writeOutput(ctx, si.paths[i], si.file, img)
		if err != nil {
			return written, err
		}
		written = append(written, w)
	}
	return written, nil
}

// tableFor says what one of several tables is for: its Fixed variables'
// values and its series when the tables are split by series.
func tableFor(t *experiment.Table) []string {
	var out []string
	for _, v := range t.Fixed {
		out = append(out, v.Name+"="+v.Value)
	}
	if t.SplitSeries != "" {
		out = append(out, t.SplitSeries)
	}
	return out
}

// tablePath is the graph of one of several tables: path with what the
// table is for before its extension (sweep.png: sweep-jitter.png, or
// sweep-rate_10mbit-TCP_download.png), each character a file name should
// not hold replaced by _.
func tablePath(path string, t *experiment.Table) string {
	ext := filepath.Ext(path)
	name := strings.TrimSuffix(path, ext)
	parts := make([]string, 0, len(t.Fixed)+1)
	for _, v := range t.Fixed {
		parts = append(parts, v.Value)
	}
	if t.SplitSeries != "" {
		parts = append(parts, t.SplitSeries)
	}
	for _, p := range parts {
		name += "-" + strings.Map(func(r rune) rune {
			if r == '.' || r == '-' || r == '_' || r == '=' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				return r
			}
			return '_'
		}, p)
	}
	return name + ext
}

// experimentRuns are the runs of an experiment a graph draws, with their
// labels: each run by its case and repetition, and each run's case by the
// values of the variables that tell the cases apart.
type experimentRuns struct {
	runs     []report.Run
	labels   []string
	cases    []string
	caseAxis string
}

// isExperimentDir reports whether path is a results directory with an
// experiment's index that names runs. A directory whose index names none
// is read as any directory of results files.
func isExperimentDir(path string) bool {
	ix, err := experiment.ReadIndex(path)
	return err == nil && len(ix.Cases) > 0
}

// readExperimentRuns reads the runs of an experiment's results directory
// that --where keeps: those with a results document (complete or
// partial). A run without one is left out, as the tables leave it.
func readExperimentRuns(dir string, where map[string][]string, warn io.Writer) (*experimentRuns, error) {
	rs, err := experiment.OpenRuns(dir, experiment.OpenOptions{Samples: true,
		Warnf: func(format string, args ...any) { fmt.Fprintf(warn, "wanlab: warning: "+format+"\n", args...) }})
	if err != nil {
		var de *experiment.DirError
		if errors.As(err, &de) {
			return nil, usagef("%v", err)
		}
		return nil, err
	}
	sel, varying, err := rs.Select(where)
	if err != nil {
		return nil, usagef("%v", err)
	}
	e := &experimentRuns{caseAxis: strings.Join(varying, " · ")}
	for _, r := range sel {
		if r.Result == nil || r.Result.Doc == nil {
			continue
		}
		// A run is named by its case among those shown, and its
		// repetition; by its title when the runs are of one case.
		label := r.Run.Title
		if len(varying) > 0 {
			label = r.Label(varying)
			if rs.Index.Repeat > 1 {
				label += fmt.Sprintf(" #%d", r.Run.Repetition)
			}
		}
		e.runs = append(e.runs, report.Run{Source: filepath.Join(dir, r.Run.File), Doc: r.Result.Doc})
		e.labels = append(e.labels, label)
		e.cases = append(e.cases, strings.Join(r.Values(varying), " · "))
	}
	if len(e.runs) == 0 {
		return nil, usagef("%s has no run with results%s: run `wanlab experiment run` on it first", dir, whereNote(where))
	}
	return e, nil
}

func whereNote(where map[string][]string) string {
	if len(where) == 0 {
		return ""
	}
	return " among the runs --where keeps"
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
