package netns

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"syscall"
)

// Cmd is an exec.Cmd whose process starts inside a network namespace. Set
// its fields (Stdin, Stdout, Env, ...) as for exec.Cmd; Start, Run, Output
// and CombinedOutput then fork from a thread inside the namespace, so the
// child and everything it starts live there. The child does not get the
// private /sys and /etc/netns overlays that `ip netns exec` adds, so it
// should learn about interfaces through netlink or /proc, not /sys/class/net.
type Cmd struct {
	*exec.Cmd
	ns      *Handle
	started func(*Cmd) error // called after a successful start
	exited  func(*Cmd)       // called after Wait returns
}

// Command returns a Cmd that runs name with args inside ns.
func Command(ns *Handle, name string, args ...string) *Cmd {
	return &Cmd{Cmd: exec.Command(name, args...), ns: ns}
}

// CommandContext is Command with a context that kills the process (as
// exec.CommandContext does) when it is done.
func CommandContext(ctx context.Context, ns *Handle, name string, args ...string) *Cmd {
	return &Cmd{Cmd: exec.CommandContext(ctx, name, args...), ns: ns}
}

// Start starts the process inside the namespace.
func (c *Cmd) Start() error {
	if err := Do(c.ns, c.Cmd.Start); err != nil {
		return err
	}
	if c.started != nil {
		return c.started(c)
	}
	return nil
}

// Wait waits for the process to exit, as exec.Cmd.Wait does.
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	if c.exited != nil {
		c.exited(c)
	}
	return err
}

// Status is the finished process's status as a shell gives it: its exit
// code, or 128 plus the signal that ended it; 1 before Wait has returned.
func (c *Cmd) Status() int {
	ps := c.ProcessState
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// Run starts the process and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Output runs the process and returns its standard output. If Stderr is nil,
// a failed run's standard error is kept in the *exec.ExitError.
func (c *Cmd) Output() ([]byte, error) {
	if c.Stdout != nil {
		return nil, errors.New("netns: Stdout already set")
	}
	var stdout, stderr bytes.Buffer
	c.Stdout = &stdout
	captured := c.Stderr == nil
	if captured {
		c.Stderr = &stderr
	}
	err := c.Run()
	var ee *exec.ExitError
	if captured && errors.As(err, &ee) {
		ee.Stderr = stderr.Bytes()
	}
	return stdout.Bytes(), err
}

// CombinedOutput runs the process and returns its standard output and
// standard error together.
func (c *Cmd) CombinedOutput() ([]byte, error) {
	if c.Stdout != nil || c.Stderr != nil {
		return nil, errors.New("netns: Stdout or Stderr already set")
	}
	var b bytes.Buffer
	c.Stdout = &b
	c.Stderr = &b
	err := c.Run()
	return b.Bytes(), err
}
