package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"wanlab/netns"
	"wanlab/results"
)

// foreground starts `wanlab up` in the foreground with args and returns it
// and a channel that receives the time its ready line appeared (closed
// without one if it never does).
func foreground(t *testing.T, bin, name string, args ...string) (*exec.Cmd, <-chan time.Time) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"up", "--name", name, "--json"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan time.Time, 1)
	go func() {
		defer close(ready)
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && strings.HasPrefix(line, "{") {
			ready <- time.Now()
		}
		io.Copy(io.Discard, out)
	}()
	return cmd, ready
}

// waitReady waits for the ready line of a foreground up.
func waitReady(t *testing.T, ready <-chan time.Time) time.Time {
	t.Helper()
	select {
	case at, ok := <-ready:
		if !ok {
			t.Fatal("up ended without its ready line")
		}
		return at
	case <-time.After(30 * time.Second):
		t.Fatal("up was not ready within 30 s")
	}
	return time.Time{}
}

// exitOf waits for cmd and returns how it ended: its exit status, or -1
// and the signal that killed it.
func exitOf(cmd *exec.Cmd) (int, syscall.Signal) {
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
			return -1, ws.Signal()
		}
		return ee.ExitCode(), 0
	}
	return 0, 0
}

// faultTimes are the durations the fault test spreads its kills over.
type faultTimes struct {
	ready    time.Duration // up's start to its ready line
	teardown time.Duration // SIGTERM to exit, with a daemon to end inside
	down     time.Duration // a `wanlab down` of a detached testbed
}

// calibrate measures the phases the kills are spread over, on this
// machine and now, so that they land in each phase whatever its speed.
func calibrate(t *testing.T, bin string) faultTimes {
	t.Helper()
	var ft faultTimes
	for range 2 {
		name := uniqueName()
		start := time.Now()
		up, ready := foreground(t, bin, name)
		ft.ready = max(ft.ready, waitReady(t, ready).Sub(start))
		mustCLI(t, "exec", name, "--", "sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 &")
		start = time.Now()
		up.Process.Signal(syscall.SIGTERM)
		if code, sig := exitOf(up); code != 0 || sig != 0 {
			t.Fatalf("up ended by SIGTERM: exit %d, signal %v; want 0", code, sig)
		}
		ft.teardown = max(ft.teardown, time.Since(start))
		mustCLI(t, "up", "--name", name, "--detach")
		start = time.Now()
		mustCLI(t, "down", name)
		ft.down = max(ft.down, time.Since(start))
	}
	return ft
}

