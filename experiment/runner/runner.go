// Package runner runs an experiment's runs as `wanlab run` runs them: it
// is the experiment.Backend of wanlab. Each test entry's options are set
// through testrun's registry of run options, the parsers of `wanlab run`'s
// flags, so that a key means exactly what its flag means
// (docs/options.md) and is refused exactly where the flag is; the run goes
// through testrun, and its results file records the command line that
// stands for it. Package experiment (files, plans, tables) knows nothing
// of the lab; this package joins the two.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"wanlab/catalog"
	"wanlab/experiment"
	"wanlab/internal/outfile"
	"wanlab/results"
	"wanlab/tcspec"
	"wanlab/testrun"
)

// Config is what the runs need from the command.
type Config struct {
	// TC is how the path's chains are parsed (distribution files).
	TC tcspec.Options
	// Version is wanlab's, recorded in every results file.
	Version string
	// Warnings takes the runs' warnings, a line each.
	Warnings io.Writer
}

// Backend runs an experiment's runs with testrun.
type Backend struct {
	cfg Config
	// keys are the experiment keys of test entries, in the registry's
	// order.
	keys []string
	// lengths are the lengths Check found, by case and test entry, for
	// Estimate: preparing a run twice doubles the time a dry run of a
	// large grid takes.
	lengths map[entryKey]time.Duration
}

var _ experiment.Backend = (*Backend)(nil)

// entryKey is a test entry of one case: its runs differ in their seed.
type entryKey struct {
	c    *experiment.Case
	test int
}

// The quick run's lengths (experiment run --quick).
const (
	QuickDuration = 3 * time.Second
	QuickLeadTail = time.Second
)

// New returns the backend.
func New(c Config) *Backend {
	b := &Backend{cfg: c, lengths: map[entryKey]time.Duration{}}
	for _, op := range testrun.Registry() {
		if op.Experiment != testrun.ByExperiment {
			b.keys = append(b.keys, op.Key)
		}
	}
	return b
}

// Keys lists the options a test entry may give: every option of a run but
// those the experiment sets itself (testrun.ByExperiment).
func (b *Backend) Keys() []string { return b.keys }

// run is a run of an experiment as the options of `wanlab run`.
type run struct {
	o testrun.Options
	// given are the options set, by flag, as a command line would have
	// given them.
	given map[string]bool
	// argv is that command line, recorded in the results for provenance.
	argv []string
	// perRun are the per-run outputs (testrun.Option.PerRun) asked for,
	// by key.
	perRun map[string]bool
}

// set sets option op to v as its flag would.
func (x *run) set(op *testrun.Option, v string) error {
	if err := op.Set(&x.o, v); err != nil {
		return &experiment.OptionError{Key: op.Key, Err: err}
	}
	x.given[op.Flag] = true
	x.argv = append(x.argv, op.Name(), v)
	return nil
}

