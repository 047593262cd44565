package experiment

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"wanlab/internal/infile"
	"wanlab/internal/outfile"
	"wanlab/results"
)

// Runs is an experiment's runs as the views read them (tables, sweep
// graphs, comparisons, reports): its index, and for each of its runs the
// results document or why there is none. They come from a results
// directory (`wanlab experiment run`) or from the experiment's summary
// file (Summarize), the same either way but for the samples, which only a
// directory has.
type Runs struct {
	// Path is the directory or summary file, as given.
	Path string
	// Index is the experiment's index.
	Index *Index
	// Summary says the runs come from a summary file: their documents
	// have no samples (results.Run.SamplesDropped).
	Summary bool
	runs    map[string]*RunResult
}

// RunResult is one run of an experiment as Runs holds it.
type RunResult struct {
	// File is the run's results file, relative to the directory.
	File string
	// Status is StatusComplete, StatusPartial, StatusFailed or
	// StatusPending; Reason says why a run is not complete, when known.
	Status, Reason string
	// Doc is the run's results document, for a complete or partial run.
	Doc *results.Document
}

// OpenOptions say how Runs are read.
type OpenOptions struct {
	// Samples keeps the documents' samples, for views that draw series over
	// time; without it each document is kept without them
	// (results.Document.WithoutSamples), so that reading a large
	// experiment takes little memory. A summary file has none to keep.
	Samples bool
	// Warnf, if not nil, is told of each results file left out because it
	// holds no whole run (cut short, damaged, not a regular file).
	Warnf func(format string, args ...any)
}

// SummaryFormat is the "format" key of a summary file, and SummaryVersion
// its version.
const (
	SummaryFormat  = "wanlab-experiment-summary"
	SummaryVersion = 1
)

// maxSummaryText bounds a summary file's JSON once decompressed: a run's
// summary is a few tens of kilobytes, so this holds thousands of runs,
// and a file that claims more is not one of wanlab's.
const maxSummaryText = 256 << 20

// IsSummaryFile reports whether path names a summary file rather than a
// results directory: a regular file (a directory is read as a results
// directory).
func IsSummaryFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// OpenRuns reads an experiment's runs from a results directory or a
// summary file. The results files decide a directory's runs, as for
// resuming: a file missing, cut short or damaged is a run not made, and
// one that cannot be judged (a newer version) is an error that names it.
func OpenRuns(path string, o OpenOptions) (*Runs, error) {
	if IsSummaryFile(path) {
		return readSummary(path)
	}
	ix, err := ReadIndex(path)
	if err != nil {
		return nil, err
	}
	rs := &Runs{Path: path, Index: ix, runs: map[string]*RunResult{}}
	for _, c := range ix.Cases {
		for _, r := range c.Runs {
			doc, status, reason, err := runStatus(filepath.Join(path, r.File), r.Test)
			if err != nil {
				return nil, &DirError{fmt.Sprintf("%v: move it out of %s to read the other runs", err, path)}
			}
			if status == StatusPending && reason != "" && o.Warnf != nil {
				o.Warnf("%s: left out, as a run not made", strings.Replace(reason, "results: ", "", 1))
			}
			if status == StatusPending && r.Status == StatusFailed {
				// The index keeps why an attempt failed without a file.
				status, reason = StatusFailed, r.Error
			}
			if doc != nil && !o.Samples {
				doc = doc.WithoutSamples()
			}
			rs.runs[r.File] = &RunResult{File: r.File, Status: status, Reason: reason, Doc: doc}
		}
	}
	return rs, nil
}

// Run returns the run of that results file (nil if the index has none).
func (rs *Runs) Run(file string) *RunResult { return rs.runs[file] }

// Where names the run's origin for messages: its results file in the
// directory, or the run in the summary file.
func (rs *Runs) Where(file string) string {
	if rs.Summary {
		return fmt.Sprintf("%s (run %s)", rs.Path, file)
	}
	return filepath.Join(rs.Path, file)
}

// summaryFile is a summary file's content.
type summaryFile struct {
	Format  string         `json:"format"`
	Version int            `json:"version"`
	Index   *Index         `json:"index"`
	Runs    []summaryEntry `json:"runs"`
}

// summaryEntry is one run in a summary file.
type summaryEntry struct {
	File     string          `json:"file"`
	Status   string          `json:"status"`
	Reason   string          `json:"reason,omitempty"`
	Document json.RawMessage `json:"document,omitempty"`
}

