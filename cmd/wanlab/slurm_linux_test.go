package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"wanlab/experiment"
	"wanlab/internal/slurmtest"
)

// TestSlurmSweep submits a 4-shard sweep to a Slurm cluster of this one
// machine with 'wanlab experiment sbatch --submit', requeues the second
// array task while it runs (scontrol requeue), waits for the merge job
// that depends on the array (afterany), and checks its outcome against
// the unsharded dry run: the merged index lists exactly the dry run's
// runs, each once with the dry run's seed, complete, and every case has
// its repeat runs; the requeued task resumed its shard (its second
// attempt ran only what the first had not completed); status says every
// shard finished; the merge wrote the tables.
func TestSlurmSweep(t *testing.T) {
	slurmtest.Need(t)
	bin := wanlabBin(t)
	began := time.Now()
	c := slurmtest.Start(t)
	t.Logf("cluster up in %v", time.Since(began).Round(time.Millisecond))
	work := t.TempDir()
	file := filepath.Join(work, "sweep.yaml")
	if err := os.WriteFile(file, []byte(slurmExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "sweep")
	cmd := c.Command(t.Context(), bin, "experiment", "sbatch", file, "--nodes", "4", "--partition", c.Partition, "-o", dir, "--submit")
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("experiment sbatch --submit: %v\n%s", err, errOut.String())
	}
	t.Logf("experiment sbatch --submit: %s", errOut.String())
	ids := strings.Fields(string(out))
	if len(ids) != 2 {
		t.Fatalf("experiment sbatch printed %q, want the array's and the merge's job ids", out)
	}
	array, merge := ids[0], ids[1]
	if state, f, err := c.JobState(merge); err != nil || state != "PENDING" || f["Dependency"] != "afterany:"+array+"_*(unfulfilled)" {
		t.Errorf("merge job %s: %s, dependency %q (%v); want PENDING on afterany:%s_*", merge, state, f["Dependency"], err, array)
	}

	// Requeue task 2 once its first run is complete and its second
	// under way.
	task := array + "_2"
	waitUntil(t, "task 2's first run", 90*time.Second, func() bool {
		state, _, _ := c.JobState(task)
		return state == "RUNNING" && countComplete(filepath.Join(dir, "shard-2")) == 1
	})
	time.Sleep(1500 * time.Millisecond)
	if out, err := c.Output("scontrol", "requeue", task); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	requeued := time.Now()
	// The task's SIGTERM ends its run in progress, kept partial, and
	// marks the shard interrupted: not finished, though no run is pending.
	waitUntil(t, "shard 2 to say it was interrupted", 20*time.Second, func() bool {
		var sr experiment.StatusReader
		st, err := sr.ReadStatus(filepath.Join(dir, "shard-2"))
		return err == nil && st.Interrupted && !st.Finished && st.Partial == 1
	})
	mid, _, _ := cliFor(t, time.Minute, append([]string{"experiment", "status"}, shardDirs(dir)...)...)
	t.Logf("status %v after the submission, after the requeue:\n%s", time.Since(began).Round(time.Second), mid)
	// The shards not started yet count with their runs, from the plan.
	if !regexp.MustCompile(`(?m)^all +8 `).MatchString(mid) {
		t.Errorf("the status after the requeue does not count the 8 runs of the sweep")
	}

	waitUntil(t, "the merge job", 150*time.Second, func() bool {
		state, _, err := c.JobState(merge)
		return err == nil && state != "PENDING" && state != "RUNNING" && state != "CONFIGURING" && state != "COMPLETING"
	})
	t.Logf("merge ended %v after the submission (%v after the requeue)", time.Since(began).Round(time.Second), time.Since(requeued).Round(time.Second))
	if state, f, _ := c.JobState(merge); state != "COMPLETED" {
		log, _ := os.ReadFile(filepath.Join(dir, "logs", "merge.out"))
		t.Fatalf("merge job: %s (exit %s)\n%s", state, f["ExitCode"], log)
	}
	if _, f, _ := c.JobState(task); f["Restarts"] != "1" {
		t.Errorf("task 2: %s restarts, want 1", f["Restarts"])
	}

	// The unsharded dry run's runs: file and seed.
	dry, stderr, code := cliFor(t, time.Minute, "experiment", "run", file, "--dry-run")
	if code != 0 {
		t.Fatalf("--dry-run: exit %d\n%s", code, stderr)
	}
	want := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^    #[0-9]+ seed ([0-9]+) -> (\S+)$`).FindAllStringSubmatch(dry, -1) {
		want[m[2]] = m[1]
	}
	if len(want) != 8 {
		t.Fatalf("the dry run lists %d runs, want 8:\n%s", len(want), dry)
	}
	merged := filepath.Join(dir, "merged")
	ix, err := experiment.ReadIndex(merged)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, cs := range ix.Cases {
		if len(cs.Runs) != ix.Repeat || ix.Repeat != 2 {
			t.Errorf("case %d has %d runs, repeat %d; want 2", cs.Number, len(cs.Runs), ix.Repeat)
		}
		for _, r := range cs.Runs {
			seen[r.File]++
			if seed, ok := want[r.File]; !ok || seed != fmt.Sprint(r.Seed) {
				t.Errorf("merged run %s seed %d: the dry run has seed %q", r.File, r.Seed, seed)
			}
			if r.Status != experiment.StatusComplete {
				t.Errorf("merged run %s: %s %s", r.File, r.Status, r.Error)
			}
			if _, err := os.Stat(filepath.Join(merged, r.File)); err != nil {
				t.Error(err)
			}
		}
	}
	for f := range want {
		if seen[f] != 1 {
			t.Errorf("run %s is %d times in the merged index, want once", f, seen[f])
		}
	}
	if len(seen) != len(want) || ix.Shard != "" {
		t.Errorf("merged index: %d runs, shard %q; want %d runs, no shard", len(seen), ix.Shard, len(want))
	}

	// The requeued task resumed: its log has both attempts, and the
	// second ran only the runs the first had not completed.
	log, err := os.ReadFile(filepath.Join(dir, "logs", "shard-2.out"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "attempt 1,") || !strings.Contains(string(log), "attempt 2,") ||
		!regexp.MustCompile(`2 runs: 2 complete, 0 partial, 0 failed, 0 not run \(1 run now, 1 were complete\)`).Match(log) {
		t.Errorf("shard 2's log does not show a resumed second attempt:\n%s", log)
	}

	status, stderr, code := cliFor(t, time.Minute, append([]string{"experiment", "status", "--wait", "--timeout", "5s"}, shardDirs(dir)...)...)
	if code != 0 || !regexp.MustCompile(`(?m)^all +8 +8 +0 +0 +\d+ +0  4/4 finished`).MatchString(status) {
		t.Errorf("status --wait: exit %d\n%s%s", code, status, stderr)
	}
	mergeLog, _ := os.ReadFile(filepath.Join(dir, "logs", "merge.out"))
	t.Logf("merge job's log:\n%s", mergeLog)
	table, err := os.ReadFile(filepath.Join(dir, "table.txt"))
	if err != nil || !strings.Contains(string(table), "20ms") {
		t.Errorf("table.txt: %v\n%s", err, table)
	}
}

func shardDirs(dir string) []string {
	var shards []string
	for k := 1; k <= 4; k++ {
		shards = append(shards, filepath.Join(dir, fmt.Sprintf("shard-%d", k)))
	}
	return shards
}

func countComplete(dir string) int {
	var sr experiment.StatusReader
	st, err := sr.ReadStatus(dir)
	if err != nil {
		return 0
	}
	return st.Complete
}

func waitUntil(t *testing.T, what string, limit time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
