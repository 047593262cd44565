package experiment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// DirStatus is where a results directory stands, read from the directory
// alone: its index lists every run it is to make (Execute writes it,
// every run pending, before the first run starts), and the results files
// say which are made, as for resuming.
type DirStatus struct {
	// Dir is the directory as given.
	Dir string `json:"dir"`
	// Started says the directory has an index: a run has begun in it.
	// A directory not started says nothing of its runs, unless Planned.
	Started bool `json:"started"`
	// Planned says the directory has not started and its runs are
	// counted, all pending, from the experiment's plan: it is named
	// shard-K, beside a started directory of shard k/N of the same
	// sweep, and no directory given holds shard K/N (StatusReader.Plan).
	Planned bool `json:"planned"`
	// Name and SHA256 are the experiment's (the index's name and file
	// hash); Shard is "K/N" for a shard's directory.
	Name   string `json:"name,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Shard  string `json:"shard,omitempty"`
	// Running says a wanlab process holds the directory (its lock,
	// LockName): a run or a merge is writing into it now.
	Running bool `json:"running"`
	// Interrupted says the last run in the directory was stopped by a
	// signal (Index.Interrupted): its partial run is to be resumed.
	Interrupted bool `json:"interrupted"`
	// Finished says nothing is left to run: started, no run pending, not
	// interrupted, and nothing running.
	Finished bool `json:"finished"`
	StatusCounts
	// PendingRuns are the runs not made yet; FailedRuns those that failed
	// or ended early, with their errors.
	PendingRuns []RunState `json:"pending_runs"`
	FailedRuns  []RunState `json:"failed_runs"`
	index       *Index     // a started directory's
}

// StatusCounts counts a directory's runs (or several directories'):
// Runs of them, Complete, Partial (ended early), Failed (no results) and
// Pending (not made yet, what remains). NotFaithful counts the complete
// and partial runs whose fidelity verdict is not faithful
// (results.RouterReport.Faithful false): made, but measured through a
// router that did not keep to its configuration.
type StatusCounts struct {
	Runs        int `json:"runs"`
	Complete    int `json:"complete"`
	Partial     int `json:"partial"`
	Failed      int `json:"failed"`
	NotFaithful int `json:"not_faithful"`
	Pending     int `json:"pending"`
}

// Add adds o's counts to c.
func (c *StatusCounts) Add(o StatusCounts) {
	c.Runs += o.Runs
	c.Complete += o.Complete
	c.Partial += o.Partial
	c.Failed += o.Failed
	c.NotFaithful += o.NotFaithful
	c.Pending += o.Pending
}

// RunState is one run that is not complete, as DirStatus lists it.
type RunState struct {
	// Case is the case's number, Vars its variables.
	Case int               `json:"case"`
	Vars map[string]string `json:"vars"`
	// File is the run's results file, relative to the directory.
	File   string `json:"file"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// StatusReader reads the status of results directories, again and again
// while a sweep runs: it keeps what each results file said, and reads a
// file again only when its size or modification time changed, so that
// watching a sweep of thousands of runs does not read every results file
// at every look.
type StatusReader struct {
	// MissingParents takes a directory whose parent does not exist
	// either for one not started, instead of refusing it: for a wait that
	// may begin before the shards make their directories.
	MissingParents bool
	// Plan, when not nil, makes the plan of the experiment a started
	// directory's index holds (from its file's text), so that a shard
	// not started yet is counted with its runs (DirStatus.Planned): the
	// sweep's total is then what remains of the whole of it.
	Plan  func(ix *Index) (*Plan, error)
	files map[string]fileState
	plans map[string]*Plan // by the file's hash; nil for one Plan refused
}

// fileState is what a results file said when it had that size and time.
type fileState struct {
	size             int64
	mtime            time.Time
	status, reason   string
	faithful, judged bool
}

// ReadStatus returns dir's status. A directory that does not exist yet,
// or has no index yet, is not started; one whose parent does not exist
// either (unless MissingParents), or that holds other files and no index,
// is a *DirError (a mistyped name would otherwise be waited for forever). A results file
// that cannot be judged is an error, as for OpenRuns.
func (sr *StatusReader) ReadStatus(dir string) (*DirStatus, error) {
	if sr.files == nil {
		sr.files = map[string]fileState{}
	}
	st := &DirStatus{Dir: dir, PendingRuns: []RunState{}, FailedRuns: []RunState{}}
	ix, err := ReadIndex(dir)
	switch {
	case errors.Is(err, ErrNoIndex):
		fi, serr := os.Stat(dir)
		switch {
		case errors.Is(serr, fs.ErrNotExist):
			parent := filepath.Dir(filepath.Clean(dir))
			if pi, err := os.Stat(parent); !sr.MissingParents && (err != nil || !pi.IsDir()) {
				return nil, &DirError{fmt.Sprintf("%s does not exist, nor does its parent %s: give the results directories a sweep writes (for a Slurm sweep, DIR/shard-1 ... DIR/shard-N)", dir, parent)}
			}
			return st, nil
		case serr != nil:
			return nil, &DirError{fmt.Sprintf("%s: %v", dir, serr)}
		case !fi.IsDir():
			return nil, &DirError{fmt.Sprintf("%s is not a directory: give the results directories of a sweep", dir)}
		}
		if err := checkEmpty(dir); err != nil {
			return nil, &DirError{fmt.Sprintf("%s has files but no %s: it is not a results directory that `wanlab experiment run` made", dir, IndexName)}
		}
		_, st.Running = lockHolder(dir)
		return st, nil
	case err != nil:
		return nil, err
	}
	st.index = ix
	st.Started, st.Name, st.SHA256, st.Shard, st.Interrupted = true, ix.Name, ix.File.SHA256, ix.Shard, ix.Interrupted
	for _, c := range ix.Cases {
		for _, r := range c.Runs {
			f, err := sr.fileState(filepath.Join(dir, r.File), r.Test)
			if err != nil {
				return nil, &DirError{fmt.Sprintf("%v: wanlab cannot tell whether it holds a whole run: move it out of %s (or read it with a newer wanlab)", err, dir)}
			}
			st.Runs++
			status, reason := f.status, f.reason
			if status == StatusPending && r.Status == StatusFailed {
				// The index keeps why an attempt failed without a file.
				status, reason = StatusFailed, r.Error
			}
			if f.judged && !f.faithful {
				st.NotFaithful++
			}
			rs := RunState{Case: c.Number, Vars: c.Vars, File: r.File, Status: status, Error: reason}
			switch status {
			case StatusComplete:
				st.Complete++
			case StatusPartial:
				st.Partial++
				st.FailedRuns = append(st.FailedRuns, rs)
			case StatusFailed:
				st.Failed++
				st.FailedRuns = append(st.FailedRuns, rs)
			default:
				st.Pending++
				st.PendingRuns = append(st.PendingRuns, rs)
			}
		}
	}
	_, st.Running = lockHolder(dir)
	st.Finished = st.Pending == 0 && !st.Running && !st.Interrupted
	return st, nil
}

// fileState reads what a results file holds, or what it held when it had
// its present size and time.
func (sr *StatusReader) fileState(path, test string) (fileState, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		delete(sr.files, path)
		return fileState{status: StatusPending}, nil
	}
	if err == nil {
		if c, ok := sr.files[path]; ok && c.size == fi.Size() && c.mtime.Equal(fi.ModTime()) {
			return c, nil
		}
	}
	doc, status, reason, err := runStatus(path, test)
	if err != nil {
		return fileState{}, err
	}
	s := fileState{status: status, reason: reason}
	if doc != nil && doc.Router != nil && doc.Router.Faithful != nil {
		s.judged, s.faithful = true, *doc.Router.Faithful
	}
	if fi != nil {
		s.size, s.mtime = fi.Size(), fi.ModTime()
		sr.files[path] = s
	}
	return s, nil
}

