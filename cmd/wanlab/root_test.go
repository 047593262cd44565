package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestUnknownSubcommandsRefused walks the command tree: every command that
// groups others refuses an argument that names none of them, with status 2
// and one line that says "unknown command" and names the nearest command;
// without an argument it prints its help. cobra's own handling printed the
// help and exited 0 for `wanlab experiment nosuch DIR`, as if it had run.
func TestUnknownSubcommandsRefused(t *testing.T) {
	root := newRoot(&streams{in: strings.NewReader(""), out: new(strings.Builder), err: new(strings.Builder)})
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	parents := 0
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if !c.HasSubCommands() {
			return
		}
		parents++
		subs := c.Commands()
		near := subs[len(subs)-1].Name()
		for _, arg := range [][]string{{"nosuch", "DIR"}, {near + "x"}} {
			args := append(append([]string(nil), path...), arg...)
			out, errOut, code := runWanlab(t, args...)
			msg := strings.TrimSpace(errOut)
			if code != exitUsage || strings.Contains(msg, "\n") || !strings.Contains(msg, `unknown command "`+arg[0]+`"`) || !strings.Contains(msg, near) || out != "" {
				t.Errorf("wanlab %q: exit %d, stdout %q, stderr %q; want 2 and one line saying unknown command %q and naming %s", args, code, out, errOut, arg[0], near)
			}
		}
		if out, errOut, code := runWanlab(t, path...); code != exitOK || !strings.Contains(out, "Usage:") {
			t.Errorf("wanlab %q: exit %d, stdout %q, stderr %q; want its help and 0", path, code, out, errOut)
		}
		for _, sub := range subs {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(root, nil)
	if parents < 3 {
		t.Errorf("found %d commands with subcommands; want at least wanlab, experiment and completion", parents)
	}
	// help of a command that does not exist is refused the same way.
	if _, errOut, code := runWanlab(t, "help", "experiment", "nosuch"); code != exitUsage || !strings.Contains(errOut, `unknown command "nosuch" for "wanlab experiment"`) {
		t.Errorf("wanlab help experiment nosuch: exit %d, %q; want 2, unknown command", code, errOut)
	}
	if out, _, code := runWanlab(t, "help", "experiment", "run"); code != exitOK || !strings.Contains(out, "wanlab experiment run") {
		t.Errorf("wanlab help experiment run: exit %d, %q; want its help", code, out)
	}
}

// Every command given far too many arguments exits 2 with one line,
// whichever check refuses them (cobra's counts, a command's own, a file
// that does not exist), without depending on the wording of cobra's
// messages.
func TestTooManyArgumentsAreUsage(t *testing.T) {
	root := newRoot(&streams{in: strings.NewReader(""), out: new(strings.Builder), err: new(strings.Builder)})
	junk := make([]string, 30)
	for i := range junk {
		junk[i] = fmt.Sprintf("wl-nonexistent-%d", i)
	}
	leaves := 0
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Runnable() && !c.HasSubCommands() {
			leaves++
			args := append(append([]string(nil), path...), junk...)
			out, errOut, code := runWanlab(t, args...)
			if msg := strings.TrimSpace(errOut); code != exitUsage || strings.Contains(msg, "\n") || out != "" {
				t.Errorf("wanlab %s with 30 arguments: exit %d, stdout %q, stderr %q; want 2 and one line", strings.Join(path, " "), code, out, errOut)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(root, nil)
	if leaves < 15 {
		t.Errorf("tried %d commands; want every one", leaves)
	}
}
