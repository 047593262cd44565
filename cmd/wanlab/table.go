package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"wanlab/experiment"
	"wanlab/outfile"
)

func init() { addCommand(newTableCommand) }

type tableFlags struct {
	rows, cols, series, stat, spread, format, out string
	where                                         []string
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
out and counted.`,
		Example: `  wanlab table e1-results
  wanlab table e1-results --rows delay --cols transport --where variant=jitter
  wanlab table e3-results --series "Ping (ms) ICMP" --stat median --format markdown
  wanlab table e2-results --spread minmax --format csv -o e2.csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runTable(s, args[0], &f) },
	}
	fs := c.Flags()
	fs.StringVar(&f.rows, "rows", "", "variable down the side (default: the first that varies)")
	fs.StringVar(&f.cols, "cols", "", "variable across the top (default: the second that varies)")
	fs.StringArrayVar(&f.where, "where", nil, "VAR=VALUE: only runs with this value (repeatable)")
	fs.StringVar(&f.series, "series", "", `series of the cells, e.g. "TCP upload" or "Ping (ms) ICMP" (default: each run's main throughput)`)
	fs.StringVar(&f.stat, "stat", "mean", "statistic of each run's series: "+strings.Join(experiment.Stats, ", "))
	fs.StringVar(&f.spread, "spread", "stddev", "spread across repetitions: "+strings.Join(experiment.Spreads, ", "))
	fs.StringVar(&f.format, "format", "text", "text (aligned columns), markdown or csv")
	fs.StringVarP(&f.out, "output", "o", "-", "write the table to this file (- for stdout)")
	return c
}

var tableFormats = []string{"text", "markdown", "csv"}

func runTable(s *streams, dir string, f *tableFlags) error {
	if !slices.Contains(tableFormats, f.format) {
		return usagef("--format %q: use text, markdown or csv", f.format)
	}
	o := experiment.TableOptions{Rows: f.rows, Cols: f.cols, Series: f.series, Stat: f.stat, Spread: f.spread, Where: map[string]string{}}
	for _, w := range f.where {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return usagef("--where %q: write VAR=VALUE, e.g. --where variant=jitter", w)
		}
		o.Where[k] = v
	}
	fo := outfile.Options{Label: "-o", Suggest: "table." + map[string]string{"text": "txt", "markdown": "md", "csv": "csv"}[f.format], Stdout: s.out}
	if err := outfile.Check(f.out, fo); err != nil {
		return usagef("%v", err)
	}
	tables, err := experiment.Tables(dir, o)
	if err != nil {
		var ce *experiment.ChoiceError
		if errors.As(err, &ce) || errors.Is(err, experiment.ErrNoIndex) {
			return usagef("%v", err)
		}
		return err
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
	return out.Commit()
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