// SweepStatus is where a sweep over several results directories (its
// shards) stands: each directory's status and their sum.
type SweepStatus struct {
	Dirs []*DirStatus `json:"dirs"`
	// Total sums the counts of the directories started and planned;
	// Started counts the directories started.
	Total   StatusCounts `json:"total"`
	Started int          `json:"started"`
	// Finished says every directory has finished: nothing is left to run
	// (a failed run is finished: running it again is a decision).
	Finished bool `json:"finished"`
	// Planned counts the directories not started whose runs are counted
	// from the plan (DirStatus.Planned).
	Planned int `json:"planned"`
}

// Read returns the status of the sweep whose results directories are
// dirs (ReadStatus each). Directories of different experiments, or two
// that hold the same shard, are a *DirError: their sum would mean nothing.
func (sr *StatusReader) Read(dirs []string) (*SweepStatus, error) {
	sw := &SweepStatus{Dirs: []*DirStatus{}, Finished: true}
	var first *DirStatus
	shards := map[string]string{}
	for _, d := range dirs {
		st, err := sr.ReadStatus(d)
		if err != nil {
			return nil, err
		}
		sw.Dirs = append(sw.Dirs, st)
		sw.Finished = sw.Finished && st.Finished
		if !st.Started {
			continue
		}
		sw.Started++
		sw.Total.Add(st.StatusCounts)
		if first == nil {
			first = st
		} else if st.SHA256 != first.SHA256 {
			return nil, &DirError{fmt.Sprintf("%s and %s hold different experiments (%s, sha256 %.12s; %s, sha256 %.12s): give the directories of one sweep",
				first.Dir, st.Dir, first.Name, first.SHA256, st.Name, st.SHA256)}
		}
		if st.Shard != "" {
			if other, ok := shards[st.Shard]; ok {
				return nil, &DirError{fmt.Sprintf("%s and %s both hold shard %s: give each shard's directory once", other, st.Dir, st.Shard)}
			}
			shards[st.Shard] = st.Dir
		}
	}
	if sr.Plan != nil && first != nil && sw.Started < len(sw.Dirs) {
		sr.countPlanned(sw, first.index, shards)
	}
	return sw, nil
}

