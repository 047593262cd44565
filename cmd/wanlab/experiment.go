package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"wanlab/experiment"
	"wanlab/experiment/runner"
	"wanlab/internal/infile"
	"wanlab/internal/outfile"
	"wanlab/testrun"
)

func newExperimentCommand(s *streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "experiment run FILE | merge DIR... -o OUT | summarize DIR | sbatch FILE | k8s FILE | status DIR...",
		Short: "Run a sweep from an experiment file, resume it, and merge its shards",
		Long: `experiment runs the sweep an experiment file describes (variables crossed
into cases, a path and tests that use ${var}, repetitions) into a results
directory: one results file per run and an index. docs/experiments.md
describes the file.`,
	}
	c.AddCommand(newExperimentRunCommand(s), newExperimentMergeCommand(s), newExperimentSummarizeCommand(s))
	c.AddCommand(newExperimentK8sCommand(s))
	c.AddCommand(newExperimentSbatchCommand(s), newExperimentStatusCommand(s))
	return c
}

type experimentRunFlags struct {
	out    string
	dryRun bool
	quick  bool
	shard  string
}

func newExperimentRunCommand(s *streams) *cobra.Command {
	var f experimentRunFlags
	c := &cobra.Command{
		Use:   "run FILE [-o DIR] [--dry-run] [--quick] [--shard K/N]",
		Short: "Run every case of an experiment file into a results directory, or resume it",
		Long: `run checks the whole file first (an unknown key, an undefined ${var}, a chain
tc would refuse or a bad option exits 2 with the file, line and fix), then
runs every case's tests and repetitions as 'wanlab run' would, into DIR
(default NAME-results): one results file per run and index.json. Running
the same command again runs only what is missing or partial; a directory
made from another file is refused.

--quick shortens every run (load 3s, lead and tail 1s), runs each case once
and keeps only the cases the file's quick: key selects. --shard K/N runs the
K-th of N disjoint slices of the cases, for several machines; join the
slices with 'wanlab experiment merge'. Lay the results out with 'wanlab
table DIR'.`,
		Example: `  sudo wanlab experiment run examples/e2.yaml
  wanlab experiment run examples/e1.yaml --dry-run
  sudo wanlab experiment run examples/e1.yaml --quick && wanlab table e1-quick
  sudo wanlab experiment run e1.yaml --shard 2/8 -o e1-shard-2-of-8`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runExperiment(s, args[0], &f) },
	}
	fs := c.Flags()
	fs.StringVarP(&f.out, "output", "o", "", "results directory (default NAME-results, NAME-quick with --quick, NAME-shard-K-of-N with --shard)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the cases, their chains in tc syntax, and each run's seed and file, and run nothing")
	fs.BoolVar(&f.quick, "quick", false, "short runs (3s load, 1s lead and tail), one repetition, only the cases of the file's quick: key")
	fs.StringVar(&f.shard, "shard", "", "K/N: run only the K-th of N disjoint slices of the cases")
	return c
}

// maxExperimentFile bounds an experiment file: a YAML grid of a few
// hundred lines is a few KiB.
const maxExperimentFile = 16 << 20

func runExperiment(s *streams, file string, f *experimentRunFlags) error {
	content, err := infile.Read(file, maxExperimentFile)
	if err != nil {
		return usagef("cannot read the experiment file: %v", err)
	}
	var shard experiment.Shard
	if f.shard != "" {
		if shard, err = experiment.ParseShard(f.shard); err != nil {
			return usagef("%v", err)
		}
	}
	b := newRunner(s)
	plan, err := experiment.Load(file, content, experiment.LoadOptions{Backend: b, TC: tcOptions(), Quick: f.quick})
	if err != nil {
		if _, ok := experiment.AsErrors(err); ok {
			return usagef("%v", err)
		}
		return err
	}
	if f.dryRun {
		return plan.WriteDryRun(s.out, shard, b)
	}
	dir := f.out
	if dir == "" {
		dir = defaultExperimentDir(plan.Name, f.quick, shard)
	}
	return executePlan(s, plan, b, dir, shard)
}

