package lab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"wanlab/internal/distfile"
	"wanlab/netns"
	"wanlab/tcspec"
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
	running, _, err := testbeds()
	return running, err
}

// testbeds returns the names of the registered testbeds whose owners are
// alive and the records of those whose owners died, each sorted by name.
func testbeds() (running []string, dead []netns.State, err error) {
	states, err := netns.Testbeds()
	for _, st := range states {
		if st.Owner.Alive() {
			running = append(running, st.Name)
		} else {
			dead = append(dead, st)
		}
	}
	return running, dead, err
}

// Resolve returns name if a testbed of that name runs, or, for an empty
// name, the only running testbed. Its errors say what to do; where an
// owner died (SIGKILL) and left its namespaces and programs behind, they
// say what is left and how to remove it.
func Resolve(name string) (string, error) {
	running, dead, err := testbeds()
	if name != "" {
		if err := CheckName(name); err != nil {
			return "", err
		}
		if slices.Contains(running, name) {
			return name, nil
		}
		for _, st := range dead {
			if st.Name == name {
				return "", notRunning(fmt.Sprintf("testbed %s is not running: %s", name, leftBehind(st)))
			}
		}
		return "", fmt.Errorf("testbed %s is %w; start it with `wanlab up --name %s`", name, ErrNotRunning, name)
	}
	switch len(running) {
	case 0:
		if len(dead) > 0 {
			notes := make([]string, len(dead))
			for i, st := range dead {
				notes[i] = "testbed " + st.Name + " is left over: " + leftBehind(st)
			}
			return "", notRunning("no testbed is running; " + strings.Join(notes, "; "))
		}
		if err != nil {
			return "", err
		}
		return "", notRunning("no testbed is running; start one with `wanlab up`")
	case 1:
		return running[0], nil
	}
	return "", fmt.Errorf("%w (%s); name one", ErrAmbiguous, strings.Join(running, ", "))
}

