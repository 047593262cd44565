package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"wanlab/experiment"
	"wanlab/internal/roottest"
	"wanlab/results"
)

// These tests run the wanlab binary as ordinary users: uids that no account
// of the machine has, so that nothing but the kernel's user namespaces
// lets them build a testbed.
const (
	rootlessUserA = 64101
	rootlessUserB = 64102
)

// ordinaryUser is an unprivileged user for a test: its uid, a home
// directory of its own, and the private directory wanlab keeps its
// testbeds in (removed when the test ends, with every process of the uid).
type ordinaryUser struct {
	uid  int
	home string
}

func newOrdinaryUser(t *testing.T, uid int) ordinaryUser {
	t.Helper()
	roottest.NeedRealRoot(t, "runs wanlab as ordinary users, which only real root can start")
	home, err := os.MkdirTemp("", "wl-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	if err := os.Chown(home, uid, uid); err != nil {
		t.Fatal(err)
	}
	u := ordinaryUser{uid: uid, home: home}
	u.endProcesses(t) // an earlier run's, killed before its cleanup
	os.RemoveAll(u.stateDir())
	t.Cleanup(func() {
		u.endProcesses(t)
		os.RemoveAll(u.stateDir())
	})
	return u
}

// stateDir is where wanlab keeps the user's testbeds: /tmp/wanlab-UID, as
// the user has no XDG_RUNTIME_DIR.
func (u ordinaryUser) stateDir() string {
	return filepath.Join(os.TempDir(), "wanlab-"+strconv.Itoa(u.uid))
}

