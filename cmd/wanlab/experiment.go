package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"wanlab/catalog"
	"wanlab/experiment"
	"wanlab/infile"
	"wanlab/outfile"
	"wanlab/results"
	"wanlab/testrun"
)

func init() { addCommand(newExperimentCommand) }

func newExperimentCommand(s *streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "experiment run FILE | merge DIR... -o OUT",
		Short: "Run a sweep from an experiment file, resume it, and merge its shards",
		Long: `experiment runs the sweep an experiment file describes (variables crossed
into cases, a path and tests that use ${var}, repetitions) into a results
directory: one results file per run and an index. docs/experiments.md
describes the file.`,
	}
	c.AddCommand(newExperimentRunCommand(s), newExperimentMergeCommand(s))
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
	b := newRunBackend(s)
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
func executePlan(s *streams, plan *experiment.Plan, b *runBackend, dir string, shard experiment.Shard) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("running an experiment needs root (it builds namespaces and TUN devices): run it with sudo, or look at the cases with --dry-run")
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

// runBackend runs an experiment's runs as `wanlab run` runs them: each
// test entry's options are set through wanlab run's own flags, so a key
// means exactly what its flag means (docs/options.md), and the run goes
// through testrun.
type runBackend struct {
	s *streams
	// flags maps each experiment key to its wanlab run flag.
	flags map[string]string
	keys  []string
	// lengths are the lengths Check found, by case and test entry, for
	// Estimate: preparing a run twice doubles the time a dry run of a
	// large grid takes.
	lengths map[entryKey]time.Duration
}

// entryKey is a test entry of one case: its runs differ in their seed.
type entryKey struct {
	c    *experiment.Case
	test int
}

// experimentOwned are wanlab run's keys that an experiment file sets
// another way: the test entry's test, the path, the derived seed, and the
// results file the experiment names.
var experimentOwned = map[string]bool{"test": true, "up": true, "down": true, "both": true, "seed": true, "output": true, "json": true}

// The quick run's lengths (--quick).
const (
	quickDuration = 3 * time.Second
	quickLeadTail = time.Second
)

var flagInTable = regexp.MustCompile("`--([a-z0-9-]+)`")

func newRunBackend(s *streams) *runBackend {
	b := &runBackend{s: s, flags: map[string]string{}, lengths: map[entryKey]time.Duration{}}
	for _, o := range testrun.Table {
		m := flagInTable.FindStringSubmatch(o.Flag)
		if m == nil || experimentOwned[o.Key] {
			continue
		}
		b.flags[o.Key] = m[1]
		b.keys = append(b.keys, o.Key)
	}
	return b
}

func (b *runBackend) Keys() []string { return b.keys }

// backendRun is a run of an experiment as wanlab run's flags.
type backendRun struct {
	o    testrun.Options
	fs   *pflag.FlagSet
	argv []string
	// flent and pcap say that the test entry asks for the run's Flent
	// file and capture, written beside its results file.
	flent, pcap bool
}

// perRunOutputs are the keys whose value in an experiment is true or
// false, not a file: each run writes its own file, named after its
// results file (RUN.flent.gz, RUN.pcap), into the results directory.
var perRunOutputs = map[string]string{"flent": ".flent.gz", "pcap": ".pcap"}

