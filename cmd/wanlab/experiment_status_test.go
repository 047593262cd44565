package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wanlab/experiment"
	"wanlab/internal/resultstest"
)

// TestExperimentStatusCommand: a finished directory exits 0, one not
// started beside it 1 (and is shown as such); --wait gives up after
// --timeout with 1, and exits 0 as soon as the missing directory appears
// finished; --json holds the same counts; --interval without --wait is
// refused.
func TestExperimentStatusCommand(t *testing.T) {
	base := t.TempDir()
	done := filepath.Join(base, "shard-1")
	later := filepath.Join(base, "shard-2")
	cases := []resultstest.Case{
		{Vars: map[string]string{"rate": "5mbit"}, Test: "tcp_upload", Path: resultstest.DefaultPath},
		{Vars: map[string]string{"rate": "10mbit"}, Test: "tcp_upload", Path: resultstest.DefaultPath},
	}
	for _, d := range []string{done, later + ".tmp"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := resultstest.Experiment(d, "e9", []string{"rate"}, cases, 2, resultstest.Short, nil); err != nil {
			t.Fatal(err)
		}
	}

	out, stderr, code := runWanlab(t, "experiment", "status", done)
	if code != 0 || !strings.Contains(out, "finished") || !strings.Contains(out, "all         4        4") {
		t.Errorf("a finished directory: exit %d\n%s%s", code, out, stderr)
	}
	out, _, code = runWanlab(t, "experiment", "status", done, later)
	if code != 1 || !strings.Contains(out, "not started  "+later) || !strings.Contains(out, "1/2 finished") {
		t.Errorf("one not started: exit %d, want 1\n%s", code, out)
	}
	_, stderr, code = runWanlab(t, "experiment", "status", "--wait", "--interval", "100ms", "--timeout", "300ms", done, later)
	if code != 1 || !strings.Contains(stderr, "gave up after 300ms: 1 of 2 directories finished, 1 not started; 0 runs left in those started") {
		t.Errorf("--wait --timeout: exit %d\n%s", code, stderr)
	}

	go func() {
		time.Sleep(300 * time.Millisecond)
		os.Rename(later+".tmp", later)
	}()
	out, stderr, code = runWanlab(t, "experiment", "status", "--wait", "--interval", "100ms", "--timeout", "20s", "--json", done, later)
	var sw experiment.SweepStatus
	if err := json.Unmarshal([]byte(out), &sw); err != nil || code != 0 {
		t.Fatalf("--wait --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	if want := (experiment.StatusCounts{Runs: 8, Complete: 8}); !sw.Finished || sw.Started != 2 || sw.Total != want || len(sw.Dirs) != 2 || !sw.Dirs[1].Finished {
		t.Errorf("--json: %+v", sw)
	}
	if !strings.Contains(stderr, "waiting: 1 of 2 directories finished (1 started); 4 of 4 runs made") {
		t.Errorf("--wait's log:\n%s", stderr)
	}

	if _, stderr, code := runWanlab(t, "experiment", "status", "--interval", "1s", done); code != 2 || !strings.Contains(stderr, "--interval and --timeout are for --wait") {
		t.Errorf("--interval without --wait: exit %d, %s", code, stderr)
	}
}
