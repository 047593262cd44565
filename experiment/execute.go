package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"wanlab/internal/outfile"
)

// ExecOptions say where and how Execute runs a plan.
type ExecOptions struct {
	// Dir is the results directory; it is created when missing.
	Dir string
	// Shard selects the slice of cases to run; the zero Shard runs all.
	Shard Shard
	// Progress receives a line before each run (case i of n, time left)
	// and a last line with the counts; nil prints nothing.
	Progress io.Writer
}

// Report counts what Execute did.
type Report struct {
	// Runs is the number of runs in the directory's slice; Skipped were
	// already complete; Ran were run now.
	Runs, Skipped, Ran int
	// Complete, Partial, Failed and Pending count the runs' statuses
	// afterwards.
	Complete, Partial, Failed, Pending int
	// Index is the directory's index as written last.
	Index *Index
}

// DirError is a results directory that cannot take this plan: made from
// another experiment file, with another --quick or --shard, or holding
// other files. Its message says what to do.
type DirError struct{ Msg string }

func (e *DirError) Error() string { return e.Msg }

// maxSameFailures stops an experiment after this many runs in a row failed
// with the same error: a missing privilege or tool fails every run alike,
// and a campaign should not spend hours confirming it. A run that ended
// early (partial) for a reason of its own, such as a custom test's command
// that failed, counts as failed: a missing client program ends every run
// alike too.
const maxSameFailures = 3

// numbers are the parts of a run's error that differ from run to run for
// the same cause: times ("stopped 202ms into the run"), ports, PIDs.
var numbers = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// failureKey is what two runs' errors must share to count as the same
// failure: their text without its numbers.
func failureKey(err string) string {
	return numbers.ReplaceAllString(err, "#")
}

// Execute runs the plan's runs in the shard into the directory, one results
// file per run plus the index. Running it again on the same directory runs
// only what is missing or partial: a run counts as complete when its
// results file is whole and not marked partial, whatever the index says,
// so a kill at any point loses at most the run in progress. The index is
// rewritten after the runs as often as its size allows (indexWriter).
//
// A cancelled context ends the current run (the backend keeps what it
// measured, marked partial) and returns the context's error. A run that
// fails is recorded and the next one starts.
func Execute(ctx context.Context, p *Plan, b Backend, o ExecOptions) (*Report, error) {
	ix, lock, err := prepareDir(p, o)
	if err != nil {
		return nil, err
	}
	defer lock.release()
	rep := &Report{Index: ix}
	entries := runsByFile(ix)
	var todo []*Run
	for _, r := range p.Runs(o.Shard) {
		rep.Runs++
		if entries[r.File].Status == StatusComplete {
			rep.Skipped++
			continue
		}
		todo = append(todo, r)
	}
	iw := &indexWriter{dir: o.Dir, ix: ix, pending: true}
	if err := iw.flush(); err != nil {
		return nil, err
	}
	prog := newProgress(o.Progress, b, todo, p, rep.Skipped, rep.Runs)
	var lastErr string
	same := 0
	for i, r := range todo {
		if i > 0 && p.Pause > 0 {
			if err := Sleep(ctx, p.Pause); err != nil {
				break
			}
		}
		if ctx.Err() != nil {
			break
		}
		prog.start(i)
		started := time.Now()
		path := filepath.Join(o.Dir, r.File)
		runErr := b.Run(ctx, r, path)
		prog.done(i, time.Since(started))
		rep.Ran++
		entry := entries[r.File]
		status, reason := fileStatus(path, r.Test)
		entry.Status, entry.Error = status, reason
		switch {
		case status == StatusPending:
			entry.Status = StatusFailed
			if runErr != nil {
				entry.Error = runErr.Error()
			} else if reason == "" {
				entry.Error = "the run wrote no results file"
			}
		case runErr != nil && status == StatusPartial && entry.Error == "":
			entry.Error = runErr.Error()
		case runErr != nil && status == StatusComplete && ctx.Err() == nil:
			// The results are whole; what failed came after them (a
			// further output of the run's): said, not lost.
			prog.printf("wanlab: %s: %v", r.File, runErr)
		}
		if err := iw.update(); err != nil {
			return rep, err
		}
		if entry.Status == StatusFailed || entry.Status == StatusPartial && ctx.Err() == nil {
			how := "failed"
			if entry.Status == StatusPartial {
				how = "ended early"
			}
			prog.printf("wanlab: %s: run %s: %s", r.File, how, entry.Error)
			if key := failureKey(entry.Error); key == lastErr {
				same++
			} else {
				lastErr, same = key, 1
			}
			if same >= maxSameFailures && ctx.Err() == nil {
				countStatuses(rep, ix)
				if err := iw.flush(); err != nil {
					return rep, err
				}
				return rep, fmt.Errorf("stopped: the last %d runs failed the same way (%s); fix that and run the same command again to go on", same, entry.Error)
			}
		} else {
			lastErr, same = "", 0
		}
	}
	if n := ix.Counts(); ctx.Err() != nil && n[StatusPartial]+n[StatusPending] > 0 {
		// Said in the index, so that a look at the directory (wanlab
		// experiment status) knows the partial run will be resumed.
		ix.Interrupted, iw.pending = true, true
	}
	if err := iw.flush(); err != nil {
		return rep, err
	}
	countStatuses(rep, ix)
	prog.printf("%s: %d runs: %d complete, %d partial, %d failed, %d not run (%d run now, %d were complete)",
		o.Dir, rep.Runs, rep.Complete, rep.Partial, rep.Failed, rep.Pending, rep.Ran, rep.Skipped)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, nil
}

