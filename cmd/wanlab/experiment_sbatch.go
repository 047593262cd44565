package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"wanlab/experiment"
	"wanlab/internal/infile"
	"wanlab/internal/outfile"
)

type experimentSbatchFlags struct {
	nodes     int
	partition string
	out       string
	dryRun    bool
	submit    bool
	wanlab    string
	time      string
}

func newExperimentSbatchCommand(s *streams) *cobra.Command {
	var f experimentSbatchFlags
	c := &cobra.Command{
		Use:   "sbatch FILE [--nodes N] [--partition P] [-o DIR] [--dry-run | --submit]",
		Short: "Write (and submit) the Slurm jobs that run an experiment's shards and merge them",
		Long: `sbatch writes two Slurm batch scripts into DIR, a directory on the
cluster's shared filesystem (default NAME-slurm, made absolute):

  DIR/run.sbatch    a job array of N tasks (--array=1-N), one per shard, each
                    on a whole node (--exclusive: two shards on one machine
                    would measure each other), running
                    'wanlab experiment run FILE --shard K/N -o DIR/shard-K'
                    as root; --requeue, and a requeued task resumes its shard
  DIR/merge.sbatch  the merge, submitted after the array with
                    --dependency=afterany (a shard with a failed run exits 1,
                    and afterok would never merge): it says how far each
                    shard got ('wanlab experiment status'), merges them into
                    DIR/merged and writes its tables ('wanlab table') to
                    DIR/table.txt and DIR/table.csv

Each task's log is DIR/logs/shard-K.out (appended to by a requeued task).
--time is the longest shard's estimated length (as --dry-run of 'wanlab
experiment run' estimates it) plus half and five minutes. The file is checked
whole first, as 'wanlab experiment run' checks it, and DIR must be new or
hold this experiment's shards with the same N (the command can be run again
to resubmit: tasks resume their shards). --submit submits both with sbatch;
--dry-run prints the scripts and writes nothing. Watch the sweep from the
login node with 'wanlab experiment status DIR/shard-*'.`,
		Example: `  wanlab experiment sbatch e1.yaml --nodes 8 --partition lab -o /shared/e1 --submit
  wanlab experiment sbatch e1.yaml --nodes 8 -o /shared/e1 --dry-run
  wanlab experiment status /shared/e1/shard-*`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return experimentSbatch(s, args[0], &f, c.Flags().Changed("nodes"))
		},
	}
	fs := c.Flags()
	fs.IntVar(&f.nodes, "nodes", 0, "N: shards, one array task (and whole node) each (default: one per case, at most 1000, Slurm's default MaxArraySize)")
	fs.StringVar(&f.partition, "partition", "", "the Slurm partition to run in (default: the cluster's default partition)")
	fs.StringVarP(&f.out, "output", "o", "", "the sweep's directory on the cluster's shared filesystem: scripts, logs, shards and merged results (default NAME-slurm)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the scripts and write nothing")
	fs.BoolVar(&f.submit, "submit", false, "submit the array and the merge with sbatch (found on PATH)")
	fs.StringVar(&f.wanlab, "wanlab", "", "the wanlab binary the jobs run, at the same path on every node (default: this binary's absolute path)")
	fs.StringVar(&f.time, "time", "", "each array task's time limit in Slurm's syntax (MM, HH:MM:SS, D-HH:MM:SS; default: the longest shard's estimate plus half and 5 minutes)")
	return c
}

// maxArraySize is Slurm's default MaxArraySize (1001: task ids up to
// 1000); a cluster that allows larger arrays can be given --nodes.
const maxArraySize = 1000

// slurmTime is a time limit as sbatch --time reads it (sbatch(1)).
var slurmTime = regexp.MustCompile(`^([0-9]+|[0-9]+:[0-9]+|[0-9]+:[0-9]+:[0-9]+|[0-9]+-[0-9]+|[0-9]+-[0-9]+:[0-9]+|[0-9]+-[0-9]+:[0-9]+:[0-9]+|infinite|unlimited|UNLIMITED)$`)

