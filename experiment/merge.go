package experiment

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"wanlab/outfile"
)

// Merge joins results directories of one experiment (the shards of a
// sweep run on several machines, or attempts on one) into out: cases are
// matched by their variables, and of two results for the same run the
// better one is kept (complete, then partial, then failed). Directories
// made from different experiment files, or some with --quick and some
// without, are refused. out may be new, empty, or a directory of the same
// experiment, which then takes part in the merge.
//
// The merged directory is an unsharded one: `wanlab experiment run` on it
// runs whatever no shard completed.
func Merge(ctx context.Context, out string, dirs []string) (*Index, error) {
	if len(dirs) == 0 {
		return nil, &DirError{"nothing to merge: give the shards' directories"}
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
		srcs = append(srcs, source{d, ix})
	}
	if err := outfile.MkdirAll(out, 0o755); err != nil {
		return nil, &DirError{fmt.Sprintf("-o %s: %v: give a directory to merge into", out, err)}
	}
	lock, err := lockDir(out, lockMerge)
	if err != nil {
		return nil, err
	}
	defer lock.release()
	if ix, err := ReadIndex(out); err == nil {
		if !includesDir(dirs, out) {
			srcs = append(srcs, source{out, ix})
		}
	} else if err := checkEmpty(out); err != nil {
		return nil, err
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
	merged.Shard = ""
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
					same, err := sameFile(filepath.Join(from[r.File], r.File), filepath.Join(s.dir, r.File))
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
	for ci := range merged.Cases {
		for ri := range merged.Cases[ci].Runs {
			r := &merged.Cases[ci].Runs[ri]
			src := from[r.File]
			if r.Status == StatusPending || r.Status == StatusFailed || sameDir(src, out) {
				continue
			}
			if err := copyFile(ctx, filepath.Join(src, r.File), filepath.Join(out, r.File)); err != nil {
				return nil, err
			}
			status, reason := fileStatus(filepath.Join(out, r.File), r.Test)
			if status != r.Status {
				return nil, fmt.Errorf("%s: %s says %s but the file is %s %s", src, r.File, r.Status, status, reason)
			}
		}
	}
	if err := writeIndex(out, &merged); err != nil {
		return nil, err
	}
	return &merged, nil
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

func includesDir(dirs []string, d string) bool {
	for _, x := range dirs {
		if sameDir(x, d) {
			return true
		}
	}
	return false
}

// sameDir reports whether two paths name the same directory.
func sameDir(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

func sameFile(a, b string) (bool, error) {
	da, err := os.ReadFile(a)
	if err != nil {
		return false, err
	}
	db, err := os.ReadFile(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(da, db), nil
}

// copyFile copies a results file through outfile, so that an interrupted
// merge leaves no half file.
func copyFile(ctx context.Context, src, dst string) error {
	in, err := os.Open(src)
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