// indexWriter rewrites the index after each run while that is cheap, and
// less often once it is not: the index of a 10⁵-run experiment is some
// 70 MB and takes seconds to write, and rewriting it after every run
// would cost more than the runs (and terabytes of writes). The results
// files, not the index, say which runs are done (prepareDir), so an index
// a few runs behind loses nothing but the errors of runs that failed
// since, which run again.
type indexWriter struct {
	dir     string
	ix      *Index
	last    time.Time     // when the index was last written
	took    time.Duration // how long that took
	pending bool          // the index has changed since
}

// indexShare bounds the time spent rewriting the index: at most one part
// in indexShare of the time between two writes.
const indexShare = 20

// update notes a change and writes the index if the last write was long
// enough ago.
func (w *indexWriter) update() error {
	w.pending = true
	if time.Since(w.last) < indexShare*w.took {
		return nil
	}
	return w.flush()
}

// flush writes the index if it has changed.
func (w *indexWriter) flush() error {
	if !w.pending {
		return nil
	}
	start := time.Now()
	err := writeIndex(w.dir, w.ix)
	w.last, w.took, w.pending = time.Now(), time.Since(start), false
	return err
}

// runsByFile maps the results file of each of ix's runs to its entry: a
// lookup per run through the whole index is quadratic in the runs.
func runsByFile(ix *Index) map[string]*IndexRun {
	m := map[string]*IndexRun{}
	for ci := range ix.Cases {
		for ri := range ix.Cases[ci].Runs {
			m[ix.Cases[ci].Runs[ri].File] = &ix.Cases[ci].Runs[ri]
		}
	}
	return m
}

func countStatuses(rep *Report, ix *Index) {
	n := ix.Counts()
	rep.Complete, rep.Partial, rep.Failed, rep.Pending = n[StatusComplete], n[StatusPartial], n[StatusFailed], n[StatusPending]
}

// prepareDir creates the directory or checks that it holds this
// experiment, locks it for this process (lockDir), and returns its index
// with every run's status read from its results file.
func prepareDir(p *Plan, o ExecOptions) (_ *Index, _ *dirLock, err error) {
	if err := outfile.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, nil, &DirError{fmt.Sprintf("results directory %s: %v: give a directory (new or made by wanlab experiment run) with -o", o.Dir, err)}
	}
	if _, err := ReadIndex(o.Dir); errors.Is(err, ErrNoIndex) {
		// Refused before the lock file is made: the directory is not
		// wanlab's.
		if err := checkEmpty(o.Dir); err != nil {
			return nil, nil, err
		}
	}
	// Locked before anything is read for the run: what another process
	// is writing is read once it has finished.
	lock, err := lockDir(o.Dir, lockRun)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			lock.release()
		}
	}()
	ix := newIndex(p, o.Shard)
	old, err := ReadIndex(o.Dir)
	switch {
	case errors.Is(err, ErrNoIndex):
		if err := checkEmpty(o.Dir); err != nil {
			return nil, nil, err
		}
	case err != nil:
		return nil, nil, err
	default:
		if err := compatible(old, ix, o.Dir); err != nil {
			return nil, nil, err
		}
	}
	var previous map[string]*IndexRun
	if old != nil {
		previous = runsByFile(old)
	}
	for ci := range ix.Cases {
		for ri := range ix.Cases[ci].Runs {
			r := &ix.Cases[ci].Runs[ri]
			path := filepath.Join(o.Dir, r.File)
			_, status, reason, err := runStatus(path, r.Test)
			if err != nil {
				// A file that cannot be judged (written by a newer
				// wanlab, beyond the bounds, unreadable) may hold a
				// whole run: running it again would replace it.
				return nil, nil, &DirError{fmt.Sprintf("%v: wanlab cannot tell whether it holds a whole run, and running it again would replace it: move it out of %s (or read it with a newer wanlab), then run the same command again", err, o.Dir)}
			}
			r.Status = status
			if status == StatusPartial {
				r.Error = reason
			}
			if status == StatusPending && old != nil {
				// Keep why an earlier attempt failed until it is run again.
				if prev := previous[r.File]; prev != nil && prev.Status == StatusFailed {
					r.Status, r.Error = StatusFailed, prev.Error
				}
			}
		}
	}
	return ix, lock, nil
}

