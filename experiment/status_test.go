package experiment

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wanlab/results"
)

// TestStatusFollowsAShard reads a shard's status before it starts, while
// it runs (from inside its third run) and after it ends, and a second
// shard with a run that ended early, one that failed and one not
// faithful: the counts are the runs' own, the index lists every run of
// the shard from the start, and a shard is finished only when no run is
// left and nothing holds it.
func TestStatusFollowsAShard(t *testing.T) {
	p := mustLoad(t, sweep, false) // 6 cases × 2: 6 runs a shard of 2
	base := t.TempDir()
	s1, s2 := filepath.Join(base, "shard-1"), filepath.Join(base, "shard-2")
	sr := StatusReader{Plan: func(ix *Index) (*Plan, error) {
		return Load(ix.File.Name, []byte(ix.File.Content), LoadOptions{Backend: &fakeBackend{}, Quick: ix.Quick})
	}}

	sw, err := sr.Read([]string{s1, s2})
	if err != nil {
		t.Fatal(err)
	}
	if sw.Started != 0 || sw.Finished || sw.Dirs[0].Started || sw.Dirs[0].Finished || sw.Total.Runs != 0 {
		t.Errorf("before the start: %+v %+v", sw, sw.Dirs[0])
	}

	var during *DirStatus
	b := &fakeBackend{onRun: func(r *Run) {
		if during == nil && r.File == p.Runs(Shard{1, 2})[2].File {
			during, err = sr.ReadStatus(s1)
		}
	}}
	if _, err := Execute(context.Background(), p, b, ExecOptions{Dir: s1, Shard: Shard{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if err != nil || during == nil {
		t.Fatalf("status during the run: %v", err)
	}
	if !during.Started || !during.Running || during.Finished || during.Shard != "1/2" || during.Runs != 6 || during.Complete != 2 || during.Pending != 4 || len(during.PendingRuns) != 4 {
		t.Errorf("during the third run: %+v", during)
	}
	// Listed in the index's order (by case), the one running among them.
	running := false
	for _, r := range during.PendingRuns {
		running = running || r.File == p.Runs(Shard{1, 2})[2].File
		if r.Status != StatusPending || r.Vars["delay"] == "" {
			t.Errorf("pending run %+v", r)
		}
	}
	if !running {
		t.Errorf("pending runs %+v lack the one running", during.PendingRuns)
	}

	// Shard 2 not started yet is counted from the plan, by its name.
	sw, err = sr.Read([]string{s1, s2})
	if err != nil {
		t.Fatal(err)
	}
	if d := sw.Dirs[1]; !d.Planned || d.Started || d.Finished || d.Shard != "2/2" || d.Runs != 6 || d.Pending != 6 || len(d.PendingRuns) != 6 ||
		sw.Total != (StatusCounts{Runs: 12, Complete: 6, Pending: 6}) || sw.Planned != 1 || sw.Finished {
		t.Errorf("shard 2 before its start: %+v, total %+v", d, sw.Total)
	}
	if sw, _ := sr.Read([]string{s1, filepath.Join(base, "other")}); sw.Planned != 0 || sw.Total.Runs != 6 {
		t.Errorf("a directory not named shard-K is counted: %+v", sw.Total)
	}

	no := false
	failFile := p.Runs(Shard{2, 2})[0].File
	b = &fakeBackend{
		partial: func(r *Run) string {
			if r.File == p.Runs(Shard{2, 2})[1].File {
				return "the client ended early"
			}
			return ""
		},
		edit: func(r *Run, d *results.Document) {
			if r.File == p.Runs(Shard{2, 2})[2].File {
				d.Router = &results.RouterReport{Mode: results.RouterTestbed, Testbed: "wl-x", Faithful: &no}
			}
		},
	}
	if _, err := Execute(context.Background(), p, b, ExecOptions{Dir: s2, Shard: Shard{2, 2}}); err != nil {
		t.Fatal(err)
	}
	// A run that failed without a file: the index says why.
	if err := os.Remove(filepath.Join(s2, failFile)); err != nil {
		t.Fatal(err)
	}
	ix, _ := ReadIndex(s2)
	ix.run(failFile).Status, ix.run(failFile).Error = StatusFailed, "the testbed could not be built"
	if err := writeIndex(s2, ix); err != nil {
		t.Fatal(err)
	}

	sw, err = sr.Read([]string{s1, s2})
	if err != nil {
		t.Fatal(err)
	}
	want := StatusCounts{Runs: 12, Complete: 10, Partial: 1, Failed: 1, NotFaithful: 1}
	if sw.Total != want || !sw.Finished || sw.Started != 2 {
		t.Errorf("after both: %+v (finished %v), want %+v", sw.Total, sw.Finished, want)
	}
	d := sw.Dirs[1]
	if len(d.FailedRuns) != 2 || d.FailedRuns[0].File != failFile || d.FailedRuns[0].Error != "the testbed could not be built" ||
		d.FailedRuns[1].Status != StatusPartial || d.FailedRuns[1].Error != "the client ended early" {
		t.Errorf("failed runs: %+v", d.FailedRuns)
	}

	// A results file removed by hand is a run to make again.
	os.Remove(filepath.Join(s1, p.Runs(Shard{1, 2})[0].File))
	if st, _ := sr.ReadStatus(s1); st.Pending != 1 || st.Finished {
		t.Errorf("after removing a results file: %+v", st.StatusCounts)
	}
}

// TestStatusRefusals: a name whose parent does not exist, a directory
// that is not a results directory, directories of two experiments and a
// shard given twice are refused, each naming what to give.
func TestStatusRefusals(t *testing.T) {
	base := t.TempDir()
	a, b, c := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "c")
	for _, x := range []struct {
		dir, text string
		shard     Shard
	}{{a, sweep, Shard{1, 2}}, {b, strings.Replace(sweep, "name: sweep", "name: other", 1), Shard{2, 2}}, {c, sweep, Shard{1, 2}}} {
		if _, err := Execute(context.Background(), mustLoad(t, x.text, false), &fakeBackend{}, ExecOptions{Dir: x.dir, Shard: x.shard}); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(base, "notes")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "x.txt"), nil, 0o644)
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{filepath.Join(base, "typo", "shard-1")}, "does not exist, nor does its parent"},
		{[]string{other}, "has files but no index.json"},
		{[]string{a, b}, "hold different experiments"},
		{[]string{a, c}, "both hold shard 1/2"},
	} {
		var sr StatusReader
		_, err := sr.Read(tc.dirs)
		var de *DirError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a DirError with %q", tc.dirs, err, tc.want)
		}
	}
}

