package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"wanlab/experiment"
	"wanlab/internal/outfile"
	"wanlab/plot"
	"wanlab/results"
)

type tableFlags struct {
	rows, cols, series, stat, spread, format, out string
	where, show                                   []string
	plot, reference                               string
	faithfulOnly                                  bool
	// The graph's own options: --title and sweepFlags.
	title string
	sweep sweepFlags
}

func newTableCommand(s *streams) *cobra.Command {
	var f tableFlags
	c := &cobra.Command{
		Use:   "table DIR|SUMMARY [--rows VAR] [--cols VAR] [--series NAME] [--stat STAT] [--show LIST] [--format text|markdown|csv]",
		Short: "Lay out an experiment's results as a table: one variable down, another across",
		Long: `table reads the results directory of 'wanlab experiment run', or the
summary file 'wanlab experiment summarize' makes of it, and prints a figure
of one series for each case: rows are one variable's values, columns
another's. Each run gives one figure, a statistic of its series over the
load (--stat: its mean, median, p99, ...), or a figure of the whole run
(--stat jain_up or jain_down: Jain's fairness index of its upload or
download flows' mean goodput, each over its span; jain_hosts_up or
jain_hosts_down: of each host's sum of them, over the hosts of the side
with several, as rtt_fair's servers); each cell gives what --show
asks of its runs' figures: by default their mean, with their spread (the
sample standard deviation across repetitions; --spread ci95 for the 95 %
confidence interval of the mean, minmax for min–max). The caption says
what the cells are and over how many runs. The variables that vary but are
neither rows nor columns give one table per value.

Defaults: rows and columns are the first two variables whose value varies,
in the experiment file's order ("test" counts as a variable when a case runs
several tests, which then get a table each); the series is each run's main
throughput (TCP totals for rrul, the sum for tcp_nup and tcp_ndown, the one
load flow's series otherwise; beside other tests, tcp_bidirectional gets a
table for its download and one for its upload); the statistic is the mean.
Runs that are not complete are left out and counted: the results files
decide, as for resuming, so a run whose file is missing, cut short or
damaged is not complete whatever the index says (a warning names a file
that is there but holds no whole run).

--reference FILE puts published figures beside the cells (a CSV of the
variables' values, series, stat, value and source; docs/experiments.md):
a reference and a ratio column per column that has figures, the sources
under the table. Every table counts the runs whose fidelity verdict is not
faithful, per cell (†N); --faithful-only leaves them out.

--plot draws the table as a graph too (as wanlab plot DIR --kind sweep
does): the row variable along the x axis, numeric and in proportion when
its values are times, rates, sizes or numbers (--log-x for a log scale),
a group of points per column (joined by lines on a numeric axis), error
bars for the spread as the caption states it (cut at 0 for a rate, a time
or a count), the title naming every variable held fixed (--title to give
another), and the reference's figures as points of their own. Several
tables are one graph each, named after what they are for (e1.svg:
e1-fixed.svg, e1-jitter.svg, ...). The path of every file written is
printed (on stderr when the table goes to stdout).`,
		Example: `  wanlab table e1-results
  wanlab table e1-results --rows delay --cols transport --where variant=jitter
  wanlab table e3-fq-codel-results --where test=rrul --series "Ping (ms) ICMP" --stat median
  wanlab table e3-fq-codel-results --where test=rrul --stat jain_down
  wanlab table e2-results --spread minmax --format csv -o e2.csv
  wanlab table e1-results --show mean,ci95,n,points --reference examples/e1.ref.csv
  wanlab table e1-results.summary.json.gz --faithful-only --format markdown
  wanlab table e1-quick --plot e1-quick.svg
  wanlab table e2-results --plot e2.svg --log-x --spread minmax --title "Goodput through a tiny token bucket"`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runTable(s, args[0], &f) },
	}
	fs := c.Flags()
	fs.StringVar(&f.rows, "rows", "", "variable down the side (default: the first that varies)")
	fs.StringVar(&f.cols, "cols", "", "variable across the top (default: the second that varies)")
	fs.StringArrayVar(&f.where, "where", nil, "VAR=VALUE[,VALUE...]: only runs with one of these values (repeatable); a variable given one value is fixed, one given several still varies among them")
	fs.StringVar(&f.series, "series", "", `series of the cells, e.g. "TCP upload", "Ping (ms) ICMP" or a flow's own "TCP upload::tcp_reordering" (default: each run's main throughput)`)
	fs.StringVar(&f.stat, "stat", "mean", "each run's figure, a statistic of its series: "+strings.Join(experiment.Stats, ", ")+
		"; or of the whole run, without --series: "+strings.Join(results.RunStats, ", ")+" (Jain's fairness index of the upload or download flows' mean goodput, or of their hosts' sums)")
	fs.StringSliceVar(&f.show, "show", nil, "what each cell gives of its runs' figures, in order, joined by commas: "+strings.Join(experiment.Shows, ", ")+
		" (ci95: the 95 % confidence interval of the mean, Student's t; n: runs; points: data points) (default: mean and --spread)")
	fs.StringVar(&f.spread, "spread", "", "spread across repetitions after each cell's figure, and the graph's error bars: "+strings.Join(experiment.Spreads, ", ")+
		" (default "+experiment.DefaultSpread+"; --spread X is --show mean,X)")
	fs.StringVar(&f.reference, "reference", "", "CSV of published figures to show beside the cells, with the ratio of each cell's figure to its own")
	fs.BoolVar(&f.faithfulOnly, "faithful-only", false, "leave out the runs whose fidelity verdict is not faithful (each cell still counts them)")
	fs.StringVar(&f.format, "format", "text", "text (aligned columns), markdown or csv")
	fs.StringVarP(&f.out, "output", "o", "-", "write the table to this file (- for stdout)")
	fs.StringVar(&f.plot, "plot", "", "also draw the table as a graph into this .png or .svg file: rows along x, a line or group per column")
	fs.StringVar(&f.title, "title", "", "the graph's title (default: the experiment, the statistic and every variable held fixed)")
	f.sweep.register(fs)
	return c
}

