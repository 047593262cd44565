package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"wanlab/internal/rundir"
	"wanlab/lab"
	"wanlab/netns"
	"wanlab/results"
)

// runPath is a short path for the command's tests: 20 Mbit/s, 10 ms each
// way.
const runPath = "netem delay 10ms limit 10000; tbf rate 20mbit burst 32k latency 50ms"

// startRun starts `wanlab run ARGS` in dir and returns the command and its
// output buffers.
func startRun(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(wanlabBin(t), append([]string{"run"}, args...)...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out, &errOut
}

// runName is the name of the testbed (or veth pair) run pid builds.
func runName(pid int) string { return fmt.Sprintf("run-%d", pid) }

// Ctrl-C a few seconds into a run ends it at once: the results measured
// so far are written, marked partial, show and export read them, and
// nothing of the testbed is left.
func TestRunInterrupted(t *testing.T) {
	dir := t.TempDir()
	cmd, out, errOut := startRun(t, dir, "rrul", "--both", runPath, "--duration", "30s", "--lead", "1s",
		"-o", "x.json.gz", "--flent", "x.flent.gz")
	name := runName(cmd.Process.Pid)
	waitFor(t, "the run's testbed", func() bool { return nsExists(name) })
	time.Sleep(3 * time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	start := time.Now()
	err := cmd.Wait()
	took := time.Since(start)
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != exitFailure || !strings.Contains(errOut.String(), "ended early") || !strings.Contains(errOut.String(), "interrupt") {
		t.Errorf("after SIGINT: %v, stderr %q; want exit 1 saying the run was interrupted", err, errOut.String())
	}
	if took > 10*time.Second {
		t.Errorf("the run took %v to end after SIGINT", took)
	}
	assertNothingLeft(t, name)
	doc, err := results.ReadFile(filepath.Join(dir, "x.json.gz"))
	if err != nil {
		t.Fatalf("the partial results: %v\nstdout %s\nstderr %s", err, out, errOut)
	}
	up := doc.Series[0]
	if !doc.Run.Partial || !strings.Contains(doc.Run.PartialReason, "interrupt") || up.Summary.N < 5 || up.Summary.N > 20 {
		t.Errorf("partial %v (%q), %s: n %d; want partial, with 1 to 4 s of samples", doc.Run.Partial, doc.Run.PartialReason, up.Name, up.Summary.N)
	}
	if !strings.Contains(out.String(), "*** PARTIAL RUN") || !strings.Contains(out.String(), "TCP upload BE:") {
		t.Errorf("the summary printed:\n%s", out)
	}
	// The window is the load the run had, from 1 s to where it stopped,
	// not to 31 s.
	if w := up.Window; w[0] != 1 || w[1] <= 1 || w[1] > 10 || strings.Contains(out.String(), "to 31 s") {
		t.Errorf("%s: window %v; want from 1 s to where the run stopped, and the summary to say so", up.Name, w)
	}
	shown := mustCLI(t, "show", filepath.Join(dir, "x.json.gz"))
	if !strings.Contains(shown, "*** PARTIAL RUN") || !strings.Contains(shown, "Router (testbed "+name+")") {
		t.Errorf("show:\n%s", shown)
	}
	// The run's graph is drawn beside its results, partial or not.
	if b, err := os.ReadFile(filepath.Join(dir, "x.all_scaled.png")); err != nil || len(b) < 10_000 || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("the graph beside the results: %d bytes, %v; want a PNG", len(b), err)
	}
	if !strings.Contains(out.String(), "graph:   x.all_scaled.png") {
		t.Errorf("the summary does not name the graph:\n%s", out)
	}
	mustCLI(t, "export", "--flent", filepath.Join(dir, "y.flent.gz"), filepath.Join(dir, "x.json.gz"))
	for _, f := range []string{"x.flent.gz", "y.flent.gz"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := exec.LookPath("flent"); err == nil {
		fo, err := exec.Command("flent", "-i", filepath.Join(dir, "y.flent.gz"), "-f", "stats").CombinedOutput()
		if err != nil || !strings.Contains(string(fo), "TCP upload BE:") {
			t.Errorf("flent -f stats on the exported file: %v\n%s", err, fo)
		}
	}
}

func nsExists(name string) bool {
	_, err := os.Stat(filepath.Join(rundir.Netns(), "wl-"+name+"-s"))
	return err == nil
}

// A run killed with SIGKILL leaves its testbed behind; the next run
// removes it. Two runs at once each build their own testbed and write
// their own default results file, in the same second or not.
func TestRunKilledThenTwoAtOnce(t *testing.T) {
	dir := t.TempDir()
	killed, _, _ := startRun(t, dir, "ping", "--duration", "20s")
	name := runName(killed.Process.Pid)
	waitFor(t, "the run's testbed", func() bool { return nsExists(name) })
	killed.Process.Kill()
	killed.Wait()
	if !nsExists(name) {
		t.Fatalf("a killed run removed its testbed itself?")
	}
	var wg sync.WaitGroup
	errs := make([]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, wanlabBin(t), "run", "ping", "--both", "netem delay 5ms", "--duration", "2s", "--json")
			cmd.Dir = dir
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Sprintf("run %d: %v: %s", i, err, errOut.String())
				return
			}
			if !strings.HasPrefix(out.String(), `{"format":"wanlab-results"`) || !strings.Contains(errOut.String(), "results: wanlab-ping-") {
				errs[i] = fmt.Sprintf("run %d: stdout %.80q, stderr %q", i, out.String(), errOut.String())
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	assertNothingLeft(t, name)
	files, _ := filepath.Glob(filepath.Join(dir, "wanlab-ping-*.json.gz"))
	if len(files) != 2 {
		t.Errorf("results files %v, want two", files)
	}
	for _, f := range files {
		doc, err := results.ReadFile(f)
		if err != nil || doc.Run.Partial || doc.Series[0].Summary.N < 9 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestRunLabKilledSetsBack: a `run --lab` killed with SIGKILL after its
// timed change and its sysctl leaves the borrowed testbed as it found it:
// the testbed sets back the chain and the sysctl when the run's control
// connection drops, and its status lists nothing changed.
func TestRunLabKilledSetsBack(t *testing.T) {
	name := uniqueName()
	info := upDetached(t, name, "--both", "netem delay 5ms")
	client, err := netns.Open(info.Client.NS)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	const ecn = "net.ipv4.tcp_ecn"
	ecn0, err := client.Sysctl(ecn)
	if err != nil || ecn0 == "1" {
		t.Fatalf("%s in the client: %q, %v; the test sets it to 1", ecn, ecn0, err)
	}
	run, _, errOut := startRun(t, t.TempDir(), "ping", "--lab", name, "--duration", "30s",
		"--sysctl", "client:"+ecn+"=1", "--at", "0.2s", "--up", "netem delay 30ms", "-o", "x.json.gz")
	defer run.Process.Kill()
	waitFor(t, "the run's change", func() bool {
		st, err := lab.GetStatus(name, 1)
		v, _ := client.Sysctl(ecn)
		return err == nil && st.Up.Chain == "netem limit 1000 delay 30ms" && v == "1"
	})
	run.Process.Kill()
	if code, sig := exitOf(run); sig != syscall.SIGKILL {
		t.Fatalf("the run ended with %d, %v before the kill: %s", code, sig, errOut)
	}
	var st lab.Status
	waitFor(t, "the testbed to set back the chain and the sysctl", func() bool {
		st, err = lab.GetStatus(name, 1)
		v, _ := client.Sysctl(ecn)
		return err == nil && st.Up.Chain == "netem limit 1000 delay 5ms" && v == ecn0
	})
	if len(st.Changed) > 0 || strings.Contains(mustCLI(t, "status", name), "CHANGED") {
		t.Errorf("status after the testbed set everything back: changed %q", st.Changed)
	}
	if log, _ := os.ReadFile(lab.LogPath(name)); !strings.Contains(string(log), fmt.Sprintf("run session of pid %d dropped", run.Process.Pid)) {
		t.Errorf("the testbed's log does not tell of the dropped session:\n%s", log)
	}
}
