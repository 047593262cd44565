package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

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

// streams are the standard streams a command uses, so tests can capture them.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// commands lists the constructors of the subcommands; each subcommand's file
// adds itself in an init function.
var commands []func(s *streams) *cobra.Command

func addCommand(f func(s *streams) *cobra.Command) { commands = append(commands, f) }

// newRoot builds the command tree.
func newRoot(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:           "wanlab",
		Short:         "A WAN lab on one Linux machine: tc's qdiscs in a userspace router between namespaces",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef("%v (see 'wanlab %s --help')", err, c.Name())
	})
	for _, f := range commands {
		root.AddCommand(f(s))
	}
	return root
}

// run executes the command line and returns the exit status.
func run(args []string, in io.Reader, out, errOut io.Writer) int {
	s := &streams{in: in, out: out, err: errOut}
	root := newRoot(s)
	root.SetArgs(args)
	err := root.Execute()
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
	if errors.As(err, &ue) || errors.Is(err, lab.ErrBadInput) || isCobraUsage(err) {
		return exitUsage
	}
	return exitFailure
}

// isCobraUsage recognises the errors cobra itself returns for bad command
// lines (unknown commands, wrong argument counts), which are usage errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires at most", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