var tableFormats = []string{"text", "markdown", "csv"}

func runTable(s *streams, dir string, f *tableFlags) error {
	if !slices.Contains(tableFormats, f.format) {
		return usagef("--format %q: use text, markdown or csv", f.format)
	}
	if f.plot == "" && (f.title != "" || f.sweep.logX) {
		return usagef("--title and --log-x are options of the graph: add --plot FILE.svg (or .png), or leave them out")
	}
	where, err := parseWhere("--where", f.where)
	if err != nil {
		return err
	}
	o := experiment.TableOptions{Rows: f.rows, Cols: f.cols, Series: f.series, Stat: f.stat, Spread: f.spread, Show: f.show,
		FaithfulOnly: f.faithfulOnly, Where: where,
		Warnf: func(format string, args ...any) { fmt.Fprintf(s.err, "wanlab: warning: "+format+"\n", args...) }}
	fo := outfile.Options{Label: "-o", Suggest: "table." + map[string]string{"text": "txt", "markdown": "md", "csv": "csv"}[f.format], Stdout: s.out}
	if err := outfile.Check(f.out, fo); err != nil {
		return usagef("%v", err)
	}
	if err := notAnInput("-o", f.out, dir); err != nil {
		return err
	}
	var plotFormat plot.Format
	if f.plot != "" {
		if plotFormat, err = plot.FormatFor(f.plot); err != nil {
			return usagef("--plot: %s", strings.TrimPrefix(err.Error(), "plot: "))
		}
		if err := outfile.Check(f.plot, outfile.Options{Label: "--plot", Suggest: "table." + string(plotFormat)}); err != nil {
			return usagef("%v", err)
		}
	}
	if o.Reference, err = readReference(f.reference); err != nil {
		return err
	}
	tables, err := readTables(dir, o)
	if err != nil {
		return err
	}
	var graphs *sweepImages
	if f.plot != "" {
		graphs, err = drawSweeps(tables, sweepOutput{path: f.plot, file: outfile.Options{Label: "--plot"},
			draw: plot.Options{Format: plotFormat, Title: f.title, Warnf: o.Warnf}, flags: f.sweep})
		if err != nil {
			return err
		}
	}
	ctx, stop := outputContext()
	defer stop()
	out, err := outfile.Create(ctx, f.out, fo)
	if err != nil {
		return err
	}
	defer out.Abort()
	if err := writeTables(out, tables, f.format); err != nil {
		return err
	}
	if err := out.Commit(); err != nil {
		return err
	}
	// The files written are said on stdout, or on stderr when the table
	// is there.
	note := s.out
	if f.out == "-" {
		note = s.err
	} else {
		fmt.Fprintf(note, "table: %s\n", outfile.Printable(out.Path()))
	}
	if graphs == nil {
		return nil
	}
	written, err := graphs.write(ctx)
	for _, w := range written {
		fmt.Fprintf(note, "graph: %s\n", outfile.Printable(w))
	}
	return err
}

func writeTables(w io.Writer, tables []*experiment.Table, format string) error {
	if format == "csv" {
		return experiment.WriteCSV(w, tables)
	}
	for i, t := range tables {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		var err error
		if format == "markdown" {
			err = t.WriteMarkdown(w)
		} else {
			err = t.WriteText(w)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
