package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
)

const sweep = `
name: sweep
vars:
  delay: [10ms, 30ms, 50ms]
  cc: [reno, cubic]
path:
  up: "netem delay ${delay}"
  down: "netem delay 5ms"
tests:
  - test: tcp_upload
    duration: 2s
    cc: ${cc}
repeat: 2
`

func files(runs []*Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.File)
	}
	return out
}

func TestExecuteResumesOnlyWhatIsMissing(t *testing.T) {
	p := mustLoad(t, sweep, false)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &fakeBackend{cancelAfter: 5, cancel: cancel}
	var prog bytes.Buffer
	rep, err := Execute(ctx, p, first, ExecOptions{Dir: dir, Progress: &prog})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Execute: err %v", err)
	}
	if len(first.ran) != 5 || rep.Complete != 4 || rep.Partial != 1 || rep.Pending != 7 {
		t.Fatalf("after the interruption: ran %d, %d complete, %d partial, %d pending", len(first.ran), rep.Complete, rep.Partial, rep.Pending)
	}
	if !strings.Contains(prog.String(), "[1/12] case 1 of 6: delay=10ms cc=reno: tcp_upload #1") {
		t.Errorf("progress:\n%s", prog.String())
	}
	ix, err := ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.Counts(); n[StatusComplete] != 4 || n[StatusPartial] != 1 {
		t.Errorf("index after the interruption: %v", n)
	}

	second := &fakeBackend{}
	rep, err = Execute(context.Background(), p, second, ExecOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	all := files(p.Runs(Shard{}))
	want := append([]string{first.ran[4]}, all[5:]...) // the partial one and those never run
	if !slices.Equal(second.ran, want) {
		t.Errorf("resume ran %v, want %v", second.ran, want)
	}
	if rep.Skipped != 4 || rep.Complete != 12 || rep.Ran != 8 {
		t.Errorf("resume: %+v", rep)
	}

	// A third run has nothing to do.
	third := &fakeBackend{}
	if _, err := Execute(context.Background(), p, third, ExecOptions{Dir: dir}); err != nil || len(third.ran) != 0 {
		t.Errorf("a complete directory ran %v again (err %v)", third.ran, err)
	}
}

