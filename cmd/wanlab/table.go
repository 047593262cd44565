package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"wanlab/experiment"
	"wanlab/internal/outfile"
	"wanlab/plot"
)

type tableFlags struct {
	rows, cols, series, stat, spread, format, out string
	where                                         []string
	plot                                          string
}

func newTableCommand(s *streams) *cobra.Command {
	var f tableFlags
	c := &cobra.Command{
		Use:   "table DIR [--rows VAR] [--cols VAR] [--series NAME] [--stat STAT] [--format text|markdown|csv]",
		Short: "Lay out an experiment's results as a table: one variable down, another across",
		Long: `table reads a results directory of 'wanlab experiment run' and prints a
statistic of one series for each case: rows are one variable's values,
columns another's, and each cell is the statistic over the case's
repetitions (the mean of each run's figure), with their spread (the sample
standard deviation across repetitions, or min–max). The variables that vary
but are neither rows nor columns give one table per value.

Defaults: rows and columns are the first two variables whose value varies,
in the experiment file's order ("test" counts as a variable when a case runs
several tests); the series is each run's main throughput (TCP totals for
rrul, the sum for tcp_nup and tcp_ndown, the one load flow's series
otherwise); the statistic is the mean. Runs that are not complete are left
out and counted: the results files decide, as for resuming, so a run whose
file is missing, cut short or damaged is not complete whatever the index
says (a warning names a file that is there but holds no whole run).

--plot draws the table as a graph too: the row variable along the x axis,
one line per column, error bars for the spread.`,
		Example: `  wanlab table e1-results
  wanlab table e1-results --rows delay --cols transport --where variant=jitter
  wanlab table e3-results --series "Ping (ms) ICMP" --stat median --format markdown
  wanlab table e2-results --spread minmax --format csv -o e2.csv
  wanlab table e1-quick --plot e1-quick.svg`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runTable(s, args[0], &f) },
	}
	fs := c.Flags()
	fs.StringVar(&f.rows, "rows", "", "variable down the side (default: the first that varies)")
	fs.StringVar(&f.cols, "cols", "", "variable across the top (default: the second that varies)")
	fs.StringArrayVar(&f.where, "where", nil, "VAR=VALUE[,VALUE...]: only runs with one of these values (repeatable); a variable given one value is fixed, one given several still varies among them")
	fs.StringVar(&f.series, "series", "", `series of the cells, e.g. "TCP upload", "Ping (ms) ICMP" or a flow's own "TCP upload::tcp_reordering" (default: each run's main throughput)`)
	fs.StringVar(&f.stat, "stat", "mean", "statistic of each run's series: "+strings.Join(experiment.Stats, ", "))
	fs.StringVar(&f.spread, "spread", "stddev", "spread across repetitions: "+strings.Join(experiment.Spreads, ", "))
	fs.StringVar(&f.format, "format", "text", "text (aligned columns), markdown or csv")
	fs.StringVarP(&f.out, "output", "o", "-", "write the table to this file (- for stdout)")
	fs.StringVar(&f.plot, "plot", "", "also draw the table as a graph into this .png or .svg file: rows along x, a line per column")
	return c
}

var tableFormats = []string{"text", "markdown", "csv"}

func runTable(s *streams, dir string, f *tableFlags) error {
	if !slices.Contains(tableFormats, f.format) {
		return usagef("--format %q: use text, markdown or csv", f.format)
	}
	o := experiment.TableOptions{Rows: f.rows, Cols: f.cols, Series: f.series, Stat: f.stat, Spread: f.spread, Where: map[string][]string{},
		Warnf: func(format string, args ...any) { fmt.Fprintf(s.err, "wanlab: warning: "+format+"\n", args...) }}
	for _, w := range f.where {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return usagef("--where %q: write VAR=VALUE or VAR=VALUE,VALUE..., e.g. --where variant=jitter or --where transport=reno,cubic", w)
		}
		o.Where[k] = append(o.Where[k], v)
	}
	fo := outfile.Options{Label: "-o", Suggest: "table." + map[string]string{"text": "txt", "markdown": "md", "csv": "csv"}[f.format], Stdout: s.out}
	if err := outfile.Check(f.out, fo); err != nil {
		return usagef("%v", err)
	}
	var plotFormat plot.Format
	if f.plot != "" {
		var err error
		if plotFormat, err = plot.FormatFor(f.plot); err != nil {
			return usagef("--plot: %s", strings.TrimPrefix(err.Error(), "plot: "))
		}
		if err := outfile.Check(f.plot, outfile.Options{Label: "--plot", Suggest: "table." + string(plotFormat)}); err != nil {
			return usagef("%v", err)
		}
	}
	tables, err := experiment.Tables(dir, o)
	if err != nil {
		var ce *experiment.ChoiceError
		var de *experiment.DirError
		if errors.As(err, &ce) || errors.As(err, &de) || errors.Is(err, experiment.ErrNoIndex) {
			return usagef("%v", err)
		}
		return err
	}
	if f.plot != "" && len(tables) > 1 {
		var fixed []string
		for _, v := range tables[0].Fixed {
			fixed = append(fixed, "--where "+v.Name+"="+v.Value)
		}
		return usagef("--plot draws one table and this directory gives %d: choose one with %s", len(tables), strings.Join(fixed, " "))
	}
	ctx, stop := outfile.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
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
	if f.plot != "" {
		g, err := outfile.Create(ctx, f.plot, outfile.Options{Label: "--plot"})
		if err != nil {
			return err
		}
		defer g.Abort()
		if err := plot.DrawSweep(g, sweepOf(tables[0]), plot.Options{Format: plotFormat}); err != nil {
			return err
		}
		return g.Commit()
	}
	return nil
}

// sweepOf turns a table into a graph: the row variable's values along a
// categorical x axis, one line per column, error bars for the spread.
func sweepOf(t *experiment.Table) plot.Sweep {
	s := plot.Sweep{Title: t.Caption(), XLabel: t.RowVar, Categories: t.Rows}
	s.YLabel = t.Stat + " of " + strings.Join(t.Series, " / ")
	if t.Unit != "" {
		s.YLabel += " (" + t.Unit + ")"
	}
	for j := range t.Cols {
		g := plot.SweepGroup{Name: t.Cols[j]}
		if t.ColVar == "" {
			g.Name = t.Stat
		}
		for i, rv := range t.Rows {
			c := t.Cells[i][j]
			p := plot.SweepPoint{Category: rv, Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
			if c.N > 0 {
				p.Mean, p.Lo, p.Hi = c.Summary.Mean, c.Summary.Mean, c.Summary.Mean
				switch {
				case c.N < 2:
				case t.Spread == "stddev":
					p.Lo, p.Hi = c.Summary.Mean-c.Summary.SampleStdDev, c.Summary.Mean+c.Summary.SampleStdDev
				case t.Spread == "minmax":
					p.Lo, p.Hi = c.Summary.Min, c.Summary.Max
				}
			}
			g.Points = append(g.Points, p)
		}
		s.Groups = append(s.Groups, g)
	}
	return s
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
