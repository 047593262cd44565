package netns

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCommandRunsInside(t *testing.T) {
	h := newNamespace(t)
	out, err := Command(h, "cat", "/proc/net/dev").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := devNames(string(out)); len(got) != 1 || got[0] != "lo" {
		t.Errorf("cat /proc/net/dev inside %s lists %v, want only lo", h.Name(), got)
	}
	out, err = Command(h, "ip", "-o", "link").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range rootInterfaces(t) {
		if name != "lo" && strings.Contains(string(out), ": "+name+":") {
			t.Errorf("ip link inside %s shows the root namespace's %s:\n%s", h.Name(), name, out)
		}
	}
}

func TestCommandPassesStatusAndStreams(t *testing.T) {
	h := newNamespace(t)
	var stdout, stderr bytes.Buffer
	c := Command(h, "sh", "-c", "echo out; echo err >&2; exit 3")
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Run = %v, want exit status 3", err)
	}
	if stdout.String() != "out\n" || stderr.String() != "err\n" {
		t.Errorf("stdout %q, stderr %q; want \"out\\n\", \"err\\n\"", stdout.String(), stderr.String())
	}
	_, err = Command(h, "sh", "-c", "echo oops >&2; exit 1").Output()
	if !errors.As(err, &ee) || string(ee.Stderr) != "oops\n" {
		t.Errorf("Output error %v does not carry stderr", err)
	}
	if _, err := Command(h, "wl-no-such-program").Output(); err == nil {
		t.Error("a missing program started")
	}
}

func TestTestbedTracksChildren(t *testing.T) {
	tb := newTestbed(t)
	h := mustNamespace(t, tb, "a")
	c := tb.Command(h, "sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := tb.State()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Children) != 1 || st.Children[0].PID != c.Process.Pid || st.Children[0].Cmd != "sleep" || !st.Children[0].Alive() {
		t.Fatalf("state children = %+v, want the running sleep %d", st.Children, c.Process.Pid)
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if st, _ = tb.State(); len(st.Children) != 0 {
		t.Errorf("after Wait the state still lists %+v", st.Children)
	}
	// A child still running at Close is terminated by it.
	c = tb.Command(h, "sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	err = <-waited
	if !errors.As(err, new(*exec.ExitError)) || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("sleep ended with %v, want it terminated by SIGTERM", err)
	}
}

func TestCloseKillsAChildThatIgnoresSIGTERM(t *testing.T) {
	tb := newTestbed(t)
	h := mustNamespace(t, tb, "a")
	// exec keeps it one process, with SIGTERM still ignored.
	c := tb.Command(h, "sh", "-c", `trap "" TERM; exec sleep 30`)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	time.Sleep(100 * time.Millisecond) // let sh install the trap and exec
	start := time.Now()
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	err := <-waited
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL", err)
	}
	if d := time.Since(start); d < childGrace {
		t.Errorf("SIGKILL came after %v, before the %v grace period", d, childGrace)
	}
}