// TestResumeTrustsTheFiles: the results files, not the index, say what is
// done. A kill between a results file's commit and the index's rewrite
// leaves the run pending in the index; it must not run again. A results
// file removed by hand is run again.
func TestResumeTrustsTheFiles(t *testing.T) {
	p := mustLoad(t, sweep, false)
	dir := t.TempDir()
	if _, err := Execute(context.Background(), p, &fakeBackend{}, ExecOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	ix, _ := ReadIndex(dir)
	ix.Cases[0].Runs[0].Status = StatusPending
	if err := writeIndex(dir, ix); err != nil {
		t.Fatal(err)
	}
	gone := ix.Cases[1].Runs[1].File
	if err := os.Remove(filepath.Join(dir, gone)); err != nil {
		t.Fatal(err)
	}
	b := &fakeBackend{}
	if _, err := Execute(context.Background(), p, b, ExecOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.ran, []string{gone}) {
		t.Errorf("ran %v, want only %s", b.ran, gone)
	}
}

// A resume never replaces a results file it cannot judge (one a newer
// wanlab wrote, say): it may hold a whole run.
func TestResumeKeepsWhatItCannotJudge(t *testing.T) {
	p := mustLoad(t, sweep, false)
	dir := t.TempDir()
	if _, err := Execute(context.Background(), p, &fakeBackend{}, ExecOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	ix, _ := ReadIndex(dir)
	path := filepath.Join(dir, ix.Cases[0].Runs[0].File)
	newer := []byte(`{"format":"wanlab-results","version":99,"run":{"test":"ping"}}` + "\n")
	if err := os.WriteFile(path, newer, 0o644); err != nil {
		t.Fatal(err)
	}
	b := &fakeBackend{}
	_, err := Execute(context.Background(), p, b, ExecOptions{Dir: dir})
	var de *DirError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "newer than this wanlab reads") || !strings.Contains(err.Error(), "move it out of") {
		t.Errorf("resume: %v; want a DirError naming the file it cannot judge", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, newer) || len(b.ran) != 0 {
		t.Errorf("ran %v; the file was replaced (%d bytes now)", b.ran, len(got))
	}
}

func TestExecuteRefusesAnotherDirectory(t *testing.T) {
	p := mustLoad(t, sweep, false)
	dir := t.TempDir()
	if _, err := Execute(context.Background(), p, &fakeBackend{}, ExecOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	other := mustLoad(t, strings.Replace(sweep, "repeat: 2", "repeat: 3", 1), false)
	quick := mustLoad(t, sweep, true)
	stray := t.TempDir()
	os.WriteFile(filepath.Join(stray, "notes.txt"), []byte("mine"), 0o644)
	for _, c := range []struct {
		name  string
		p     *Plan
		dir   string
		shard Shard
		want  string
	}{
		{"other file", other, dir, Shard{}, "made from another file"},
		{"quick", quick, dir, Shard{}, "made without --quick"},
		{"shard", p, dir, Shard{1, 2}, "holds the whole experiment: resume it with no --shard"},
		{"not ours", p, stray, Shard{}, "not empty and has no index.json"},
		{"a file", p, filepath.Join(stray, "notes.txt"), Shard{}, "give a directory"},
	} {
		b := &fakeBackend{}
		_, err := Execute(context.Background(), c.p, b, ExecOptions{Dir: c.dir, Shard: c.shard})
		var de *DirError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want a DirError with %q", c.name, err, c.want)
		}
		if len(b.ran) != 0 {
			t.Errorf("%s: ran %v", c.name, b.ran)
		}
	}
}

func TestExecuteStopsOnRepeatedFailure(t *testing.T) {
	p := mustLoad(t, sweep, false)
	dir := t.TempDir()
	b := &fakeBackend{failTests: map[string]bool{"tcp_upload": true}}
	rep, err := Execute(context.Background(), p, b, ExecOptions{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "the last 3 runs failed the same way (the testbed could not be built)") {
		t.Fatalf("err %v", err)
	}
	if len(b.ran) != 3 || rep.Failed != 3 {
		t.Errorf("ran %d, %d failed", len(b.ran), rep.Failed)
	}
	ix, _ := ReadIndex(dir)
	if r := ix.Cases[0].Runs[0]; r.Status != StatusFailed || r.Error != "the testbed could not be built" {
		t.Errorf("failed run in the index: %+v", r)
	}
	// Fixed, the same command goes on and keeps nothing of the failures.
	if _, err := Execute(context.Background(), p, &fakeBackend{}, ExecOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if ix, _ := ReadIndex(dir); ix.Counts()[StatusComplete] != 12 {
		t.Errorf("after the fix: %v", ix.Counts())
	}
}

// TestExecuteStopsOnRepeatedPartialFailure: runs that end early for the
// same reason (a custom test's missing client program) count as the same
// failure, although the times in their reasons differ, and stop the
// experiment as failed runs do (issue 26 item 11: every run was partial
// and the experiment went on); reasons that differ in their words do not.
func TestExecuteStopsOnRepeatedPartialFailure(t *testing.T) {
	p := mustLoad(t, sweep, false)
	missing := func(r *Run) string {
		ms := 200 + r.Seed%50
		return fmt.Sprintf("stopped %dms into the run of 2.4s: the client command exited with status 127, %dms into the run; its last line: /bin/sh: 1: nosuchtool: not found", ms, ms+7)
	}
	b := &fakeBackend{partial: missing}
	var prog bytes.Buffer
	rep, err := Execute(context.Background(), p, b, ExecOptions{Dir: t.TempDir(), Progress: &prog})
	if err == nil || !strings.Contains(err.Error(), "the last 3 runs failed the same way (stopped ") || !strings.Contains(err.Error(), "nosuchtool: not found)") {
		t.Fatalf("err %v", err)
	}
	if len(b.ran) != 3 || rep.Partial != 3 {
		t.Errorf("ran %d, %d partial", len(b.ran), rep.Partial)
	}
	if !strings.Contains(prog.String(), "c001-tcp_upload-r1.json.gz: run ended early: stopped ") {
		t.Errorf("progress:\n%s", prog.String())
	}

	words := []string{"connection refused", "no route to host"}
	n := 0
	b = &fakeBackend{partial: func(r *Run) string { n++; return "the client command failed: " + words[n%2] }}
	if _, err := Execute(context.Background(), p, b, ExecOptions{Dir: t.TempDir()}); err != nil || len(b.ran) != 12 {
		t.Errorf("alternating reasons: %v after %d runs; want all 12 run", err, len(b.ran))
	}
}

// TestExecuteIndexCostBounded: the index is not rewritten after every run
// once rewriting it costs more than a small share of the runs' time.
// Rewriting it after every run made running quadratic in the number of
// runs: at 10⁵ runs the index is some 70 MB, a rewrite takes seconds, and
// 10⁵ of them cost more than the runs. Each run here sees which index
// file (by inode: every rewrite is a new file) the directory holds.
func TestExecuteIndexCostBounded(t *testing.T) {
	var labels []string
	for i := range 1000 {
		labels = append(labels, fmt.Sprintf("v%d", i))
	}
	p := mustLoad(t, "vars:\n  a: ["+strings.Join(labels, ", ")+"]\ntests: [{test: ping}]\n", false)
	dir := t.TempDir()
	seen := map[uint64]bool{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first 30 runs of 1000, with the index of all 1000 to keep.
	b := &fakeBackend{cancelAfter: 30, cancel: cancel, onRun: func(*Run) {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, IndexName), &st); err == nil {
			seen[st.Ino] = true
		}
	}}
	rep, err := Execute(ctx, p, b, ExecOptions{Dir: dir})
	if !errors.Is(err, context.Canceled) || rep.Complete != 29 {
		t.Fatalf("%v, %+v", err, rep)
	}
	if len(seen) > 15 {
		t.Errorf("the index was rewritten %d times in 30 runs", len(seen))
	}
	// What the runs did is in the index once Execute returns.
	if ix, err := ReadIndex(dir); err != nil || ix.Counts()[StatusComplete] != 29 || ix.Counts()[StatusPartial] != 1 {
		t.Errorf("the index at the end: %v (%v)", ix.Counts(), err)
	}
	t.Logf("%d index files in 30 runs", len(seen))
}

func TestShardsAreDisjointAndCover(t *testing.T) {
	p := mustLoad(t, sweep+"shuffle: true\n", false)
	all := files(p.Runs(Shard{}))
	var union []string
	for k := 1; k <= 4; k++ {
		union = append(union, files(p.Runs(Shard{k, 4}))...)
	}
	sort.Strings(all)
	sort.Strings(union)
	if !slices.Equal(all, union) {
		t.Errorf("shards' runs %v, all %v", union, all)
	}
	// Shuffled, and the same order every time.
	canon := files(mustLoad(t, sweep, false).Runs(Shard{}))
	order := files(p.Runs(Shard{}))
	if slices.Equal(order, canon) {
		t.Error("shuffle: true kept the canonical order")
	}
	if !slices.Equal(order, files(mustLoad(t, sweep+"shuffle: true\n", false).Runs(Shard{}))) {
		t.Error("the shuffled order is not reproducible")
	}
}

// TestMergeEqualsUnsharded: two shards, run apart and merged, give the
// same index and results files as the experiment run whole.
func TestMergeEqualsUnsharded(t *testing.T) {
	p := mustLoad(t, sweep+"shuffle: true\n", false)
	whole, s1, s2, merged := t.TempDir(), t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "merged")
	for _, x := range []struct {
		dir   string
		shard Shard
	}{{whole, Shard{}}, {s1, Shard{1, 2}}, {s2, Shard{2, 2}}} {
		if _, err := Execute(context.Background(), p, &fakeBackend{}, ExecOptions{Dir: x.dir, Shard: x.shard}); err != nil {
			t.Fatal(err)
		}
	}
	ix1, _ := ReadIndex(s1)
	if ix1.Shard != "1/2" || len(ix1.Cases) != 3 {
		t.Errorf("shard 1/2 index: shard %q, %d cases", ix1.Shard, len(ix1.Cases))
	}
	if _, err := Merge(context.Background(), merged, []string{s2, s1}); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(whole, IndexName))
	got, _ := os.ReadFile(filepath.Join(merged, IndexName))
	if !bytes.Equal(got, want) {
		t.Errorf("merged index differs from the unsharded one:\n%s\nwant:\n%s", got, want)
	}
	for _, r := range p.Runs(Shard{}) {
		a, _ := os.ReadFile(filepath.Join(whole, r.File))
		b, err := os.ReadFile(filepath.Join(merged, r.File))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: merged file differs (err %v)", r.File, err)
		}
	}
	// The merged directory is complete: running it again runs nothing.
	b := &fakeBackend{}
	if _, err := Execute(context.Background(), p, b, ExecOptions{Dir: merged}); err != nil || len(b.ran) != 0 {
		t.Errorf("running the merged directory ran %v (err %v)", b.ran, err)
	}
}

