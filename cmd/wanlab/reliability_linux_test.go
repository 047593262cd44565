package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"wanlab/internal/rundir"
	"wanlab/lab"
	"wanlab/netns"
)

// TestCLIKilledOwnerLeavesNoProcess daemonises programs inside a testbed
// in every way a program can leave its starter behind (iperf3 -D, a
// shell's background job, a setsid'd double fork, one that ignores
// SIGTERM), kills the testbed's owner with SIGKILL and runs the next
// wanlab command: `down` of the testbed, or `up` of another one, whose
// crash cleanup must do the same. Nothing may be left: no process, in the
// namespaces or out of them, and no namespace, mount, device or file.
func TestCLIKilledOwnerLeavesNoProcess(t *testing.T) {
	wanlabBin(t)
	iperf3 := "iperf3"
	if _, err := exec.LookPath(iperf3); err != nil {
		t.Skip("skipped: iperf3 is not installed (apt-get install -y iperf3)")
	}
	for _, next := range []string{"down", "up"} {
		t.Run("next "+next, func(t *testing.T) {
			name := uniqueName()
			upDetached(t, name)
			mustCLI(t, "exec", name, "--on", "server", "--", iperf3, "-s", "-D", "-p", "5311")
			// The programs' output must not hold the test's pipes open.
			for _, script := range []string{
				"sleep 300 </dev/null >/dev/null 2>&1 &",
				"setsid -f sh -c 'sleep 301 & exec sleep 302' </dev/null >/dev/null 2>&1",
				"trap '' TERM; sleep 303 </dev/null >/dev/null 2>&1 &",
			} {
				mustCLI(t, "exec", name, "--", "sh", "-c", script)
			}
			ids := nsIDs(name)
			var procs []netns.Proc
			waitFor(t, "the five daemons", func() bool {
				procs, _ = netns.ProcessesIn(ids...)
				n := 0
				for _, p := range procs {
					if p.Cmd == "iperf3" || p.Cmd == "sleep" {
						n++
					}
				}
				return n == 5
			})
			if cs := netnsChildren(name); len(cs) != 0 {
				t.Fatalf("the testbed still records %+v; the daemons should have left their starters", cs)
			}
			own := owner(t, name)
			if err := syscall.Kill(own.PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitGone(t, own)
			if left := processesLeft(t, nil, procs); len(left) != len(procs) {
				t.Fatalf("after the owner's SIGKILL %d of %d daemons run; the test expects all", len(left), len(procs))
			}

			other := uniqueName()
			start := time.Now()
			if next == "down" {
				mustCLI(t, "down", name)
			} else {
				mustCLI(t, "up", "--name", other, "--detach")
			}
			t.Logf("wanlab %s removed the killed testbed and %d daemons in %v", next, len(procs), time.Since(start).Round(time.Millisecond))
			left := append(processesLeft(t, ids, procs), leftovers(t, name)...)
			if len(left) > 0 {
				t.Errorf("after wanlab %s:\n  %s", next, strings.Join(left, "\n  "))
			}
			if next == "up" {
				mustCLI(t, "down", other)
				if left := leftovers(t, other); len(left) > 0 {
					t.Errorf("after down %s: %v", other, left)
				}
			}
		})
	}
}

// TestCLIExecStatusOfAProgramThatCannotStart: a program that does not
// exist exits 127 and one that cannot be run 126, with the shell's words
// and the shell's status.
func TestCLIExecStatusOfAProgramThatCannotStart(t *testing.T) {
	wanlabBin(t)
	name := uniqueName()
	upDetached(t, name)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.WriteFile(data, []byte("not a program\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		prog string
		code int
		msg  string
	}{
		{"wl-no-such-program", 127, "wl-no-such-program: command not found"},
		{filepath.Join(dir, "missing"), 127, filepath.Join(dir, "missing") + ": No such file or directory"},
		{data, 126, data + ": Permission denied"},
		{dir, 126, dir + ": Permission denied"},
	} {
		for _, on := range []string{"client", "server"} {
			out, errOut, code := cli(t, "exec", name, "--on", on, "--", c.prog, "arg")
			if code != c.code || errOut != "wanlab: "+c.msg+"\n" || out != "" {
				t.Errorf("exec --on %s -- %s: exit %d, stderr %q; want %d and %q", on, c.prog, code, errOut, c.code, "wanlab: "+c.msg+"\n")
			}
		}
		// The shell agrees on the status.
		sh := exec.Command("sh", "-c", `"$0" arg`, c.prog)
		var ee *exec.ExitError
		if err := sh.Run(); !errors.As(err, &ee) || ee.ExitCode() != c.code {
			t.Errorf("sh -c %s: %v; this test expects the shell's status %d", c.prog, err, c.code)
		}
	}
	// The testbed still runs programs afterwards.
	if out := mustCLI(t, "exec", name, "--", "echo", "fine"); out != "fine\n" {
		t.Errorf("exec echo after the failures: %q", out)
	}
	// A $SHELL that cannot be run is passed over for /bin/bash or
	// /bin/sh, as shell's help promises, with a warning that names it.
	for _, bad := range []string{"/nonexistent", data, dir, "wl-no-such-shell"} {
		sh := exec.Command(wanlabBin(t), "shell", name)
		sh.Env = append(os.Environ(), "SHELL="+bad)
		sh.Stdin = strings.NewReader("echo in-$WANLAB_HOST\n")
		var out, errOut bytes.Buffer
		sh.Stdout, sh.Stderr = &out, &errOut
		err := sh.Run()
		if err != nil || out.String() != "in-client\n" || !strings.Contains(errOut.String(), "$SHELL "+bad) {
			t.Errorf("SHELL=%s wanlab shell: %v, stdout %q, stderr %q; want in-client and a warning naming $SHELL %s", bad, err, out.String(), errOut.String(), bad)
		}
	}
}

// TestCLIBadInputCreatesNothing runs the real binary with bad input to up
// and set: each exits 2 with one line, and creates or changes nothing.
func TestCLIBadInputCreatesNothing(t *testing.T) {
	wanlabBin(t)
	name := uniqueName()
	for _, args := range [][]string{
		{"--up", "fq_codel; netem delay 1ms"},
		{"--both", "codel; tbf rate 1mbit burst 10k latency 1ms"},
		{"--tcp-rmem", "1 2"},
		{"--tcp-wmem", "abc"},
		{"--up", "netem delay 1ms 1ms distribution wl-none.dist"},
		{"--ecn", "3"},
		{"--detach", "--tcp-rmem", "1 2 3 4"},
		{"--detach", "--down", "pie; pfifo"},
		// The hosts of a dumbbell: each refusal names the flag.
		{"--clients", "17"},
		{"--clients", "0"},
		{"--servers", "0"},
		{"--servers", "-1"},
		{"--clients", "4", "--access-up", "c5=netem delay 10ms"},
		{"--access-down", "s2=netem delay 10ms"},
		{"--clients", "2", "--access-up", "c2=fq_codel; netem delay 1ms"},
		{"--access-up", "c1"},
		{"--access-up", "c1=", "--access-up", "c1=netem delay 1ms"},
		{"--host-cc", "c1=nosuchcc"},
		{"--servers", "2", "--host-cc", "s3=bbr"},
		{"--detach", "--clients", "3", "--access-down", "c3=pie; pfifo"},
		{"--clients", "2", "--dataplane", "packet"},
		{"--servers", "2", "--device", "offload"},
	} {
		args = append([]string{"up", "--name", name}, args...)
		_, errOut, code := cli(t, args...)
		if code != exitUsage || strings.Count(errOut, "\n") != 1 {
			t.Errorf("wanlab %q: exit %d, stderr %q; want 2 and one line", args, code, errOut)
		}
		hostFlags := slices.DeleteFunc([]string{"--clients", "--servers", "--access-up", "--access-down", "--host-cc"}, func(f string) bool { return !slices.Contains(args, f) })
		// In a user namespace the packet plane is refused first, for
		// what it needs of the machine (package rootless).
		rootlessPacket := rundir.Rootless() && strings.Contains(errOut, "packet data plane needs real root")
		if len(hostFlags) > 0 && !rootlessPacket && !slices.ContainsFunc(hostFlags, func(f string) bool { return strings.Contains(errOut, f) }) {
			t.Errorf("wanlab %q: %q names none of %v", args, errOut, hostFlags)
		}
		if left := leftovers(t, name); len(left) > 0 {
			t.Errorf("wanlab %q left %v", args, left)
		}
	}

	// set checks every chain before it changes any.
	upDetached(t, name, "--up", "netem delay 5ms")
	for _, args := range [][]string{
		{"--up", "netem delay 7ms", "--down", "fq_codel; netem delay 1ms"},
		{"--up", "netem delay 7ms", "--down", "netem delay 1ms 1ms distribution wl-none.dist"},
		{"--down", "pie; tbf rate 1mbit burst 10k latency 1ms"},
	} {
		args = append([]string{"set", name}, args...)
		_, errOut, code := cli(t, args...)
		if code != exitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "--down: ") {
			t.Errorf("wanlab %q: exit %d, stderr %q; want 2 and one line about --down", args, code, errOut)
		}
	}
	// A host the testbed lacks, and an access link it lacks.
	if _, errOut, code := cli(t, "exec", name, "--on", "c2", "--", "true"); code != exitUsage || !strings.Contains(errOut, "(client, server)") {
		t.Errorf("exec --on c2 on two hosts: exit %d, %q; want 2 naming client, server", code, errOut)
	}
	if _, errOut, code := cli(t, "set", name, "--access-up", "c1=netem delay 1ms"); code != exitUsage || !strings.Contains(errOut, "--access-up c1=") {
		t.Errorf("set --access-up on a testbed without access links: exit %d, %q; want 2 naming --access-up c1=", code, errOut)
	}
	if _, errOut, code := cli(t, "set", name, "--access-down", "s2=netem delay 1ms"); code != exitUsage || !strings.Contains(errOut, "(client, server)") {
		t.Errorf("set --access-down s2= on two hosts: exit %d, %q; want 2 naming client, server", code, errOut)
	}
	if _, errOut, code := cli(t, "set", name, "--access-up", "c1=netem delay 1ms", "--access-up", "c1=netem delay 2ms"); code != exitUsage || !strings.Contains(errOut, "twice") {
		t.Errorf("set --access-up c1 twice: exit %d, %q; want 2 saying twice", code, errOut)
	}
	st, err := lab.GetStatus(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Up.Chain, "delay 5ms") || st.Down.Chain != "" {
		t.Errorf("after refused sets the chains are up %q, down %q; want them unchanged (netem delay 5ms, direct)", st.Up.Chain, st.Down.Chain)
	}
}

// TestCLIConcurrentUpsOfOneName starts two `up --detach` of one name at
// once, a few times: one wins, the other fails saying so, and the winner's
// log holds the winner's lines and nothing of the loser's.
func TestCLIConcurrentUpsOfOneName(t *testing.T) {
	bin := wanlabBin(t)
	for round := range 3 {
		name := uniqueName()
		var cmds [2]*exec.Cmd
		var outs [2]bytes.Buffer
		for i := range cmds {
			cmds[i] = exec.Command(bin, "up", "--name", name, "--detach")
			cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
		}
		for _, c := range cmds {
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
		}
		var codes [2]int
		for i, c := range cmds {
			var ee *exec.ExitError
			if err := c.Wait(); errors.As(err, &ee) {
				codes[i] = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { cli(t, "down", name) })
		winner := slices.Index(codes[:], 0)
		if winner < 0 || codes[1-winner] != exitFailure {
			t.Fatalf("round %d: exit statuses %v; want one 0 and one 1\n%s\n%s", round, codes, outs[0].String(), outs[1].String())
		}
		loser := outs[1-winner].String()
		if !strings.Contains(loser, "wanlab down "+name) || strings.Count(loser, "\n") != 1 {
			t.Errorf("round %d: the loser said %q; want one line naming `wanlab down %s`", round, loser, name)
		}
		t.Logf("round %d: the loser said %q", round, strings.TrimSpace(loser))
		log, err := os.ReadFile(lab.LogPath(name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(log), "testbed "+name+" is up") || strings.Contains(string(log), "owned by pid") || strings.Contains(string(log), "error") {
			t.Errorf("round %d: the winner's log:\n%s\nwant its ready line and nothing of the loser", round, log)
		}
		mustCLI(t, "status", name)
		mustCLI(t, "down", name)
		if left := leftovers(t, name); len(left) > 0 {
			t.Errorf("round %d: after down: %v", round, left)
		}
	}

	// The log's lock itself: while another run holds it, up --detach
	// fails without touching it.
	name := uniqueName()
	held, err := lab.ClaimLog(name)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(lab.LogPath(name))
	defer held.Close()
	held.WriteString("the holder's line\n")
	_, errOut, code := cli(t, "up", "--name", name, "--detach")
	if code != exitFailure || !strings.Contains(errOut, "being started or runs in the background") {
		t.Errorf("up --detach while the log is held: exit %d, %q", code, errOut)
	}
	if b, _ := os.ReadFile(lab.LogPath(name)); string(b) != "the holder's line\n" {
		t.Errorf("the held log now holds %q", b)
	}
	// CleanStale, which removes logs no testbed claims, leaves a held one.
	if _, err := lab.CleanStale(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lab.LogPath(name)); err != nil {
		t.Errorf("CleanStale removed a held log: %v", err)
	}
	noTestbed(t, name)
}

// TestCLISetReadsDistributionsWhereItRuns: a .dist file named to `set` is
// read in set's own working directory, never in the testbed owner's,
// which has a file of the same name. Two tables tell them apart: all zeros
// (every delay is the mean, 10 ms) and all 8192, one standard deviation
// (every delay is 10 ms + 5 ms).
func TestCLISetReadsDistributionsWhereItRuns(t *testing.T) {
	bin := wanlabBin(t)
	ownerDir, callerDir := t.TempDir(), t.TempDir()
	write := func(dir, file, v string) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strings.Repeat(v+" ", 64)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(ownerDir, "my.dist", "0")
	write(callerDir, "my.dist", "8192")
	write(ownerDir, "owners-only.dist", "0")
	name := uniqueName()
	up := exec.Command(bin, "up", "--name", name, "--detach")
	up.Dir = ownerDir
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	t.Cleanup(func() { cli(t, "down", name) })
	set := func(chain string) (string, int) {
		c := exec.Command(bin, "set", name, "--up", chain)
		c.Dir = callerDir
		out, err := c.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	if out, code := set("netem delay 10ms 5ms distribution my.dist"); code != 0 {
		t.Fatalf("set: exit %d: %s", code, out)
	}
	out := mustCLI(t, "exec", name, "--", "ping", "-c", "5", "-i", "0.05", "@peer")
	var rtts []float64
	for _, m := range pingTime.FindAllStringSubmatch(out, -1) {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil {
			rtts = append(rtts, v)
		}
	}
	slices.Sort(rtts)
	if len(rtts) != 5 || rtts[2] < 14.5 || rtts[2] > 17 {
		t.Errorf("RTTs %v ms; want a median of 15 ms, from the caller's table (the owner's gives 10 ms)", rtts)
	}
	// A file only the owner's directory has is not found.
	if out, code := set("netem delay 10ms 5ms distribution owners-only.dist"); code != exitUsage || !strings.Contains(out, `"owners-only.dist" not found`) {
		t.Errorf("set with a file only in the owner's directory: exit %d, %q; want 2, not found", code, out)
	}
}

// TestCLIStatusAfterKilledOwner: once the owner of a detached testbed is
// killed with SIGKILL, its namespaces and the programs in them remain;
// status, named or not, says so and points at `wanlab down NAME`, rather
// than "no testbed is running".
func TestCLIStatusAfterKilledOwner(t *testing.T) {
	wanlabBin(t)
	name := uniqueName()
	upDetached(t, name)
	mustCLI(t, "exec", name, "--", "sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 &")
	own := owner(t, name)
	if err := syscall.Kill(own.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, own)
	for _, args := range [][]string{{"status", name}, {"status"}, {"exec", name, "--", "true"}} {
		_, errOut, code := cli(t, args...)
		for _, want := range []string{"running", lab.NamespaceName(name, lab.Client), lab.NamespaceName(name, lab.Server), "1 process", "`wanlab down " + name + "`"} {
			if code != exitFailure || !strings.Contains(errOut, want) {
				t.Errorf("wanlab %q after the owner's SIGKILL: exit %d, %q; want 1 and %q", args, code, errOut, want)
			}
		}
	}
}
