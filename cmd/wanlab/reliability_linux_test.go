package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
