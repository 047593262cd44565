package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"

	"wanlab/netns"
)

// serveExec starts spec inside its host as a recorded process of the
// testbed and reports its exit status. The client passed its stdin, stdout
// and stderr (or, for a TTY program, nothing: it receives the master of a
// new pseudo-terminal instead). Signals the client forwards go to the
// program's process group; if the client goes away first, the group gets
// SIGHUP, as when a terminal hangs up.
func (t *Testbed) serveExec(c *net.UnixConn, spec ExecSpec, files []*os.File) {
	defer func() { closeAll(files) }()
	if spec.Host == "" {
		spec.Host = Client
	}
	r, err := ParseRole(string(spec.Host))
	if err == nil {
		err = t.info.Has(r)
	}
	if err != nil {
		send(c, response{Error: err.Error()})
		return
	}
	spec.Host = r
	if len(spec.Args) == 0 || spec.Path == "" {
		send(c, response{Error: "exec: no program given"})
		return
	}
	var master *os.File
	var stdio [3]*os.File
	switch {
	case spec.TTY:
		m, slave, err := openPTY()
		if err != nil {
			send(c, response{Error: err.Error()})
			return
		}
		master = m
		files = append(files, slave) // closed once the program has it
		stdio = [3]*os.File{slave, slave, slave}
	case len(files) == 3:
		copy(stdio[:], files)
	default:
		send(c, response{Error: fmt.Sprintf("exec: got %d file descriptors, want stdin, stdout and stderr", len(files))})
		return
	}
	cmd := t.nt.Command(t.hosts[spec.Host], spec.Path, spec.Args[1:]...)
	cmd.Args[0] = spec.Args[0]
	cmd.Env = withEnv(spec.Env, Env(t.info, spec.Host))
	cmd.Dir = spec.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio[0], stdio[1], stdio[2]
	// A session of its own: the program has no controlling terminal but
	// the pseudo-terminal, if any, and a process group that signals reach
	// as a whole. Without a controlling terminal, a program that reads a
	// terminal it was handed is not stopped for reading from the
	// background.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: spec.TTY}
	if err := t.start(cmd); err != nil {
		if master != nil {
			master.Close()
		}
		if errors.Is(err, errClosing) {
			send(c, response{Error: err.Error()})
			return
		}
		code, msg := startFailure(spec.Path, err)
		send(c, response{Error: msg, Exit: &code})
		return
	}
	pid := cmd.Process.Pid
	t.logf("testbed %s: %s runs %q as pid %d", t.opts.Name, spec.Host, spec.Args, pid)
	if master != nil {
		err = send(c, response{PID: pid}, master)
		master.Close()
	} else {
		err = send(c, response{PID: pid})
	}
	if err != nil {
		syscall.Kill(-pid, syscall.SIGHUP) // nobody is left to talk to it
	}
	// The stdio copies are the program's now.
	closeAll(files)
	files = nil
	g := &group{pid: pid}
	go g.forward(c)
	cmd.Wait()
	g.exited()
	code := cmd.Status()
	t.logf("testbed %s: pid %d exited with status %d", t.opts.Name, pid, code)
	send(c, response{Exit: &code})
}

// group is the process group of a program started by exec; it is signalled
// only while the program has not been reaped, so that a reused pid is
// never hit.
type group struct {
	mu   sync.Mutex
	pid  int
	done bool
}

func (g *group) signal(sig syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.done {
		syscall.Kill(-g.pid, sig)
	}
}

// exited records that the program is gone. Its group may live on in
// children it left behind; the testbed's Close ends them with every other
// process in its hosts, but signals forwarded from now on no longer reach
// them.
func (g *group) exited() {
	g.mu.Lock()
	g.done = true
	g.mu.Unlock()
}

// forward relays the client's signal messages to the group until the
// connection ends; a client that goes away while the program runs hangs the
// group up, as a closed terminal would.
func (g *group) forward(c *net.UnixConn) {
	for {
		var req request
		if _, err := recv(c, &req); err != nil {
			g.signal(syscall.SIGHUP)
			return
		}
		if req.Op == "signal" && req.Signal > 0 && req.Signal < 65 {
			g.signal(syscall.Signal(req.Signal))
		}
	}
}

// StartError is Exec's error for a program that could not be started. Its
// message is worded as a shell words it ("PATH: No such file or
// directory"), and Code is the exit status a shell gives: 127 for a
// program that does not exist, 126 for one that cannot be run.
type StartError struct {
	Code int
	Msg  string
}

func (e *StartError) Error() string { return e.Msg }

// startFailure words a failed start as a shell would and picks its exit
// status.
func startFailure(path string, err error) (code int, msg string) {
	code = 126
	var errno syscall.Errno
	if errors.As(err, &errno) && errno == syscall.ENOENT {
		code = 127
	}
	what := path
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "chdir" {
		what = "working directory " + pe.Path
	}
	reason := err.Error()
	if errno != 0 {
		reason = errno.Error()
		reason = strings.ToUpper(reason[:1]) + reason[1:]
	}
	return code, what + ": " + reason
}

// errClosing is start's error once Close has begun.
var errClosing = errors.New("exec: the testbed is going down")

// start starts cmd in its host unless Close has begun. It holds t.mu while
// the program is started, because starting enters the host's namespace
// through a handle that Close releases: Close waits for a start under way,
// and no start begins after it.
func (t *Testbed) start(cmd *netns.Cmd) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errClosing
	}
	return cmd.Start()
}
