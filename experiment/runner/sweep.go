package runner

import (
	"fmt"
	"slices"
	"strings"

	"wanlab/experiment"
	"wanlab/testrun"
)

// Sweep returns the experiment that `wanlab run TEST --sweep VAR=V1,V2 ...`
// stands for: the test o names, the path flags given, and every other
// option given (given reports them by flag) as a key of its test entry,
// with its value as text. The options come in the order of their flags'
// names, as pflag visits them: the same command line makes the same file,
// and so resumes the same results directory.
func Sweep(o testrun.Options, sweeps []string, given func(flag string) bool) (experiment.SweepSpec, error) {
	spec := experiment.SweepSpec{Name: o.Test + "-sweep", Test: o.Test, Sweeps: sweeps, Up: o.Up, Down: o.Down, Both: o.Both}
	ops := slices.Clone(testrun.Registry())
	slices.SortFunc(ops, func(a, b *testrun.Option) int { return strings.Compare(a.Flag, b.Flag) })
	for _, op := range ops {
		if op.Flag == "" || !given(op.Flag) {
			continue
		}
		values := op.Texts(&o)
		switch {
		case op.Key == "seed":
			spec.Seed = o.Seed
		case op.Experiment != testrun.InEntry:
			// The path is spec's; the results directory is -o; --at
			// and --json are refused with --sweep before.
		case op.PerRun != "" && len(values) == 1 && values[0] != "true" && values[0] != "false":
			return spec, fmt.Errorf("%s %s with --sweep: each run writes its own into the results directory, named after its results file (RUN%s): give %s true",
				op.Name(), values[0], op.PerRun, op.Name())
		default:
			spec.Options = append(spec.Options, experiment.Option{Key: op.Key, Values: values})
		}
	}
	return spec, nil
}
