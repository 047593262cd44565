package netns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/rundir"
)

// stateDir holds one state file per testbed, NAME.json, and the registry's
// lock file: /run/wanlab (see rundir). /run is a tmpfs, so a reboot,
// which also ends every namespace, empties it.
var stateDir = rundir.State()

const (
	stateVersion  = 1
	maxTestbedLen = 32
	maxRoleLen    = 16
	// childGrace is how long processes of a testbed get between SIGTERM
	// and SIGKILL.
	childGrace = 2 * time.Second
	// ownerGrace is how long Remove lets a live owner clean up after
	// SIGTERM before it kills it.
	ownerGrace = 5 * time.Second
)

// State is the record of one testbed in /run/wanlab/NAME.json. A namespace
// is written into it before it is created and removed from it only after it
// is deleted, so every namespace a testbed creates is always on record, even
// if its owner is killed at any moment.
type State struct {
	Version int       `json:"version"`
	Name    string    `json:"name"`
	Owner   Proc      `json:"owner"`
	Created time.Time `json:"created"`
	// Namespaces are the testbed's namespaces, removed with it.
	Namespaces []string `json:"namespaces"`
	// Devices are the interfaces the owner created inside those namespaces.
	// They are listed for people and tools; they disappear with their
	// namespace (or with the owner's file descriptors, for TUN devices).
	Devices []Device `json:"devices,omitempty"`
	// Children are processes the owner started inside the namespaces. They
	// are ended when the testbed is removed, with every other process
	// found in its namespaces, even if they have left them since.
	Children []Proc `json:"children,omitempty"`
}

// Device is an interface inside a testbed namespace.
type Device struct {
	NS   string `json:"ns"`
	Name string `json:"name"`
}

// NamespaceName returns the name of testbed's namespace with the given
// role: "wl-TESTBED-ROLE".
func NamespaceName(testbed, role string) string {
	return Prefix + testbed + "-" + role
}

// Testbed is a registered set of namespaces and processes owned by the
// calling process. Create it with NewTestbed and end it with Close; if the
// process dies first, the next CleanStale (or NewTestbed with the same name)
// removes what it left. A Testbed is safe for concurrent use.
type Testbed struct {
	name string
	self Proc

	mu      sync.Mutex
	handles []*Handle
	closed  bool
}