// checkEmpty refuses a directory with files in it but no index: wanlab did
// not make it, and its files might be overwritten.
func checkEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			return &DirError{fmt.Sprintf("%s is not empty and has no %s: give a new or empty directory with -o", dir, IndexName)}
		}
	}
	return nil
}

// compatible refuses to resume a directory made from another experiment
// file or with other --quick or --shard settings.
func compatible(old, ix *Index, dir string) error {
	if old.File.SHA256 != ix.File.SHA256 {
		return &DirError{fmt.Sprintf("%s holds experiment %q made from another file (%s, sha256 %.12s; this file is sha256 %.12s): give another -o DIR, or run the file that made it (its text is in %s under file.content)",
			dir, old.Name, old.File.Name, old.File.SHA256, ix.File.SHA256, filepath.Join(dir, IndexName))}
	}
	if old.Quick != ix.Quick {
		was, flag := "without", "leave out --quick"
		if old.Quick {
			was, flag = "with", "add --quick"
		}
		return &DirError{fmt.Sprintf("%s was made %s --quick: %s to resume it, or give another -o DIR", dir, was, flag)}
	}
	if old.Shard != ix.Shard {
		was := "the whole experiment"
		if old.Shard != "" {
			was = "shard " + old.Shard
		}
		want := "--shard " + old.Shard
		if old.Shard == "" {
			want = "no --shard"
		}
		return &DirError{fmt.Sprintf("%s holds %s: resume it with %s, or give another -o DIR", dir, was, want)}
	}
	return nil
}

// Sleep waits d, or until ctx is done and then returns its error: the
// pause between runs, and the polling of 'wanlab experiment status --wait'.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// progress prints a line per run: its position, the case, and the time
// left, estimated from the backend's run lengths scaled by how long the
// runs so far took against their estimates (setting up a testbed adds
// a second or two to every run).
type progress struct {
	w        io.Writer
	todo     []*Run
	p        *Plan
	skipped  int
	total    int
	estimate []time.Duration
	allEst   time.Duration // the estimates' sum
	doneEst  time.Duration // the sum of the runs done (the first ones)
	doneReal time.Duration
	began    time.Time
}

func newProgress(w io.Writer, b Backend, todo []*Run, p *Plan, skipped, total int) *progress {
	pr := &progress{w: w, todo: todo, p: p, skipped: skipped, total: total, began: time.Now(), estimate: estimates(b, todo)}
	for _, e := range pr.estimate {
		pr.allEst += e
	}
	return pr
}

// estimates returns the backend's estimate of each run, asking once per
// case and test entry: the repetitions differ in their seed alone.
func estimates(b Backend, runs []*Run) []time.Duration {
	type entry struct {
		c    *Case
		test int
	}
	known := map[entry]time.Duration{}
	out := make([]time.Duration, len(runs))
	for i, r := range runs {
		k := entry{r.Case, r.TestIndex}
		d, ok := known[k]
		if !ok {
			d = b.Estimate(r)
			known[k] = d
		}
		out[i] = d
	}
	return out
}

func (pr *progress) printf(format string, args ...any) {
	if pr.w != nil {
		fmt.Fprintf(pr.w, format+"\n", args...)
	}
}

func (pr *progress) start(i int) {
	if pr.w == nil {
		return
	}
	left := pr.allEst - pr.doneEst // runs start in order: those before i are done
	if pr.doneEst > 0 {
		left = time.Duration(float64(left) * float64(pr.doneReal) / float64(pr.doneEst))
	}
	left += time.Duration(len(pr.todo)-i-1) * pr.p.Pause
	r := pr.todo[i]
	test := r.Test
	if pr.p.Repeat > 1 {
		test += fmt.Sprintf(" #%d", r.Repetition)
	}
	pr.printf("[%d/%d] case %d of %d: %s: %s (about %s left)", pr.skipped+i+1, pr.total, r.Case.Number, len(pr.p.Cases),
		r.Case.Label(), test, roundDuration(left))
}

func (pr *progress) done(i int, took time.Duration) {
	pr.doneEst += pr.estimate[i]
	pr.doneReal += took
}

// roundDuration rounds a time left to what a person reads: seconds under
// ten minutes, minutes above.
func roundDuration(d time.Duration) time.Duration {
	if d > 10*time.Minute {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