// TestCLISigkillAtRandomMoments kills wanlab with SIGKILL at moments spread
// over each phase, 55 times: `up` while it builds a testbed (from its
// first instant to past its ready line), `up` while it tears one down
// after SIGTERM, `down` while it removes one, and the parent of `up
// --detach` while its background copy starts. After each kill the next
// wanlab command (`down` of the testbed, `up` of it, or `up` of another
// one) must leave nothing of the testbed: no namespace, mount, device, file
// under /run/wanlab, record or process, in its namespaces or running
// wanlab; and the root namespace's links, addresses, routes, rules and the
// sysctls wanlab touches must be as they were. Then SIGINT, SIGTERM,
// SIGHUP and SIGQUIT at moments over the same phases must end `up` with
// nothing left, with no next command at all.
func TestCLISigkillAtRandomMoments(t *testing.T) {
	bin := wanlabBin(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	before := rootState(t)
	ft := calibrate(t, bin)
	t.Logf("phases: ready %v, teardown with a daemon %v, down %v", ft.ready, ft.teardown, ft.down)
	sameRootState(t, "after calibration", before)

	// spread returns the i-th of n moments over [0, d*1.2], each moved
	// by up to a step at random so that runs differ.
	spread := func(i, n int, d time.Duration) time.Duration {
		step := float64(d) * 1.2 / float64(n)
		return time.Duration(step*float64(i) + step*rng.Float64())
	}
	// Options that take up through more of its code.
	variants := [][]string{
		nil,
		{"--both", "netem delay 5ms", "--cc", "reno"},
		{"--up", "tbf rate 10mbit burst 32k latency 50ms; fq_codel", "--device", "offload"},
		{"--tcp-rmem", "4096 131072 6291456", "--ecn", "1", "--device", "raw"},
	}
	// kills counts the SIGKILLs, dirty those after which something was
	// left for the next command to remove.
	kills, dirty := 0, 0
	// kill sends SIGKILL to cmd after d, waits for it to end and counts
	// the kill.
	kill := func(cmd *exec.Cmd, d time.Duration, name string) {
		time.Sleep(d)
		cmd.Process.Kill()
		exitOf(cmd)
		kills++
		if len(leftovers(t, name)) > 0 {
			dirty++
		}
	}
	// check runs after the next command: nothing of name may be left.
	check := func(what, name string, ids []netns.ID, procs []netns.Proc) {
		t.Helper()
		left := append(processesLeft(t, ids, procs), leftovers(t, name)...)
		left = append(left, wanlabProcesses(t, bin)...)
		if len(left) > 0 {
			t.Fatalf("%s: left behind:\n  %s", what, strings.Join(left, "\n  "))
		}
		sameRootState(t, what, before)
	}
	// next runs the next command after a kill, one of three in turn, and
	// checks what it leaves; ids are the namespaces the kill left.
	next := func(i int, what, name string, procs []netns.Proc) {
		t.Helper()
		ids := nsIDs(name)
		switch i % 3 {
		case 0:
			if _, errOut, code := cli(t, "down", name); code != 0 && !strings.Contains(errOut, "there is no testbed "+name) {
				t.Fatalf("%s: down: exit %d, %s", what, code, errOut)
			}
			check(what+", then down", name, ids, procs)
		case 1:
			mustCLI(t, "up", "--name", name, "--detach")
			// The new testbed's namespaces may have the old ones' IDs
			// now; processes are checked through the old IDs only
			// while nothing can have reused them.
			left := processesLeft(t, nil, procs)
			mustCLI(t, "down", name)
			if len(left) > 0 {
				t.Fatalf("%s, then up: %v", what, left)
			}
			check(what+", then up and down", name, nil, procs)
		case 2:
			other := uniqueName()
			mustCLI(t, "up", "--name", other, "--detach")
			left := append(processesLeft(t, nil, procs), leftovers(t, name)...)
			mustCLI(t, "down", other)
			if len(left) > 0 {
				t.Fatalf("%s, then up of another testbed: %v", what, left)
			}
			check(what+", then up of another testbed and its down", name, nil, procs)
			check(what+", the other testbed", other, nil, nil)
		}
	}

	// 1. up, killed while it builds the testbed.
	const building = 30
	for i := range building {
		name := uniqueName()
		d := spread(i, building, ft.ready)
		up, _ := foreground(t, bin, name, variants[i%len(variants)]...)
		kill(up, d, name)
		next(i, fmt.Sprintf("up killed %v after its start", d.Round(time.Microsecond)), name, nil)
	}

	// 2. up, killed while it tears down after SIGTERM, with a daemon to
	// end inside.
	const tearing = 10
	for i := range tearing {
		name := uniqueName()
		up, ready := foreground(t, bin, name, variants[i%len(variants)]...)
		waitReady(t, ready)
		mustCLI(t, "exec", name, "--on", "server", "--", "sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 &")
		ids := nsIDs(name)
		procs, err := netns.ProcessesIn(ids...)
		if err != nil || len(procs) != 1 {
			t.Fatalf("processes in the testbed: %+v, %v; want the sleep", procs, err)
		}
		d := spread(i, tearing, ft.teardown)
		up.Process.Signal(syscall.SIGTERM)
		kill(up, d, name)
		next(i, fmt.Sprintf("up killed %v after SIGTERM", d.Round(time.Microsecond)), name, procs)
	}

	// 3. down, killed while it removes a detached testbed.
	const downing = 10
	for i := range downing {
		name := uniqueName()
		mustCLI(t, "up", "--name", name, "--detach")
		mustCLI(t, "exec", name, "--", "sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 &")
		procs, err := netns.ProcessesIn(nsIDs(name)...)
		if err != nil || len(procs) != 1 {
			t.Fatalf("processes in the testbed: %+v, %v; want the sleep", procs, err)
		}
		procs = append(procs, owner(t, name))
		d := spread(i, downing, ft.down)
		down := exec.Command(bin, "down", name)
		if err := down.Start(); err != nil {
			t.Fatal(err)
		}
		kill(down, d, name)
		// What a killed down leaves, the owner may still be removing:
		// the next command is a down, which waits for it.
		if _, errOut, code := cli(t, "down", name); code != 0 && !strings.Contains(errOut, "there is no testbed "+name) {
			t.Fatalf("down after a killed down: exit %d, %s", code, errOut)
		}
		check(fmt.Sprintf("down killed %v after its start, then down", d.Round(time.Microsecond)), name, nil, procs)
	}

	// 4. the parent of up --detach, killed while its background copy
	// starts; the copy goes on, and the next command removes it.
	const detaching = 5
	for i := range detaching {
		name := uniqueName()
		d := spread(i, detaching, ft.ready)
		parent := exec.Command(bin, "up", "--name", name, "--detach")
		if err := parent.Start(); err != nil {
			t.Fatal(err)
		}
		kill(parent, d, name)
		// Wait until the background copy, if it started, is up or gone:
		// a `down` now could find it between its start and its record.
		waitFor(t, "the background copy to settle", func() bool {
			running := false
			for _, p := range wanlabProcesses(t, bin) {
				running = true
				if strings.Contains(p, "--name="+name) {
					return registeredAndListening(name)
				}
			}
			return !running
		})
		var procs []netns.Proc
		if registeredAndListening(name) {
			procs = []netns.Proc{owner(t, name)}
		}
		if _, errOut, code := cli(t, "down", name); code != 0 && !strings.Contains(errOut, "there is no testbed "+name) {
			t.Fatalf("down after a killed up --detach: exit %d, %s", code, errOut)
		}
		check(fmt.Sprintf("up --detach killed %v after its start, then down", d.Round(time.Microsecond)), name, nil, procs)
	}
	t.Logf("%d SIGKILLs, %d of which left something for the next command to remove; nothing was left after it", kills, dirty)
	if dirty == 0 || dirty == kills {
		t.Errorf("%d of %d kills left something: the kills missed the phases in which wanlab has built part of a testbed", dirty, kills)
	}

	// 5. SIGINT, SIGTERM, SIGHUP and SIGQUIT end up cleanly by themselves,
	// while it builds the testbed and once it runs.
	sigs := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}
	for i := range 2 * len(sigs) {
		sig, building := sigs[i%len(sigs)], i < len(sigs)
		if building && signal.Ignored(sig) {
			// Started with sig ignored (a job a shell put in the
			// background ignores SIGINT and SIGQUIT, nohup SIGHUP),
			// up inherits that, and a sig before its handler is
			// installed is lost, as it would be for any program: only
			// the handler's part can be checked.
			t.Logf("%v is ignored in this process, so in up until its handler is installed: sent once up is ready instead", sig)
			building = false
		}
		name := uniqueName()
		up, ready := foreground(t, bin, name)
		var d time.Duration
		if building {
			d = spread(i, len(sigs), ft.ready)
			time.Sleep(d)
		} else {
			waitReady(t, ready)
			mustCLI(t, "exec", name, "--", "sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 &")
		}
		ids := nsIDs(name)
		procs, _ := netns.ProcessesIn(ids...)
		up.Process.Signal(sig)
		code, killedBy := exitOf(up)
		// Before its handler is installed a signal ends up by itself;
		// up installs it before it touches anything.
		if !building && (code != 0 || killedBy != 0) {
			t.Errorf("up ended by %v once ready: exit %d, signal %v; want 0", sig, code, killedBy)
		}
		check(fmt.Sprintf("%v %v after up's start (exit %d, signal %v), no next command", sig, d.Round(time.Microsecond), code, killedBy), name, ids, procs)
	}
}