// leftBehind describes what the dead owner of st left: its namespaces
// that still exist and the processes in them, and the command that
// removes them (the next `wanlab up` or `run` would too).
func leftBehind(st netns.State) string {
	var left []string
	var ids []netns.ID
	for _, ns := range st.Namespaces {
		if id, err := netns.IDOf(ns); err == nil {
			left = append(left, ns)
			ids = append(ids, id)
		}
	}
	what := "its record"
	if len(left) > 0 {
		what = "namespaces " + strings.Join(left, ", ")
		if procs, err := netns.ProcessesIn(ids...); err == nil && len(procs) > 0 {
			noun := "processes"
			if len(procs) == 1 {
				noun = "process"
			}
			what += fmt.Sprintf(" with %d %s in them", len(procs), noun)
		}
	}
	return fmt.Sprintf("its owner (pid %d) died and left %s; remove them with `wanlab down %s`", st.Owner.PID, what, st.Name)
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
		err := fmt.Errorf("testbed %s: %s", name, resp.Error)
		if resp.BadInput {
			err = bad(err)
		}
		return resp, err
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

// Set changes chains of the running testbed name: each ChainText names a
// direction ("up", "down" or "both") and a chain in tc syntax ("" for a
// direct path). The chains are read and checked here first, so that bad
// input gives an ErrBadInput error and changes nothing; distribution files
// they name are read here too (package distfile: relative to the caller's
// working directory, or in tc's library directories) and their tables sent
// along, so the testbed, whose working directory is another, never looks
// for them itself. The testbed then checks every chain against its
// direction before applying any. Set returns what changed in each
// direction.
func Set(name string, sets ...ChainText) ([]DirChange, error) {
	req, err := setRequest(sets)
	if err != nil {
		return nil, err
	}
	resp, err := call(name, req)
	return resp.Changes, err
}

// setRequest checks the chains of a set and reads the distribution files
// they name, as Set describes, and returns the request that carries them.
func setRequest(sets []ChainText) (request, error) {
	tables := map[string][]int16{}
	load := func(n string) ([]int16, error) {
		t, err := distfile.Load(n)
		if err == nil {
			tables[n] = t
		}
		return t, err
	}
	for _, s := range sets {
		if _, err := directions(s.Dir); err != nil {
			return request{}, bad(err)
		}
		if s.Script != "" {
			// Its steps depend on the testbed's tree, which checks them.
			if _, err := tcspec.ParseScript(s.Script, tcspec.ScriptOptions{Options: tcspec.Options{LoadDist: load}}); err != nil {
				return request{}, bad(err)
			}
			continue
		}
		specs, err := tcspec.ParseChain(s.Chain, tcspec.Options{LoadDist: load})
		if err != nil {
			return request{}, bad(err)
		}
		if err := CheckChain(specs); err != nil {
			return request{}, bad(err)
		}
	}
	return request{Op: "set", Sets: sets, Dists: tables}, nil
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
// control socket and given downWait to clean up and exit; whatever is still
// there then, or what a dead owner left, is removed through netns.Remove,
// which ends every process in the testbed's namespaces. It returns an
// error wrapping os.ErrNotExist if there is no such testbed, and an
// ErrBadInput error for a name no testbed can have.
func Down(name string) error {
	if err := CheckName(name); err != nil {
		return bad(err)
	}
	return down(name)
}

// down is Down for a name taken from the registry, which an older wanlab
// may have accepted where CheckName no longer does.
func down(name string) error {
	log := LogPath(name)
	owner, found := ownerOf(name)
	if !found && logInUse(log) {
		// A detached run holds its log but has no record: it is starting
		// and will be on record in a moment, or it has just removed its
		// record and is exiting. Either settles quickly.
		waitUntil(downWait, func() bool { return registered(name) || !logInUse(log) })
		owner, found = ownerOf(name)
	}
	_, err := call(name, request{Op: "down"})
	if err != nil && !found {
		netns.Remove(name) // only removes a record's stale temporary
		removeFiles(name)
		return noTestbed(name)
	}
	if err == nil {
		// The owner removes everything itself; wait until it has and
		// has exited, so that nothing of it runs once down returns.
		waitUntil(downWait, func() bool { return !registered(name) && !owner.Alive() })
	}
	err = nil
	if registered(name) {
		err = netns.Remove(name)
		if errors.Is(err, os.ErrNotExist) {
			err = nil // its owner removed it just now
		}
	}
	// An exiting owner's leader thread can be a zombie while its other
	// threads still exit; the lock on its log goes only with the last.
	waitUntil(downWait, func() bool { return !logInUse(log) })
	removeFiles(name)
	return err
}

// waitUntil polls cond until it holds or d has passed.
func waitUntil(d time.Duration, cond func() bool) {
	deadline := time.Now().Add(d)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// DownAll removes every testbed, running or left behind, and returns the
// names of those it removed.
func DownAll() ([]string, error) {
	states, err := netns.Testbeds()
	errs := []error{err}
	var names []string
	for _, st := range states {
		if err := down(st.Name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		names = append(names, st.Name)
	}
	_, err = CleanStale()
	errs = append(errs, err)
	return names, errors.Join(errs...)
}

// CleanStale removes what testbeds whose owners died left behind: every
// process in their namespaces, the namespaces and the records
// (netns.CleanStale), and control sockets and logs that no testbed claims
// any more. A log that a starting detached run holds (ClaimLog) is left
// alone. It returns the namespaces it deleted.
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
		// Every other file here is wanlab's too, but not a testbed's.
		if !ok || name == "" || name[0] == '.' || registered(name) {
			continue
		}
		removeFiles(name)
	}
	return removed, err
}

// registered reports whether the registry holds a record of testbed name.
func registered(name string) bool {
	_, ok := ownerOf(name)
	return ok
}

// ownerOf returns the owner of testbed name's record, if there is one.
func ownerOf(name string) (netns.Proc, bool) {
	states, _ := netns.Testbeds()
	for _, st := range states {
		if st.Name == name {
			return st.Owner, true
		}
	}
	return netns.Proc{}, false
}

func removeFiles(name string) {
	os.Remove(SocketPath(name))
	removeLog(name)
}
