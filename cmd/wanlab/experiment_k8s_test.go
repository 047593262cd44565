package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"wanlab/experiment/k8s"
)

const k8sExperiment = `name: K8s sweep
vars:
  delay: [5ms, 15ms, 25ms]
path:
  both: "netem delay ${delay}"
tests:
  - test: ping
    duration: 2s
`

// k8sFile writes text as an experiment file in a directory of the test's
// own, and returns the file and a directory there for results.
func k8sFile(t *testing.T, text string) (file, dir string) {
	t.Helper()
	work := t.TempDir()
	file = filepath.Join(work, "e.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, filepath.Join(work, "results")
}

// readJobs reads the two Jobs of a manifest stream back, strictly.
// (experiment/k8s's tests hold the stream to k8s.io/api's types.)
func readJobs(t *testing.T, y []byte) (shards, merge *k8s.Job) {
	t.Helper()
	docs := bytes.Split(y, []byte("\n---\n"))
	if len(docs) != 3 {
		t.Fatalf("%d documents, want 3:\n%s", len(docs), y)
	}
	shards, merge = new(k8s.Job), new(k8s.Job)
	if err := yaml.UnmarshalWithOptions(docs[1], shards, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalWithOptions(docs[2], merge, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	return shards, merge
}

// expandShard runs a shard container's command with /bin/sh as its pod
// of completion index would, with a wanlab on PATH that prints its
// arguments, and returns them.
func expandShard(t *testing.T, command []string, index string) []string {
	t.Helper()
	bin := t.TempDir()
	shim := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done\n"
	if err := os.WriteFile(filepath.Join(bin, "wanlab"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "JOB_COMPLETION_INDEX=" + index}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%q: %v", command, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// local maps the pods' paths onto this machine's: the ConfigMap's file to
// the experiment file, the results volume to dir.
func local(args []string, file, dir string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		a = strings.Replace(a, k8s.ExperimentMount+"/"+filepath.Base(file), file, 1)
		out[i] = strings.Replace(a, k8s.ResultsMount+"/", dir+"/", 1)
	}
	return out
}

// TestExperimentK8s: the command writes the manifests, and what their
// containers run is a command line the real wanlab accepts: the shard's,
// after the shell has made K, runs (as a dry run) the shard's cases.
func TestExperimentK8s(t *testing.T) {
	file, dir := k8sFile(t, k8sExperiment)
	out := filepath.Join(filepath.Dir(file), "k8s.yaml")
	stdout, errOut, code := runWanlab(t, "experiment", "k8s", file, "--image", "registry.example/wanlab:v1", "--shards", "2", "--node-selector", "wanlab.io/lab=true", "-o", out)
	if code != exitOK || stdout != "" || !strings.Contains(errOut, out+": 2 shards of K8s sweep; apply with: kubectl apply -f "+out) || !strings.Contains(errOut, "kubectl logs job/k8s-sweep-merge") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	y, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	shards, merge := readJobs(t, y)
	if shards.Metadata.Name != "k8s-sweep-shards" || *shards.Spec.Completions != 2 || shards.Spec.Template.Spec.NodeSelector["wanlab.io/lab"] != "true" {
		t.Errorf("shards Job %s, %d completions, node selector %v", shards.Metadata.Name, *shards.Spec.Completions, shards.Spec.Template.Spec.NodeSelector)
	}
	// Cases 1 and 3 are shard 1's, case 2 shard 2's (docs/experiments.md).
	for index, cases := range map[string][]string{"0": {"delay=5ms", "delay=25ms"}, "1": {"delay=15ms"}} {
		args := expandShard(t, shards.Spec.Template.Spec.Containers[0].Command, index)
		out, errOut, code := runWanlab(t, append(local(args, file, dir), "--dry-run")...)
		if code != exitOK {
			t.Fatalf("wanlab %q --dry-run: exit %d: %s", args, code, errOut)
		}
		for _, c := range []string{"delay=5ms", "delay=15ms", "delay=25ms"} {
			if strings.Contains(out, c) != slices.Contains(cases, c) {
				t.Errorf("index %s: the dry run of %q lists %s: %v, want %v\n%s", index, args, c, strings.Contains(out, c), slices.Contains(cases, c), out)
			}
		}
	}
	// The merge pod's commands are the real commands' syntax.
	root := newRoot(&streams{in: strings.NewReader(""), out: new(strings.Builder), err: new(strings.Builder)})
	pod := merge.Spec.Template.Spec
	runs := map[string]string{"wait": "status", "merge": "merge", "table": "table"}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		args := c.Command[1:]
		cmd, rest, err := root.Find(args)
		if err == nil && c.Name == "wait" && cmd.Name() == "experiment" {
			// `experiment status` is another change's: until it is in
			// this tree, Find stops at `experiment`.
			t.Logf("%s: wanlab %s is not in this tree", c.Name, strings.Join(args[:2], " "))
			continue
		}
		if err == nil && cmd.Name() != runs[c.Name] {
			t.Errorf("%s: wanlab %q runs %s", c.Name, args, cmd.CommandPath())
			continue
		}
		if err == nil {
			err = cmd.ParseFlags(rest)
		}
		if err == nil && cmd.Args != nil {
			err = cmd.Args(cmd, cmd.Flags().Args())
		}
		if err != nil {
			t.Errorf("%s: wanlab %q: %v", c.Name, args, err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Error("writing the manifests made a results directory")
	}

	// Without -o, the YAML goes to the standard output.
	stdout, _, code = runWanlab(t, "experiment", "k8s", file, "--image", "w")
	if code != exitOK || !strings.HasPrefix(stdout, "apiVersion: v1\n") || !strings.Contains(stdout, "\n---\n") {
		t.Errorf("exit %d, stdout %q", code, stdout)
	}
}

// A file whose runs read a file of the machine (a trace) gets a warning:
// the pods have only the experiment file and the results volume.
func TestExperimentK8sWarnsOfLocalFiles(t *testing.T) {
	work := t.TempDir()
	trace := filepath.Join(work, "up.trace")
	if err := os.WriteFile(trace, []byte("1\n2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file, _ := k8sFile(t, k8sExperiment+"    trace_up: "+trace+"\n")
	stdout, errOut, code := runWanlab(t, "experiment", "k8s", file, "--image", "w")
	if code != exitOK || !strings.Contains(stdout, "kind: Job") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if want := "warning: " + file + ": trace_up " + trace + " needs its trace file in the pod"; strings.Count(errOut, "warning:") != 1 || !strings.Contains(errOut, want) {
		t.Errorf("stderr %q; want one warning, %q", errOut, want)
	}
	if _, errOut, _ := runWanlab(t, "experiment", "k8s", mustFile(t, k8sExperiment), "--image", "w"); strings.Contains(errOut, "warning:") {
		t.Errorf("a warning for a file that names no other: %q", errOut)
	}
}

func mustFile(t *testing.T, text string) string {
	t.Helper()
	f, _ := k8sFile(t, text)
	return f
}

func TestExperimentK8sRefuses(t *testing.T) {
	file, _ := k8sFile(t, k8sExperiment)
	bad, _ := k8sFile(t, "tests:\n  - test: ping\n    duratoin: 2s\n")
	out := filepath.Join(t.TempDir(), "k8s.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{file}, "k8s needs --image IMAGE"},
		{[]string{file, "--image", "w", "--shards", "0"}, "--shards 0: give 1 or more"},
		{[]string{file, "--image", "w", "--shards", "4"}, "the experiment has 3 cases"},
		{[]string{file, "--image", "w", "--node-selector", "lab"}, `--node-selector "lab": write KEY=VALUE`},
		{[]string{file, "--image", "w", "--namespace", "Lab"}, `--namespace "Lab"`},
		{[]string{bad, "--image", "w"}, `unknown key "duratoin"`},
		{[]string{filepath.Join(t.TempDir(), "none.yaml"), "--image", "w"}, "cannot read the experiment file"},
		{[]string{file, "--image", "w", "-o", filepath.Dir(out)}, "is a directory"},
	} {
		args := append([]string{"experiment", "k8s"}, c.args...)
		if !slices.Contains(args, "-o") {
			args = append(args, "-o", out)
		}
		stdout, errOut, code := runWanlab(t, args...)
		if code != exitUsage || stdout != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("wanlab %q: exit %d, stdout %q, stderr %q; want 2 and %q", args, code, stdout, errOut, c.want)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("wanlab %q wrote %s", args, out)
		}
	}
}