// options turns r into the options of `wanlab run` and the command line
// that stands for them.
func (b *Backend) options(r *experiment.Run) (*run, error) {
	x := &run{o: testrun.Defaults(), given: map[string]bool{}, argv: []string{"wanlab", "run", r.Test}, perRun: map[string]bool{}}
	x.o.Test = r.Test
	for _, p := range [][2]string{{"up", r.Up()}, {"down", r.Down()}} {
		if p[1] == "" {
			continue
		}
		if err := x.set(testrun.LookupOption(p[0]), p[1]); err != nil {
			return nil, err
		}
	}
	for _, opt := range r.Options {
		op := testrun.LookupOption(opt.Key)
		switch {
		case op == nil || op.Experiment == testrun.ByExperiment:
			return nil, &experiment.OptionError{Key: opt.Key, Err: errors.New("is not an option of a test entry")} // Load refuses it first
		case op.Experiment == testrun.NotInExperiments:
			return nil, &experiment.OptionError{Key: opt.Key, Err: fmt.Errorf("is not available in experiment files yet: run it with wanlab run %s", op.Name())}
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
		if len(values) > 1 && !op.Repeatable() {
			return nil, &experiment.OptionError{Key: opt.Key, Err: fmt.Errorf("takes one value, and is given %d (%s): give one, or make it a variable to run each", len(values), strings.Join(values, ", "))}
		}
		if op.PerRun != "" && len(values) == 1 {
			on := values[0] == "true"
			if !on && values[0] != "false" {
				return nil, &experiment.OptionError{Key: opt.Key, Err: fmt.Errorf("%q: in an experiment, each run writes its own file into the results directory, named after its results file (%s): give %s: true",
					values[0], strings.TrimSuffix(r.File, ".json.gz")+op.PerRun, opt.Key)}
			}
			x.perRun[op.Key] = on
			continue
		}
		for _, v := range values {
			if err := x.set(op, v); err != nil {
				return nil, err
			}
		}
	}
	if x.o.UpScript != "" || x.o.DownScript != "" || x.o.Script != "" {
		// A script's $NAME reads the case's variables, as --set would
		// give them; the entry's own set: values come first.
		given := map[string]bool{}
		for _, kv := range x.o.ScriptVars {
			k, _, _ := strings.Cut(kv, "=")
			given[k] = true
		}
		for _, v := range append(slices.Clone(r.Case.Vars), r.Case.Bound...) {
			if !given[v.Name] {
				given[v.Name] = true
				if err := x.set(testrun.LookupOption("set"), v.Name+"="+v.Value); err != nil {
					return nil, err
				}
			}
		}
	}
	if x.o.Title == "" {
		x.set(testrun.LookupOption("title"), r.Title)
	}
	if r.Quick {
		x.set(testrun.LookupOption("duration"), QuickDuration.String())
		// A test with a schedule of its own has no lead or tail: its
		// quick run is its schedule over the quick load.
		if t, err := catalog.Lookup(r.Test, catalog.Options{Streams: x.o.Streams, UploadStreams: x.o.UploadStreams, DownloadStreams: x.o.DownloadStreams}); err == nil && !t.NoLoad && !t.Scheduled() {
			x.set(testrun.LookupOption("lead"), QuickLeadTail.String())
			x.set(testrun.LookupOption("tail"), QuickLeadTail.String())
		}
	}
	if x.o.Lab == "" {
		// A running testbed's path draws from the seed it was started
		// with: the results record that one.
		x.set(testrun.LookupOption("seed"), strconv.FormatUint(r.Seed, 10))
	}
	return x, nil
}

// prepare checks and resolves r as `wanlab run` would
// (testrun.PrepareGiven), with its outputs at path and beside it, or, for
// path "", at /dev/null. A problem with one option of the test entry is an
// *experiment.OptionError naming its key.
func (b *Backend) prepare(r *experiment.Run, path string) (*testrun.Setup, *run, error) {
	x, err := b.options(r)
	if err != nil {
		return nil, nil, err
	}
	out := func(ext string) string {
		if path == "" {
			return os.DevNull
		}
		return strings.TrimSuffix(path, ".json.gz") + ext
	}
	x.o.Output = out(".json.gz")
	for _, op := range testrun.Registry() {
		if x.perRun[op.Key] {
			x.set(op, out(op.PerRun))
		}
	}
	setup, err := testrun.PrepareGiven(x.o, func(flag string) bool { return x.given[flag] }, b.cfg.TC)
	var bad *testrun.BadOption
	if errors.As(err, &bad) && b.isKey(bad.Key) {
		return nil, nil, &experiment.OptionError{Key: bad.Key, Err: err}
	}
	if err != nil {
		return nil, nil, err
	}
	return setup, x, nil
}

// isKey reports whether a test entry may give the option key.
func (b *Backend) isKey(key string) bool {
	for _, k := range b.keys {
		if k == key {
			return true
		}
	}
	return false
}

// Check prepares the run as `wanlab run` would, without writing anything.
func (b *Backend) Check(r *experiment.Run) error {
	setup, _, err := b.prepare(r, "")
	if err != nil {
		return err
	}
	b.lengths[entryKey{r.Case, r.TestIndex}] = setup.Length()
	return nil
}

// Estimate is the run's lead, load and tail.
func (b *Backend) Estimate(r *experiment.Run) time.Duration {
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
func (b *Backend) Run(ctx context.Context, r *experiment.Run, path string) error {
	setup, x, err := b.prepare(r, path)
	if err != nil {
		return err
	}
	hooks := testrun.Hooks{Warnf: func(format string, args ...any) {
		fmt.Fprintf(b.cfg.Warnings, "wanlab: warning: %s: "+format+"\n", append([]any{filepath.Base(path)}, args...)...)
	}}
	doc, runErr := testrun.Run(ctx, setup, testrun.Info{Argv: x.argv, Version: b.cfg.Version}, hooks)
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
	if x.o.Flent != "" {
		// After the results file, which a failed Flent file must not
		// cost.
		if err := results.WriteFlentFile(context.Background(), x.o.Flent, doc, outfile.Options{Label: "the Flent file"}); err != nil {
			return err
		}
	}
	return ctx.Err()
}
