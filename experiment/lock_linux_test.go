package experiment

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDirLockHolder is no test of its own: TestTwoProcessesOneDirectory
// runs it in a second process, which starts an experiment into the
// directory it is given, says so, and stays in its first run until it is
// killed.
func TestDirLockHolder(t *testing.T) {
	dir := os.Getenv("WANLAB_TEST_LOCK_DIR")
	if dir == "" {
		t.Skip("run by TestTwoProcessesOneDirectory")
	}
	b := &fakeBackend{onRun: func(*Run) {
		fmt.Println("running")
		select {}
	}}
	Execute(context.Background(), mustLoad(t, sweep, false), b, ExecOptions{Dir: dir})
}

// TestTwoProcessesOneDirectory: while one process runs an experiment into
// a directory, a second run or merge into it is refused, naming the first
// one's PID, and runs nothing; once the first is killed (SIGKILL, so that
// only the kernel can release its lock), the directory can be resumed.
func TestTwoProcessesOneDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDirLockHolder$")
	first.Env = append(os.Environ(), "WANLAB_TEST_LOCK_DIR="+dir)
	out, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "running\n" {
		t.Fatalf("the first process said %q (%v)", line, err)
	}
	p := mustLoad(t, sweep, false)
	pid := fmt.Sprintf("(pid %d)", first.Process.Pid)
	b := &fakeBackend{}
	_, err = Execute(context.Background(), p, b, ExecOptions{Dir: dir})
	var de *DirError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "is in use: wanlab experiment run "+pid+" is writing into it") {
		t.Errorf("second run: %v; want a DirError naming %s", err, pid)
	}
	if len(b.ran) != 0 {
		t.Errorf("the second process ran %v", b.ran)
	}
	shard := t.TempDir()
	if _, err := Execute(context.Background(), p, &fakeBackend{}, ExecOptions{Dir: shard}); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(context.Background(), dir, []string{shard}); !errors.As(err, &de) || !strings.Contains(err.Error(), pid) {
		t.Errorf("merge into it: %v; want a DirError naming %s", err, pid)
	}

	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	b = &fakeBackend{}
	rep, err := Execute(context.Background(), p, b, ExecOptions{Dir: dir})
	if err != nil || rep.Complete != 12 {
		t.Fatalf("after the first was killed: %v, %+v", err, rep)
	}
}

// TestLockRefusesPlantedFiles: a link or a FIFO planted under the lock's
// name is refused, neither followed nor waited on.
func TestLockRefusesPlantedFiles(t *testing.T) {
	p := mustLoad(t, sweep, false)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	for _, c := range []struct {
		name  string
		plant func(path string) error
		want  string
	}{
		{"link", func(path string) error { return os.Symlink(victim, path) }, "cannot open its lock .wanlab-lock"},
		{"fifo", func(path string) error { return syscall.Mkfifo(path, 0o644) }, "is not a regular file"},
	} {
		dir := t.TempDir()
		if err := c.plant(filepath.Join(dir, LockName)); err != nil {
			t.Fatal(err)
		}
		_, err := Execute(context.Background(), p, &fakeBackend{}, ExecOptions{Dir: dir})
		var de *DirError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a DirError with %q", c.name, err, c.want)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the link's target became %q", b)
	}
}
