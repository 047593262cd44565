package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"wanlab/lab"
)

func newShellCommand(s *streams) *cobra.Command {
	var on string
	c := &cobra.Command{
		Use:   "shell [N] [--on client|server|HOST]",
		Short: "Open an interactive shell inside a host of a running testbed",
		Long: `shell runs $SHELL inside the client (default), the server or, on a dumbbell
of more hosts, any host (--on c2, --on s3; c1 is the client, s1 the server) of testbed N,
on a terminal of its own when wanlab runs on one; if $SHELL is unset or
names no program that can run, /bin/bash, or else /bin/sh.
The prompt starts with (wanlab N:HOST); WANLAB_PEER4 and WANLAB_PEER6 hold
the other host's addresses. Leave it with exit. 'wanlab down' ends the
shell if it still runs.

N may be left out when one testbed is running.`,
		Example: `  wanlab shell
  wanlab shell wan --on server`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			role, err := lab.ParseRole(on)
			if err != nil {
				return usagef("--on: %v", err)
			}
			if err := enterLab(); err != nil {
				return err
			}
			name, err := testbedArg(args)
			if err != nil {
				return err
			}
			if err := checkHost(name, role); err != nil {
				return err
			}
			return runShell(s, name, role)
		},
	}
	c.Flags().StringVar(&on, "on", "client", "host to run the shell on: client or server, or a dumbbell's c1..c16, s1..s16")
	return c
}

func runShell(s *streams, name string, role lab.Role) error {
	sh, why := pickShell(os.Getenv("SHELL"))
	if why != "" {
		fmt.Fprintf(s.err, "wanlab: warning: %s; running %s instead\n", why, sh)
	}
	if !isTerminal(s.in) {
		// Commands piped in: a plain shell reads and runs them.
		return execIn(s, name, role, []string{sh}, false, nil)
	}
	prompt := fmt.Sprintf("(wanlab %s:%s) ", name, role)
	argv := []string{sh, "-i"}
	env := []string{"PS1=" + prompt + `\u@\h:\w\$ `}
	if filepath.Base(sh) == "bash" {
		// bash takes PS1 from its startup file, which usually sets one:
		// read the user's, then prefix the prompt it made.
		rc, err := os.CreateTemp("", "wl-shellrc-*")
		if err != nil {
			return err
		}
		defer os.Remove(rc.Name())
		fmt.Fprintf(rc, "[ -f ~/.bashrc ] && . ~/.bashrc\nPS1=%q\"$PS1\"\n", prompt)
		if err := rc.Close(); err != nil {
			return err
		}
		argv = []string{sh, "--rcfile", rc.Name(), "-i"}
	}
	i := lab.HostInfoOf(name, role)
	fmt.Fprintf(s.err, "wanlab: %s of testbed %s (netns %s, %s); the peer is $WANLAB_PEER4; leave with exit\n", role, name, i.NS, i.Addr4)
	err := execIn(s, name, role, argv, true, env)
	if _, ok := err.(exitStatus); ok {
		return nil // an interactive shell's last status is no error of wanlab's
	}
	return err
}

// pickShell returns the shell to run: $SHELL (env) if it names a program
// that can run, else /bin/bash, else /bin/sh; why says why a $SHELL that
// was set was passed over. The hosts share wanlab's file system (only the
// network is their own), so what runs here runs there.
func pickShell(env string) (sh, why string) {
	if env != "" {
		p, err := runnable(env)
		if err == nil {
			return p, ""
		}
		why = fmt.Sprintf("$SHELL %s %v", env, err)
	}
	if _, err := runnable("/bin/bash"); err == nil {
		return "/bin/bash", why
	}
	return "/bin/sh", why
}

// runnable returns the program name names, looked up in $PATH if it has no
// slash, as exec looks it up, or why it cannot run: missing, not a regular
// file, or without execute permission.
func runnable(name string) (string, error) {
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", errors.New("is not a program in $PATH")
		}
		return p, nil
	}
	st, err := os.Stat(name)
	switch {
	case err != nil:
		return "", errors.New("does not exist")
	case !st.Mode().IsRegular():
		return "", errors.New("is not a regular file")
	case unix.Access(name, unix.X_OK) != nil:
		return "", errors.New("is not executable")
	}
	return name, nil
}
