package testrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"wanlab/clock"
	"wanlab/lab"
	"wanlab/netns"
	"wanlab/results"
	"wanlab/traffic"
)

// customKind is the FlowInfo.Kind of the custom test's commands.
const customKind = "custom_commands"

// CommandError is a custom command that kept the run from starting: the
// server could not start, exited, or did not listen in time. Its message
// says which and what the command printed last.
type CommandError struct{ msg string }

func (e *CommandError) Error() string { return e.msg }

// commandFlow runs the custom test's commands as a traffic.Flow. Open
// starts the server command in the server host and waits until it listens;
// Start starts the client command in the client host when the load begins,
// and watches both: a command that cannot start, exits with a non-zero
// status, or (the client) still runs ClientGrace after the load ends, ends
// the run through stop. Close ends what still runs. The commands' traffic
// is measured at the router, not here.
type commandFlow struct {
	s     *Setup
	b     bed
	info  lab.Info
	clk   *clock.Real             // the run's clock
	stop  context.CancelCauseFunc // ends the traffic early, with a cause
	warnf func(string, ...any)
	// traffic is the run's traffic context: done when the run was
	// stopped early, not merely at its end.
	traffic context.Context

	port           int
	server, client *userCommand // server is nil without --server
	env            traffic.Env
	wg             sync.WaitGroup
	started        bool
}

var _ traffic.Flow = (*commandFlow)(nil)

func newCommandFlow(s *Setup, b bed, clk *clock.Real, trafficCtx context.Context, stop context.CancelCauseFunc, warnf func(string, ...any)) *commandFlow {
	return &commandFlow{s: s, b: b, info: lab.InfoOf(s.Lab), clk: clk, traffic: trafficCtx, stop: stop, warnf: warnf}
}

func (f *commandFlow) Label() string { return "custom commands" }

func (f *commandFlow) Window() (start, stop time.Duration) { return 0, f.s.Length() }

// environ returns the variables a command in host r sees: the testbed's (as
// `wanlab exec` gives them) and WANLAB_PORT and WANLAB_DURATION, the
// values of @port and @duration.
func (f *commandFlow) environ(r lab.Role) []string {
	return append(append(os.Environ(), lab.Env(f.info, r)...),
		"WANLAB_PORT="+strconv.Itoa(f.port), "WANLAB_DURATION="+durationWord(f.s.Duration))
}

// Open chooses @port, starts the server command and waits until it
// listens: on @port if the command names it, else on any port that was
// not listening before (TCP) or bound (UDP), for at most ServerWait.
func (f *commandFlow) Open(ctx context.Context) error {
	h, _ := f.b.host(lab.Server, false)
	port, err := freePort(h)
	if err != nil {
		return fmt.Errorf("choosing @port in the server host: %w", err)
	}
	f.port = port
	o := f.s.Opts
	f.client = newUserCommand(lab.Client, o.Client, expandCommand(o.Client, f.info, lab.Client, port, f.s.Duration))
	if o.Server == "" {
		return nil
	}
	f.server = newUserCommand(lab.Server, o.Server, expandCommand(o.Server, f.info, lab.Server, port, f.s.Duration))
	before, err := listening(h)
	if err != nil {
		return err
	}
	if err := f.server.start(f.b, f.environ(lab.Server), f.clk); err != nil {
		return &CommandError{fmt.Sprintf("the server command could not start: %v", err)}
	}
	if f.s.ServerWait == 0 {
		return nil
	}
	inode, err := f.waitListening(ctx, h, before)
	if err != nil {
		f.server.terminate()
		return err
	}
	// A server that daemonised listens from a process outside the
	// command's process group: wanlab ends that process at the end too.
	if err := f.server.adoptDaemons(h, inode); err != nil {
		f.server.terminate()
		return &CommandError{fmt.Sprintf("finding the process that listens for the server command: %v", err)}
	}
	return nil
}

