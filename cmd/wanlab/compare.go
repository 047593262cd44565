package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"wanlab/compare"
	"wanlab/experiment"
	"wanlab/internal/outfile"
	"wanlab/report"
	"wanlab/results"
)

type compareFlags struct {
	stats, series, where, whereA, whereB, failIf []string
	flowSeries                                   bool
	confidence                                   float64
	format, out                                  string
}

func newCompareCommand(s *streams) *cobra.Command {
	var f compareFlags
	c := &cobra.Command{
		Use:   "compare A B | A... -- B... [--fail-if EXPR]...",
		Short: "Tell whether two sets of runs differ: each difference with its confidence interval and significance",
		Long: `compare reads two sets of runs, A and B, and prints for every series both
have and each statistic (--stat: mean, median and p99 by default) A's and
B's figure (the mean over their runs of each run's figure), the difference
B − A, absolute and in % of A, its 95 % confidence interval by Welch's t
over the runs, and whether it is significant: its p-value after Holm's
correction across every test the command made is below 0.05, so that
twenty statistics compared do not raise a false alarm by chance (the more
tests, the larger a difference must be to count: --series and --stat keep
to what is asked). A side of one run gives no interval: its differences
are printed and never called significant.

A and B are each a results directory of 'wanlab experiment run' (or of
'wanlab run --sweep'), an experiment's summary file ('wanlab experiment
summarize'), a results file, or a directory of results files; to give a
side several files (a glob), write A's, then --, then B's, with the options
before them. The runs of a side are repetitions of the same thing; an
experiment's are compared case by case, a case of A meeting the case of B
with the same test and the same values of the variables both have. --where
keeps some runs on both sides, as for 'wanlab table'; --where-a and
--where-b on one side, and the variables they name are not matched, so one
experiment's cases can be compared with each other (cc=reno against
cc=cubic). Runs that are not complete are left out and counted.

--fail-if EXPR, repeatable, makes the command a gate for a CI pipeline:
EXPR is SERIES STAT OP BOUND, the series' name, a statistic, <, <=, > or
>=, and a bound on B − A with its sign, in % of A's figure or in the
statistic's unit:
  "TCP upload sum mean < -5%"   B's mean throughput is more than 5 % below A's
  "Ping (ms) ICMP median > +10%" B's median RTT is more than 10 % above A's
  "TCP totals mean < -2"         more than 2 Mbits/s below
A condition holds when the whole confidence interval of the difference is
past the bound: a change the runs show beyond their noise. With a side of
one run there is no interval, and the difference itself is judged. On an
experiment, a condition holds when it holds on any case.

Exit status: 0 when no condition holds, 1 when one does (the comparison is
printed all the same, and the conditions that hold on standard error), 2
for bad input: a malformed condition (before anything is read), a path
that holds no runs, a series, statistic or variable the sides do not have.`,
		Example: `  wanlab compare base/ new/
  wanlab compare base-*.json.gz -- new-*.json.gz
  wanlab compare e2-fifo-results e2-fq_codel-results --stat mean,p99 --format markdown
  wanlab compare e1-results e1-results --where-a cc=reno --where-b cc=cubic --where delay=50ms
  wanlab compare main-runs/ branch-runs/ --fail-if "TCP upload sum mean < -5%" --fail-if "Ping (ms) ICMP median > +10%"`,
		Args: func(c *cobra.Command, args []string) error {
			if dash := c.ArgsLenAtDash(); dash >= 0 {
				if dash == 0 || dash == len(args) {
					return usagef("give A's results before -- and B's after it (see 'wanlab compare --help')")
				}
				return nil
			}
			if len(args) != 2 {
				return usagef("give two sides, A B, or several results files a side as A... -- B... (got %s; see 'wanlab compare --help')", plural(len(args), "argument"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			a, b := args[:1], args[1:]
			if dash := c.ArgsLenAtDash(); dash >= 0 {
				a, b = args[:dash], args[dash:]
			}
			return runCompare(s, a, b, &f)
		},
	}
	fs := c.Flags()
	fs.StringSliceVar(&f.stats, "stat", compare.DefaultStats, "statistics of each run's series to compare, comma-separated or repeated: "+strings.Join(results.Stats, ", ")+", or all")
	fs.StringArrayVar(&f.series, "series", nil, `compare only this series (repeatable), e.g. "TCP upload" or a flow's own "TCP upload::tcp_rtt" (default: every series both sides have)`)
	fs.BoolVar(&f.flowSeries, "flow-series", false, "also compare every flow's own series (TCP_INFO at both ends, the router's view)")
	fs.StringArrayVar(&f.where, "where", nil, "VAR=VALUE[,VALUE...]: only runs with one of these values, on both sides (repeatable; VAR may be test)")
	fs.StringArrayVar(&f.whereA, "where-a", nil, "VAR=VALUE[,VALUE...]: only A's runs with one of these values; VAR is then not matched between the sides")
	fs.StringArrayVar(&f.whereB, "where-b", nil, "VAR=VALUE[,VALUE...]: only B's runs with one of these values; VAR is then not matched between the sides")
	fs.Float64Var(&f.confidence, "confidence", compare.DefaultConfidence, "confidence of the intervals; a difference is significant when its p-value after Holm's correction is below 1 − confidence")
	fs.StringArrayVar(&f.failIf, "fail-if", nil, `exit 1 when this condition on B − A holds, e.g. "TCP upload sum mean < -5%" (repeatable; see above)`)
	fs.StringVar(&f.format, "format", "text", "text (aligned columns), markdown, csv or json")
	fs.StringVarP(&f.out, "output", "o", "-", "write the comparison to this file (- for stdout)")
	return c
}

func runCompare(s *streams, a, b []string, f *compareFlags) error {
	// Everything the command line alone decides is checked before a
	// file is read: a CI pipeline's mistake is found at once.
	o := compare.Options{Series: f.series, FlowSeries: f.flowSeries, Confidence: f.confidence}
	for _, text := range f.failIf {
		c, err := compare.ParseCondition(text)
		if err != nil {
			return usagef("%v", err)
		}
		o.Conditions = append(o.Conditions, c)
	}
	for _, st := range f.stats {
		switch {
		case st == "all":
			o.Stats = results.Stats
		case !slices.Contains(results.Stats, st):
			return usagef("--stat %q: use one of %s, or all", st, strings.Join(results.Stats, ", "))
		case !slices.Contains(o.Stats, st):
			o.Stats = append(o.Stats, st)
		}
	}
	if !(f.confidence > 0 && f.confidence < 1) {
		return usagef("--confidence %g: give a number between 0 and 1, such as 0.95 or 0.99", f.confidence)
	}
	if !slices.Contains(compare.Formats, f.format) {
		return usagef("--format %q: use %s", f.format, strings.Join(compare.Formats, ", "))
	}
	var err error
	for _, w := range []struct {
		flag string
		in   []string
		out  *map[string][]string
	}{{"--where", f.where, &o.Where}, {"--where-a", f.whereA, &o.WhereA}, {"--where-b", f.whereB, &o.WhereB}} {
		if *w.out, err = parseWhere(w.flag, w.in); err != nil {
			return err
		}
	}
	for _, p := range b {
		if strings.HasPrefix(p, "-") && p != "-" {
			return usagef("%s after --: options go before A's results (after --, everything is one of B's)", p)
		}
	}
	fo := outfile.Options{Label: "-o", Suggest: "compare." + map[string]string{"text": "txt", "markdown": "md", "csv": "csv", "json": "json"}[f.format], Stdout: s.out}
	if err := outfile.Check(f.out, fo); err != nil {
		return usagef("%v", err)
	}
	if err := notAnInput("-o", f.out, slices.Concat(a, b)...); err != nil {
		return err
	}

	sideA, err := readSide(s, a)
	if err != nil {
		return err
	}
	sideB, err := readSide(s, b)
	if err != nil {
		return err
	}
	res, err := compare.Compare(sideA, sideB, o)
	if err != nil {
		return usagef("%v", err)
	}
	var text bytes.Buffer
	if err := res.Write(&text, f.format); err != nil {
		return err
	}
	ctx, stop := outputContext()
	defer stop()
	if _, err := writeOutput(ctx, f.out, fo, text.Bytes()); err != nil {
		return err
	}
	var held []string
	for _, v := range res.Verdicts {
		if v.Held {
			held = append(held, fmt.Sprintf("--fail-if %q holds: %s", v.Condition.Text, res.Explain(v)))
		}
	}
	if len(held) > 0 {
		return errors.New(strings.Join(held, "\nwanlab: "))
	}
	return nil
}

// parseWhere reads VAR=VALUE[,VALUE...] options into each variable's
// values, as 'wanlab table --where' takes them.
func parseWhere(flag string, in []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, w := range in {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return nil, usagef("%s %q: write VAR=VALUE or VAR=VALUE,VALUE..., e.g. %s cc=cubic or %s test=rrul", flag, w, flag, flag)
		}
		out[k] = append(out[k], v)
	}
	return out, nil
}

// readSide reads one side of a comparison: an experiment's results
// directory or summary file, given alone; or results files and
// directories of them (readRuns), whose complete runs are repetitions.
func readSide(s *streams, paths []string) (*compare.Side, error) {
	label := strings.Join(paths, " ")
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(p, experiment.IndexName)); err == nil && len(paths) > 1 {
			return nil, usagef("%s is an experiment's results directory: give it alone as a side, and its cases are compared one by one", p)
		}
	}
	if len(paths) == 1 {
		p := paths[0]
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, usagef("%s does not exist: give a results directory, an experiment's summary file, or results files", p)
		case err != nil:
			return nil, usagef("%s: %v", p, unwrapPathError(err))
		}
		experimentRuns := false
		if st.IsDir() {
			_, err := os.Stat(filepath.Join(p, experiment.IndexName))
			experimentRuns = err == nil
		} else {
			doc, err := results.ReadFile(p)
			var fe *results.FormatError
			switch {
			case errors.As(err, &fe) && fe.Format == experiment.SummaryFormat:
				experimentRuns = true
			case err != nil:
				return nil, resultsError(p, err)
			default:
				return runsSide(label, []report.Run{{Source: p, Doc: doc}}), nil
			}
		}
		if experimentRuns {
			warnf := func(format string, args ...any) { fmt.Fprintf(s.err, "wanlab: warning: "+format+"\n", args...) }
			rs, err := experiment.OpenRuns(p, experiment.OpenOptions{Warnf: warnf})
			if err != nil {
				return nil, usagef("%v", err)
			}
			return compare.FromExperiment(label, rs), nil
		}
	}
	runs, err := readRuns(paths, s.err)
	if err != nil {
		return nil, err
	}
	return runsSide(label, runs), nil
}

// runsSide makes a side of runs given as results files, repetitions of
// the same thing; a partial run is left out and counted, as an
// experiment's are.
func runsSide(label string, runs []report.Run) *compare.Side {
	side := &compare.Side{Label: label}
	for _, r := range runs {
		if r.Doc.Run.Partial {
			side.Skipped++
			continue
		}
		side.Runs = append(side.Runs, compare.Run{Source: r.Source, Doc: r.Doc.WithoutSamples()})
	}
	return side
}