// scriptPath is what a path in a job script may hold: #SBATCH lines are
// split at white space, and --output treats % as a pattern.
var scriptPath = regexp.MustCompile(`^[A-Za-z0-9_./+@:,=~-]+$`)

// slurmJob is what the job scripts are made from.
type slurmJob struct {
	Name, File, SHA256, Dir, Wanlab, Partition, Time, Command string
	N, Cases, Runs                                            int
	Estimate                                                  time.Duration
}

func experimentSbatch(s *streams, file string, f *experimentSbatchFlags, nodesGiven bool) error {
	if f.dryRun && f.submit {
		return usagef("--dry-run prints the scripts and --submit submits them: give one")
	}
	if f.time != "" && !slurmTime.MatchString(f.time) {
		return usagef("--time %q: give a time limit as sbatch reads it: minutes, HH:MM:SS or D-HH:MM:SS (e.g. 2:00:00)", f.time)
	}
	if f.partition != "" && !regexp.MustCompile(`^[A-Za-z0-9_.,-]+$`).MatchString(f.partition) {
		return usagef("--partition %q: give a partition name as sinfo lists it (letters, digits, _ . - and commas)", f.partition)
	}
	if f.submit {
		if _, err := exec.LookPath("sbatch"); err != nil {
			return usagef("--submit: sbatch is not on PATH: run this on a machine that submits to the cluster (its login node), or leave out --submit and submit the scripts there")
		}
	}
	content, err := infile.Read(file, maxExperimentFile)
	if err != nil {
		return usagef("cannot read the experiment file: %v", err)
	}
	absFile, err := filepath.Abs(file)
	if err != nil {
		return usagef("experiment file %s: %v", file, err)
	}
	b := newRunner(s)
	plan, err := experiment.Load(file, content, experiment.LoadOptions{Backend: b, TC: tcOptions()})
	if err != nil {
		if _, ok := experiment.AsErrors(err); ok {
			return usagef("%v", err)
		}
		return err
	}
	n := f.nodes
	switch {
	case !nodesGiven:
		n = min(len(plan.Cases), maxArraySize)
	case n < 1:
		return usagef("--nodes %d: give the number of shards, 1 or more", n)
	case n > len(plan.Cases):
		return usagef("--nodes %d: %s has %d cases, and a shard is a slice of the cases: give --nodes %d or fewer", n, file, len(plan.Cases), len(plan.Cases))
	}
	dir := f.out
	if dir == "" {
		dir = defaultExperimentDir(plan.Name, false, experiment.Shard{})
		dir = strings.TrimSuffix(dir, "-results") + "-slurm"
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return usagef("-o %s: %v", f.out, err)
	}
	bin, err := wanlabPath(f.wanlab)
	if err != nil {
		return err
	}
	for _, p := range []struct{ what, path string }{{"-o", dir}, {"the experiment file", absFile}, {"--wanlab", bin}} {
		if !scriptPath.MatchString(p.path) {
			return usagef("%s %s: give a path of letters, digits and _ . / + @ : , = ~ - only (job scripts take it verbatim: #SBATCH lines split at spaces, and %% is a pattern in --output)", p.what, p.path)
		}
	}
	if err := checkSweepDir(dir, plan, n); err != nil {
		return err
	}
	command := fmt.Sprintf("wanlab experiment sbatch %s --nodes %d -o %s", absFile, n, dir)
	if f.partition != "" {
		command += " --partition " + f.partition
	}
	job := slurmJob{Name: jobName(plan.Name), File: absFile, SHA256: plan.SHA256, Dir: dir, Wanlab: bin, Partition: f.partition,
		N: n, Cases: len(plan.Cases), Runs: len(plan.Runs(experiment.Shard{})), Command: command}
	for k := 1; k <= n; k++ {
		job.Estimate = max(job.Estimate, plan.Duration(experiment.Shard{K: k, N: n}, b))
	}
	job.Time = f.time
	if job.Time == "" {
		job.Time = slurmDuration(job.Estimate*3/2 + 5*time.Minute)
	}
	run, merge, err := job.scripts()
	if err != nil {
		return err
	}
	if f.dryRun {
		fmt.Fprintf(s.out, "# %s\n%s\n# %s\n%s", filepath.Join(dir, "run.sbatch"), run, filepath.Join(dir, "merge.sbatch"), merge)
		return nil
	}
	if fsType, local := localFilesystem(filepath.Dir(dir)); local {
		fmt.Fprintf(s.err, "wanlab: warning: %s is on a local filesystem (%s): every node must see it at this path, so give -o a directory on the cluster's shared filesystem (NFS, Lustre, CephFS, ...) unless this machine is the whole cluster\n", dir, fsType)
	}
	for _, d := range []string{dir, filepath.Join(dir, "logs")} {
		if err := outfile.MkdirAll(d, 0o755); err != nil {
			return usagef("-o %s: %v: give a directory you can write in", dir, err)
		}
	}
	runPath, mergePath := filepath.Join(dir, "run.sbatch"), filepath.Join(dir, "merge.sbatch")
	for _, w := range []struct{ path, text string }{{runPath, run}, {mergePath, merge}} {
		if err := writeScript(w.path, w.text); err != nil {
			return err
		}
	}
	if !f.submit {
		fmt.Fprintf(s.err, "wrote %s and %s (%d shards, up to %s each); submit them with:\n  jid=$(sbatch --parsable %s) && sbatch --dependency=afterany:${jid%%;*} %s\n",
			runPath, mergePath, n, job.Time, runPath, mergePath)
		return nil
	}
	array, err := sbatch(runPath)
	if err != nil {
		return err
	}
	mergeJob, err := sbatch("--dependency=afterany:"+array, mergePath)
	if err != nil {
		return fmt.Errorf("%v; the array is job %s: cancel it with scancel %s, or submit the merge by hand: sbatch --dependency=afterany:%s %s", err, array, array, array, mergePath)
	}
	fmt.Fprintf(s.out, "%s %s\n", array, mergeJob)
	fmt.Fprintf(s.err, "submitted job array %s (%d shards, up to %s each) and merge job %s after it\nwatch it with: wanlab experiment status %s\nthe merged results will be in %s\n",
		array, n, job.Time, mergeJob, filepath.Join(dir, "shard-*"), filepath.Join(dir, "merged"))
	return nil
}

