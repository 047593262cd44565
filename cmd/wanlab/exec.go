package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"wanlab/internal/errwriter"
	"wanlab/lab"
)

func newExecCommand(s *streams) *cobra.Command {
	var on string
	var tty bool
	c := &cobra.Command{
		Use:   "exec [N] [--on client|server|HOST] -- CMD [ARGS...]",
		Short: "Run a program inside a host of a running testbed",
		Long: `exec runs CMD inside the client (default), the server or, on a dumbbell of
more hosts, any host (--on c2, --on s3; c1 is the client, s1 the server)
of testbed N, with stdin, stdout and stderr passed through, and exits with CMD's exit status
(128+n if a signal n ended it; 127 if CMD does not exist and 126 if it
cannot be run, as in a shell). SIGINT, SIGTERM, SIGHUP and SIGQUIT that
reach exec are passed on to CMD. The program is recorded in the testbed, so
'wanlab down' ends it if it still runs.

The program sees WANLAB_PEER4 and WANLAB_PEER6 (the other host's addresses;
on a dumbbell the first host of the other side's, s1 or c1),
WANLAB_ADDR4 and WANLAB_ADDR6 (its own), WANLAB_HOST and WANLAB_NAME. Your
shell expands $VARIABLES before wanlab runs, so let a shell inside the host
expand them, or write @peer and @peer6, which exec replaces in the arguments
with the peer's IPv4 and IPv6 address.

N may be left out when one testbed is running.`,
		Example: `  wanlab exec -- ping -c 3 @peer
  wanlab exec -- sh -c 'ping -c 3 $WANLAB_PEER4'
  wanlab exec wan --on server -- iperf3 -s -1 &
  wanlab exec wan -- iperf3 -c @peer -t 10 --json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			dash := c.ArgsLenAtDash()
			if dash < 0 {
				return usagef("put the program after --: wanlab exec [N] [--on client|server|HOST] -- CMD [ARGS...]")
			}
			if dash > 1 {
				return usagef("exec takes at most one testbed name before --, got %q", args[:dash])
			}
			if dash == len(args) {
				return usagef("no program after --: wanlab exec [N] -- CMD [ARGS...]")
			}
			role, err := lab.ParseRole(on)
			if err != nil {
				return usagef("--on: %v", err)
			}
			if err := enterLab(); err != nil {
				return err
			}
			name, err := testbedArg(args[:dash])
			if err != nil {
				return err
			}
			if err := checkHost(name, role); err != nil {
				return err
			}
			argv := lab.ExpandPeer(args[dash:], lab.InfoOf(name), role)
			return execIn(s, name, role, argv, tty, nil)
		},
	}
	c.Flags().StringVar(&on, "on", "client", "host to run on: client or server, or a dumbbell's c1..c16, s1..s16")
	c.Flags().BoolVarP(&tty, "tty", "t", false, "run on a new pseudo-terminal, for full-screen and interactive programs")
	return c
}

// checkHost refuses a host of a dumbbell that testbed name does not have,
// naming those it has (the client and the server every testbed has).
func checkHost(name string, role lab.Role) error {
	if role == lab.Client || role == lab.Server {
		return nil
	}
	st, err := lab.GetStatus(name, 1)
	if err != nil {
		return err
	}
	if err := st.Info.Has(role); err != nil {
		return usagef("--on: %v", err)
	}
	return nil
}

// execIn runs argv inside host role of testbed name and returns its exit
// status as an exitStatus (nil for 0). env is added to wanlab's own
// environment.
func execIn(s *streams, name string, role lab.Role, argv []string, tty bool, env []string) error {
	path := argv[0]
	if !strings.Contains(path, "/") {
		// Looked up in wanlab's $PATH, as a shell would before running
		// it, and refused as a shell refuses it.
		p, err := exec.LookPath(path)
		if err != nil {
			return &statusError{code: 127, msg: path + ": command not found"}
		}
		path = p
	}
	dir, err := os.Getwd()
	if err != nil {
		dir = "/"
	}
	spec := lab.ExecSpec{Host: role, Path: path, Args: argv, Env: append(os.Environ(), env...), Dir: dir, TTY: tty}
	files, done, err := stdioFiles(s)
	if err != nil {
		return err
	}
	code, err := lab.Exec(name, spec, files[0], files[1], files[2])
	done()
	var se *lab.StartError
	if errors.As(err, &se) {
		return &statusError{code: se.Code, msg: se.Msg}
	}
	if err != nil {
		return err
	}
	if code != 0 {
		return exitStatus(code)
	}
	return nil
}

// stdioFiles returns the command's streams as files, which exec hands to
// the program. Streams that are not files (in tests) are bridged through
// pipes; done closes wanlab's ends and waits until the output is copied.
func stdioFiles(s *streams) (files [3]*os.File, done func(), err error) {
	var wg sync.WaitGroup
	var mine []*os.File
	fail := func(err error) ([3]*os.File, func(), error) {
		for _, f := range mine {
			f.Close()
		}
		return files, nil, err
	}
	if f, ok := s.in.(*os.File); ok {
		files[0] = f
	} else {
		pr, pw, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		files[0] = pr
		mine = append(mine, pr)
		go func() {
			io.Copy(pw, s.in)
			pw.Close()
		}()
	}
	for i, w := range []io.Writer{s.out, s.err} {
		if o, ok := w.(*errwriter.Writer); ok {
			// The program writes to the file itself, a terminal
			// staying a terminal.
			w = o.Underlying()
		}
		if f, ok := w.(*os.File); ok {
			files[i+1] = f
			continue
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		files[i+1] = pw
		mine = append(mine, pw)
		wg.Add(1)
		go func() {
			defer wg.Done()
			io.Copy(w, pr)
			pr.Close()
		}()
	}
	return files, func() {
		for _, f := range mine {
			f.Close()
		}
		wg.Wait()
	}, nil
}

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
