package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"wanlab/internal/errwriter"
	"wanlab/lab"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // something went wrong while running
	exitUsage   = 2 // bad input: the message says what to change
)

// usageError is bad input from the user; it exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a usageError; the message should name the problem and the fix.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitStatus ends wanlab with a status of its own choosing and no message:
// `wanlab exec` passes on the status of the program it ran.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// statusError ends wanlab with its message and a status of its own, as a
// shell ends when it cannot start a program (127 or 126).
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

// stopSignals end a command cleanly, whenever they come: Ctrl-C, kill, a
// closed terminal and Ctrl-\ (SIGQUIT, whose default, a goroutine dump,
// would leave a testbed's namespaces and the programs in them behind).
// Every command that builds namespaces catches them all.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// streams are the standard streams a command uses, so tests can capture them.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// commands lists the constructors of wanlab's subcommands, one file each
// (help lists them by name).
var commands = []func(s *streams) *cobra.Command{
	// Runs and sweeps: build a path, drive traffic, write results.
	newRunCommand, newExperimentCommand, newCalibrateCommand,
	// A testbed that stays up: build it, use it, change it, remove it;
	// or the router between two interfaces of the machine.
	newUpCommand, newBridgeCommand, newStatusCommand, newExecCommand, newShellCommand, newSetCommand, newDownCommand,
	// The views of saved results.
	newShowCommand, newTableCommand, newCompareCommand, newPlotCommand, newReportCommand, newExportCommand,
	// The emulation on a virtual clock, without root.
	newSimCommand,
}

// newRoot builds the command tree.
func newRoot(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:           "wanlab",
		Short:         "A WAN lab on one Linux machine: tc's qdiscs in a userspace router between namespaces",
		SilenceUsage:  true,
		SilenceErrors: true,
		// The same version every results file records, so that a
		// figure can be traced to the build that measured it.
		Version: wanlabVersion(),
	}
	root.SetVersionTemplate("wanlab {{.Version}}\n")
	forceRootless = false
	root.PersistentFlags().BoolVar(&forceRootless, "rootless", false, "build and reach testbeds inside a user namespace, as an ordinary user does, even as root (without root this is the default)")
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef("%s (see '%s --help')", flagError(err), c.CommandPath())
	})
	for _, f := range commands {
		root.AddCommand(f(s))
	}
	// cobra adds these two when the command line runs; added now, they
	// get the same handling of unknown commands as the others.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	refuseUnknownCommands(root)
	argsAreUsage(root)
	return root
}

// refuseUnknownCommands makes every command of the tree under c that only
// groups others (experiment, completion, wanlab itself) refuse an argument
// that names none of them: cobra would print the help and exit 0, as if
// `wanlab experiment nosuch DIR` had run. Without an argument such a
// command still prints its help. `wanlab help` gets the same check.
func refuseUnknownCommands(c *cobra.Command) {
	switch {
	case c.Name() == "help" && c.HasParent() && !c.HasSubCommands():
		c.Run = nil
		c.RunE = func(h *cobra.Command, args []string) error {
			target := h.Root()
			for _, a := range args {
				next := subcommand(target, a)
				if next == nil {
					return unknownCommand(target, a)
				}
				target = next
			}
			return target.Help()
		}
	case c.HasSubCommands() && !c.Runnable():
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return unknownCommand(c, args[0])
		}
	}
	for _, sub := range c.Commands() {
		refuseUnknownCommands(sub)
	}
}

// subcommand returns the subcommand of c that name or one of its aliases
// names, or nil.
func subcommand(c *cobra.Command, name string) *cobra.Command {
	for _, sub := range c.Commands() {
		if sub.Name() == name || sub.HasAlias(name) {
			return sub
		}
	}
	return nil
}

// unknownCommand is the usage error for a word that names no subcommand
// of c: it names the nearest ones, as cobra's suggestions find them (a
// typo, a prefix), or else lists them all.
func unknownCommand(c *cobra.Command, name string) error {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, set where it suggests
	}
	if near := c.SuggestionsFor(name); len(near) > 0 {
		last := len(near) - 1
		alternatives := near[last]
		if last > 0 {
			alternatives = strings.Join(near[:last], ", ") + " or " + near[last]
		}
		return usagef("unknown command %q for %q: did you mean %s? (see '%s --help')", name, c.CommandPath(), alternatives, c.CommandPath())
	}
	return usagef("unknown command %q for %q: give one of %s (see '%s --help')", name, c.CommandPath(), strings.Join(names, ", "), c.CommandPath())
}

// run executes the command line and returns the exit status.
func run(args []string, in io.Reader, out, errOut io.Writer) int {
	stdout := errwriter.New(out)
	s := &streams{in: in, out: stdout, err: errOut}
	root := newRoot(s)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil && stdout.Err() != nil {
		// A summary, table or document that did not reach its reader (a
		// full disk or device behind the redirection) is a failure, not
		// a success that printed nothing.
		err = fmt.Errorf("writing the standard output: %w", stdout.Err())
	}
	if err == nil {
		return exitOK
	}
	var xs exitStatus
	if errors.As(err, &xs) {
		return int(xs)
	}
	fmt.Fprintf(errOut, "wanlab: %s\n", strings.TrimSpace(err.Error()))
	var se *statusError
	if errors.As(err, &se) {
		return se.code
	}
	var ue *usageError
	if errors.As(err, &ue) || errors.Is(err, lab.ErrBadInput) {
		return exitUsage
	}
	return exitFailure
}

// argsAreUsage makes every argument check of the tree under c (cobra's
// ExactArgs, MinimumNArgs, ... and the commands' own) a usage error, so
// that a wrong number of arguments exits 2 without the exit code depending
// on the wording of cobra's messages.
func argsAreUsage(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			var ue *usageError
			if err == nil || errors.As(err, &ue) {
				return err
			}
			return usagef("%v (see '%s --help')", err, cmd.CommandPath())
		}
	}
	for _, sub := range c.Commands() {
		argsAreUsage(sub)
	}
}

// flagValueError matches pflag's message for a value its type cannot take:
// invalid argument "V" for "--flag" flag: REASON.
var flagValueError = regexp.MustCompile(`^invalid argument "(.*)" for "(-[^"]*)" flag: (.*)$`)

// flagError rewrites pflag's message for a value of the wrong type into
// the flag, the value and what to give instead (strconv's and time's
// reasons name the parser, not the fix); other errors pass unchanged.
func flagError(err error) string {
	m := flagValueError.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	flag, value, reason := m[2], m[1], m[3]
	var want string
	switch {
	case strings.Contains(reason, "ParseUint"):
		want = "a whole number from 0 up"
	case strings.Contains(reason, "ParseInt"):
		want = "a whole number"
	case strings.Contains(reason, "ParseFloat"):
		want = "a number"
	case strings.Contains(reason, "ParseBool"):
		want = "true or false"
	case strings.Contains(reason, "time: "):
		want = "a duration with its unit, such as 500ms, 10s or 2m"
	default:
		return err.Error()
	}
	if strings.Contains(reason, "value out of range") {
		return fmt.Sprintf("%s %q is out of range: give %s that fits", flag, value, want)
	}
	return fmt.Sprintf("%s %q: give %s", flag, value, want)
}

// survivePipes makes a write to a stdout or stderr whose reader went away
// fail with EPIPE, as a write to any other pipe does, instead of ending
// wanlab (Go's default for those two): a run or a testbed writing its
// capture to a pipe (--pcap -) goes on, and removes what it built, when
// the reader stops. Programs wanlab starts get the default back at exec.
func survivePipes() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) }