// jobName is the experiment's name as a job name: what squeue shows, kept
// to characters an #SBATCH line takes verbatim.
func jobName(name string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.-", r)) {
			return r
		}
		return '_'
	}, name)
}

// wanlabPath returns the binary the jobs run: the one given, or this one.
func wanlabPath(given string) (string, error) {
	path := given
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", usagef("cannot tell this binary's path (%v): give the wanlab binary the nodes run with --wanlab", err)
		}
		path = exe
	}
	if !filepath.IsAbs(path) {
		found, err := exec.LookPath(path)
		if err != nil {
			return "", usagef("--wanlab %s: %v: give the binary's absolute path, the same on every node", path, err)
		}
		if path, err = filepath.Abs(found); err != nil {
			return "", usagef("--wanlab %s: %v", given, err)
		}
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return "", usagef("--wanlab %s is not an executable file: give the wanlab binary the nodes run, at the same path on every node", path)
	}
	return path, nil
}

// checkSweepDir refuses a sweep directory that holds anything but this
// experiment's shards in n slices: running the command again resubmits
// (the tasks resume their shards); another file, or another N, would mix
// two sweeps.
func checkSweepDir(dir string, plan *experiment.Plan, n int) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return usagef("-o %s: %v: give a new directory, or the one an earlier 'wanlab experiment sbatch' of this file made", dir, err)
	}
	shard := regexp.MustCompile(`^shard-([0-9]+)$`)
	for _, e := range entries {
		name := e.Name()
		m := shard.FindStringSubmatch(name)
		if m == nil {
			switch name {
			case "run.sbatch", "merge.sbatch", "logs", "merged", "merged.new", "table.txt", "table.csv":
				continue
			}
			return usagef("-o %s holds %s, which 'wanlab experiment sbatch' did not make: give a new directory", dir, name)
		}
		sub := filepath.Join(dir, name)
		ix, err := experiment.ReadIndex(sub)
		if errors.Is(err, experiment.ErrNoIndex) {
			continue
		}
		if err != nil {
			return usagef("%v", err)
		}
		if ix.File.SHA256 != plan.SHA256 {
			return usagef("-o %s holds a sweep of another experiment file (%s in %s, sha256 %.12s; this file is sha256 %.12s): give a new directory", dir, ix.File.Name, sub, ix.File.SHA256, plan.SHA256)
		}
		k, _ := strconv.Atoi(m[1])
		if want := fmt.Sprintf("%d/%d", k, n); ix.Shard != want {
			_, was, _ := strings.Cut(ix.Shard, "/")
			return usagef("%s holds shard %s, not %s: that sweep has %s shards; give --nodes %s to resubmit it, or a new directory", sub, ix.Shard, want, was, was)
		}
	}
	return nil
}