// registeredAndListening reports whether testbed name is on record and its
// control socket answers.
func registeredAndListening(name string) bool {
	states, _ := netns.Testbeds()
	for _, st := range states {
		if st.Name == name && st.Owner.Alive() {
			out, err := exec.Command(binPath, "status", name, "--json").CombinedOutput()
			return err == nil && strings.HasPrefix(string(out), "{")
		}
	}
	return false
}

// TestCLIQuitEndsCleanly: SIGQUIT (Ctrl-\) ends the commands that build
// namespaces as SIGTERM does, rather than dumping goroutines and leaving
// the namespaces and the programs in them: a foreground `up` with a
// daemon in a host removes everything and exits 0; a `run` keeps what it
// measured, marked partial, and removes its testbed.
func TestCLIQuitEndsCleanly(t *testing.T) {
	bin := wanlabBin(t)
	name := uniqueName()
	up, ready := foreground(t, bin, name)
	t.Cleanup(func() {
		up.Process.Kill()
		cli(t, "down", name)
	})
	waitReady(t, ready)
	mustCLI(t, "exec", name, "--", "sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 &")
	ids := nsIDs(name)
	procs, err := netns.ProcessesIn(ids...)
	if err != nil || len(procs) != 1 {
		t.Fatalf("processes in the testbed: %+v, %v; want the sleep", procs, err)
	}
	up.Process.Signal(syscall.SIGQUIT)
	if code, sig := exitOf(up); code != 0 || sig != 0 {
		t.Errorf("up ended by SIGQUIT: exit %d, signal %v; want 0", code, sig)
	}
	if left := append(processesLeft(t, ids, procs), leftovers(t, name)...); len(left) > 0 {
		t.Errorf("up ended by SIGQUIT left:\n  %s", strings.Join(left, "\n  "))
	}

	dir := t.TempDir()
	run, _, errOut := startRun(t, dir, "ping", "--both", "netem delay 5ms", "--duration", "20s", "-o", "x.json.gz")
	runBed := runName(run.Process.Pid)
	waitFor(t, "the run's testbed", func() bool { return nsExists(runBed) })
	time.Sleep(time.Second)
	run.Process.Signal(syscall.SIGQUIT)
	code, sig := exitOf(run)
	if code != exitFailure || !strings.Contains(errOut.String(), "ended early") || strings.Contains(errOut.String(), "goroutine ") {
		t.Errorf("run ended by SIGQUIT: exit %d, signal %v, stderr %.300q; want 1 saying it ended early", code, sig, errOut.String())
	}
	assertNothingLeft(t, runBed)
	if doc, err := results.ReadFile(filepath.Join(dir, "x.json.gz")); err != nil || !doc.Run.Partial {
		t.Errorf("the run's results after SIGQUIT: %v; want them, marked partial", err)
	}
}
