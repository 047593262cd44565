package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"wanlab/experiment"
	"wanlab/experiment/k8s"
)

// TestExperimentK8sPodsRunTheSweep runs what the manifests' pods run, on
// this machine as root, in the order a cluster would: every shard's
// container at once (each its own pod on its own node there), then the
// merge pod's init containers and its container, with the ConfigMap's
// mount and the results volume as local directories. No cluster runs
// here: the scheduling, the volume and the Job controller are not
// exercised, the commands and the directories they share are.
func TestExperimentK8sPodsRunTheSweep(t *testing.T) {
	bin := wanlabBin(t)
	work := t.TempDir()
	mounts := map[string]string{k8s.ExperimentMount: filepath.Join(work, "experiment"), k8s.ResultsMount: filepath.Join(work, "results")}
	text := `name: wl-k8s e2e
vars:
  delay: [5ms, 15ms]
path:
  both: "netem delay ${delay}; tbf rate 20mbit burst 32k latency 50ms"
tests:
  - test: tcp_upload
    duration: 2s
    lead: 1s
    tail: 1s
`
	if err := os.MkdirAll(mounts[k8s.ExperimentMount], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mounts[k8s.ExperimentMount], "e2e.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := k8s.Build(k8s.Sweep{Name: "wl-k8s e2e", File: "e2e.yaml", Content: []byte(text), Cases: 2, Shards: 2, Image: "wanlab",
		ExperimentMount: mounts[k8s.ExperimentMount], ResultsMount: mounts[k8s.ResultsMount]})
	if err != nil {
		t.Fatal(err)
	}
	var y bytes.Buffer
	if err := m.WriteYAML(&y); err != nil {
		t.Fatal(err)
	}
	shards, merge := readJobs(t, y.Bytes())
	path := "PATH=" + filepath.Dir(bin) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	run := func(c k8s.Container, env ...string) *exec.Cmd {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		name := c.Command[0]
		if name == k8s.Binary {
			name = bin // as the image's PATH finds it
		}
		cmd := exec.CommandContext(ctx, name, c.Command[1:]...)
		cmd.Env = append([]string{path}, env...)
		return cmd
	}

	// The merge pod starts with the shards, before any of them has made
	// a directory: its wait must outlast them. It looks every 250ms here
	// instead of every 10 s.
	pod := merge.Spec.Template.Spec
	var waited chan error
	root := newRoot(&streams{in: strings.NewReader(""), out: new(strings.Builder), err: new(strings.Builder)})
	if c, _, err := root.Find([]string{"experiment", "status"}); err != nil || c.Name() != "status" {
		// `experiment status` is another change's.
		t.Log("wanlab experiment status is not in this build: the wait container is not run")
	} else {
		wait := pod.InitContainers[0]
		wait.Command = append(slices.Clone(wait.Command), "--interval", "250ms")
		cmd := run(wait)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waited = make(chan error, 1)
		go func() {
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%v\n%s", err, out.String())
			}
			waited <- err
		}()
	}
	var wg sync.WaitGroup
	for i := range int(*shards.Spec.Completions) {
		wg.Go(func() {
			cmd := run(shards.Spec.Template.Spec.Containers[0], "JOB_COMPLETION_INDEX="+strconv.Itoa(i))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("index %d: %v\n%s", i, err, out)
			}
		})
	}
	if waited != nil {
		// Each shard's run takes 4 s: at 1 s they are running.
		time.Sleep(time.Second)
		select {
		case err := <-waited:
			t.Fatalf("the wait ended while the shards ran: %v", err)
		default:
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if waited != nil {
		select {
		case err := <-waited:
			if err != nil {
				t.Fatalf("wait: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the wait goes on 5 s after the shards ended")
		}
	}
	if out, err := run(pod.InitContainers[1]).CombinedOutput(); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	tableCmd := run(pod.Containers[0])
	var tableErr bytes.Buffer
	tableCmd.Stderr = &tableErr
	table, err := tableCmd.Output()
	if err != nil {
		t.Fatalf("table: %v\n%s", err, tableErr.String())
	}
	if !strings.Contains(string(table), "\n5ms ") || !strings.Contains(string(table), "\n15ms ") {
		t.Errorf("the table does not show both cases:\n%s", table)
	}
	ix, err := experiment.ReadIndex(m.Merged)
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.Counts(); len(ix.Cases) != 2 || n[experiment.StatusComplete] != 2 || ix.Shard != "" {
		t.Errorf("merged index: %d cases, %v, shard %q; want 2 cases, each run complete, unsharded", len(ix.Cases), n, ix.Shard)
	}
	for k, d := range m.ShardDirs {
		ix, err := experiment.ReadIndex(d)
		if err != nil || ix.Shard != strconv.Itoa(k+1)+"/2" {
			t.Errorf("%s: shard %v, %v; want %d/2", d, ix, err, k+1)
		}
	}
}