// defaultExperimentDir names a results directory after the experiment, so
// that the same command resumes the same directory.
func defaultExperimentDir(name string, quick bool, shard experiment.Shard) string {
	name = strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r < ' ' {
			return '_'
		}
		return r
	}, name)
	switch {
	case !shard.Whole():
		name += fmt.Sprintf("-shard-%d-of-%d", shard.K, shard.N)
		if quick {
			name += "-quick"
		}
	case quick:
		name += "-quick"
	default:
		name += "-results"
	}
	return name
}

// executePlan runs a plan into dir and says how it went.
func executePlan(s *streams, plan *experiment.Plan, b experiment.Backend, dir string, shard experiment.Shard) error {
	if err := enterLab(); err != nil {
		return err
	}
	ctx, stop := outfile.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	rep, err := experiment.Execute(ctx, plan, b, experiment.ExecOptions{Dir: dir, Shard: shard, Progress: s.err})
	var de *experiment.DirError
	switch {
	case errors.As(err, &de):
		return usagef("%v", err)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %d of %d runs complete in %s; run the same command again to resume", rep.Complete, rep.Runs, dir)
	case err != nil:
		return err
	}
	if n := rep.Failed + rep.Partial + rep.Pending; n > 0 {
		return fmt.Errorf("%d of %d runs are not complete (%d failed, %d partial); run the same command again to retry them (errors are in %s)",
			n, rep.Runs, rep.Failed, rep.Partial, filepath.Join(dir, experiment.IndexName))
	}
	fmt.Fprintf(s.err, "lay it out with: wanlab table %s\n", dir)
	return nil
}

func newExperimentMergeCommand(s *streams) *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "merge DIR... -o OUT",
		Short: "Join the results directories of an experiment's shards into one",
		Long: `merge joins results directories of one experiment file (the shards of a
sweep run on several machines with --shard, or attempts on one) into OUT:
cases are matched by their variables, and of two results for the same run
the more complete is kept. The results files decide, as for resuming: a
run whose file is missing or holds no whole run is one not made, whatever
its directory's index says. Directories of different experiment files, or
quick and full ones, are refused, and so is an OUT that is one of them or
holds an experiment already: OUT is a new or empty directory, and a
merge that fails leaves nothing there. 'wanlab experiment run FILE -o OUT'
then runs whatever no shard completed.`,
		Example: `  wanlab experiment merge e1-shard-*-of-8 -o e1-results
  wanlab table e1-results`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, dirs []string) error {
			if out == "" {
				return usagef("merge needs -o OUT, the directory to merge into")
			}
			ctx, stop := outfile.NotifyContext(context.Background(), stopSignals...)
			defer stop()
			ix, err := experiment.Merge(ctx, out, dirs)
			var de *experiment.DirError
			switch {
			case errors.As(err, &de) || errors.Is(err, experiment.ErrNoIndex):
				return usagef("%v", err)
			case ctx.Err() != nil:
				return fmt.Errorf("interrupted: nothing merged into %s", out)
			}
			if err != nil {
				return err
			}
			n := ix.Counts()
			fmt.Fprintf(s.err, "%s: %d cases, %d runs complete, %d partial, %d failed, %d not run\n", out, len(ix.Cases),
				n[experiment.StatusComplete], n[experiment.StatusPartial], n[experiment.StatusFailed], n[experiment.StatusPending])
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "directory to merge into (new or empty)")
	return c
}

// newRunner returns the backend that runs an experiment's runs as wanlab
// run runs them.
func newRunner(s *streams) *runner.Backend {
	return runner.New(runner.Config{TC: tcOptions(), Version: wanlabVersion(), Warnings: s.err})
}

// registerSweep adds `wanlab run`'s --sweep flag.
func registerSweep(fs *pflag.FlagSet, sweeps *[]string) {
	fs.StringArrayVar(sweeps, "sweep", nil, "VAR=V1,V2,...: run every value (crossed with other --sweep flags) into a results directory, with ${VAR} in the path and text options, and print the table")
}

