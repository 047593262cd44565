package experiment

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"wanlab/internal/infile"
	"wanlab/internal/outfile"
)

// Merge joins results directories of one experiment (the shards of a
// sweep run on several machines, or attempts on one) into out: cases are
// matched by their variables, and of two results for the same run the
// better one is kept (complete, then partial, then failed). As for
// resuming, the results files decide, not the indexes: a run whose file
// is missing or holds no whole run is one not made. Directories made from
// different experiment files, or some with --quick and some without, are
// refused. out must be new or empty: a directory that is one of dirs, or
// that holds an experiment already, is refused (name it among dirs to take
// its runs in). Everything is checked before out is made, and a merge that
// fails after leaves nothing it made behind.
//
// The merged directory is an unsharded one: `wanlab experiment run` on it
// runs whatever no shard completed.
func Merge(ctx context.Context, out string, dirs []string) (*Index, error) {
	if len(dirs) == 0 {
		return nil, &DirError{"nothing to merge: give the shards' directories"}
	}
	// A run filling out is named as such, not as "already holds an
	// experiment".
	if err := checkNotInUse(out); err != nil {
		return nil, err
	}
	if err := checkMergeOutput(out, dirs); err != nil {
		return nil, err
	}
	type source struct {
		dir string
		ix  *Index
	}
	var srcs []source
	for _, d := range dirs {
		ix, err := ReadIndex(d)
		if err != nil {
			return nil, err
		}
		if err := readStatuses(ctx, d, ix); err != nil {
			return nil, err
		}
		srcs = append(srcs, source{d, ix})
	}
	first := srcs[0]
	for _, s := range srcs[1:] {
		if s.ix.File.SHA256 != first.ix.File.SHA256 {
			return nil, &DirError{fmt.Sprintf("%s and %s were made from different experiment files (%s, sha256 %.12s; %s, sha256 %.12s): merge only shards of one file",
				first.dir, s.dir, first.ix.File.Name, first.ix.File.SHA256, s.ix.File.Name, s.ix.File.SHA256)}
		}
		if s.ix.Quick != first.ix.Quick {
			return nil, &DirError{fmt.Sprintf("%s and %s differ in --quick: merge quick runs only with quick runs", first.dir, s.dir)}
		}
	}
	merged := *first.ix
	merged.Shard, merged.Interrupted = "", false
	merged.Cases = nil
	byKey := map[string]int{}   // case key -> position in merged.Cases
	from := map[string]string{} // run file -> directory its result comes from
	for _, s := range srcs {
		for _, c := range s.ix.Cases {
			key := caseKey(mapVars(c.Vars))
			pos, ok := byKey[key]
			if !ok {
				cc := c
				cc.Runs = append([]IndexRun(nil), c.Runs...)
				merged.Cases = append(merged.Cases, cc)
				byKey[key] = len(merged.Cases) - 1
				for _, r := range c.Runs {
					from[r.File] = s.dir
				}
				continue
			}
			mc := &merged.Cases[pos]
			if mc.Number != c.Number {
				return nil, &DirError{fmt.Sprintf("case %s is number %d in %s and %d in %s: the indexes disagree; was one edited by hand?",
					varsLabel(mapVars(c.Vars)), mc.Number, from[mc.Runs[0].File], c.Number, s.dir)}
			}
			for _, r := range c.Runs {
				i := runIndex(mc.Runs, r.File)
				if i < 0 {
					mc.Runs = append(mc.Runs, r)
					from[r.File] = s.dir
					continue
				}
				have := mc.Runs[i]
				switch {
				case rank(r.Status) > rank(have.Status):
					mc.Runs[i] = r
					from[r.File] = s.dir
				case r.Status == StatusComplete && have.Status == StatusComplete:
					same, err := sameContent(filepath.Join(from[r.File], r.File), filepath.Join(s.dir, r.File))
					if err != nil {
						return nil, err
					}
					if !same {
						return nil, &DirError{fmt.Sprintf("run %s is complete in both %s and %s, with different results: remove it from one of them to choose",
							r.File, from[r.File], s.dir)}
					}
				}
			}
		}
	}
	merged.sortCases()
	made := missingDirs(out)
	if err := outfile.MkdirAll(out, 0o755); err != nil {
		return nil, &DirError{fmt.Sprintf("-o %s: %v: give a directory to merge into", out, err)}
	}
	// Locked for the merge, so that no run or other merge writes into
	// it meanwhile; checked again under the lock, since one may have
	// started since the check above.
	lock, err := lockDir(out, lockMerge)
	if err == nil {
		err = checkMergeOutput(out, dirs)
	}
	if err != nil {
		lock.release()
		if lock != nil {
			undoMerge([]string{filepath.Join(out, LockName)}, made)
		}
		return nil, err
	}
	defer lock.release()
	if copied, err := fillMerged(ctx, out, &merged, from); err != nil {
		undoMerge(append(copied, filepath.Join(out, LockName)), made)
		return nil, err
	}
	return &merged, nil
}

