package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"wanlab/internal/outfile"
	"wanlab/plot"
	"wanlab/qdisc"
	"wanlab/results"
	"wanlab/testrun"
)

func newRunCommand(s *streams) *cobra.Command {
	o := testrun.Defaults()
	var sweeps []string
	c := &cobra.Command{
		Use:   "run [TEST] [path flags] [options]",
		Short: "Run one of Flent's tests across the path and write a results file",
		Long: `run builds a testbed (or uses a running one with --lab), runs one of Flent's
tests (or one of wanlab's own) across it with wanlab's own traffic (no
netperf, irtt or iperf), removes
what it built, prints Flent's statistics for every series and writes a
results file (docs/results-format.md).

Flent's tests: ping, tcp_upload, tcp_download, tcp_bidirectional, tcp_nup,
tcp_ndown (--streams N), rrul, rrul_be, udp_flood (--udp-rate, --udp-size);
its tests of mixed flows: tcp_1up ... tcp_12up, tcp_1down ... tcp_12down,
tcp_2up_delay, tcp_2up_square, tcp_2up_square_westwood, tcp_4up_squarewave
(flows on a schedule of DELAY, --delay), cubic_bbr, cubic_reno,
cubic_westwood, cubic_dctcp, cubic_cdg, cubic_ledbat, cubic_ledbat_1,
ledbat_cubic_1, reno_cubic_westwood_cdg/_ledbat/_lp, rrul_be_nflows
(--upload-streams, --download-streams), rrul_var (--streams) and
rrul_N_up_M_down (docs/flent-tests.md).
wanlab's own: tfrc_upload, tfrc_download (TFRC, RFC 5348 as DCCP's CCID-3,
over UDP; --tx-qlen), quic_upload, quic_download (quic-go, NewReno),
l4s_upload, l4s_download (wanlab's built-in L4S sender: DCTCP's response
to CE marks over UDP, every packet ECT(1); not the kernel's DCTCP),
l4s_cubic (that L4S upload beside a CUBIC upload), and custom: your own
programs, --server CMD in the server host and --client CMD in the client
host, measured per flow at the router. Without a test, run runs rrul for
30s on the home profile: the main job.

custom runs each command with sh -c after replacing @peer and @peer6 (the
other host's addresses), @port (a free port wanlab chose) and @duration
(the load in seconds). The server starts before the run, and the run waits
until it listens on @port (or, if the command does not name @port, on any
new port), for at most --server-wait. A server that daemonises (iperf3 -s
-D) exits at once with status 0: the run waits for its daemon to listen
all the same and ends it, found by the socket it listens on, with the run
(with --server-wait 0 nothing is looked for, and a daemon lives until its
testbed is removed). The client starts with the load and
must exit within 5s after it. A command that fails to start, exits with a
non-zero status or hangs ends the run: the results keep what was measured,
marked partial, and each command's exit status and output (the first and
last 64 KiB of each stream).

The latency probes run over the whole run; the load runs after a lead and
before a tail (5s each, as Flent's), and every summary covers the load.
Each direction's path is a chain in tc syntax (--up, --down, --both), a
built-in profile (--profile) or the default profile, home; --aqm swaps the
bottleneck queue. --at T followed by path flags changes the chains T into
the run, as 'wanlab set' would. Every option is listed in docs/options.md.

Ctrl-C ends the run early: the results measured so far are written, marked
partial, and everything the run built is removed. An output that fails (a
--pcap FIFO whose reader goes away, a full disk) fails alone: the run goes
on, every other output is written, the results and the summary name the
one that failed, and wanlab exits 1.`,
		Example: `  wanlab run
  wanlab run --aqm fq_codel
  wanlab run tcp_upload --up "netem delay 25ms; tbf rate 10mbit burst 32k latency 50ms" --down "netem delay 25ms" --duration 10s
  wanlab run rrul --profile lte --flent lte.flent.gz -o lte.json.gz
  wanlab run tcp_download --both "netem delay 50ms; tbf rate 20mbit burst 32k latency 100ms" --at 20s --down "netem delay 50ms; tbf rate 2mbit burst 32k latency 100ms"
  wanlab run tcp_upload --direct --duration 10s
  wanlab run tfrc_upload --both "netem delay 20ms; tbf rate 2mbit buffer 10000 limit 30000" --tx-qlen 0
  wanlab run l4s_cubic --up "netem delay 10ms; tbf rate 10mbit burst 32k latency 50ms; fq_codel ce_threshold 1ms ecn" --down "netem delay 10ms"
  wanlab run custom --server 'iperf3 -s -1 -p @port' --client 'iperf3 -c @peer -p @port -t @duration' --up "netem delay 10ms; tbf rate 20mbit burst 32k latency 50ms"`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("run takes one test, and got %d (%s): run them one at a time", len(args), strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Test = args[0]
			}
			if len(sweeps) > 0 {
				if o.Output == "-" {
					return usagef("-o - with --sweep: a sweep writes a directory of results files, one per run, which cannot go to stdout: give the directory with -o DIR, or leave -o out")
				}
				return runSweep(s, c.Flags(), &o, sweeps)
			}
			return runRun(s, c.Flags(), o, os.Args)
		},
	}
	registerRunOptions(c.Flags(), &o)
	registerSweep(c.Flags(), &sweeps)
	// A value an option's parser refuses is a *testrun.BadOption whose
	// message names the flag, the value and the fix: it replaces pflag's
	// wording, as root's flagError does for pflag's own types.
	c.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		var bad *testrun.BadOption
		if errors.As(err, &bad) {
			err = bad
		}
		return c.Root().FlagErrorFunc()(c, err)
	})
	return c
}