// Summarize writes the summary file of the experiment in dir to out: its
// index and each run's results document without its samples
// (results.Document.WithoutSamples), gzip-compressed. It holds every
// figure a table, a sweep graph or a comparison takes from the runs, in a
// few kilobytes a run, so that an experiment's results can be kept and
// shipped whole. A run that is not complete is kept with its status. It
// returns the runs and the path written (which differs from out when o's
// NoClobber chose a free name).
func Summarize(ctx context.Context, dir, out string, o outfile.Options) (*Runs, string, error) {
	rs, err := OpenRuns(dir, OpenOptions{})
	if err != nil {
		return nil, "", err
	}
	if rs.Summary {
		return nil, "", &DirError{fmt.Sprintf("%s is a summary already: give the results directory it was made from", dir)}
	}
	sf := summaryFile{Format: SummaryFormat, Version: SummaryVersion, Index: rs.Index}
	for _, c := range rs.Index.Cases {
		for _, r := range c.Runs {
			rr := rs.runs[r.File]
			e := summaryEntry{File: rr.File, Status: rr.Status, Reason: rr.Reason}
			if rr.Doc != nil {
				var b strings.Builder
				if err := rr.Doc.Encode(&b); err != nil {
					return nil, "", fmt.Errorf("%s: %w", rs.Where(rr.File), err)
				}
				e.Document = json.RawMessage(strings.TrimSuffix(b.String(), "\n"))
			}
			sf.Runs = append(sf.Runs, e)
		}
	}
	f, err := outfile.Create(ctx, out, o)
	if err != nil {
		return nil, "", err
	}
	defer f.Abort()
	zw := gzip.NewWriter(f)
	enc := json.NewEncoder(zw)
	if err := enc.Encode(&sf); err != nil {
		return nil, "", fmt.Errorf("%s: %w", outfile.Printable(out), err)
	}
	if err := zw.Close(); err != nil {
		return nil, "", fmt.Errorf("%s: %w", outfile.Printable(out), err)
	}
	if err := f.Commit(); err != nil {
		return nil, "", err
	}
	return rs, f.Path(), nil
}

// readSummary reads a summary file: bounded once decompressed, every
// document checked as a results file is.
func readSummary(path string) (*Runs, error) {
	f, err := infile.Open(path)
	if err != nil {
		return nil, &DirError{err.Error()}
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &DirError{fmt.Sprintf("%s: not a summary file of wanlab's (%v)", path, err)}
		}
		defer zr.Close()
		r = zr
	}
	lr := &io.LimitedReader{R: r, N: maxSummaryText + 1}
	var sf summaryFile
	if err := json.NewDecoder(lr).Decode(&sf); err != nil {
		if lr.N <= 0 {
			return nil, &DirError{fmt.Sprintf("%s: more than %s of JSON once decompressed: not a summary file of wanlab's", path, infile.Size(maxSummaryText))}
		}
		return nil, &DirError{fmt.Sprintf("%s: not a summary file of wanlab's (%v): give a results directory or a file `wanlab experiment summarize` wrote", path, err)}
	}
	switch {
	case sf.Format != SummaryFormat:
		return nil, &DirError{fmt.Sprintf("%s: not a summary file of wanlab's (format %q): give a results directory or a file `wanlab experiment summarize` wrote", path, sf.Format)}
	case sf.Version > SummaryVersion:
		return nil, &DirError{fmt.Sprintf("%s: summary version %d, newer than this wanlab reads (up to %d): read it with a newer wanlab", path, sf.Version, SummaryVersion)}
	case sf.Index == nil:
		return nil, &DirError{fmt.Sprintf("%s: the summary has no index", path)}
	}
	rs := &Runs{Path: path, Index: sf.Index, Summary: true, runs: map[string]*RunResult{}}
	for _, e := range sf.Runs {
		rr := &RunResult{File: e.File, Status: e.Status, Reason: e.Reason}
		if len(e.Document) > 0 {
			doc, err := results.Decode(strings.NewReader(string(e.Document)))
			if err == nil {
				err = doc.Validate()
			}
			if err != nil {
				return nil, &DirError{fmt.Sprintf("%s: run %s: %v", path, e.File, err)}
			}
			rr.Doc = doc
		}
		rs.runs[e.File] = rr
	}
	for _, c := range sf.Index.Cases {
		for _, r := range c.Runs {
			if rs.runs[r.File] == nil {
				return nil, &DirError{fmt.Sprintf("%s: the index names run %s, which the summary does not hold", path, r.File)}
			}
		}
	}
	return rs, nil
}