// shardDir is the name of a shard's directory that `wanlab experiment
// sbatch` gives it.
var shardDir = regexp.MustCompile(`^shard-([0-9]+)$`)

// countPlanned counts the runs of each directory not started that is
// named shard-K after the shard it is to hold, from the plan of the
// experiment the started directories hold (ix, one of them, says K/N's
// N); taken is the shards the started directories hold.
func (sr *StatusReader) countPlanned(sw *SweepStatus, ix *Index, taken map[string]string) {
	var n int
	for _, d := range sw.Dirs {
		if d.Started && d.Shard != "" {
			s, err := ParseShard(d.Shard)
			if err != nil {
				return
			}
			n = s.N
			break
		}
	}
	if n == 0 {
		return
	}
	if sr.plans == nil {
		sr.plans = map[string]*Plan{}
	}
	p, ok := sr.plans[ix.File.SHA256]
	if !ok {
		p, _ = sr.Plan(ix)
		if p != nil && p.SHA256 != ix.File.SHA256 {
			p = nil
		}
		sr.plans[ix.File.SHA256] = p
	}
	if p == nil {
		return
	}
	for _, d := range sw.Dirs {
		m := shardDir.FindStringSubmatch(filepath.Base(filepath.Clean(d.Dir)))
		if d.Started || m == nil {
			continue
		}
		k, err := strconv.Atoi(m[1])
		s := Shard{K: k, N: n}
		if err != nil || k < 1 || k > n || taken[s.String()] != "" {
			continue
		}
		taken[s.String()] = d.Dir
		d.Planned, d.Shard, d.Name, d.SHA256 = true, s.String(), ix.Name, ix.File.SHA256
		for _, r := range p.Runs(s) {
			d.PendingRuns = append(d.PendingRuns, RunState{Case: r.Case.Number, Vars: varMap(r.Case.Vars), File: r.File, Status: StatusPending})
		}
		d.Runs, d.Pending = len(d.PendingRuns), len(d.PendingRuns)
		sw.Total.Add(d.StatusCounts)
		sw.Planned++
	}
}