// registerRunOptions adds a flag for every option of a run that has one
// (testrun.Registry), with the registry's help, setting o through the
// option's own parser: the one an experiment file's value goes through.
func registerRunOptions(fs *pflag.FlagSet, o *testrun.Options) {
	for _, op := range testrun.Registry() {
		if op.Flag == "" {
			continue // the test: the command's argument
		}
		fl := fs.VarPF(optionFlag{op, o}, op.Flag, op.Short, op.Usage())
		// The usage shows the default already: pflag must not add its
		// own.
		fl.DefValue = ""
		if op.Type() == "bool" {
			fl.NoOptDefVal = "true"
		}
	}
}

// optionFlag is the flag of one option.
type optionFlag struct {
	op *testrun.Option
	o  *testrun.Options
}

func (f optionFlag) Set(v string) error { return f.op.Set(f.o, v) }
func (f optionFlag) Type() string       { return f.op.Type() }
func (f optionFlag) String() string     { return strings.Join(f.op.Texts(f.o), ",") }

// wanlabVersion is the version recorded in results: the module's version
// and, when the build recorded it, the commit.
func wanlabVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, st := range bi.Settings {
		if st.Key == "vcs.revision" && len(st.Value) >= 12 {
			v += "+" + st.Value[:12]
		}
	}
	return v
}

func runRun(s *streams, fs *pflag.FlagSet, o testrun.Options, argv []string) error {
	if o.Lab != "" {
		// The running testbed is found where the user's testbeds are:
		// inside their namespace when rootless.
		if err := enterLab(); err != nil {
			return err
		}
	}
	setup, err := testrun.PrepareGiven(o, fs.Changed, tcOptions())
	if err != nil {
		if testrun.IsBadOption(err) {
			return usagef("%v", err)
		}
		return err
	}
	if err := enterLab(); err != nil {
		return err
	}
	env := &qdisc.Env{Framing: setup.Framing}
	warnings := append(chainWarnings("up", setup.Up, env), chainWarnings("down", setup.Down, env)...)
	for _, c := range setup.Changes {
		for i, dir := range c.Dirs {
			warnings = append(warnings, chainWarnings(fmt.Sprintf("--at %v %s", c.At, dir), c.Chains[i], env)...)
		}
	}
	for _, w := range warnings {
		fmt.Fprintf(s.err, "wanlab: warning: %s\n", w)
	}
	// The summary goes to stdout unless a file does.
	out := s.out
	if o.Output == "-" || o.Flent == "-" || o.Pcap == "-" {
		out = s.err
	}
	survivePipes()
	ctx, stop := outfile.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	var hooks testrun.Hooks
	progress := newProgressLine(s.err, setup.Test.Name)
	if progress != nil && setup.Length() > progressMin {
		hooks.Progress = progress.update
	}
	hooks.Warnf = func(format string, args ...any) {
		line := fmt.Sprintf("wanlab: warning: "+format, args...)
		if hooks.Progress != nil {
			progress.println(line)
			return
		}
		fmt.Fprintln(s.err, line)
	}
	noteFIFO(s.err, "--pcap", o.Pcap, "tshark -i")
	start := time.Now()
	doc, err := testrun.Run(ctx, setup, testrun.Info{Argv: argv, Version: wanlabVersion()}, hooks)
	if hooks.Progress != nil {
		progress.done() // before anything else reaches the terminal
	}
	if err != nil && doc == nil {
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("interrupted before the traffic started: nothing was measured (%v)", err)
		case testrun.IsBadOption(err):
			return usagef("%v", err)
		}
		return err
	}
	// From here on whatever fails (an output, the removal of the path)
	// fails alone: every other output is still written, the summary and
	// stderr say what failed, and the exit status is 1 at the end.
	var failures []error
	for _, f := range doc.Run.FailedOutputs {
		failures = append(failures, errors.New(f.Error))
	}
	if err != nil {
		failures = append(failures, err)
	}
	stop()
	failures = append(failures, writeRunOutputs(s, &o, setup, doc, start, out)...)
	if doc.Run.Partial {
		fmt.Fprintf(s.err, "wanlab: the run ended early (%s): the results are partial\n", doc.Run.PartialReason)
	}
	for _, f := range failures {
		fmt.Fprintf(s.err, "wanlab: %s\n", strings.TrimSpace(f.Error()))
	}
	if doc.Run.Partial || len(failures) > 0 {
		return exitStatus(exitFailure)
	}
	return nil
}