// NewTestbed registers a testbed called name (lowercase letters, digits,
// '-' and '_', at most 32 bytes) owned by the calling process. It fails if a
// live process owns a testbed of that name; a dead owner's leftovers are
// removed first.
func NewTestbed(name string) (*Testbed, error) {
	if err := checkWord("testbed name", name, maxTestbedLen); err != nil {
		return nil, err
	}
	self, unlock, err := lockSelf()
	if err != nil {
		return nil, err
	}
	defer unlock()
	old, err := readState(name)
	switch {
	case err == nil && old.Owner.Alive():
		return nil, fmt.Errorf("netns: testbed %q is up, owned by pid %d; stop it with `wanlab down %s`", name, old.Owner.PID, name)
	case err == nil:
		if _, err := teardown(old, self); err != nil {
			return nil, fmt.Errorf("netns: clearing the stale testbed %q: %w", name, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	st := State{Version: stateVersion, Name: name, Owner: self, Created: time.Now().UTC(), Namespaces: []string{}}
	if err := writeState(st); err != nil {
		return nil, err
	}
	return &Testbed{name: name, self: self}, nil
}

// Name returns the testbed's name.
func (t *Testbed) Name() string { return t.name }

// State returns the testbed's current record.
func (t *Testbed) State() (State, error) {
	unlock, err := lockRegistry()
	if err != nil {
		return State{}, err
	}
	defer unlock()
	return readState(t.name)
}

// update applies f to the testbed's record under the registry lock. It fails
// if the record is gone or owned by another process (the testbed was
// removed by `wanlab down`), so a removed testbed is never written back.
func (t *Testbed) update(f func(*State) error) error {
	unlock, err := lockRegistry()
	if err != nil {
		return err
	}
	defer unlock()
	return t.updateLocked(f)
}

func (t *Testbed) updateLocked(f func(*State) error) error {
	st, err := readState(t.name)
	if err != nil {
		return fmt.Errorf("netns: testbed %q was removed: %w", t.name, err)
	}
	if st.Owner != t.self {
		return fmt.Errorf("netns: testbed %q now belongs to pid %d", t.name, st.Owner.PID)
	}
	if err := f(&st); err != nil {
		return err
	}
	return writeState(st)
}

// Namespace creates the testbed's namespace for role (for instance "c" or
// "s"), named NamespaceName(t.Name(), role), and opens it. The testbed keeps
// the handle and closes it in Close.
func (t *Testbed) Namespace(role string) (*Handle, error) {
	if err := checkWord("role", role, maxRoleLen); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, fmt.Errorf("netns: testbed %q is closed", t.name)
	}
	name := NamespaceName(t.name, role)
	unlock, err := lockRegistry()
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Record first: a crash between the two steps leaves a claimed name,
	// never an unclaimed namespace.
	err = t.updateLocked(func(st *State) error {
		if slices.Contains(st.Namespaces, name) {
			return fmt.Errorf("netns: testbed %q already has a namespace %s", t.name, name)
		}
		st.Namespaces = append(st.Namespaces, name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	h, err := Create(name)
	if err != nil {
		t.updateLocked(func(st *State) error {
			st.Namespaces = slices.DeleteFunc(st.Namespaces, func(n string) bool { return n == name })
			return nil
		})
		return nil, err
	}
	t.handles = append(t.handles, h)
	return h, nil
}

// AddDevice records that the owner created the interface ifname inside ns.
func (t *Testbed) AddDevice(ns *Handle, ifname string) error {
	return t.update(func(st *State) error {
		d := Device{NS: ns.Name(), Name: ifname}
		if !slices.Contains(st.Devices, d) {
			st.Devices = append(st.Devices, d)
		}
		return nil
	})
}

// Command returns a Cmd that runs inside ns and is recorded in the testbed
// from Start until Wait returns. Removing the testbed, or cleaning it up
// after a crash, ends it and everything it started that is still in the
// testbed's namespaces (SIGTERM, then SIGKILL after two seconds), daemons
// included.
func (t *Testbed) Command(ns *Handle, name string, args ...string) *Cmd {
	c := Command(ns, name, args...)
	c.started = t.track
	c.exited = t.untrack
	return c
}

func (t *Testbed) track(c *Cmd) error {
	p, err := ProcOf(c.Process.Pid)
	if err != nil {
		return nil // exited already: nothing left to clean up
	}
	p.Cmd = filepath.Base(c.Path)
	return t.update(func(st *State) error {
		st.Children = append(st.Children, p)
		return nil
	})
}

func (t *Testbed) untrack(c *Cmd) {
	pid := c.Process.Pid
	t.update(func(st *State) error {
		st.Children = slices.DeleteFunc(st.Children, func(p Proc) bool { return p.PID == pid })
		return nil
	})
}

// Close ends every process in the testbed's namespaces and those it
// recorded (SIGTERM, then SIGKILL after two seconds), deletes its
// namespaces and removes its record. The calling process is never
// signalled, even while threads of it are inside a namespace. Closing twice
// is a no-op.
func (t *Testbed) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	for _, h := range t.handles {
		errs = append(errs, h.Close())
	}
	unlock, err := lockRegistry()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	defer unlock()
	st, err := readState(t.name)
	if errors.Is(err, os.ErrNotExist) {
		return errors.Join(errs...)
	}
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if st.Owner != t.self {
		return errors.Join(errs...)
	}
	_, err = teardown(st, t.self)
	return errors.Join(append(errs, err)...)
}

// Remove removes the testbed name, as `wanlab down NAME` does: if another
// live process owns it, that process gets SIGTERM (and SIGKILL after a
// grace period) so that it stops using the namespaces; then every process
// in the testbed's namespaces and those it recorded are ended, its
// namespaces deleted and its record removed. It returns an error wrapping
// os.ErrNotExist if there is no such testbed, having removed the temporary
// of a record whose writer was killed before it was complete.
func Remove(name string) error {
	if err := checkWord("testbed name", name, maxTestbedLen); err != nil {
		return err
	}
	self, unlock, err := lockSelf()
	if err != nil {
		return err
	}
	st, err := readState(name)
	if errors.Is(err, os.ErrNotExist) {
		// A record's writer killed before its rename leaves only the
		// temporary, which nobody else would remove until CleanStale.
		os.Remove(tempPath(name))
	}
	unlock()
	if err != nil {
		return fmt.Errorf("netns: no testbed %q: %w", name, err)
	}
	// Signal the owner without holding the lock: its own cleanup needs it.
	if st.Owner.PID != self.PID && st.Owner.Alive() {
		if err := endProcesses(nil, []Proc{st.Owner}, self.PID, ownerGrace); err != nil {
			return err
		}
	}
	unlock, err = lockRegistry()
	if err != nil {
		return err
	}
	defer unlock()
	st, err = readState(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil // the owner cleaned up after itself
	}
	if err != nil {
		return err
	}
	_, err = teardown(st, self)
	return err
}

// CleanStale removes every testbed whose owner is no longer running (the
// pid is gone or now belongs to a process with another start time): it
// ends every process in the testbed's namespaces and those it recorded,
// deletes its namespaces and removes its record, and it removes the
// temporary files of records whose writer was killed mid-write. It returns
// the names of the namespaces it deleted.
//
// Testbeds of live owners are left alone, and so are "wl-" namespaces that
// no record claims: a testbed records each namespace before creating it, so
// an unclaimed one was not made through a Testbed (a person's `ip netns add`,
// or another tool starting right now) and is not CleanStale's to remove. See
// Unclaimed.
func CleanStale() ([]string, error) {
	self, unlock, err := lockSelf()
	if err != nil {
		return nil, err
	}
	defer unlock()
	states, errs := readAllStates()
	removeTemporaries()
	var removed []string
	for _, st := range states {
		if st.Owner.Alive() {
			continue
		}
		gone, err := teardown(st, self)
		removed = append(removed, gone...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// Testbeds returns the records of all registered testbeds, sorted by name.
func Testbeds() ([]State, error) {
	unlock, err := lockRegistry()
	if err != nil {
		return nil, err
	}
	defer unlock()
	states, errs := readAllStates()
	return states, errors.Join(errs...)
}

// Unclaimed returns the mounted "wl-" namespaces that no testbed record
// claims. They were not created through a Testbed, or their record was
// removed by hand; `ip netns del` removes them.
func Unclaimed() ([]string, error) {
	states, err := Testbeds()
	if err != nil {
		return nil, err
	}
	all, err := List()
	if err != nil {
		return nil, err
	}
	claimed := map[string]bool{}
	for _, st := range states {
		for _, n := range st.Namespaces {
			claimed[n] = true
		}
	}
	var out []string
	for _, n := range all {
		if !claimed[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// teardown ends every process in st's namespaces and those it recorded
// (never self), deletes the namespaces and, if all of them are gone,
// removes its record. It returns the namespaces it deleted. The processes
// are found through the namespaces themselves, so programs that
// daemonised or were started by hand (`ip netns exec`) are ended too; the
// namespaces are deleted only once nothing runs in them, and a record
// whose processes could not all be ended is kept for a later retry. The
// caller holds the registry lock.
func teardown(st State, self Proc) ([]string, error) {
	var ids []ID
	for _, n := range st.Namespaces {
		if CheckName(n) != nil {
			continue
		}
		if id, err := idAt(filepath.Join(runDir, n)); err == nil {
			ids = append(ids, id)
		}
	}
	if err := endProcesses(ids, st.Children, self.PID, childGrace); err != nil {
		return nil, fmt.Errorf("netns: testbed %q kept for a later retry: %w", st.Name, err)
	}
	var errs []error
	var deleted []string
	for _, n := range st.Namespaces {
		existed := Exists(n)
		if err := Delete(n); err != nil {
			errs = append(errs, err)
			continue
		}
		if existed {
			deleted = append(deleted, n)
		}
	}
	if len(errs) > 0 {
		return deleted, fmt.Errorf("netns: testbed %q kept for a later retry: %w", st.Name, errors.Join(errs...))
	}
	// The temporary of an update its writer was killed in the middle of
	// goes with the record.
	os.Remove(tempPath(st.Name))
	if err := os.Remove(statePath(st.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return deleted, fmt.Errorf("netns: %w", err)
	}
	return deleted, nil
}

// lockSelf returns the calling process and takes the registry's lock,
// which the caller releases with unlock: how a change of the records
// starts.
func lockSelf() (self Proc, unlock func(), err error) {
	if self, err = Self(); err != nil {
		return Proc{}, nil, err
	}
	unlock, err = lockRegistry()
	return self, unlock, err
}

// lockRegistry takes the registry's exclusive lock. The lock is an flock on
// /run/wanlab/.lock, so the kernel releases it when its holder dies.
func lockRegistry() (unlock func(), err error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(stateDir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("netns: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

func statePath(name string) string { return filepath.Join(stateDir, name+".json") }

// tempPath is where writeState writes a record before renaming it.
func tempPath(name string) string { return filepath.Join(stateDir, "."+name+".json.tmp") }

func readState(name string) (State, error) {
	b, err := os.ReadFile(statePath(name))
	if err != nil {
		return State{}, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, fmt.Errorf("netns: %s: %w", statePath(name), err)
	}
	if st.Name != name {
		return State{}, fmt.Errorf("netns: %s records testbed %q", statePath(name), st.Name)
	}
	if st.Version != stateVersion {
		return State{}, fmt.Errorf("netns: %s has version %d, this wanlab reads %d", statePath(name), st.Version, stateVersion)
	}
	return st, nil
}

// writeState replaces the record atomically, so that readers (another
// process's CleanStale) never see half a file.
func writeState(st State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := tempPath(st.Name)
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	if err := os.Rename(tmp, statePath(st.Name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("netns: %w", err)
	}
	return nil
}

// removeTemporaries removes the temporary files of writeState. Records are
// written only under the registry lock, which the caller holds, so any
// temporary there is one whose writer died before renaming it.
func removeTemporaries() {
	tmps, _ := filepath.Glob(filepath.Join(stateDir, ".*.json.tmp"))
	for _, t := range tmps {
		os.Remove(t)
	}
}

// readAllStates reads every record; records it cannot read are reported and
// skipped, never removed.
func readAllStates() ([]State, []error) {
	entries, err := os.ReadDir(stateDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{fmt.Errorf("netns: %w", err)}
	}
	var states []State
	var errs []error
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		st, err := readState(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		states = append(states, st)
	}
	sort.Slice(states, func(i, j int) bool { return states[i].Name < states[j].Name })
	return states, errs
}