// slurmDuration prints d, rounded up to the minute, as sbatch --time
// reads it: D-HH:MM:SS.
func slurmDuration(d time.Duration) string {
	m := int((d + time.Minute - 1) / time.Minute)
	return fmt.Sprintf("%d-%02d:%02d:00", m/(24*60), m/60%24, m%60)
}

// localFilesystems names the statfs(2) magic numbers of filesystems that
// live on one machine (linux/magic.h).
var localFilesystems = map[int64]string{
	0xEF53:     "ext4",
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x01021994: "tmpfs",
	0x794C7630: "overlayfs",
	0xF2F52010: "f2fs",
}

// localFilesystem reports whether path (or its nearest existing parent)
// is on a filesystem of one machine, and which.
func localFilesystem(path string) (string, bool) {
	for {
		var st unix.Statfs_t
		err := unix.Statfs(path, &st)
		if err == nil {
			name, ok := localFilesystems[int64(st.Type)]
			return name, ok
		}
		parent := filepath.Dir(path)
		if parent == path {
			return "", false
		}
		path = parent
	}
}

func writeScript(path, text string) error {
	f, err := outfile.Create(context.Background(), path, outfile.Options{})
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.WriteString(text); err != nil {
		return err
	}
	return f.Commit()
}

// sbatch submits a script and returns its job id.
func sbatch(args ...string) (string, error) {
	cmd := exec.Command("sbatch", append([]string{"--parsable"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("sbatch %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	// --parsable prints "jobid" or "jobid;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(out.String()), ";")
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("sbatch %s printed %q, not a job id", strings.Join(args, " "), out.String())
	}
	return id, nil
}

func (j slurmJob) scripts() (run, merge string, err error) {
	var rb, mb strings.Builder
	if err := runScript.Execute(&rb, j); err != nil {
		return "", "", err
	}
	if err := mergeScript.Execute(&mb, j); err != nil {
		return "", "", err
	}
	return rb.String(), mb.String(), nil
}

// The scripts' options are sbatch(1)'s: --array, --exclusive ("the job
// allocation can not share nodes with other running jobs"), --requeue,
// --open-mode=append (a requeued task's log keeps the earlier attempt's),
// --dependency=afterany ("after the specified jobs have terminated").
var runScript = template.Must(template.New("run").Parse(`#!/bin/bash
# Experiment {{.Name}} ({{.File}}, sha256 {{printf "%.12s" .SHA256}}):
# {{.Cases}} cases, {{.Runs}} runs, in {{.N}} shards; about {{.Estimate}} of runs for the longest shard.
# Written by: {{.Command}}
#
# One array task per shard, each on a whole node: two shards on one machine
# would measure each other. A requeued task (node failure, preemption,
# scontrol requeue) runs the same command, which resumes its shard.
#SBATCH --job-name={{.Name}}
#SBATCH --array=1-{{.N}}
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --exclusive
#SBATCH --requeue
#SBATCH --time={{.Time}}
#SBATCH --output={{.Dir}}/logs/shard-%a.out
#SBATCH --open-mode=append
{{- if .Partition}}
#SBATCH --partition={{.Partition}}
{{- end}}
set -u
k=$SLURM_ARRAY_TASK_ID
echo "== shard $k/{{.N}} on $(hostname), job ${SLURM_ARRAY_JOB_ID}_$k, attempt $((${SLURM_RESTART_COUNT:-0} + 1)), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
# wanlab builds network namespaces and TUN devices on the node, so it runs
# as root: as the job's user when that is root, otherwise through sudo,
# which must let the user run {{.Wanlab}} without a password on every node.
as_root=
if [ "$(id -u)" -ne 0 ]; then as_root="sudo -n"; fi
exec $as_root {{.Wanlab}} experiment run {{.File}} --shard "$k/{{.N}}" -o "{{.Dir}}/shard-$k"
`))

var mergeScript = template.Must(template.New("merge").Parse(`#!/bin/bash
# Merges the shards of experiment {{.Name}} ({{.File}}, sha256 {{printf "%.12s" .SHA256}})
# once the array has ended, whatever its tasks' exit status: submit it with
# --dependency=afterany:ARRAY_JOB_ID (a shard with a failed run exits 1, and
# afterok would never merge). Written by: {{.Command}}
#SBATCH --job-name={{.Name}}-merge
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --time=1:00:00
#SBATCH --output={{.Dir}}/logs/merge.out
#SBATCH --open-mode=append
{{- if .Partition}}
#SBATCH --partition={{.Partition}}
{{- end}}
set -u
dir={{.Dir}}
echo "== merge on $(hostname), job $SLURM_JOB_ID, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
shards=()
for k in $(seq 1 {{.N}}); do shards+=("$dir/shard-$k"); done
# How far each shard got (exit 1 when runs are left: reported, not fatal).
{{.Wanlab}} experiment status "${shards[@]}"
made=()
for d in "${shards[@]}"; do
  if [ -f "$d/index.json" ]; then made+=("$d"); else echo "$d: the shard never started: see $dir/logs" >&2; fi
done
if [ ${#made[@]} -eq 0 ]; then echo "no shard started: nothing to merge" >&2; exit 1; fi
# Merged beside the last merge and put in its place once whole, so that a
# merge submitted again replaces it.
rm -rf "$dir/merged.new"
{{.Wanlab}} experiment merge "${made[@]}" -o "$dir/merged.new" || exit 1
rm -rf "$dir/merged" && mv "$dir/merged.new" "$dir/merged" || exit 1
echo "merged into $dir/merged"
# The default table; an experiment it cannot lay out (say, one of ping runs
# alone, which have no throughput) is merged all the same: the message says
# which options 'wanlab table' needs.
rm -f "$dir/table.txt" "$dir/table.csv"
if {{.Wanlab}} table "$dir/merged" > "$dir/table.txt.new" && {{.Wanlab}} table "$dir/merged" --format csv > "$dir/table.csv.new"; then
  mv "$dir/table.txt.new" "$dir/table.txt" && mv "$dir/table.csv.new" "$dir/table.csv" && cat "$dir/table.txt" &&
    echo "tables in $dir/table.txt and $dir/table.csv"
else
  rm -f "$dir/table.txt.new" "$dir/table.csv.new"
  echo "no default table: lay the results out with {{.Wanlab}} table $dir/merged and the options named above"
fi
`))
