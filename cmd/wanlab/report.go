package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"wanlab/compare"
	"wanlab/experiment"
	"wanlab/internal/outfile"
	"wanlab/plot"
	"wanlab/report"
	"wanlab/results"
)

type reportOptions struct {
	output string
	title  string
	// compare is --compare, side B: one path, or none.
	compare []string
}

func newReportCommand(s *streams) *cobra.Command {
	var o reportOptions
	c := &cobra.Command{
		Use:   "report FILE... | DIR [-o report.html] [--compare B]",
		Short: "Write one self-contained HTML report of one or more runs, or of an experiment by case",
		Long: `report writes one HTML page, viewable offline (nothing is loaded from or
sent to the network: its one script, its styles and its images are in the
page), with each run's setup in tc syntax and the command that runs it
again, the summary of every series as Flent's -f stats gives it, the graphs
(all_scaled, ping_cdf, and tcp_cwnd_rtt and router_flows when the run has
their series), and the fidelity check: configured against achieved rate,
delay and loss, release lateness, drops in the TUN ring, and the verdict,
with a warning where the emulator was not faithful and on partial runs.
Several runs get a table across them first. The graphs over time are
interactive: hover to read values, click a legend entry to hide a series,
drag to zoom into a time range, double-click to zoom out; printed, or
without script, the static graphs stand in.

Give results files (.json.gz or .json, as wanlab run writes them), or a
directory: every results file in it is read, in name order, other JSON
files there are passed over, and a file that holds no whole run (cut
short, damaged, a FIFO) is left out with a warning, as a run not made.

Given alone, an experiment's results directory (wanlab experiment run) or
its summary file (wanlab experiment summarize) gets a report by case: the
experiment's tables and sweep graphs as wanlab table makes them, a table
of its cases, then a section per case with its main series over the
repetitions (mean ± sample standard deviation, range, number of runs), how
many of its runs were faithful, not faithful or partial, a graph of its
runs over time, and each run's details folded under it. A summary file has
no samples, so its runs have figures but no graphs over time.

With --compare B, the page also compares its runs, A, with B's, as
'wanlab compare A B' prints it with its defaults: the mean, median and p99
of every series both have, each difference B − A with its 95 % confidence
interval by Welch's t over the runs, and whether it is significant after
Holm's correction. The section "Comparison with B" comes after the table
across runs, or after an experiment's tables, with a table per pair of
cases compared; a significant row is shaded and says "yes". B is a results
directory, an experiment's results directory or summary file, or a results
file; a B that does not exist, holds no runs or has no case in common with
the report's exits 2 before anything is written. For other statistics,
series, or a gate with --fail-if, run 'wanlab compare'.

Without -o the report is written beside the first input (RUN.html, or
DIR/report.html), never over or through an existing file or link: a taken
name gets -2, -3, ... (RUN-2.html).`,
		Example: `  wanlab report wanlab-rrul-20260304-050607.json.gz -o rrul.html
  wanlab report fifo.json.gz fq_codel.json.gz -o compare.html --title "pfifo vs fq_codel at 10 Mbit/s"
  wanlab report e1-results -o e1.html
  wanlab report e1-summary.json.gz -o e1.html
  wanlab report branch-runs/ --compare main-runs/ -o branch.html
  wanlab report e2-fq_codel-results --compare e2-fifo-results -o e2.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runReport(s, &o, args) },
	}
	fs := c.Flags()
	fs.StringVarP(&o.output, "output", "o", "", "the HTML file to write (- for stdout; default beside the first input, RUN.html or DIR/report.html)")
	fs.StringVar(&o.title, "title", "", "the page's title (default: the run's title, or the number of runs)")
	fs.StringArrayVar(&o.compare, "compare", nil, "add a section comparing the report's runs (A) with those of `B`, as wanlab compare A B prints it: a results directory, an experiment's results directory or summary file, or a results file (once)")
	return c
}

func runReport(s *streams, o *reportOptions, args []string) error {
	out := outfile.Options{Label: "--output", Suggest: "report.html", Stdout: s.out}
	path := o.output
	if path == "" {
		path = reportPathBeside(args[0])
		out.NoClobber, out.ClobberHint = true, "give another name with -o FILE"
	}
	// Side B is read first: a mistake in --compare shows at once, before
	// the report's inputs, which may be hundreds of runs, are read.
	var sideB *compare.Side
	switch len(o.compare) {
	case 0:
	case 1:
		var err error
		if sideB, err = readSide(s, o.compare); err != nil {
			return err
		}
	default:
		return usagef("--compare is given %d times: give it once, with one side B (wanlab compare compares sides of several files)", len(o.compare))
	}
	label := strings.Join(args, " ")
	var page bytes.Buffer
	var what string
	if len(args) == 1 && isExperiment(args[0]) {
		if err := outfile.Check(path, out); err != nil {
			return usagef("%v", err)
		}
		if err := notAnInput("--output", path, slices.Concat(args, o.compare)...); err != nil {
			return err
		}
		e, rs, err := readExperiment(args[0], s.err)
		if err != nil {
			return err
		}
		res, err := compareReport(compare.FromExperiment(label, rs), sideB)
		if err != nil {
			return err
		}
		if err := report.WriteExperiment(&page, e, report.Options{Title: o.title, Compare: res}); err != nil {
			return usagef("%v", err)
		}
		what = "experiment " + e.Name
	} else {
		runs, err := readRuns(args, s.err)
		if err != nil {
			return err
		}
		if err := outfile.Check(path, out); err != nil {
			return usagef("%v", err)
		}
		if err := notAnInput("--output", path, slices.Concat(args, o.compare)...); err != nil {
			return err
		}
		res, err := compareReport(runsSide(label, runs), sideB)
		if err != nil {
			return err
		}
		if err := report.Write(&page, runs, report.Options{Title: o.title, Compare: res}); err != nil {
			return usagef("%v", err)
		}
		what = plural(len(runs), "run")
	}
	ctx, stop := outputContext()
	defer stop()
	written, err := writeOutput(ctx, path, out, page.Bytes())
	if err != nil {
		return err
	}
	if written != "-" {
		fmt.Fprintf(s.out, "report of %s: %s\n", what, outfile.Printable(written))
	}
	return nil
}

// compareReport compares the report's runs, side A, with side B as
// wanlab compare A B does with its defaults; nil without B (no
// --compare). Its errors are compare's, which exit 2 as compare's do.
func compareReport(a, b *compare.Side) (*compare.Result, error) {
	if b == nil {
		return nil, nil
	}
	res, err := compare.Compare(a, b, compare.Options{})
	if err != nil {
		return nil, usagef("%v", err)
	}
	return res, nil
}

// isExperiment reports whether path is an experiment's results directory
// (its index names cases) or summary file, for a report by case. A
// directory whose index cannot be read is not one: its results files are
// read as runs.
func isExperiment(path string) bool {
	if !isDir(path) {
		_, err := results.ReadFile(path)
		var fe *results.FormatError
		return errors.As(err, &fe) && fe.Format == experiment.SummaryFormat
	}
	ix, err := experiment.ReadIndex(path)
	return err == nil && len(ix.Cases) > 0
}

// readExperiment reads an experiment's runs, with their samples, and its
// tables and sweep graphs as wanlab table makes them by default. This is
// the one place the report takes the experiment's tables and graphs. It
// returns the runs too, for a comparison of them (--compare).
func readExperiment(path string, warn io.Writer) (*report.Experiment, *experiment.Runs, error) {
	warnf := func(format string, args ...any) { fmt.Fprintf(warn, "wanlab: warning: "+format+"\n", args...) }
	rs, err := experiment.OpenRuns(path, experiment.OpenOptions{Samples: true, Warnf: warnf})
	if err != nil {
		return nil, nil, usagef("%v", err)
	}
	e := report.ExperimentOf(rs)
	tables, err := experiment.Tables(path, experiment.TableOptions{})
	if err != nil {
		// A table the defaults cannot make (several throughput series
		// to choose from) is a note in the page, not a report refused.
		e.TablesNote = fmt.Sprintf("No table: %v (wanlab table %s with the options it names makes it).", err, path)
	}
	for _, t := range tables {
		// The graph wanlab table --plot draws; a table none can be drawn
		// of (an error of FromTable's) has none.
		tt := report.Table{Table: t}
		if sw, err := plot.FromTable(t, plot.TableGraph{}); err == nil {
			tt.Sweep = &sw
		}
		e.Tables = append(e.Tables, tt)
	}
	return e, rs, nil
}

// reportPathBeside is the report's default name: the first input's name
// with .html for .json(.gz), or report.html inside a directory.
func reportPathBeside(input string) string {
	if isDir(input) {
		return filepath.Join(input, "report.html")
	}
	return resultsStem(input) + ".html"
}

// readRuns reads the results documents the command line names: each
// argument a results file, or a directory whose results files (*.json,
// *.json.gz, not hidden) are read in name order. A file named on the
// command line must be a results document. In a directory, JSON of
// another format (an experiment's index) is passed over, and a file that
// holds no run (results.NotRun: cut short, damaged, a FIFO or a device) is
// left out with a warning, as the run not made that it is; any other error
// (a document of a newer version, or beyond the bounds) names the file.
func readRuns(args []string, warn io.Writer) ([]report.Run, error) {
	var runs []report.Run
	for _, arg := range args {
		st, err := os.Stat(arg)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, usagef("%s does not exist: give results files (.json.gz) or a directory of them", arg)
		case err != nil:
			return nil, usagef("%s: %v", arg, unwrapPathError(err))
		case !st.IsDir():
			d, err := readResults(arg)
			if err != nil {
				return nil, err
			}
			runs = append(runs, report.Run{Source: arg, Doc: d})
			continue
		}
		entries, err := os.ReadDir(arg)
		if err != nil {
			return nil, usagef("%s: %v", arg, unwrapPathError(err))
		}
		found, left := 0, 0
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || strings.HasPrefix(name, ".") || !(strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".json.gz")) {
				continue
			}
			path := filepath.Join(arg, name)
			d, err := results.ReadFile(path)
			var other *results.FormatError
			switch {
			case errors.As(err, &other):
				continue
			case results.NotRun(err):
				fmt.Fprintf(warn, "wanlab: warning: %s: left out, as a run not made\n", strings.Replace(err.Error(), "results: ", "", 1))
				left++
				continue
			case err != nil:
				return nil, resultsError(path, err)
			}
			runs = append(runs, report.Run{Source: path, Doc: d})
			found++
		}
		switch {
		case found == 0 && left > 0:
			return nil, usagef("%s holds no whole results file (%s left out, above): give the directory wanlab run or wanlab experiment run wrote, or the files themselves", arg, plural(left, "file"))
		case found == 0:
			return nil, usagef("%s holds no results files (*.json.gz or *.json): give the directory wanlab run or wanlab experiment run wrote, or the files themselves", arg)
		}
	}
	return runs, nil
}

// resultsStem is a results file's name without its .json or .json.gz.
func resultsStem(path string) string {
	for _, ext := range []string{".json.gz", ".json"} {
		if strings.HasSuffix(path, ext) && len(path) > len(ext) {
			return strings.TrimSuffix(path, ext)
		}
	}
	return path
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// writeOutput writes data to path through outfile, whole or not at all,
// and returns the path written: path, or for a name wanlab chose
// (o.NoClobber) that was taken, the numbered name it went to instead.
// ctx ends the wait for a FIFO's reader (outputContext's signals).
func writeOutput(ctx context.Context, path string, o outfile.Options, data []byte) (string, error) {
	f, err := outfile.Create(ctx, path, o)
	if err != nil {
		return "", err
	}
	defer f.Abort() // a no-op after Commit
	f.Write(data)   // Commit reports a failed write
	if err := f.Commit(); err != nil {
		return "", err
	}
	return f.Path(), nil
}

// outputContext is the context of a command's output phase: SIGINT,
// SIGTERM, SIGHUP or SIGQUIT end it, so that a FIFO with no reader, whose
// open(2) waits as a shell's "> fifo" does, still yields to Ctrl-C and kill.
// A regular file being written when one arrives is committed whole (the
// write takes milliseconds) and the command stops before its next file.
func outputContext() (context.Context, context.CancelFunc) {
	return outfile.NotifyContext(context.Background(), stopSignals...)
}

// unwrapPathError drops the operation and path *fs.PathError adds, since
// messages name the path already.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