// waitListening waits until the server command listens, and returns the
// inode of the socket it listens on. A command that exits with status 0
// before it listens may have daemonised (iperf3 -s -D): its daemon still
// gets until ServerWait to listen.
func (f *commandFlow) waitListening(ctx context.Context, h *netns.Handle, before map[listenKey]uint64) (inode uint64, err error) {
	byPort := namesPort(f.server.text)
	deadline := time.Now().Add(f.s.ServerWait)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	exited := f.server.exited
	for {
		now, err := listening(h)
		if err != nil {
			return 0, err
		}
		for k, ino := range now {
			if _, old := before[k]; byPort && int(k.port) == f.port || !byPort && !old {
				return ino, nil
			}
		}
		select {
		case <-exited:
			if code := f.server.exitCode(); code != 0 {
				return 0, &CommandError{fmt.Sprintf("the server command exited with status %d before it listened; %s", code, f.server.lastWords())}
			}
			exited = nil
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			where := fmt.Sprintf("on @port (%d)", f.port)
			if !byPort {
				where = "on any new TCP or UDP port"
			}
			if exited == nil {
				return 0, &CommandError{fmt.Sprintf("the server command exited with status 0 (as a server that daemonises does), and nothing listened %s within --server-wait %v (%s): make it, or its daemon, listen on @port, or give a longer --server-wait",
					where, f.s.ServerWait, f.server.lastWords())}
			}
			return 0, &CommandError{fmt.Sprintf("the server command did not listen %s within --server-wait %v, and wanlab ended it (%s): make it listen on @port, give a longer --server-wait, or --server-wait 0 not to wait",
				where, f.s.ServerWait, f.server.lastWords())}
		}
	}
}

// Start watches the server and starts the client when the load begins.
func (f *commandFlow) Start(ctx context.Context, env traffic.Env) {
	f.env = env
	f.started = true
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.watch(ctx)
	}()
}

// watch runs the client at the load's start and ends the run when a
// command fails.
func (f *commandFlow) watch(ctx context.Context) {
	var serverExited <-chan struct{}
	if f.server != nil {
		serverExited = f.server.exited
	}
	clk := f.env.Clock
	w := traffic.NewWaiter(clk)
	lead := w.Alarm(f.env.At(f.s.Lead))
	loadEnd := f.env.At(f.s.Lead + f.s.Duration)
	// The client's exit and hang are watched once the load has started it.
	var clientExited <-chan struct{}
	var hung <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-serverExited:
			// The server's end: a failure ends the run.
			serverExited = nil
			if f.server.judgeExit(f.env) {
				f.stop(errors.New(f.server.failureText()))
				return
			}
		case <-lead:
			lead = nil // the waiter's channel is hung's from now on
			if err := f.client.start(f.b, f.environ(lab.Client), clk); err != nil {
				f.client.fail(fmt.Sprintf("the client command could not start: %v", err))
				f.stop(errors.New(f.client.failureText()))
				return
			}
			clientExited = f.client.exited
			hung = w.Alarm(loadEnd.Add(ClientGrace))
		case <-clientExited:
			clientExited, hung = nil, nil
			if f.client.judgeExit(f.env) {
				f.stop(errors.New(f.client.failureText()))
				return
			}
			if at := f.client.end(); at < loadEnd.Add(-f.s.Duration/10) {
				f.warnf("the client command exited %v into the load of %v, with status 0: what it sent is all there is",
					at.Sub(f.env.At(f.s.Lead)).Round(time.Millisecond), f.s.Duration)
			}
		case <-hung:
			f.client.fail(f.hungText())
			f.stop(errors.New(f.client.failureText()))
			return
		}
	}
}

func (f *commandFlow) hungText() string {
	return fmt.Sprintf("the client command still ran %v after the load of %v (its @duration) had ended: wanlab ended it; make it stop after @duration seconds", ClientGrace, f.s.Duration)
}

// Sample does nothing: the commands' traffic is read at the router.
func (f *commandFlow) Sample(int, clock.Time) {}

// Close ends the commands. After a run that was not stopped early, a
// client still running gets until ClientGrace after the load (which a
// tail shorter than that does not cover) before it counts as hung.
func (f *commandFlow) Close() {
	if !f.started {
		if f.server != nil {
			f.server.terminate()
		}
		return
	}
	f.wg.Wait()
	if c := f.client; c.isRunning() {
		if f.traffic.Err() == nil {
			deadline := f.env.At(f.s.Lead + f.s.Duration + ClientGrace)
			select {
			case <-c.exited:
				c.judgeExit(f.env)
			case <-traffic.NewWaiter(f.env.Clock).Alarm(deadline):
				c.fail(f.hungText())
			}
		}
		c.terminate()
	}
	if f.server != nil {
		f.server.terminate()
		if f.traffic.Err() == nil {
			f.server.judgeExit(f.env)
		}
	}
}

// failure returns the first failure of the commands, or "".
func (f *commandFlow) failure() string {
	for _, c := range []*userCommand{f.client, f.server} {
		if c != nil {
			if t := c.failureText(); t != "" {
				return t
			}
		}
	}
	return ""
}