// options turns a run into wanlab run's flags, the options they set and
// the command line that stands for them.
func (b *runBackend) options(r *experiment.Run) (*backendRun, error) {
	f := &runFlags{o: testrun.Defaults()}
	br := &backendRun{fs: pflag.NewFlagSet("run", pflag.ContinueOnError), argv: []string{"wanlab", "run", r.Test}}
	f.register(br.fs)
	f.o.Test = r.Test
	set := func(key, flag, value string) error {
		if err := br.fs.Set(flag, value); err != nil {
			return &experiment.OptionError{Key: key, Err: fmt.Errorf("--%s %q: %v", flag, value, err)}
		}
		br.argv = append(br.argv, "--"+flag, value)
		return nil
	}
	if r.Up() != "" {
		if err := set("up", "up", r.Up()); err != nil {
			return nil, err
		}
	}
	if r.Down() != "" {
		if err := set("down", "down", r.Down()); err != nil {
			return nil, err
		}
	}
	for _, opt := range r.Options {
		if opt.Key == "at" {
			return nil, &experiment.OptionError{Key: "at", Err: errors.New("timed chain changes are not available in experiment files yet: run them with wanlab run --at")}
		}
		var values []string
		for _, v := range opt.Values {
			// Empty after substitution: not given, as an empty chain is,
			// so that one template serves tests that take the option and
			// tests that do not (E2's tx_qlen).
			if v != "" {
				values = append(values, v)
			}
		}
		if _, repeatable := br.fs.Lookup(b.flags[opt.Key]).Value.(pflag.SliceValue); len(values) > 1 && !repeatable {
			return nil, &experiment.OptionError{Key: opt.Key, Err: fmt.Errorf("takes one value, and is given %d (%s): give one, or make it a variable to run each", len(values), strings.Join(values, ", "))}
		}
		if ext, ok := perRunOutputs[opt.Key]; ok && len(values) == 1 {
			on := values[0] == "true"
			if !on && values[0] != "false" {
				return nil, &experiment.OptionError{Key: opt.Key, Err: fmt.Errorf("%q: in an experiment, each run writes its own file into the results directory, named after its results file (%s): give %s: true", values[0], strings.TrimSuffix(r.File, ".json.gz")+ext, opt.Key)}
			}
			if opt.Key == "flent" {
				br.flent = on
			} else {
				br.pcap = on
			}
			continue
		}
		for _, v := range values {
			if err := set(opt.Key, b.flags[opt.Key], v); err != nil {
				return nil, err
			}
		}
	}
	if f.o.Title == "" {
		if err := set("title", "title", r.Title); err != nil {
			return nil, err
		}
	}
	if r.Quick {
		set("duration", "duration", quickDuration.String())
		if t, err := catalog.Lookup(r.Test, catalog.Options{Streams: f.o.Streams}); err == nil && !t.NoLoad {
			set("lead", "lead", quickLeadTail.String())
			set("tail", "tail", quickLeadTail.String())
		}
	}
	if f.o.Lab == "" {
		// A running testbed's path draws from the seed it was started
		// with: the results record that one.
		set("seed", "seed", strconv.FormatUint(r.Seed, 10))
	}
	br.o = f.o
	return br, nil
}

// flagInMessage finds the flag a testrun message is about.
var flagInMessage = regexp.MustCompile(`--([a-z0-9-]+)`)

// prepare checks and resolves r as wanlab run would (prepareRun), with its
// outputs at path and beside it, or, for path "", at /dev/null. A problem
// with one option is an *experiment.OptionError naming its key.
func (b *runBackend) prepare(r *experiment.Run, path string) (*testrun.Setup, *backendRun, error) {
	br, err := b.options(r)
	if err != nil {
		return nil, nil, err
	}
	out := func(ext string) string {
		if path == "" {
			return os.DevNull
		}
		return strings.TrimSuffix(path, ".json.gz") + ext
	}
	br.o.Output = out(".json.gz")
	if br.flent {
		br.o.Flent = out(perRunOutputs["flent"])
	}
	if br.pcap {
		br.o.Pcap = out(perRunOutputs["pcap"])
		br.argv = append(br.argv, "--pcap", br.o.Pcap)
	}
	if br.flent {
		br.argv = append(br.argv, "--flent", br.o.Flent)
	}
	setup, err := prepareRun(br.fs, br.o)
	if err != nil {
		if m := flagInMessage.FindStringSubmatch(err.Error()); m != nil {
			for key, flag := range b.flags {
				if flag == m[1] {
					return nil, nil, &experiment.OptionError{Key: key, Err: err}
				}
			}
		}
		return nil, nil, err
	}
	return setup, br, nil
}

