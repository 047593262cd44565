package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"wanlab/results"
)

// closingReader makes a FIFO in dir whose reader reads the start of what
// is written (the pcap header) and goes away.
func closingReader(t *testing.T, dir string) string {
	t.Helper()
	fifo := filepath.Join(dir, "capture.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.Open(fifo)
		if err != nil {
			return
		}
		f.Read(make([]byte, 24))
		f.Close()
	}()
	t.Cleanup(func() {
		// Unblock the open if the writer never came.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
	})
	return fifo
}

// An output that fails during or after a run loses nothing else: the
// capture's reader goes away (or the capture goes to a full device), the
// Flent file or the results file cannot be written; the run measures to
// the end, writes every other output, marks the results with the output
// that failed and why, says it in the summary (and `show` does), on
// stderr, and exits 1.
func TestRunFailedOutputKeepsTheOthers(t *testing.T) {
	bin := wanlabBin(t)
	for _, c := range []struct {
		name string
		args func(dir string) []string
		// failed is the flag of the output that fails, why what stderr
		// and the summary say; inDoc says the document names it (it
		// failed before the results were written).
		failed, why string
		inDoc       bool
	}{
		{"pcap FIFO whose reader goes away", func(dir string) []string { return []string{"--pcap", closingReader(t, dir)} },
			"--pcap", "broken pipe", true},
		{"pcap to a full device", func(string) []string { return []string{"--pcap", "/dev/full"} },
			"--pcap", "no space left on device", true},
		{"flent to a full device", func(string) []string { return []string{"--flent", "/dev/full"} },
			"--flent", "no space left on device", false},
		{"results to a full device", func(dir string) []string {
			return []string{"-o", "/dev/full", "--flent", filepath.Join(dir, "r.flent.gz")}
		}, "--output", "no space left on device", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"run", "ping", "--duration", "1s", "-o", filepath.Join(dir, "r.json.gz")}, c.args(dir)...)
			cmd := exec.Command(bin, args...)
			cmd.Dir = dir
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if cmd.ProcessState.ExitCode() != exitFailure {
				t.Errorf("exit %v, want %d", err, exitFailure)
			}
			if !strings.Contains(stderr.String(), "wanlab: ") || !strings.Contains(stderr.String(), c.why) {
				t.Errorf("stderr %q does not say why the output failed (%s)", stderr.String(), c.why)
			}
			out := stdout.String()
			if !strings.Contains(out, "Ping (ms) ICMP:") || !strings.Contains(out, "Router (testbed ") {
				t.Errorf("no summary:\n%s", out)
			}
			if c.failed == "--output" {
				if !strings.Contains(out, "results: NOT WRITTEN: --output /dev/full") {
					t.Errorf("the summary does not say the results were not written:\n%s", out)
				}
				if st, err := os.Stat(filepath.Join(dir, "r.flent.gz")); err != nil || st.Size() < 500 {
					t.Errorf("the Flent file beside the failed results: %v", err)
				}
				// The measurements outlive the output: they are saved
				// under the default name in the working directory.
				saved, _ := filepath.Glob(filepath.Join(dir, "wanlab-ping-*.json.gz"))
				if len(saved) != 1 || !strings.Contains(out, "results: saved instead to wanlab-ping-") {
					t.Fatalf("results not saved elsewhere (%v):\n%s", saved, out)
				}
				if doc, err := results.ReadFile(saved[0]); err != nil || doc.Run.Partial {
					t.Errorf("the saved results: %v", err)
				}
				return
			}
			path := filepath.Join(dir, "r.json.gz")
			doc, err := results.ReadFile(path)
			if err != nil {
				t.Fatalf("the results: %v\nstdout %s\nstderr %s", err, out, stderr.String())
			}
			if doc.Run.Partial || len(doc.Series) < 2 || doc.Series[0].Summary.N < 4 {
				t.Errorf("partial %v, %d series; want the whole run measured", doc.Run.Partial, len(doc.Series))
			}
			if !strings.Contains(out, "results: "+path) || !strings.Contains(out, "graph:   ") {
				t.Errorf("the summary does not name the results and the graph:\n%s", out)
			}
			if !c.inDoc {
				if len(doc.Run.FailedOutputs) != 0 {
					t.Errorf("failed outputs %+v, want none: the results were written first", doc.Run.FailedOutputs)
				}
				if !strings.Contains(out, "flent:   NOT WRITTEN: "+c.failed) {
					t.Errorf("the summary does not say the Flent file failed:\n%s", out)
				}
				return
			}
			f := doc.Run.FailedOutputs
			if len(f) != 1 || f[0].Output != c.failed || f[0].Path == "" || !strings.Contains(f[0].Error, c.why) {
				t.Errorf("failed outputs %+v, want %s with %q", f, c.failed, c.why)
			}
			for what, text := range map[string]string{"run": out, "show": mustCLI(t, "show", path)} {
				if !strings.Contains(text, "*** OUTPUT FAILED: ") || !strings.Contains(text, c.why) {
					t.Errorf("%s's summary does not say the capture failed:\n%s", what, text)
				}
			}
		})
	}
}

// `up --pcap FIFO` whose reader goes away goes on forwarding; the log and
// `status` say the capture stopped and why, and up exits 1 at the end.
func TestUpPcapReaderGoesAway(t *testing.T) {
	bin := wanlabBin(t)
	fifo := closingReader(t, t.TempDir())
	name := uniqueName()
	up := exec.Command(bin, "up", "--name", name, "--pcap", fifo)
	stdout, err := up.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	up.Stderr = &log
	startUp(t, up, name, true)
	awaitUp(stdout, name)
	mustCLI(t, "exec", name, "--", "ping", "-c", "5", "-i", "0.1", "@peer")
	waitFor(t, "status to say the capture stopped", func() bool {
		out, _, _ := cli(t, "status", name)
		return strings.Contains(out, "pcap    "+fifo+": STOPPED: ") && strings.Contains(out, "broken pipe")
	})
	// The testbed still forwards.
	mustCLI(t, "exec", name, "--", "ping", "-c", "2", "-i", "0.1", "@peer")
	if err := up.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = up.Wait()
	if up.ProcessState.ExitCode() != exitFailure {
		t.Errorf("up after Ctrl-C: %v; want exit %d, the capture having failed", err, exitFailure)
	}
	if !strings.Contains(log.String(), "the capture "+fifo+" stopped") || !strings.Contains(log.String(), "the reader of the FIFO closed it") {
		t.Errorf("up's log does not say the capture stopped:\n%s", log.String())
	}
}