// writeRunOutputs writes a run's outputs, each whatever became of the
// others: the results file, the Flent file, the summary (or the document
// with --json) on out, the graph beside the results; then the lines that
// name them, or say that one was not written. It returns what failed.
func writeRunOutputs(s *streams, o *testrun.Options, setup *testrun.Setup, doc *results.Document, start time.Time, out io.Writer) []error {
	// Writing gets a signal context of its own: a FIFO without a reader
	// must not hold the results hostage, and a second Ctrl-C gives up.
	wctx, wstop := outfile.NotifyContext(context.Background(), stopSignals...)
	defer wstop()
	var failures []error
	path, werr := writeResults(wctx, s, o, setup, doc, start)
	var ferr error
	if o.Flent != "" {
		ferr = writeFlent(wctx, s, o.Flent, doc)
	}
	var err error
	if o.JSON {
		err = doc.Encode(s.out)
	} else {
		err = results.WriteSummary(out, doc, false)
	}
	if err != nil {
		failures = append(failures, err)
	}
	note := s.err
	if !o.JSON {
		note = out
	}
	if werr != nil {
		failures = append(failures, werr)
		fmt.Fprintf(note, "\nresults: NOT WRITTEN: %v\n", werr)
		if rescued, err := rescueResults(wctx, setup, doc, start); err == nil {
			fmt.Fprintf(note, "results: saved instead to %s\n", outfile.Printable(rescued))
		} else {
			fmt.Fprintf(note, "results: not saved elsewhere either: %v\n", err)
		}
	} else if path != "-" {
		fmt.Fprintf(note, "\nresults: %s\n", outfile.Printable(path))
		graph, err := writeRunGraph(wctx, path, setup, doc)
		switch {
		case errors.Is(err, errNoSamples):
			fmt.Fprintf(note, "graph:   none (%v)\n", err)
		case err != nil:
			failures = append(failures, fmt.Errorf("the graph: %w", err))
			fmt.Fprintf(note, "graph:   NOT DRAWN: %v\n", err)
		case graph != "":
			fmt.Fprintf(note, "graph:   %s\n", outfile.Printable(graph))
		}
	}
	switch {
	case ferr != nil:
		failures = append(failures, ferr)
		fmt.Fprintf(note, "flent:   NOT WRITTEN: %v\n", ferr)
	case o.Flent != "" && o.Flent != "-":
		flent := outfile.Printable(o.Flent)
		fmt.Fprintf(note, "flent:   %s  (flent -i %s -p %s -o plot.png)\n", flent, flent, setup.Test.Plot)
	}
	if hint := compareHint(*o, setup); hint != "" {
		fmt.Fprintf(note, "%s\n", hint)
	}
	return failures
}

// compareHint suggests the one-flag change that compares a run on a
// profile's deep FIFOs with fq_codel at the bottleneck.
func compareHint(o testrun.Options, s *testrun.Setup) string {
	if s.Mode != testrun.ModeTestbed || o.AQM != "" || o.Up != "" || o.Down != "" || o.Both != "" {
		return ""
	}
	cmd := "wanlab run"
	if o.Test != "" {
		cmd += " " + o.Test
	}
	if o.Profile != "" {
		cmd += " --profile " + o.Profile
	}
	return fmt.Sprintf("\nThe bottlenecks above are deep FIFOs. Compare with fq_codel in their place:\n  %s --aqm fq_codel", cmd)
}

// progressMin is the shortest run that gets a progress line.
const progressMin = 3 * time.Second

