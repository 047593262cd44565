package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"wanlab/experiment"
	"wanlab/experiment/runner"
	"wanlab/internal/errwriter"
	"wanlab/internal/outfile"
)

type experimentStatusFlags struct {
	wait     bool
	interval time.Duration
	timeout  time.Duration
	json     bool
	// intervalGiven says --interval was given.
	intervalGiven bool
}

func newExperimentStatusCommand(s *streams) *cobra.Command {
	var f experimentStatusFlags
	c := &cobra.Command{
		Use:   "status DIR... [--wait [--interval D] [--timeout D]] [--json]",
		Short: "Say how far the shards of a sweep are, from their results directories alone",
		Long: `status reads results directories (the shards of one sweep, or any
directory 'wanlab experiment run' writes) and says, for each and for all,
how many runs are complete, ended early (partial), failed and not
faithful (made, but the router's fidelity verdict says it did not keep to
its configuration), and how many are still to run. It needs no server and
no root: each directory's index lists every run its shard is to make from
the moment the shard starts, and the results files say which are made. A
directory that does not exist yet (a shard not started) is shown as such,
and counted with its runs when it is named shard-K (as 'wanlab experiment
sbatch' names them) beside a started shard of the sweep; without --wait
its parent must exist (a mistyped name is refused).

A directory is finished when no run is left to run and no wanlab process
holds it; a failed run is finished (running it again is a decision: run
the shard's command again). status exits 0 when every directory has
finished and 1 when runs remain. --wait looks again every --interval
until every directory has finished, then exits 0 whatever the runs' fate,
so that a merge it gates merges what there is and reports the rest (as
Slurm's afterany does); with --timeout it gives up after that long, exit
1. --json prints the status as JSON (docs/experiments.md describes it).`,
		Example: `  wanlab experiment status /shared/e1-slurm/shard-*
  watch -n 30 wanlab experiment status /shared/e1-slurm/shard-*
  wanlab experiment status --wait /results/e1/shard-1 /results/e1/shard-2 && wanlab experiment merge ...`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, dirs []string) error {
			f.intervalGiven = c.Flags().Changed("interval")
			return experimentStatus(s, dirs, &f)
		},
	}
	fs := c.Flags()
	fs.BoolVar(&f.wait, "wait", false, "look again every --interval until every directory has finished (exit 0), or --timeout passes (exit 1)")
	fs.DurationVar(&f.interval, "interval", 10*time.Second, "with --wait, the time between two looks")
	fs.DurationVar(&f.timeout, "timeout", 0, "with --wait, give up after this long (0: wait as long as it takes)")
	fs.BoolVar(&f.json, "json", false, "print the status as JSON (with --wait, once, at the end)")
	return c
}

func experimentStatus(s *streams, dirs []string, f *experimentStatusFlags) error {
	if !f.wait && (f.intervalGiven || f.timeout != 0) {
		return usagef("--interval and --timeout are for --wait: add --wait, or leave them out")
	}
	if f.interval < 100*time.Millisecond {
		return usagef("--interval %v is too short: give 100ms or more (each look reads every new results file)", f.interval)
	}
	if f.timeout < 0 {
		return usagef("--timeout %v: give a positive duration, or 0 to wait as long as it takes", f.timeout)
	}
	ctx, stop := outfile.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	// Waiting may begin before the shards have made their parent
	// directory (a merge's init container); a look at once refuses a
	// name whose parent does not exist, a likely typo.
	sr := experiment.StatusReader{MissingParents: f.wait, Plan: func(ix *experiment.Index) (*experiment.Plan, error) {
		// Runs the backend would make are counted, never made: its
		// warnings are not for a status.
		b := runner.New(runner.Config{TC: tcOptions(), Version: wanlabVersion(), Warnings: io.Discard})
		return experiment.Load(ix.File.Name, []byte(ix.File.Content), experiment.LoadOptions{Backend: b, TC: tcOptions(), Quick: ix.Quick})
	}}
	began := time.Now()
	last := ""
	for {
		sw, err := sr.Read(dirs)
		var de *experiment.DirError
		switch {
		case errors.As(err, &de):
			return usagef("%v", err)
		case err != nil:
			return err
		}
		if !f.wait && sw.Started == 0 && noneExists(dirs) {
			return usagef("none of the %d directories exists: give the results directories of a sweep (DIR/shard-1 ... DIR/shard-N), or add --wait to wait for them", len(dirs))
		}
		timedOut := f.timeout > 0 && time.Since(began) >= f.timeout
		if !f.wait || sw.Finished || timedOut {
			if err := writeSweepStatus(s.out, sw, f.json); err != nil {
				return err
			}
			switch {
			case sw.Finished:
				return nil
			case timedOut:
				return fmt.Errorf("gave up after %v: %d of %d directories finished, %d not started; %d runs left in those started", f.timeout, finishedDirs(sw), len(sw.Dirs), len(sw.Dirs)-sw.Started, sw.Total.Pending)
			}
			return exitStatus(exitFailure)
		}
		// While waiting, a line whenever something changed, for a log.
		if line := waitLine(sw); line != last {
			fmt.Fprintf(s.err, "%s %s\n", time.Now().UTC().Format("15:04:05"), line)
			last = line
		}
		if err := experiment.Sleep(ctx, f.interval); err != nil {
			return fmt.Errorf("interrupted: %s", last)
		}
	}
}

