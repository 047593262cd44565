package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"syscall"

	"wanlab/internal/infile"
	"wanlab/internal/outfile"
	"wanlab/results"
)

// IndexName is the index's file name inside a results directory.
const IndexName = "index.json"

// IndexFormat is the value of the index's "format" key.
const IndexFormat = "wanlab-experiment"

// IndexVersion is the index's major version. Additions that an older
// reader can ignore keep it; ReadIndex refuses a higher one.
const IndexVersion = 1

// Run statuses in the index.
const (
	// StatusPending is a run not made yet.
	StatusPending = "pending"
	// StatusComplete is a run whose results file is whole and not partial.
	StatusComplete = "complete"
	// StatusPartial is a run cut short: its results file is marked partial.
	StatusPartial = "partial"
	// StatusFailed is a run that ended in an error without a usable
	// results file; Error says why.
	StatusFailed = "failed"
)

// Index describes a results directory: the experiment file it was made
// from (its content and hash), and every case of it with its variables,
// path and runs, each with its seed, results file and status. It is the
// file that resume, merge and tables read; docs/experiments.md describes
// its keys.
type Index struct {
	Format      string    `json:"format"`
	Version     int       `json:"version"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	File        IndexFile `json:"file"`
	// Seed is the file's seed; ShuffleSeed the seed of the run order when
	// Shuffle is set.
	Seed        uint64  `json:"seed"`
	Repeat      int     `json:"repeat"`
	Shuffle     bool    `json:"shuffle"`
	ShuffleSeed uint64  `json:"shuffle_seed,omitempty"`
	PauseS      float64 `json:"pause_s"`
	// Quick says the runs were made with --quick.
	Quick bool `json:"quick"`
	// Shard is "K/N" for a directory made with --shard, empty otherwise
	// (and after a merge).
	Shard string `json:"shard,omitempty"`
	// Interrupted says the last `experiment run` in the directory was
	// stopped by a signal (Ctrl-C, or the SIGTERM of a scheduler that
	// requeues or preempts it) before its runs were made: the run in
	// progress is kept partial, and running the same command again
	// resumes it. Cleared when a run starts in the directory, and in a
	// merge.
	Interrupted bool `json:"interrupted,omitempty"`
	// Variables are the names that identify a case, in the file's order.
	Variables []string `json:"variables"`
	// Cases are the directory's cases in canonical order.
	Cases []IndexCase `json:"cases"`
}

// IndexFile is the experiment file a directory was made from.
type IndexFile struct {
	// Name is the file's name as given on the command line.
	Name string `json:"name"`
	// SHA256 is the hash of Content: the experiment's identity.
	SHA256 string `json:"sha256"`
	// Content is the file's text, so the directory alone says how it was
	// made.
	Content string `json:"content"`
}

// IndexCase is one case.
type IndexCase struct {
	// Number is the case's 1-based position in the file's canonical
	// order; the results files' names carry it.
	Number int `json:"number"`
	// Vars are the case's variables; Bound the further variables its
	// values bind.
	Vars  map[string]string `json:"vars"`
	Bound map[string]string `json:"bound,omitempty"`
	// Path is each direction's chain in tc syntax ("" for none).
	Path results.Path `json:"path"`
	Runs []IndexRun   `json:"runs"`
}

// IndexRun is one run.
type IndexRun struct {
	Test       string   `json:"test"`
	TestIndex  int      `json:"test_index"`
	Repetition int      `json:"repetition"`
	Seed       uint64   `json:"seed"`
	Title      string   `json:"title"`
	Options    []Option `json:"options"`
	// File is the results file, relative to the directory.
	File   string `json:"file"`
	Status string `json:"status"`
	// Error says why a failed or partial run ended.
	Error string `json:"error,omitempty"`
}

// newIndex describes the plan's cases in shard s, every run pending.
func newIndex(p *Plan, s Shard) *Index {
	ix := &Index{
		Format: IndexFormat, Version: IndexVersion,
		Name: p.Name, Description: p.Description,
		File: IndexFile{Name: p.FileName, SHA256: p.SHA256, Content: string(p.Content)},
		Seed: p.Seed, Repeat: p.Repeat, Shuffle: p.Shuffle, ShuffleSeed: p.ShuffleSeed,
		PauseS: p.Pause.Seconds(), Quick: p.Quick, Shard: s.String(),
		Variables: append([]string{}, p.Variables...),
		Cases:     []IndexCase{},
	}
	for _, c := range p.Cases {
		if !s.Contains(c.Number) {
			continue
		}
		ic := IndexCase{Number: c.Number, Vars: varMap(c.Vars), Bound: varMap(c.Bound),
			Path: results.Path{Up: c.UpTC, Down: c.DownTC}, Runs: []IndexRun{}}
		if len(ic.Bound) == 0 {
			ic.Bound = nil
		}
		for _, r := range c.Runs {
			opts := r.Options
			if opts == nil {
				opts = []Option{}
			}
			ic.Runs = append(ic.Runs, IndexRun{Test: r.Test, TestIndex: r.TestIndex, Repetition: r.Repetition,
				Seed: r.Seed, Title: r.Title, Options: opts, File: r.File, Status: StatusPending})
		}
		ix.Cases = append(ix.Cases, ic)
	}
	return ix
}

func varMap(vs []Var) map[string]string {
	m := make(map[string]string, len(vs))
	for _, v := range vs {
		m[v.Name] = v.Value
	}
	return m
}

// run returns the index's entry for the results file name, or nil.
func (ix *Index) run(file string) *IndexRun {
	for ci := range ix.Cases {
		for ri := range ix.Cases[ci].Runs {
			if ix.Cases[ci].Runs[ri].File == file {
				return &ix.Cases[ci].Runs[ri]
			}
		}
	}
	return nil
}

// Counts returns how many runs have each status.
func (ix *Index) Counts() map[string]int {
	n := map[string]int{}
	for _, c := range ix.Cases {
		for _, r := range c.Runs {
			n[r.Status]++
		}
	}
	return n
}

// Encode returns the index as indented JSON with a final newline.
func (ix *Index) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ix); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeIndex replaces dir's index atomically, so that a kill at any moment
// leaves the previous index or the new one.
func writeIndex(dir string, ix *Index) error {
	data, err := ix.Encode()
	if err != nil {
		return err
	}
	f, err := outfile.Create(context.Background(), filepath.Join(dir, IndexName), outfile.Options{})
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}

// ErrNoIndex is returned by ReadIndex for a directory without an index.
var ErrNoIndex = errors.New("no " + IndexName)

// maxIndexSize bounds an index file. An index holds the experiment file
// (wanlab reads one of at most 16 MiB) and about 400 bytes per run, and an
// experiment has at most 10⁵ runs: some 60 MB at most.
const maxIndexSize = 256 << 20

// ReadIndex reads the index of a results directory. A directory without
// one is ErrNoIndex; an index that cannot be read (not a regular file,
// larger than any experiment's, not JSON, another format, a newer version)
// is a *DirError that names it.
func ReadIndex(dir string) (*Index, error) {
	path := filepath.Join(dir, IndexName)
	data, err := infile.Read(path, maxIndexSize)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("%s: %w: it is not a directory that `wanlab experiment run` made", dir, ErrNoIndex)
	}
	if err != nil {
		return nil, &DirError{fmt.Sprintf("%v: give a directory that `wanlab experiment run` made", err)}
	}
	var ix Index
	if err := json.Unmarshal(data, &ix); err != nil {
		return nil, &DirError{fmt.Sprintf("%s: %v: the index is damaged: restore it from a copy, or give another directory", path, err)}
	}
	if ix.Format != IndexFormat {
		return nil, &DirError{fmt.Sprintf("%s: format %q is not %q: it is not an experiment index", path, ix.Format, IndexFormat)}
	}
	if ix.Version > IndexVersion {
		return nil, &DirError{fmt.Sprintf("%s: index version %d is newer than this wanlab reads (%d): use a newer wanlab", path, ix.Version, IndexVersion)}
	}
	return &ix, nil
}

// runStatus reads a run's results file and says what it holds: the
// results files decide, not the index (docs/experiments.md). The status
// is complete or partial for a whole document of the run's test (doc is
// it), and pending, with the reason, for a file that is missing or holds
// no run (results.NotRun), or a run of another test. err is a file that
// cannot be judged, which a view must not take for a run not made: a
// document of a newer version or beyond the decoder's bounds, a file that
// cannot be read.
func runStatus(path, test string) (doc *results.Document, status, reason string, err error) {
	doc, err = results.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, StatusPending, "", nil
	case results.NotRun(err):
		return nil, StatusPending, err.Error(), nil
	case err != nil:
		return nil, "", "", err
	case doc.Run.Test != test:
		return nil, StatusPending, fmt.Sprintf("%s holds a %s run, not %s", path, doc.Run.Test, test), nil
	case doc.Run.Partial:
		return doc, StatusPartial, doc.Run.PartialReason, nil
	}
	return doc, StatusComplete, "", nil
}

// fileStatus is runStatus for running an experiment: a file it cannot
// judge is pending too, with the error as the reason.
func fileStatus(path, test string) (status, reason string) {
	_, status, reason, err := runStatus(path, test)
	if err != nil {
		return StatusPending, err.Error()
	}
	return status, reason
}

// sortCases orders an index's cases by number.
func (ix *Index) sortCases() {
	sort.Slice(ix.Cases, func(i, j int) bool { return ix.Cases[i].Number < ix.Cases[j].Number })
}