func TestMergeOneShardThenComplete(t *testing.T) {
	p := mustLoad(t, sweep, false)
	s1, merged := t.TempDir(), t.TempDir()
	if _, err := Execute(context.Background(), p, &fakeBackend{}, ExecOptions{Dir: s1, Shard: Shard{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(context.Background(), merged, []string{s1}); err != nil {
		t.Fatal(err)
	}
	// The missing shard's cases are run into the merged directory.
	b := &fakeBackend{}
	if _, err := Execute(context.Background(), p, b, ExecOptions{Dir: merged}); err != nil {
		t.Fatal(err)
	}
	if want := files(p.Runs(Shard{2, 2})); !slices.Equal(b.ran, want) {
		t.Errorf("ran %v, want shard 2's %v", b.ran, want)
	}
}

func TestMergeRefusesOtherExperiments(t *testing.T) {
	a, b, q := t.TempDir(), t.TempDir(), t.TempDir()
	ctx := context.Background()
	if _, err := Execute(ctx, mustLoad(t, sweep, false), &fakeBackend{}, ExecOptions{Dir: a, Shard: Shard{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Execute(ctx, mustLoad(t, sweep+"seed: 9\n", false), &fakeBackend{}, ExecOptions{Dir: b, Shard: Shard{2, 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Execute(ctx, mustLoad(t, sweep, true), &fakeBackend{}, ExecOptions{Dir: q, Shard: Shard{2, 2}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dirs []string
		want string
	}{
		{[]string{a, b}, "different experiment files"},
		{[]string{a, q}, "differ in --quick"},
		{[]string{a, t.TempDir()}, "no index.json"},
	} {
		out := filepath.Join(t.TempDir(), "m")
		_, err := Merge(ctx, out, c.dirs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("merge %v: err %v, want %q", c.dirs, err, c.want)
		}
		if _, err := os.Stat(filepath.Join(out, IndexName)); err == nil {
			t.Errorf("merge %v wrote an index", c.dirs)
		}
	}
}

func TestDryRun(t *testing.T) {
	p := mustLoad(t, sweep, false)
	var b bytes.Buffer
	if err := p.WriteDryRun(&b, Shard{2, 3}, &fakeBackend{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	checkHas(t, "dry run", out,
		"experiment sweep (x.yaml, sha256 ", "6 cases, 1 test, 2 repetitions: 12 runs",
		"shard 2/3: 2 cases, 4 runs", "time: about 12s of runs",
		"case 2 of 6: delay=10ms cc=cubic", "  up:   netem limit 1000 delay 10ms", "  down: netem limit 1000 delay 5ms",
		"  tcp_upload duration=2s cc=cubic", "#2 seed ", "-> c002-tcp_upload-r2.json.gz",
		"case 5 of 6: delay=50ms cc=reno",
	)
	if strings.Contains(out, "case 1 of 6") {
		t.Errorf("dry run of shard 2/3 shows case 1:\n%s", out)
	}
}