// noneExists reports whether no directory of dirs exists: a look at a
// sweep of which nothing exists is most likely a look at the wrong place.
func noneExists(dirs []string) bool {
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			return false
		}
	}
	return true
}

func finishedDirs(sw *experiment.SweepStatus) int {
	n := 0
	for _, d := range sw.Dirs {
		if d.Finished {
			n++
		}
	}
	return n
}

// waitLine is one line of how far a sweep is, for --wait's log.
func waitLine(sw *experiment.SweepStatus) string {
	t := sw.Total
	return fmt.Sprintf("waiting: %d of %d directories finished (%d started); %d of %d runs made (%d complete, %d partial, %d failed, %d not faithful), %d to run",
		finishedDirs(sw), len(sw.Dirs), sw.Started, t.Runs-t.Pending, t.Runs, t.Complete, t.Partial, t.Failed, t.NotFaithful, t.Pending)
}

// dirState names where a directory stands.
func dirState(d *experiment.DirStatus) string {
	switch {
	case d.Finished:
		return "finished"
	case d.Running:
		return "running"
	case !d.Started:
		return "not started"
	case d.Interrupted:
		// Stopped by a signal (a requeue, a preemption, Ctrl-C): to be
		// resumed.
		return "interrupted"
	}
	// Started, runs left, nothing running: the run stopped (killed,
	// stopped on repeated failures, or waiting to be requeued).
	return "stopped"
}

// maxListedFailures bounds the failed runs the text lists; --json lists
// them all.
const maxListedFailures = 20

func writeSweepStatus(w io.Writer, sw *experiment.SweepStatus, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(sw)
	}
	ew := errwriter.New(w)
	const row = "%-7s %5s %8s %7s %6s %12s %7s  %-11s  %s"
	ew.Linef(row, "shard", "runs", "complete", "partial", "failed", "not faithful", "to run", "state", "directory")
	for _, d := range sw.Dirs {
		shard := d.Shard
		if shard == "" {
			shard = "-"
		}
		if !d.Started && !d.Planned {
			ew.Linef(row, shard, "-", "-", "-", "-", "-", "-", dirState(d), d.Dir)
			continue
		}
		ew.Linef(row, shard, itoa(d.Runs), itoa(d.Complete), itoa(d.Partial), itoa(d.Failed), itoa(d.NotFaithful), itoa(d.Pending), dirState(d), d.Dir)
	}
	t := sw.Total
	state := fmt.Sprintf("%d/%d finished", finishedDirs(sw), len(sw.Dirs))
	ew.Linef(row, "all", itoa(t.Runs), itoa(t.Complete), itoa(t.Partial), itoa(t.Failed), itoa(t.NotFaithful), itoa(t.Pending), state, "")
	if n := len(sw.Dirs) - sw.Started - sw.Planned; n > 0 {
		ew.Linef("%d of %d directories not started and not named shard-K beside a started shard: their runs are not counted yet", n, len(sw.Dirs))
	}
	n := 0
	for _, d := range sw.Dirs {
		for _, r := range d.FailedRuns {
			if n == maxListedFailures {
				ew.Linef("... and %d more (--json lists them all)", t.Failed+t.Partial-n)
				return ew.Err()
			}
			how := "failed"
			if r.Status == experiment.StatusPartial {
				how = "ended early"
			}
			ew.Linef("%s: %s (case %d): %s", how, strings.TrimPrefix(d.Dir+"/"+r.File, "./"), r.Case, oneLine(r.Error))
			n++
		}
	}
	return ew.Err()
}

func itoa(n int) string { return fmt.Sprint(n) }

// oneLine keeps an error's first line: a run's error may quote a
// program's output.
func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