// writeResults writes the results file, and returns its path: the name
// given, or the default name, which is wanlab's choice: it never replaces
// or writes through anything, and when it is taken (by another run of the
// same second, or a file or link someone put there) the results go to
// the first free one of NAME-2.json.gz, NAME-3.json.gz, ...
func writeResults(ctx context.Context, s *streams, o *testrun.Options, setup *testrun.Setup, doc *results.Document, start time.Time) (string, error) {
	if o.Output != "" {
		noteFIFO(s.err, "--output", o.Output, "cat")
		opts := outfile.Options{Label: "--output", Suggest: "results.json.gz", Stdout: s.out}
		return o.Output, results.WriteFile(ctx, o.Output, doc, opts)
	}
	return writeDerivedResults(ctx, testrun.DefaultOutput(setup.Test.Name, start), doc)
}

// writeDerivedResults writes the results under a name wanlab chose, which
// takes -2, -3, ... when something is in its way, and returns where they
// went.
func writeDerivedResults(ctx context.Context, path string, doc *results.Document) (string, error) {
	opts := outfile.Options{Label: "the results file", NoClobber: true, ClobberHint: "name one with -o FILE"}
	f, err := outfile.Create(ctx, path, opts)
	if err != nil {
		return "", err
	}
	defer f.Abort() // a no-op after Commit
	if err := doc.EncodeGzip(f); err != nil {
		return "", fmt.Errorf("%s: %w", outfile.Printable(f.Path()), err)
	}
	if err := f.Commit(); err != nil {
		return "", err
	}
	return f.Path(), nil
}

// rescueResults writes the results under their default name when the
// output the user named could not take them (a full device, a reader
// that went away, a link planted at the name while the run went on): the
// measurements must outlive the output. It tries the current directory,
// then the temporary directory, never replacing anything.
func rescueResults(ctx context.Context, setup *testrun.Setup, doc *results.Document, start time.Time) (string, error) {
	name := testrun.DefaultOutput(setup.Test.Name, start)
	var errs []error
	for _, dir := range []string{".", os.TempDir()} {
		path, err := writeDerivedResults(ctx, filepath.Join(dir, name), doc)
		if err == nil {
			return path, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

// errNoSamples is writeRunGraph's answer for a run stopped before its
// first sample: no graph, and no failure of its own.
var errNoSamples = errors.New("the run stopped before its first sample")

// writeRunGraph draws the test's Flent graph (all_scaled where the test
// names none wanlab draws) as a PNG beside the results file at path, as
// `wanlab plot` would name it, and returns its path. It draws nothing
// ("", nil) when the results went to something other than a regular file
// (a device, a FIFO). The name is wanlab's choice, not the user's: it
// never replaces or writes through anything, and a taken name gets -2,
// -3, ... as the results file's does. A partial run without a sample has
// none: errNoSamples.
func writeRunGraph(ctx context.Context, path string, setup *testrun.Setup, doc *results.Document) (string, error) {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return "", nil
	}
	if doc.Run.Partial && !slices.ContainsFunc(doc.Series, func(s results.Series) bool { return len(s.Samples) > 0 }) {
		// Stopped before its first sample: there is nothing to draw, and
		// saying why the graph failed would bury why the run did.
		return "", errNoSamples
	}
	kind, err := plot.ParseKind(setup.Test.Plot)
	if err != nil {
		kind = plot.AllScaled
	}
	var img bytes.Buffer
	if err := plot.Draw(&img, kind, []*results.Document{doc}, plot.Options{Format: plot.PNG}); err != nil {
		return "", fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "plot: "))
	}
	o := outfile.Options{Label: "the graph", NoClobber: true, ClobberHint: "draw it with wanlab plot -o FILE"}
	return writeOutput(ctx, graphPathBeside(path, kind, plot.PNG), o, img.Bytes())
}

// writeFlent writes Flent's data file, gzip-compressed when the name ends
// in .gz.
func writeFlent(ctx context.Context, s *streams, path string, doc *results.Document) error {
	noteFIFO(s.err, "--flent", path, "cat")
	return results.WriteFlentFile(ctx, path, doc, outfile.Options{Label: "--flent", Suggest: "run.flent.gz", Stdout: s.out})
}

// noteFIFO says, when path is a FIFO, that wanlab is about to wait for its
// reader: opening a FIFO for writing blocks until one comes, and without a
// word the wait looks like a hang.
func noteFIFO(w io.Writer, label, path, reader string) {
	if path == "" || path == "-" {
		return
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		path := outfile.Printable(path)
		fmt.Fprintf(w, "wanlab: %s %s is a FIFO: writing starts once a reader opens it (e.g. %s %s; Ctrl-C gives up)\n", label, path, reader, path)
	}
}
