package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"wanlab/lab"
	"wanlab/netns"
)

// TestCLIDumbbellSigkill brings up 16 clients and 16 servers with access
// links in the foreground, checks what up, status and exec say of them,
// starts programs in far hosts, and kills up with SIGKILL: the hosts'
// namespaces and programs remain; the next `up` of the same name removes
// them all and succeeds, and `down` leaves nothing.
func TestCLIDumbbellSigkill(t *testing.T) {
	bin := wanlabBin(t)
	name := uniqueName()
	args := []string{"up", "--name", name, "--json", "--clients", "16", "--servers", "16",
		"--up", "netem delay 2ms", "--access-up", "c16=netem delay 10ms", "--access-down", "s16=", "--host-cc", "c16=bbr"}
	up := exec.Command(bin, args...)
	stdout, err := up.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	startUp(t, up, name, true)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("up printed nothing: %v", err)
	}
	t.Logf("up of 16+16 hosts ready in %v", time.Since(start).Round(time.Millisecond))
	var info lab.Info
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatalf("up --json: %q: %v", line, err)
	}
	if len(info.Hosts) != 32 || !strings.Contains(info.Host("c16").AccessUp, "delay 10ms") || info.Host("s16").AccessDown != "direct" {
		t.Fatalf("up --json: %d hosts, c16 %+v, s16 %+v", len(info.Hosts), info.Host("c16"), info.Host("s16"))
	}

	// exec reaches any host, and refuses one the testbed lacks, naming
	// those it has.
	if out := mustCLI(t, "exec", name, "--on", "c16", "--", "sysctl", "-n", "net.ipv4.tcp_congestion_control"); strings.TrimSpace(out) != "bbr" {
		t.Errorf("c16's congestion control: %q, want bbr", out)
	}
	if out := mustCLI(t, "exec", name, "--on", "s9", "--", "sh", "-c", "echo $WANLAB_HOST $WANLAB_ADDR4"); strings.TrimSpace(out) != "s9 "+info.Host("s9").Addr4.String() {
		t.Errorf("exec --on s9: %q", out)
	}
	mustCLI(t, "exec", name, "--on", "c16", "--", "ping", "-c", "1", "-W", "2", info.Host("s16").Addr4.String())
	if _, errOut, code := cli(t, "exec", name, "--on", "c17", "--", "true"); code != exitUsage || !strings.Contains(errOut, "c1..c16") {
		t.Errorf("exec --on c17: exit %d, %q; want 2 naming c1..c16", code, errOut)
	}
	// status names every host with its access links and its part of each
	// direction.
	var st lab.Status
	out := mustCLI(t, "status", name, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Hosts) != 32 || len(st.Up.Ports) != 32 || len(st.Down.Ports) != 32 {
		t.Errorf("status --json: %d hosts, %d up ports, %d down ports; want 32 each", len(st.Hosts), len(st.Up.Ports), len(st.Down.Ports))
	}
	text := mustCLI(t, "status", name)
	for _, want := range []string{"c16     netns " + info.Host("c16").NS, "delay 10ms; down: none", "access up: none; down: direct", "s16  egress"} {
		if !strings.Contains(text, want) {
			t.Errorf("status does not say %q:\n%s", want, text)
		}
	}

	// Programs in far hosts, recorded in the testbed.
	for _, h := range []string{"c16", "s16"} {
		sleeper := exec.Command(bin, "exec", name, "--on", h, "--", "sleep", "300")
		if err := sleeper.Start(); err != nil {
			t.Fatal(err)
		}
		defer sleeper.Wait()
	}
	var children []netns.Proc
	waitFor(t, "the sleeps to be recorded", func() bool {
		children = netnsChildren(name)
		return len(children) == 2
	})
	if err := up.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	up.Wait()
	if n := len(nsIDs(name)); n != 32 {
		// Another wanlab on this machine may have cleaned them up first.
		t.Fatalf("after SIGKILL %d namespaces of the testbed remain; the test expects all 32 (unless another wanlab's cleanup ran meanwhile)", n)
	}
	for _, c := range children {
		if !c.Alive() {
			t.Fatalf("after SIGKILL the sleep %d is gone; the test expects it left", c.PID)
		}
	}

	// The next up of the same name removes them all and builds afresh.
	start = time.Now()
	// Detached, with repeatable flags, which the background copy takes
	// one by one.
	mustCLI(t, "up", "--name", name, "--detach", "--clients", "16", "--servers", "16", "--access-up", "c3=netem delay 1ms", "--access-up", "s2=")
	if st, err := lab.GetStatus(name, 0); err != nil || !strings.Contains(st.Host("c3").AccessUp, "delay 1ms") || st.Host("s2").AccessUp != "direct" {
		t.Errorf("the detached testbed: %v; c3 %+v, s2 %+v", err, st.Host("c3"), st.Host("s2"))
	}
	t.Logf("the next up removed the killed 16+16 testbed and built another in %v", time.Since(start).Round(time.Millisecond))
	for _, c := range children {
		if c.Alive() {
			t.Errorf("the sleep (pid %d) of the killed testbed survived the next up", c.PID)
		}
	}
	start = time.Now()
	mustCLI(t, "down", name)
	t.Logf("down of 16+16 hosts in %v", time.Since(start).Round(time.Millisecond))
	assertNothingLeft(t, name)
}
