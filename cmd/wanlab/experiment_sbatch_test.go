package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// slurmExperiment is the sweep the Slurm tests submit: 4 cases × 2
// repetitions of a 3 s TCP upload through 20 Mbit/s.
const slurmExperiment = `name: slurm-sweep
vars:
  delay: [5ms, 10ms, 15ms, 20ms]
repeat: 2
path:
  both: "netem delay ${delay}; tbf rate 20mbit burst 32k latency 50ms"
tests:
  - test: tcp_upload
    duration: 3s
    lead: 200ms
    tail: 200ms
`

// TestSbatchScripts: --dry-run prints the two job scripts with the sbatch
// options of sbatch(1) that the sweep needs (an array of one task per
// shard, each on a whole node, requeueable, logs per task appended to,
// the time limit from the estimate), the shard's command with absolute
// paths, and a merge that merges, reports and writes the tables; bash
// reads both; nothing is written.
func TestSbatchScripts(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	if err := os.WriteFile("e.yaml", []byte(slurmExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runWanlab(t, "experiment", "sbatch", "e.yaml", "--nodes", "4", "--partition", "lab", "--wanlab", "/bin/true", "-o", "sweep", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	dir := filepath.Join(work, "sweep")
	file := filepath.Join(work, "e.yaml")
	run, merge, ok := strings.Cut(out, "# "+dir+"/merge.sbatch\n")
	if !ok || !strings.HasPrefix(run, "# "+dir+"/run.sbatch\n#!/bin/bash\n") {
		t.Fatalf("dry run:\n%s", out)
	}
	for _, want := range []string{
		"#SBATCH --job-name=slurm-sweep\n",
		"#SBATCH --array=1-4\n",
		"#SBATCH --exclusive\n",
		"#SBATCH --requeue\n",
		"#SBATCH --output=" + dir + "/logs/shard-%a.out\n",
		"#SBATCH --open-mode=append\n",
		"#SBATCH --partition=lab\n",
		`exec $as_root /bin/true experiment run ` + file + ` --shard "$k/4" -o "` + dir + `/shard-$k"`,
	} {
		if !strings.Contains(run, want) {
			t.Errorf("run.sbatch lacks %q:\n%s", want, run)
		}
	}
	// Each shard is 2 runs of about 3.4 s: the limit is the 5 minutes' margin
	// and a few seconds, rounded up to the minute.
	if !regexp.MustCompile(`(?m)^#SBATCH --time=0-00:0[56]:00$`).MatchString(run) {
		t.Errorf("run.sbatch's time limit:\n%s", run)
	}
	for _, want := range []string{
		"#SBATCH --job-name=slurm-sweep-merge\n",
		"for k in $(seq 1 4)",
		`/bin/true experiment status "${shards[@]}"`,
		`/bin/true experiment merge "${made[@]}" -o "$dir/merged.new"`,
		`/bin/true table "$dir/merged" > "$dir/table.txt.new"`,
	} {
		if !strings.Contains(merge, want) {
			t.Errorf("merge.sbatch lacks %q:\n%s", want, merge)
		}
	}
	for name, text := range map[string]string{"run": run, "merge": merge} {
		cmd := exec.Command("bash", "-n")
		cmd.Stdin = strings.NewReader(text)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("bash -n %s.sbatch: %v\n%s", name, err, b)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("--dry-run made the directory")
	}

	// Written, the same scripts; run again, the same directory is taken.
	for range 2 {
		if _, stderr, code := runWanlab(t, "experiment", "sbatch", "e.yaml", "--nodes", "4", "--partition", "lab", "--wanlab", "/bin/true", "-o", "sweep"); code != 0 ||
			!strings.Contains(stderr, "sbatch --dependency=afterany:${jid%;*} "+dir+"/merge.sbatch") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "run.sbatch")); err != nil || string(b)+"\n" != strings.TrimPrefix(run, "# "+dir+"/run.sbatch\n") {
		t.Errorf("run.sbatch as written differs from the dry run's (%v)", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "logs")); err != nil || !st.IsDir() {
		t.Errorf("no logs directory: %v", err)
	}
}

// TestSbatchRefusals: bad input exits 2 before anything is made, with a
// message that names the fix.
func TestSbatchRefusals(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	os.WriteFile("e.yaml", []byte(slurmExperiment), 0o644)
	os.Mkdir("used", 0o755)
	os.WriteFile("used/notes.txt", nil, 0o644)
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"e.yaml", "--nodes", "5"}, "has 4 cases, and a shard is a slice of the cases: give --nodes 4 or fewer"},
		{[]string{"e.yaml", "--nodes", "0"}, "give the number of shards"},
		{[]string{"e.yaml", "--dry-run", "--submit"}, "give one"},
		{[]string{"e.yaml", "--time", "2 hours"}, "give a time limit as sbatch reads it"},
		{[]string{"e.yaml", "-o", "my sweep"}, "job scripts take it verbatim"},
		{[]string{"e.yaml", "-o", "used"}, "holds notes.txt, which 'wanlab experiment sbatch' did not make"},
		{[]string{"e.yaml", "--wanlab", "/nonexistent/wanlab"}, "is not an executable file"},
		{[]string{"missing.yaml"}, "cannot read the experiment file"},
		{[]string{"e.yaml", "--submit"}, "sbatch is not on PATH"},
	} {
		_, stderr, code := runWanlab(t, append([]string{"experiment", "sbatch", "--wanlab", "/bin/true"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, err := os.Stat("slurm-sweep-slurm"); err == nil {
		t.Error("a refused command made a directory")
	}
}