// TestStatusInterruptedShard: a shard stopped by a signal during its last
// run has no run pending, but the run it cut short is partial and will be
// resumed (a requeued Slurm task, a restarted pod): it is interrupted,
// not finished, until a run resumes it; a merge does not carry the mark.
func TestStatusInterruptedShard(t *testing.T) {
	p := mustLoad(t, sweep, false)
	dir := filepath.Join(t.TempDir(), "shard-1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &fakeBackend{cancelAfter: len(p.Runs(Shard{1, 2})), cancel: cancel}
	if _, err := Execute(ctx, p, b, ExecOptions{Dir: dir, Shard: Shard{1, 2}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Execute: %v", err)
	}
	var sr StatusReader
	st, err := sr.ReadStatus(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Interrupted || st.Finished || st.Pending != 0 || st.Partial != 1 || st.Complete != 5 {
		t.Errorf("after the interruption: %+v", st)
	}
	merged := filepath.Join(t.TempDir(), "merged")
	ix, err := Merge(context.Background(), merged, []string{dir})
	if err != nil || ix.Interrupted {
		t.Errorf("merge: %v, interrupted %v", err, ix != nil && ix.Interrupted)
	}
	if _, err := Execute(context.Background(), p, &fakeBackend{}, ExecOptions{Dir: dir, Shard: Shard{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if st, _ := sr.ReadStatus(dir); st.Interrupted || !st.Finished || st.Complete != 6 {
		t.Errorf("after the resume: %+v", st)
	}
}