// checkMergeOutput refuses, before anything is made, an output directory
// that a merge would change into something else: one of the directories
// merged (a shard would become the whole experiment), one that holds an
// experiment already, or one with other files.
func checkMergeOutput(out string, dirs []string) error {
	st, err := os.Stat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &DirError{fmt.Sprintf("-o %s: %v: give a new directory to merge into", out, err)}
	case !st.IsDir():
		return &DirError{fmt.Sprintf("-o %s is not a directory: give a new directory to merge into", out)}
	}
	for _, d := range dirs {
		if sameDir(d, out) {
			return &DirError{fmt.Sprintf("-o %s is %s, one of the directories to merge: merging into it would turn it into the merged experiment; give a new directory with -o", out, d)}
		}
	}
	if _, err := ReadIndex(out); !errors.Is(err, ErrNoIndex) {
		return &DirError{fmt.Sprintf("-o %s already holds an experiment (%s): give a new or empty directory with -o; to take its runs into the merge, name %s among the directories to merge",
			out, filepath.Join(out, IndexName), out)}
	}
	return checkEmpty(out)
}

// readStatuses sets the status of each run of a directory's index from
// its results file, as resuming does: the files decide. A failed run
// without a file stays failed, with its error.
func readStatuses(ctx context.Context, dir string, ix *Index) error {
	for ci := range ix.Cases {
		for ri := range ix.Cases[ci].Runs {
			if err := ctx.Err(); err != nil {
				return err
			}
			r := &ix.Cases[ci].Runs[ri]
			_, status, reason, err := runStatus(filepath.Join(dir, r.File), r.Test)
			if err != nil {
				return &DirError{fmt.Sprintf("%v: move it out of %s to merge the other runs", err, dir)}
			}
			was, why := r.Status, r.Error
			r.Status, r.Error = status, ""
			switch {
			case status == StatusPartial && reason != "":
				r.Error = reason
			case status == StatusPartial && was == StatusPartial:
				r.Error = why
			case status == StatusPending && was == StatusFailed:
				r.Status, r.Error = StatusFailed, why
			}
		}
	}
	return nil
}

// fillMerged copies the results files the merged index keeps into out and
// writes the index last; it returns the files it copied.
func fillMerged(ctx context.Context, out string, merged *Index, from map[string]string) ([]string, error) {
	var copied []string
	for ci := range merged.Cases {
		for _, r := range merged.Cases[ci].Runs {
			if r.Status != StatusComplete && r.Status != StatusPartial {
				continue
			}
			// Ctrl-C: the command leaves the signal to us (it keeps
			// outfile's temporaries for Commit), and nothing stays.
			if err := ctx.Err(); err != nil {
				return copied, err
			}
			dst := filepath.Join(out, r.File)
			if err := copyFile(ctx, filepath.Join(from[r.File], r.File), dst); err != nil {
				return copied, err
			}
			copied = append(copied, dst)
		}
	}
	return copied, writeIndex(out, merged)
}

// missingDirs lists dir and those of its parents that do not exist,
// deepest first: the directories that making dir creates.
func missingDirs(dir string) []string {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			return missing
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			return missing
		}
	}
}

// undoMerge removes what a failed merge made: the files it copied, then
// the directories it created, deepest first, each only if it is empty.
func undoMerge(copied, made []string) {
	for _, f := range copied {
		os.Remove(f)
	}
	for _, d := range made {
		if os.Remove(d) != nil {
			return
		}
	}
}

func mapVars(m map[string]string) []Var {
	vs := make([]Var, 0, len(m))
	for k, v := range m {
		vs = append(vs, Var{k, v})
	}
	return vs
}

func runIndex(runs []IndexRun, file string) int {
	for i, r := range runs {
		if r.File == file {
			return i
		}
	}
	return -1
}

// rank orders statuses by how much of the run they hold.
func rank(status string) int {
	switch status {
	case StatusComplete:
		return 3
	case StatusPartial:
		return 2
	case StatusFailed:
		return 1
	}
	return 0
}

// sameDir reports whether two paths name the same directory.
func sameDir(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

// sameContent reports whether two results files hold the same bytes,
// reading both as they stream in.
func sameContent(a, b string) (bool, error) {
	fa, err := infile.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := infile.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ra, rb := bufio.NewReader(fa), bufio.NewReader(fb)
	for {
		ca, errA := ra.ReadByte()
		cb, errB := rb.ReadByte()
		switch {
		case errA == io.EOF && errB == io.EOF:
			return true, nil
		case errA != nil && errA != io.EOF:
			return false, errA
		case errB != nil && errB != io.EOF:
			return false, errB
		case errA != nil || errB != nil || ca != cb:
			return false, nil
		}
	}
}

// copyFile copies a results file through outfile, so that an interrupted
// merge leaves no half file.
func copyFile(ctx context.Context, src, dst string) error {
	in, err := infile.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := outfile.Create(ctx, dst, outfile.Options{})
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return out.Commit()
}
