package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"wanlab/lab"
)

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
	} {
		args = append([]string{"up", "--name", name}, args...)
		_, errOut, code := cli(t, args...)
		if code != exitUsage || strings.Count(errOut, "\n") != 1 {
			t.Errorf("wanlab %q: exit %d, stderr %q; want 2 and one line", args, code, errOut)
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
	st, err := lab.GetStatus(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Up.Chain, "delay 5ms") || st.Down.Chain != "" {
		t.Errorf("after refused sets the chains are up %q, down %q; want them unchanged (netem delay 5ms, direct)", st.Up.Chain, st.Down.Chain)
	}
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
