package lab

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// forwarded are the signals Exec passes on to the program while it runs.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// Exec runs spec inside a host of the running testbed name and returns its
// exit status (the exit code, or 128 plus the signal that ended it). The
// program is started by the testbed's owner, so it is recorded in the
// testbed and `wanlab down` ends it if it still runs. If it cannot be
// started the error is a *StartError.
//
// Without spec.TTY the program gets stdin, stdout and stderr themselves.
// With it, the program runs on a new pseudo-terminal that Exec connects to
// stdin and stdout, putting stdin in raw mode (and keeping the window size
// in step) if it is a terminal.
//
// While the program runs, the signals SIGINT, SIGTERM, SIGHUP and SIGQUIT
// that reach the calling process are forwarded to the program's process
// group instead; if the calling process dies, the group gets SIGHUP.
func Exec(name string, spec ExecSpec, stdin, stdout, stderr *os.File) (int, error) {
	c, err := dial(name)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	var pass []*os.File
	if !spec.TTY {
		pass = []*os.File{stdin, stdout, stderr}
	}
	if err := send(c, request{Op: "exec", Exec: &spec}, pass...); err != nil {
		return 0, fmt.Errorf("testbed %s: %w", name, err)
	}
	var started response
	files, err := recv(c, &started)
	if err != nil {
		return 0, fmt.Errorf("testbed %s: %w", name, err)
	}
	defer closeAll(files)
	if started.Error != "" && started.Exit != nil {
		return 0, &StartError{Code: *started.Exit, Msg: started.Error}
	}
	if started.Error != "" {
		return 0, fmt.Errorf("testbed %s: %s", name, started.Error)
	}
	var output chan struct{}
	if spec.TTY {
		if len(files) != 1 {
			return 0, fmt.Errorf("testbed %s: no pseudo-terminal came back", name)
		}
		restore, out, err := attach(files[0], stdin, stdout, sigs)
		if err != nil {
			return 0, err
		}
		defer restore()
		output = out
	}
	exit := make(chan response, 1)
	go func() {
		var r response
		if _, err := recv(c, &r); err != nil {
			r.Error = err.Error()
		}
		exit <- r
	}()
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGWINCH {
				copyWinsize(files[0], stdin)
				continue
			}
			send(c, request{Op: "signal", Signal: int(s.(syscall.Signal))})
		case r := <-exit:
			if output != nil {
				// The terminal's last output may still be on its way.
				select {
				case <-output:
				case <-time.After(time.Second):
				}
			}
			if r.Exit == nil {
				return 0, fmt.Errorf("testbed %s: lost the program: %s", name, r.Error)
			}
			return *r.Exit, nil
		}
	}
}

// attach connects the pseudo-terminal master to stdin and stdout. It
// returns a function that restores stdin's terminal mode and a channel
// closed when the program's output has ended.
func attach(master, stdin, stdout *os.File, sigs chan os.Signal) (restore func(), output chan struct{}, err error) {
	restore = func() {}
	if old, err := unix.IoctlGetTermios(int(stdin.Fd()), unix.TCGETS); err == nil {
		raw := *old
		makeRaw(&raw)
		if err := unix.IoctlSetTermios(int(stdin.Fd()), unix.TCSETS, &raw); err != nil {
			return nil, nil, fmt.Errorf("terminal: %w", err)
		}
		restore = func() { unix.IoctlSetTermios(int(stdin.Fd()), unix.TCSETS, old) }
		copyWinsize(master, stdin)
		signal.Notify(sigs, syscall.SIGWINCH)
	}
	// The input copy blocks in a read of stdin until the next key press;
	// it ends with the process.
	go io.Copy(master, stdin)
	output = make(chan struct{})
	go func() {
		// Reading the master fails with EIO once the program and all its
		// children have closed the terminal.
		io.Copy(stdout, master)
		close(output)
	}()
	return restore, output, nil
}

// makeRaw sets t as cfmakeraw(3) does: bytes pass unchanged, with no echo,
// line editing or signal keys, which the program's own terminal provides.
func makeRaw(t *unix.Termios) {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
}

func copyWinsize(master, stdin *os.File) {
	if ws, err := unix.IoctlGetWinsize(int(stdin.Fd()), unix.TIOCGWINSZ); err == nil {
		unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, ws)
	}
}