// runSweep runs `wanlab run TEST --sweep VAR=V1,V2 ...`: the experiment
// file those flags stand for, into a results directory (-o, default
// TEST-sweep-results, resumed when run again), then prints its table.
func runSweep(s *streams, fs *pflag.FlagSet, o *testrun.Options, sweeps []string) error {
	if o.Test == "" {
		return usagef("--sweep needs a test: wanlab run TEST --sweep VAR=V1,V2 ...")
	}
	if len(o.At) > 0 {
		return usagef("--at does not combine with --sweep yet: run the timed changes with wanlab run --at, one case at a time")
	}
	if o.JSON {
		return usagef("--json prints one run's document: with --sweep, every run's document is in the results directory")
	}
	if err := testrun.CheckGiven(*o, fs.Changed); err != nil {
		return usagef("%v", err)
	}
	spec, err := runner.Sweep(*o, sweeps, fs.Changed)
	if err != nil {
		return usagef("%v", err)
	}
	b := newRunner(s)
	content, err := experiment.SweepFile(spec)
	if err != nil {
		return usagef("%v", err)
	}
	plan, err := experiment.Load("wanlab run --sweep", content, experiment.LoadOptions{Backend: b, TC: tcOptions()})
	if err != nil {
		if _, ok := experiment.AsErrors(err); ok {
			return usagef("%v", err)
		}
		return err
	}
	dir := o.Output
	if dir == "" {
		dir = defaultExperimentDir(plan.Name, false, experiment.Shard{})
	}
	if err := executePlan(s, plan, b, dir, experiment.Shard{}); err != nil {
		return err
	}
	tables, err := experiment.Tables(dir, experiment.TableOptions{})
	if err != nil {
		return err
	}
	return writeTables(s.out, tables, "text")
}

func newExperimentSummarizeCommand(s *streams) *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "summarize DIR [-o FILE]",
		Short: "Write an experiment's results in a compact file that tables, sweep graphs and comparisons read",
		Long: `summarize writes one file that holds an experiment's index and each run's
results without their samples: every series' statistics, the flows', the
router's report and the fidelity verdict, the setup and the seed. It is a
few kilobytes a run instead of a few hundred, so an experiment's results
can be kept or shipped whole; 'wanlab table', 'wanlab plot --kind sweep'
and 'wanlab compare' read it as they read the directory, with the same
figures. Graphs over time need the runs' own results files.

Without -o the file is DIR.summary.json.gz beside DIR, never over an
existing file.`,
		Example: `  wanlab experiment summarize e1-results
  wanlab table e1-results.summary.json.gz --where variant=fixed`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir := args[0]
			o := outfile.Options{Label: "--output", Suggest: "experiment.summary.json.gz", Stdout: s.out}
			path := out
			if path == "" {
				path = filepath.Clean(dir) + ".summary.json.gz"
				o.NoClobber, o.ClobberHint = true, "give another name with -o FILE"
			}
			if err := outfile.Check(path, o); err != nil {
				return usagef("%v", err)
			}
			if err := notAnInput("--output", path, dir); err != nil {
				return err
			}
			ctx, stop := outfile.NotifyContext(context.Background(), stopSignals...)
			defer stop()
			rs, written, err := experiment.Summarize(ctx, dir, path, o)
			var de *experiment.DirError
			if errors.As(err, &de) || errors.Is(err, experiment.ErrNoIndex) {
				return usagef("%v", err)
			}
			if err != nil {
				return err
			}
			n := map[string]int{}
			for _, c := range rs.Index.Cases {
				for _, r := range c.Runs {
					n[rs.Run(r.File).Status]++
				}
			}
			fmt.Fprintf(s.err, "%s: %d cases, %d runs complete, %d partial, %d failed, %d not run\n", outfile.Printable(written), len(rs.Index.Cases),
				n[experiment.StatusComplete], n[experiment.StatusPartial], n[experiment.StatusFailed], n[experiment.StatusPending])
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "the summary file to write (default DIR.summary.json.gz beside DIR)")
	return c
}