// Result returns the commands as the results record them.
func (f *commandFlow) Result() traffic.FlowResult {
	r := &commandsResult{FlowInfo: traffic.FlowInfo{Label: f.Label(), Kind: customKind, Stop: f.s.Length()}, Port: f.port}
	for _, c := range []*userCommand{f.server, f.client} {
		if c != nil {
			r.Commands = append(r.Commands, c.record(f.env.T0))
		}
	}
	return r
}

// commandsResult is what the custom test's commands did.
type commandsResult struct {
	traffic.FlowInfo
	Port     int
	Commands []results.Command
}

// userCommand is one of the user's commands: started with sh -c in its
// own process group, its output captured.
type userCommand struct {
	role           lab.Role
	text, expanded string
	out, errOut    *capture
	exited         chan struct{} // closed once it has ended and been reaped
	cmd            *netns.Cmd
	// daemons are the processes the command left running outside its
	// process group, holding the socket it listens on: the daemon of a
	// server that daemonised. Set once, in Open, before the run.
	daemons []netns.Proc

	mu        sync.Mutex
	started   bool
	reaped    bool
	startedAt clock.Time
	endedAt   clock.Time
	code      int
	byWanlab  bool
	judged    bool
	failed    string
}

func newUserCommand(r lab.Role, text, expanded string) *userCommand {
	return &userCommand{role: r, text: text, expanded: expanded,
		out: newCapture(OutputLimit), errOut: newCapture(OutputLimit), exited: make(chan struct{})}
}

// start runs the command in its host, timed on clk.
func (u *userCommand) start(b bed, env []string, clk *clock.Real) error {
	dir, err := os.Getwd()
	if err != nil {
		dir = "/"
	}
	u.cmd = b.command(u.role, "/bin/sh", "-c", u.expanded)
	u.cmd.Env = env
	u.cmd.Dir = dir
	u.cmd.Stdout, u.cmd.Stderr = u.out, u.errOut
	// A process group of its own, which wanlab can end as a whole.
	u.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A program that exits but leaves children holding its output open
	// does not keep Wait waiting.
	u.cmd.WaitDelay = time.Second
	if err := u.cmd.Start(); err != nil {
		close(u.exited)
		return err
	}
	u.mu.Lock()
	u.started = true
	u.startedAt = clk.Now()
	u.mu.Unlock()
	go func() {
		u.cmd.Wait()
		u.mu.Lock()
		u.reaped = true
		u.endedAt = clk.Now()
		u.code = u.cmd.Status()
		u.mu.Unlock()
		close(u.exited)
	}()
	return nil
}

func (u *userCommand) isRunning() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.started && !u.reaped
}

func (u *userCommand) exitCode() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.code
}

func (u *userCommand) end() clock.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.endedAt
}

// judgeExit decides, once the command has ended by itself, whether it
// failed: a non-zero status is a failure. It reports whether it failed.
func (u *userCommand) judgeExit(env traffic.Env) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.reaped || u.judged || u.byWanlab {
		return false
	}
	u.judged = true
	if u.code == 0 {
		return false
	}
	u.failed = fmt.Sprintf("the %s command exited with status %d, %v into the run; %s", u.role, u.code,
		u.endedAt.Sub(env.T0).Round(time.Millisecond), u.lastWordsLocked())
	return true
}

// fail records why the command failed the run, unless it already has.
func (u *userCommand) fail(why string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.judged = true
	if u.failed == "" {
		u.failed = why
	}
}

func (u *userCommand) failureText() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.failed
}

// lastWords says, for an error message, what the command printed last:
// the last line of its standard error, else of its standard output.
func (u *userCommand) lastWords() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lastWordsLocked()
}

func (u *userCommand) lastWordsLocked() string {
	for _, c := range []*capture{u.errOut, u.out} {
		if t, _ := c.text(); strings.TrimSpace(t) != "" {
			return "its last line: " + lastLine(t)
		}
	}
	return "it printed nothing"
}

// signal sends sig to the command's process group while the command has
// not been reaped, so that a reused process id is never hit.
func (u *userCommand) signal(sig syscall.Signal) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.started && !u.reaped {
		u.byWanlab = true
		syscall.Kill(-u.cmd.Process.Pid, sig)
	}
}

// terminate ends the command if it still runs: SIGTERM to its process
// group, SIGKILL two seconds later; it returns once the command is
// reaped. Then it ends the command's daemons the same way.
func (u *userCommand) terminate() {
	defer u.endDaemons()
	if !u.isRunning() {
		return
	}
	u.signal(syscall.SIGTERM)
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-u.exited:
	case <-t.C:
		u.signal(syscall.SIGKILL)
		<-u.exited
	}
}

