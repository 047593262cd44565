package lab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"wanlab/netns"
)

// Errors wrapped by the client functions.
var (
	// ErrNotRunning: no live process runs the testbed.
	ErrNotRunning = errors.New("not running")
	// ErrAmbiguous: no testbed was named and several are running.
	ErrAmbiguous = errors.New("several testbeds are running")
)

// Running returns the names of the testbeds whose owners are alive, sorted.
func Running() ([]string, error) {
	states, err := netns.Testbeds()
	var names []string
	for _, st := range states {
		if st.Owner.Alive() {
			names = append(names, st.Name)
		}
	}
	return names, err
}

// Resolve returns name if a testbed of that name runs, or, for an empty
// name, the only running testbed. Its errors say what to do.
func Resolve(name string) (string, error) {
	running, err := Running()
	if name != "" {
		if err := CheckName(name); err != nil {
			return "", err
		}
		for _, n := range running {
			if n == name {
				return name, nil
			}
		}
		return "", fmt.Errorf("testbed %s is %w; start it with `wanlab up --name %s`", name, ErrNotRunning, name)
	}
	switch len(running) {
	case 0:
		if err != nil {
			return "", err
		}
		return "", notRunning("no testbed is running; start one with `wanlab up`")
	case 1:
		return running[0], nil
	}
	return "", fmt.Errorf("%w (%s); name one", ErrAmbiguous, strings.Join(running, ", "))
}

// dial connects to testbed name's control socket.
func dial(name string) (*net.UnixConn, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	path := SocketPath(name)
	c, err := net.DialUnix(network, nil, &net.UnixAddr{Name: path, Net: network})
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("testbed %s is %w (no one listens on %s); start it with `wanlab up --name %s`", name, ErrNotRunning, path, name)
		}
		return nil, fmt.Errorf("testbed %s: %w", name, err)
	}
	return c, nil
}

// call sends req to testbed name and returns its one response.
func call(name string, req request) (response, error) {
	c, err := dial(name)
	if err != nil {
		return response{}, err
	}
	defer c.Close()
	if err := send(c, req); err != nil {
		return response{}, fmt.Errorf("testbed %s: %w", name, err)
	}
	var resp response
	files, err := recv(c, &resp)
	closeAll(files)
	if err != nil {
		return response{}, fmt.Errorf("testbed %s: %w", name, err)
	}
	if resp.Error != "" {
		return resp, fmt.Errorf("testbed %s: %s", name, resp.Error)
	}
	return resp, nil
}

// GetStatus returns the description and live counters of the running
// testbed name. Each direction lists its flows busiest first: the flows
// busiest, or all of them when flows is 0 (FlowsTotal says how many there
// are).
func GetStatus(name string, flows int) (Status, error) {
	if flows < 0 {
		return Status{}, fmt.Errorf("testbed %s: a status request for %d flows; ask for 0 (all) or more", name, flows)
	}
	resp, err := call(name, request{Op: "status", Flows: flows})
	if err != nil {
		return Status{}, err
	}
	if resp.Status == nil {
		return Status{}, fmt.Errorf("testbed %s: empty status", name)
	}
	return *resp.Status, nil
}

// Set replaces the chain (tc syntax, "" for a direct path) of direction
// dir ("up", "down" or "both") of the running testbed name.
func Set(name, dir, chain string) error {
	if _, err := directions(dir); err != nil {
		return err
	}
	_, err := call(name, request{Op: "set", Dir: dir, Chain: chain})
	return err
}

// notRunning is an error that matches ErrNotRunning with a message of its
// own.
type notRunning string

func (n notRunning) Error() string        { return string(n) }
func (n notRunning) Is(target error) bool { return target == ErrNotRunning }

// noTestbed is the error for a testbed name nobody has registered; it
// matches os.ErrNotExist.
type noTestbed string

func (n noTestbed) Error() string {
	return fmt.Sprintf("there is no testbed %s (see `wanlab status`)", string(n))
}
func (n noTestbed) Is(target error) bool { return target == os.ErrNotExist }

// downWait is how long Down waits for a live owner to finish its own
// cleanup before it removes what is left itself.
const downWait = 15 * time.Second

// Down stops and removes testbed name. A live owner is asked through the
// control socket and given downWait to clean up; whatever is still there
// then, or what a dead owner left, is removed through netns.Remove. It
// returns an error wrapping os.ErrNotExist if there is no such testbed.
func Down(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	_, err := call(name, request{Op: "down"})
	if err == nil {
		deadline := time.Now().Add(downWait)
		for registered(name) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	} else if !registered(name) {
		removeFiles(name)
		return noTestbed(name)
	}
	if registered(name) {
		err = netns.Remove(name)
	} else {
		err = nil
	}
	removeFiles(name)
	return err
}

// DownAll removes every testbed, running or left behind, and returns the
// names of those it removed.
func DownAll() ([]string, error) {
	states, err := netns.Testbeds()
	errs := []error{err}
	var names []string
	for _, st := range states {
		if err := Down(st.Name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		names = append(names, st.Name)
	}
	_, err = CleanStale()
	errs = append(errs, err)
	return names, errors.Join(errs...)
}

// CleanStale removes what testbeds whose owners died left behind: their
// processes, namespaces and records (netns.CleanStale), and control sockets
// and logs that no testbed claims any more. It returns the namespaces it
// deleted.
func CleanStale() ([]string, error) {
	removed, err := netns.CleanStale()
	entries, rerr := os.ReadDir(RunDir)
	if rerr != nil {
		return removed, err
	}
	for _, e := range entries {
		n := e.Name()
		name, ok := strings.CutSuffix(n, ".sock")
		if !ok {
			name, ok = strings.CutSuffix(n, ".log")
		}
		if !ok || CheckName(name) != nil || registered(name) {
			continue
		}
		os.Remove(SocketPath(name))
		os.Remove(LogPath(name))
	}
	return removed, err
}

// registered reports whether the registry holds a record of testbed name.
func registered(name string) bool {
	states, _ := netns.Testbeds()
	for _, st := range states {
		if st.Name == name {
			return true
		}
	}
	return false
}

func removeFiles(name string) {
	os.Remove(SocketPath(name))
	os.Remove(LogPath(name))
}
