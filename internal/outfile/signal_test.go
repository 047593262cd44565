package outfile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The subprocess tests run this test binary again as a child that writes
// a file through outfile; childEnv selects what it does.
const (
	childEnv     = "WL_OUTFILE_CHILD"
	childPathEnv = "WL_OUTFILE_PATH"
	midway       = "midway"
)

// child is the child process's whole life; its result is the exit status.
//
//   - "write": write 16 MiB, say midway, then go on writing up to 64 MiB
//     and wait, never committing, to be ended by a signal.
//   - "catch": catch SIGINT and SIGTERM with NotifyContext, write, say
//     midway, and on the signal write "end" and commit.
func child(mode, path string) int {
	var ctx context.Context = context.Background()
	if mode == "catch" {
		var stop context.CancelFunc
		ctx, stop = NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
	}
	f, err := Create(context.Background(), path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer f.Abort()
	chunk := make([]byte, 1<<20)
	for i := range 64 {
		if i == 16 {
			fmt.Println(midway)
			if mode == "catch" {
				break
			}
		}
		if _, err := f.Write(chunk); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
	}
	<-ctx.Done() // forever unless caught
	f.WriteString("end\n")
	if err := f.Commit(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

// startChild starts a child in mode writing path and waits until it has
// written half of its file.
func startChild(t *testing.T, mode, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childPathEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != midway {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q (%v); stderr: %s", line, err, stderr.String())
	}
	return cmd
}

// wait waits for the child, killing it if it does not end within a
// minute (a bug, not a slow machine: it has nothing left to do).
func wait(t *testing.T, cmd *exec.Cmd) *os.ProcessState {
	t.Helper()
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState
}

// TestSignalRemovesTemporary: a child interrupted in the middle of a large
// file by SIGINT, SIGTERM or SIGHUP dies of that signal, leaves no
// temporary, and leaves the file it was replacing as it was.
func TestSignalRemovesTemporary(t *testing.T) {
	for _, sig := range endSignals {
		for _, existing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v existing=%v", sig, existing), func(t *testing.T) {
				if signal.Ignored(sig) {
					t.Skipf("%v is ignored (nohup?), and so is it in the child", sig)
				}
				dir := t.TempDir()
				path := filepath.Join(dir, "big.pcap")
				if existing {
					writeFile(t, path, "old", 0o640)
				}
				cmd := startChild(t, "write", path)
				if len(temporaries(t, dir)) != 1 {
					t.Errorf("midway, temporaries %v; want the child's one", temporaries(t, dir))
				}
				cmd.Process.Signal(sig)
				st := wait(t, cmd)
				if ws := st.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != sig {
					t.Errorf("the child ended with %v, want killed by %v", st, sig)
				}
				if tmps := temporaries(t, dir); len(tmps) > 0 {
					t.Errorf("temporaries left: %v", tmps)
				}
				b, err := os.ReadFile(path)
				switch {
				case existing && string(b) != "old":
					t.Errorf("the old file now holds %d bytes (%v), want its 3", len(b), err)
				case !existing && !errors.Is(err, os.ErrNotExist):
					t.Errorf("the interrupted file exists (%d bytes, %v)", len(b), err)
				}
			})
		}
	}
}

// TestNotifyContextKeepsTemporary: a child that catches SIGINT itself
// (as `wanlab up` does) gets to commit what it wrote.
func TestNotifyContextKeepsTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kept.pcap")
	cmd := startChild(t, "catch", path)
	cmd.Process.Signal(syscall.SIGINT)
	if st := wait(t, cmd); !st.Success() {
		t.Fatalf("the child ended with %v, want exit 0", st)
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) != 16<<20+4 || !strings.HasSuffix(string(b), "end\n") {
		t.Errorf("the committed file has %d bytes (%v), want 16 MiB and \"end\"", len(b), err)
	}
	if tmps := temporaries(t, dir); len(tmps) > 0 {
		t.Errorf("temporaries left: %v", tmps)
	}
}

// TestKilledWriterTemporaryRemoved: SIGKILL leaves a temporary behind (the
// process can do nothing), and the next Create in that directory removes
// it.
func TestKilledWriterTemporaryRemoved(t *testing.T) {
	dir := t.TempDir()
	cmd := startChild(t, "write", filepath.Join(dir, "killed.pcap"))
	left := temporaries(t, dir)
	cmd.Process.Kill()
	wait(t, cmd)
	if len(left) != 1 || !strings.Contains(left[0], fmt.Sprintf(".%d.", cmd.Process.Pid)) {
		t.Fatalf("the killed child's temporaries: %v; want one naming pid %d", left, cmd.Process.Pid)
	}
	if tmps := temporaries(t, dir); len(tmps) != 1 {
		t.Fatalf("after SIGKILL: %v", tmps)
	}
	if err := write(t, filepath.Join(dir, "next.csv"), Options{}); err != nil {
		t.Fatal(err)
	}
	if tmps := temporaries(t, dir); len(tmps) > 0 {
		t.Errorf("the next Create left %v", tmps)
	}
}