// adoptDaemons finds the processes in h's namespace that hold the
// listening socket inode and are not in the command's process group
// (which terminate ends): a daemon the command started, which escaped
// the group with setsid, as daemon(3) does.
func (u *userCommand) adoptDaemons(h *netns.Handle, inode uint64) error {
	if inode == 0 {
		return nil
	}
	id, err := h.ID()
	if err != nil {
		return err
	}
	procs, err := netns.ProcessesIn(id)
	if err != nil {
		return err
	}
	socket := fmt.Sprintf("socket:[%d]", inode)
	for _, p := range procs {
		if pgid, err := syscall.Getpgid(p.PID); err != nil || pgid == u.cmd.Process.Pid || !holds(p.PID, socket) {
			continue
		}
		u.daemons = append(u.daemons, p)
	}
	return nil
}

// holds reports whether process pid has a descriptor open on target (a
// readlink of /proc/PID/fd/N, such as "socket:[1234]").
func holds(pid int, target string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if l, err := os.Readlink(dir + fd.Name()); err == nil && l == target {
			return true
		}
	}
	return false
}

// endDaemons ends the command's daemons that still run: SIGTERM, SIGKILL
// two seconds later.
func (u *userCommand) endDaemons() {
	if len(u.daemons) > 0 {
		netns.End(2*time.Second, u.daemons...)
	}
}

// record describes the command for the results; times count from t0.
func (u *userCommand) record(t0 clock.Time) results.Command {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := results.Command{Role: string(u.role), Command: u.text, Expanded: u.expanded, Started: u.started,
		ExitCode: u.code, EndedByWanlab: u.byWanlab, Error: u.failed}
	for _, d := range u.daemons {
		c.DaemonPIDs = append(c.DaemonPIDs, d.PID)
	}
	if u.started {
		c.StartS = u.startedAt.Sub(t0).Seconds()
	}
	if u.reaped {
		c.EndS = u.endedAt.Sub(t0).Seconds()
	}
	c.Stdout, c.StdoutBytes = u.out.text()
	c.Stderr, c.StderrBytes = u.errOut.text()
	return c
}

// freePort returns a port that no TCP or UDP socket uses in h's
// namespace, for @port.
func freePort(h *netns.Handle) (port int, err error) {
	err = netns.Do(h, func() error {
		for range 20 {
			ln, err := net.Listen("tcp", ":0")
			if err != nil {
				return err
			}
			p := ln.Addr().(*net.TCPAddr).Port
			uc, uerr := net.ListenPacket("udp", ":"+strconv.Itoa(p))
			ln.Close()
			if uerr == nil {
				uc.Close()
				port = p
				return nil
			}
		}
		return errors.New("no port was free for both TCP and UDP in 20 tries")
	})
	return port, err
}

// listenKey is a port a socket listens on (TCP) or is bound to (UDP).
type listenKey struct {
	proto string
	port  uint16
}

// listening returns the TCP ports listened on and the UDP ports bound by
// unconnected sockets in h's namespace, from /proc/net (as ss -ltun
// reads them), each with the inode of a socket on it.
func listening(h *netns.Handle) (map[listenKey]uint64, error) {
	out := map[listenKey]uint64{}
	err := netns.Do(h, func() error {
		for _, f := range []struct{ file, proto, state string }{
			// The kernel's socket states: TCP_LISTEN is 0x0A, and an
			// unconnected UDP socket is TCP_CLOSE, 0x07.
			{"tcp", "tcp", "0A"}, {"tcp6", "tcp", "0A"}, {"udp", "udp", "07"}, {"udp6", "udp", "07"},
		} {
			// thread-self: this thread is in the namespace, the
			// process's main thread is not.
			b, err := os.ReadFile("/proc/thread-self/net/" + f.file)
			if errors.Is(err, os.ErrNotExist) {
				continue // no IPv6 in this kernel
			}
			if err != nil {
				return fmt.Errorf("reading the server host's sockets: %w", err)
			}
			for _, line := range strings.Split(string(b), "\n")[1:] {
				fields := strings.Fields(line)
				if len(fields) < 10 || fields[3] != f.state {
					continue
				}
				_, hexPort, ok := strings.Cut(fields[1], ":")
				p, err := strconv.ParseUint(hexPort, 16, 16)
				if !ok || err != nil {
					continue
				}
				ino, _ := strconv.ParseUint(fields[9], 10, 64)
				out[listenKey{f.proto, uint16(p)}] = ino
			}
		}
		return nil
	})
	return out, err
}
