package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"wanlab/lab"
)

func init() { addCommand(newShellCommand) }

func newShellCommand(s *streams) *cobra.Command {
	var on string
	c := &cobra.Command{
		Use:   "shell [N] [--on client|server]",
		Short: "Open an interactive shell inside a host of a running testbed",
		Long: `shell runs $SHELL (or /bin/bash, or /bin/sh) inside the client (default) or
the server of testbed N, on a terminal of its own when wanlab runs on one.
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
			name, err := testbedArg(args)
			if err != nil {
				return err
			}
			return runShell(s, name, role)
		},
	}
	c.Flags().StringVar(&on, "on", "client", "host to run the shell on: client or server")
	return c
}

func runShell(s *streams, name string, role lab.Role) error {
	sh := os.Getenv("SHELL")
	if sh == "" {
		sh = "/bin/sh"
		if _, err := os.Stat("/bin/bash"); err == nil {
			sh = "/bin/bash"
		}
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
	i := lab.InfoOf(name).Host(role)
	fmt.Fprintf(s.err, "wanlab: %s of testbed %s (netns %s, %s); the peer is $WANLAB_PEER4; leave with exit\n", role, name, i.NS, i.Addr4)
	err := execIn(s, name, role, argv, true, env)
	if _, ok := err.(exitStatus); ok {
		return nil // an interactive shell's last status is no error of wanlab's
	}
	return err
}
