package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"wanlab/internal/outfile"
	"wanlab/results"
)

// runDirs runs sweep into a directory per shard given (Shard{} for the
// whole), and returns the directories.
func runDirs(t *testing.T, shards ...Shard) []string {
	t.Helper()
	p := mustLoad(t, sweep, false)
	var dirs []string
	for _, s := range shards {
		dir := t.TempDir()
		if _, err := Execute(context.Background(), p, &fakeBackend{}, ExecOptions{Dir: dir, Shard: s}); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// retitle writes the run file of dir again with another title: a complete
// result that differs from another directory's.
func retitle(t *testing.T, path string) {
	t.Helper()
	d, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d.Run.Title += " again"
	if err := results.WriteFile(context.Background(), path, d, outfile.Options{}); err != nil {
		t.Fatal(err)
	}
}

// mergeWithin runs Merge and fails the test if it takes longer than a few
// seconds (a FIFO opened for reading would block it forever).
func mergeWithin(t *testing.T, out string, dirs ...string) (*Index, error) {
	t.Helper()
	type result struct {
		ix  *Index
		err error
	}
	done := make(chan result, 1)
	go func() {
		ix, err := Merge(context.Background(), out, dirs)
		done <- result{ix, err}
	}()
	select {
	case r := <-done:
		return r.ix, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("Merge(%s, %v) still runs after 10s", out, dirs)
	}
	return nil, nil
}

// TestMergeAfterRemovingADuplicate: merge's own advice for a run complete
// in two directories with different results is to remove it from one; the
// merge then takes the other. It failed on the removed file (its index
// still said complete), and left an empty output directory behind.
func TestMergeAfterRemovingADuplicate(t *testing.T) {
	dirs := runDirs(t, Shard{1, 2}, Shard{})
	shard, whole := dirs[0], dirs[1]
	const file = "c001-tcp_upload-r1.json.gz"
	retitle(t, filepath.Join(whole, file))
	out := filepath.Join(t.TempDir(), "new", "merged")
	_, err := mergeWithin(t, out, shard, whole)
	var de *DirError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "remove it from one of them") {
		t.Fatalf("a run complete in both with different results: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(out)); err == nil {
		t.Errorf("the refused merge left %s behind", filepath.Dir(out))
	}
	if err := os.Remove(filepath.Join(whole, file)); err != nil {
		t.Fatal(err)
	}
	ix, err := mergeWithin(t, out, shard, whole)
	if err != nil {
		t.Fatalf("merge after removing the duplicate: %v", err)
	}
	if n := ix.Counts(); n[StatusComplete] != 12 {
		t.Errorf("merged: %v, want 12 complete", n)
	}
	d, err := results.ReadFile(filepath.Join(out, file))
	if err != nil || strings.HasSuffix(d.Run.Title, " again") {
		t.Errorf("merged %s: %v; want the shard's", file, err)
	}
}

// TestMergeCountsBrokenRunsAsNotRun: a run whose file is missing, cut
// short, a FIFO or a device is a run not made, whatever its directory's
// index says (the FIFO used to hang the merge); a whole copy elsewhere
// wins, and a run with none is pending in the merged index and is not
// copied.
func TestMergeCountsBrokenRunsAsNotRun(t *testing.T) {
	dirs := runDirs(t, Shard{1, 2}, Shard{2, 2}, Shard{})
	s1, s2, whole := dirs[0], dirs[1], dirs[2]
	ix, _ := ReadIndex(s1)
	broken := []string{ix.Cases[0].Runs[0].File, ix.Cases[0].Runs[1].File, ix.Cases[1].Runs[0].File, ix.Cases[1].Runs[1].File}
	b, _ := os.ReadFile(filepath.Join(s1, broken[1]))
	os.Remove(filepath.Join(s1, broken[0]))
	os.WriteFile(filepath.Join(s1, broken[1]), b[:len(b)/2], 0o644)
	os.Remove(filepath.Join(s1, broken[2]))
	if err := syscall.Mkfifo(filepath.Join(s1, broken[2]), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(s1, broken[3]))
	os.Symlink("/dev/zero", filepath.Join(s1, broken[3]))

	// With the whole directory, every run has a whole copy.
	ix, err := mergeWithin(t, filepath.Join(t.TempDir(), "m"), s1, s2, whole)
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.Counts(); n[StatusComplete] != 12 {
		t.Errorf("merged with the whole directory: %v", n)
	}
	// Without it, the broken runs are not run.
	out := filepath.Join(t.TempDir(), "m")
	ix, err = mergeWithin(t, out, s1, s2)
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.Counts(); n[StatusComplete] != 8 || n[StatusPending] != 4 {
		t.Errorf("merged without it: %v, want 8 complete and 4 not run", n)
	}
	for _, f := range broken {
		if _, err := os.Lstat(filepath.Join(out, f)); err == nil {
			t.Errorf("%s was copied", f)
		}
	}
}

// TestMergeRefusesItsOutput: the output may not be one of the directories
// merged (a shard became the whole experiment), a directory holding an
// experiment, or one with other files; each is refused naming it, before
// anything changes.
func TestMergeRefusesItsOutput(t *testing.T) {
	dirs := runDirs(t, Shard{1, 2}, Shard{2, 2})
	s1, s2 := dirs[0], dirs[1]
	before, _ := os.ReadFile(filepath.Join(s1, IndexName))
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct{ out, want string }{
		{s1, "-o " + s1 + " is " + s1 + ", one of the directories to merge"},
		{s2 + "/.", "one of the directories to merge"},
		{runDirs(t, Shard{})[0], "already holds an experiment"},
		{other, "is not empty and has no index.json"},
		{file, "is not a directory"},
	} {
		_, err := Merge(context.Background(), c.out, []string{s1, s2})
		var de *DirError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("merge into %s: %v; want a DirError with %q", c.out, err, c.want)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(s1, IndexName)); string(after) != string(before) {
		t.Error("the refused merge changed the shard's index")
	}
}

// interruptAfter is a context that is done from the n-th look at it on,
// as one is when Ctrl-C comes in the middle of the work.
type interruptAfter struct {
	context.Context
	n int
}

func (c *interruptAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestMergeInterruptedLeavesNothing: a merge stopped while it copies (its
// context done, as Ctrl-C does) removes what it copied and the directories
// it made.
func TestMergeInterruptedLeavesNothing(t *testing.T) {
	dirs := runDirs(t, Shard{1, 2}, Shard{2, 2})
	parent := t.TempDir()
	// Merge looks once per run as it reads the shards (12 runs), then once
	// per file it copies: stop it after 3 copies.
	ctx := &interruptAfter{Context: context.Background(), n: 12 + 3}
	if _, err := Merge(ctx, filepath.Join(parent, "a", "b"), dirs); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted merge: %v", err)
	}
	if ctx.n >= 0 {
		t.Fatalf("the merge ended before it was interrupted")
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("the interrupted merge left %v", entries)
	}
}

// TestTableCountsBrokenRunsAsNotRun: a table leaves out, counted and with
// a warning for each file that is there, the runs whose file is missing,
// cut short or a FIFO (it failed on the first); a document of a newer
// version stops it, naming the file.
func TestTableCountsBrokenRunsAsNotRun(t *testing.T) {
	dir := runDirs(t, Shard{})[0]
	ix, _ := ReadIndex(dir)
	a, b, c := ix.Cases[0].Runs[0].File, ix.Cases[0].Runs[1].File, ix.Cases[1].Runs[0].File
	os.Remove(filepath.Join(dir, a))
	whole, _ := os.ReadFile(filepath.Join(dir, b))
	os.WriteFile(filepath.Join(dir, b), whole[:len(whole)/3], 0o644)
	os.Remove(filepath.Join(dir, c))
	syscall.Mkfifo(filepath.Join(dir, c), 0o644)
	var warnings []string
	tables, err := Tables(dir, TableOptions{Warnf: func(f string, args ...any) {
		warnings = append(warnings, strings.TrimSpace(fmt.Sprintf(f, args...)))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if tables[0].Skipped != 3 {
		t.Errorf("%d runs left out, want 3", tables[0].Skipped)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], b+": the file is cut short") || !strings.Contains(warnings[1], c+" is a FIFO") {
		t.Errorf("warnings %q", warnings)
	}
	newer := filepath.Join(dir, ix.Cases[2].Runs[0].File)
	os.WriteFile(newer, []byte(`{"format":"wanlab-results","version":99}`), 0o644)
	_, err = Tables(dir, TableOptions{})
	var de *DirError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), newer+": results: the document is version 99") {
		t.Errorf("a newer document: %v", err)
	}
}

// TestReadIndexRefusesWhatIsNotAnIndex: an index that is a FIFO (which
// hung table and merge), damaged, or of another format is a *DirError
// that names it.
func TestReadIndexRefusesWhatIsNotAnIndex(t *testing.T) {
	fifo, broken := t.TempDir(), t.TempDir()
	syscall.Mkfifo(filepath.Join(fifo, IndexName), 0o644)
	os.WriteFile(filepath.Join(broken, IndexName), []byte(`{"format":`), 0o644)
	for dir, want := range map[string]string{fifo: "is a FIFO, not a regular file", broken: "the index is damaged"} {
		done := make(chan error, 1)
		go func() { _, err := ReadIndex(dir); done <- err }()
		select {
		case err := <-done:
			var de *DirError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), filepath.Join(dir, IndexName)) || !strings.Contains(err.Error(), want) {
				t.Errorf("ReadIndex(%s) = %v; want %q", dir, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadIndex of a FIFO hangs")
		}
	}
}