// processes lists the pids of the user's processes.
func (u ordinaryUser) processes(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) == nil && int(st.Uid) == u.uid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// endProcesses kills what is left of the user's processes: only this
// test's, since the uid is no account's.
func (u ordinaryUser) endProcesses(t *testing.T) {
	for _, pid := range u.processes(t) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// command is the binary run as the user, in dir, with a minimal
// environment, as a login of theirs would have.
func (u ordinaryUser) command(t *testing.T, ctx context.Context, dir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, rootlessBin(t), args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + u.home, "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.uid), Groups: []uint32{}}}
	return cmd
}

// run runs wanlab as the user in their home, for at most limit.
func (u ordinaryUser) run(t *testing.T, limit time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := u.command(t, ctx, u.home, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("wanlab %q as uid %d: %v", args, u.uid, err)
	}
	return out.String(), errOut.String(), code
}

func (u ordinaryUser) must(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := u.run(t, time.Minute, args...)
	if code != 0 {
		t.Fatalf("wanlab %q as uid %d: exit %d\nstdout: %s\nstderr: %s", args, u.uid, code, out, errOut)
	}
	return out
}

// rootlessBin is the test binary's wanlab, in a directory others may
// enter.
func rootlessBin(t *testing.T) string {
	bin := wanlabBin(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// waitGone waits until the user has no process left (the keeper ends once
// nothing uses the namespace) and fails the test if one remains.
func (u ordinaryUser) waitGone(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if len(u.processes(t)) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	var left []string
	for _, pid := range u.processes(t) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		left = append(left, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
	}
	if len(left) > 0 {
		t.Errorf("uid %d still has processes: %v", u.uid, left)
	}
}

// TestRootlessRuns runs as an ordinary user what the README's first screen
// does: ping and a TCP upload through netem and tbf; the results are the
// user's and say the run was rootless, and nothing of the run is left.
func TestRootlessRuns(t *testing.T) {
	u := newOrdinaryUser(t, rootlessUserA)
	path := []string{"--up", "netem delay 20ms; tbf rate 10mbit burst 32k latency 50ms", "--down", "netem delay 20ms"}
	u.must(t, append([]string{"run", "ping", "--duration", "2s", "-o", "ping.json.gz"}, path...)...)
	u.must(t, append([]string{"run", "tcp_upload", "--duration", "3s", "--lead", "1s", "--tail", "1s", "-o", "up.json.gz"}, path...)...)
	for _, name := range []string{"ping.json.gz", "up.json.gz"} {
		file := filepath.Join(u.home, name)
		var st syscall.Stat_t
		if err := syscall.Stat(file, &st); err != nil {
			t.Fatal(err)
		}
		if int(st.Uid) != u.uid {
			t.Errorf("%s belongs to uid %d, want the user's %d", name, st.Uid, u.uid)
		}
		doc, err := results.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !doc.Run.Rootless {
			t.Errorf("%s: run.rootless is false", name)
		}
		switch name {
		case "ping.json.gz":
			if s := doc.FindSeries("Ping (ms) ICMP"); s == nil || s.Summary.Mean < 40 || s.Summary.Mean > 43 {
				t.Errorf("ping: ICMP RTT series %v, want a mean of 40-43 ms", s)
			}
		case "up.json.gz":
			if s := doc.FindSeries("TCP upload"); s == nil || s.Summary.Mean < 8 || s.Summary.Mean > 10.1 {
				t.Errorf("tcp_upload: goodput series %v, want a mean of 8-10.1 Mbit/s", s)
			}
		}
	}
	u.waitGone(t)
}

// TestRootlessTestbedIsTheUsers takes a detached testbed through its life
// as one user, and checks that another user can neither see nor stop it;
// then an experiment of two cases runs as the first user.
func TestRootlessTestbedIsTheUsers(t *testing.T) {
	a := newOrdinaryUser(t, rootlessUserA)
	b := newOrdinaryUser(t, rootlessUserB)
	name := uniqueName()
	a.must(t, "up", "--name", name, "--detach", "--up", "netem delay 15ms")
	t.Cleanup(func() { a.run(t, time.Minute, "down", name) })
	if out := a.must(t, "exec", name, "--", "ping", "-c", "2", "-q", "@peer"); !strings.Contains(out, "2 received") {
		t.Errorf("exec ping: %s", out)
	}
	if out := a.must(t, "status", name); !strings.Contains(out, "testbed "+name) || !strings.Contains(out, "netem limit 1000 delay 15ms") {
		t.Errorf("status: %s", out)
	}
	// A run on it, as `run --lab` borrows a testbed.
	if out := a.must(t, "run", "ping", "--lab", name, "--duration", "1s", "-o", "lab.json.gz"); !strings.Contains(out, "results: lab.json.gz") {
		t.Errorf("run --lab: %s", out)
	}
	// The other user sees nothing of it, and cannot stop it or run in it.
	if out, errOut, code := b.run(t, time.Minute, "status"); code == 0 || strings.Contains(out+errOut, name) {
		t.Errorf("status as another user: exit %d, %s%s", code, out, errOut)
	}
	for _, args := range [][]string{{"down", name}, {"exec", name, "--", "true"}, {"set", name, "--up", "netem delay 1ms"}} {
		if _, errOut, code := b.run(t, time.Minute, args...); code == 0 || !strings.Contains(errOut, name+" is not running") && !strings.Contains(errOut, "no testbed "+name) {
			t.Errorf("%q as another user: exit %d, %s", args, code, errOut)
		}
	}
	if _, err := os.ReadDir(a.stateDir()); err != nil {
		t.Fatal(err)
	}
	if out := a.must(t, "status", name); !strings.Contains(out, "netem limit 1000 delay 15ms") {
		t.Errorf("status after the other user tried: %s", out)
	}
	if out := a.must(t, "down", name); !strings.Contains(out, "testbed "+name+" is down") {
		t.Errorf("down: %s", out)
	}

	file := filepath.Join(a.home, "two.yaml")
	if err := os.WriteFile(file, []byte("name: two\nvars:\n  delay: [5ms, 10ms]\npath:\n  both: \"netem delay ${delay}\"\ntests:\n  - test: ping\n    duration: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.must(t, "experiment", "run", file, "-o", "two")
	ix, err := experiment.ReadIndex(filepath.Join(a.home, "two"))
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.Counts(); n[experiment.StatusComplete] != 2 {
		t.Errorf("experiment: %v, want 2 complete runs", n)
	}
	a.waitGone(t)
	b.waitGone(t)
}

// TestRootlessSigkill kills a rootless run in the middle: the namespace,
// its testbed and every process end with it, and the user's next run finds
// nothing in its way.
func TestRootlessSigkill(t *testing.T) {
	u := newOrdinaryUser(t, rootlessUserA)
	cmd := u.command(t, context.Background(), u.home, "run", "tcp_upload", "--duration", "30s", "--up", "tbf rate 10mbit burst 32k latency 50ms", "-o", "killed.json.gz")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed once the load runs: its testbed is on record by then.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(u.stateDir(), "wanlab", "*.json")); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no testbed on record after 20 s: %s", errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	cmd.Process.Kill()
	cmd.Wait()
	u.waitGone(t)
	out := u.must(t, "run", "ping", "--duration", "1s", "-o", "next.json.gz")
	if !strings.Contains(out, "results: next.json.gz") {
		t.Errorf("the next run: %s", out)
	}
	if m, _ := filepath.Glob(filepath.Join(u.stateDir(), "wanlab", "*.json")); len(m) > 0 {
		t.Errorf("testbeds still on record: %v", m)
	}
	u.waitGone(t)

	// The keeper killed under a detached testbed: the testbed's own
	// processes hold the namespace, and the user's commands still reach
	// it through them.
	name := uniqueName()
	u.must(t, "up", "--name", name, "--detach")
	b, err := os.ReadFile(filepath.Join(u.stateDir(), "keeper.json"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct{ PID int }
	if err := json.Unmarshal(b, &k); err != nil || k.PID <= 0 {
		t.Fatalf("keeper.json %q: %v", b, err)
	}
	syscall.Kill(k.PID, syscall.SIGKILL)
	if out := u.must(t, "exec", name, "--", "ping", "-c", "1", "-q", "@peer"); !strings.Contains(out, "1 received") {
		t.Errorf("exec after the keeper was killed: %s", out)
	}
	if out := u.must(t, "down", name); !strings.Contains(out, "is down") {
		t.Errorf("down after the keeper was killed: %s", out)
	}
	u.waitGone(t)
}