// Check prepares the run as wanlab run would, without writing anything.
func (b *runBackend) Check(r *experiment.Run) error {
	setup, _, err := b.prepare(r, "")
	if err != nil {
		return err
	}
	b.lengths[entryKey{r.Case, r.TestIndex}] = setup.Length()
	return nil
}

// Estimate is the run's lead, load and tail.
func (b *runBackend) Estimate(r *experiment.Run) time.Duration {
	if d, ok := b.lengths[entryKey{r.Case, r.TestIndex}]; ok {
		return d
	}
	setup, _, err := b.prepare(r, "")
	if err != nil {
		return 0
	}
	return setup.Length()
}

// Run runs r with testrun and writes its results file, and the Flent file
// and capture its test entry asks for beside it; a run cut short by ctx
// writes what it measured, marked partial.
func (b *runBackend) Run(ctx context.Context, r *experiment.Run, path string) error {
	setup, br, err := b.prepare(r, path)
	if err != nil {
		return err
	}
	hooks := testrun.Hooks{Warnf: func(format string, args ...any) {
		fmt.Fprintf(b.s.err, "wanlab: warning: %s: "+format+"\n", append([]any{filepath.Base(path)}, args...)...)
	}}
	doc, runErr := testrun.Run(ctx, setup, testrun.Info{Argv: br.argv, Version: wanlabVersion()}, hooks)
	if doc == nil {
		return runErr
	}
	// The measurements are written even when ctx is done (they are what
	// the interrupted run measured, marked partial) and when removing the
	// path failed after them (runErr): that failure is reported, not
	// paid for with the run.
	if err := results.WriteFile(context.Background(), path, doc, outfile.Options{Label: "the results file"}); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil {
		return runErr
	}
	if br.o.Flent != "" {
		// After the results file, which a failed Flent file must not
		// cost.
		if err := results.WriteFlentFile(context.Background(), br.o.Flent, doc, outfile.Options{Label: "the Flent file"}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// registerSweep adds `wanlab run`'s --sweep flag.
func registerSweep(fs *pflag.FlagSet, sweeps *[]string) {
	fs.StringArrayVar(sweeps, "sweep", nil, "VAR=V1,V2,...: run every value (crossed with other --sweep flags) into a results directory, with ${VAR} in the path and text options, and print the table")
}

// runSweep runs `wanlab run TEST --sweep VAR=V1,V2 ...`: the experiment
// file those flags stand for, into a results directory (-o, default
// TEST-sweep-results, resumed when run again), then prints its table.
func runSweep(s *streams, fs *pflag.FlagSet, f *runFlags, sweeps []string) error {
	if f.o.Test == "" {
		return usagef("--sweep needs a test: wanlab run TEST --sweep VAR=V1,V2 ...")
	}
	if len(f.o.At) > 0 {
		return usagef("--at does not combine with --sweep yet: run the timed changes with wanlab run --at, one case at a time")
	}
	if f.o.JSON {
		return usagef("--json prints one run's document: with --sweep, every run's document is in the results directory")
	}
	if err := testrun.CheckGiven(f.o, fs.Changed); err != nil {
		return usagef("%v", err)
	}
	for flag, ext := range perRunOutputs {
		if v := fs.Lookup(flag).Value.String(); v != "" && v != "true" && v != "false" {
			return usagef("--%s %s with --sweep: each run writes its own into the results directory, named after its results file (RUN%s): give --%s true", flag, v, ext, flag)
		}
	}
	b := newRunBackend(s)
	keyOf := map[string]string{}
	for key, flag := range b.flags {
		keyOf[flag] = key
	}
	spec := experiment.SweepSpec{Name: f.o.Test + "-sweep", Test: f.o.Test, Sweeps: sweeps, Up: f.o.Up, Down: f.o.Down, Both: f.o.Both}
	fs.Visit(func(fl *pflag.Flag) {
		if fl.Name == "seed" {
			spec.Seed = f.o.Seed
		}
		key, ok := keyOf[fl.Name]
		if !ok {
			return
		}
		values := []string{fl.Value.String()}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		spec.Options = append(spec.Options, experiment.Option{Key: key, Values: values})
	})
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
	dir := f.o.Output
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
