package netns

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Proc identifies a process across pid reuse: its pid and its start time in
// clock ticks after boot (field 22 of /proc/PID/stat). A pid whose start time
// differs is another process.
type Proc struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	// Cmd is the command line's first word, for people reading the state.
	Cmd string `json:"cmd,omitempty"`
}

// Self returns the calling process.
func Self() (Proc, error) {
	return ProcOf(os.Getpid())
}

// ProcOf returns the running process pid with its start time.
func ProcOf(pid int) (Proc, error) {
	start, state, err := readStat(pid)
	if err != nil {
		return Proc{}, err
	}
	if state == 'Z' || state == 'X' {
		return Proc{}, fmt.Errorf("netns: process %d has exited", pid)
	}
	return Proc{PID: pid, Start: start}, nil
}

// readStat returns the start time and state of pid from /proc/PID/stat.
func readStat(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name in parentheses may hold spaces and parentheses;
	// the fields after the last ')' are plain.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("netns: malformed /proc/%d/stat", pid)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("netns: short /proc/%d/stat", pid)
	}
	start, err = strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("netns: /proc/%d/stat starttime: %w", pid, err)
	}
	return start, f[0][0], nil
}

// comm returns the command name of pid, for messages.
func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// Alive reports whether p still runs: the pid exists, is not a zombie and
// started at p.Start.
func (p Proc) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	start, state, err := readStat(p.PID)
	return err == nil && start == p.Start && state != 'Z' && state != 'X'
}

// ID identifies a network namespace by the device and inode of its nsfs
// file, as stat(2) of /proc/PID/ns/net or of its bind mount shows them. It
// names the namespace for as long as the namespace lives, mounted or not;
// once the namespace is gone the kernel may give its inode to a new one.
type ID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// IDOf returns the ID of the mounted namespace name.
func IDOf(name string) (ID, error) {
	if err := CheckName(name); err != nil {
		return ID{}, err
	}
	id, err := idAt(filepath.Join(runDir, name))
	if err != nil {
		return ID{}, fmt.Errorf("netns: namespace %s: %w", name, err)
	}
	return id, nil
}

// ID returns the namespace's ID.
func (h *Handle) ID() (ID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(h.fd, &st); err != nil {
		return ID{}, fmt.Errorf("netns: %s: %w", h.name, err)
	}
	return ID{Dev: st.Dev, Ino: st.Ino}, nil
}

// idAt returns the ID of the namespace file at path, which must be a
// namespace (on nsfs), not the empty file a bind mount covers.
func idAt(path string) (ID, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return ID{}, err
	}
	if fs.Type != unix.NSFS_MAGIC {
		return ID{}, errors.New("not a mounted namespace")
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return ID{}, err
	}
	return ID{Dev: st.Dev, Ino: st.Ino}, nil
}

// nsOfPID returns the network namespace of pid's thread-group leader. It
// fails for zombies, which hold no namespace.
func nsOfPID(pid int) (ID, bool) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/net", &st); err != nil {
		return ID{}, false
	}
	return ID{Dev: st.Dev, Ino: st.Ino}, true
}

// ProcessesIn returns the running processes whose thread-group leader is in
// one of the namespaces ids, except the calling process, sorted by pid. A
// process counts as in a namespace by its leader, as `ip netns pids` counts
// it: a thread another program has moved into the namespace for a moment
// (netns.Do, setns(2)) does not make that program a member.
func ProcessesIn(ids ...ID) ([]Proc, error) {
	ms, err := scan(ids, nil, os.Getpid(), nil)
	var ps []Proc
	for _, m := range ms {
		ps = append(ps, m.Proc)
		m.close()
	}
	return ps, err
}

// End ends the processes ps that still run, never the caller: SIGTERM
// (and SIGCONT), then SIGKILL to those still running after grace. Each is
// recognised by its start time and signalled through a pidfd, so that a
// process that reused a pid since is never hit. It fails only if one
// outlives the SIGKILL rounds.
func End(grace time.Duration, ps ...Proc) error {
	return endProcesses(nil, ps, os.Getpid(), grace)
}

// member is a process being ended, held by a pidfd: signals go through the
// pidfd, so none can reach a process that reuses the pid later, and the
// pidfd becomes readable when the process exits.
type member struct {
	Proc
	fd int
}

func (m *member) close() {
	if m.fd >= 0 {
		unix.Close(m.fd)
		m.fd = -1
	}
}

// exited reports whether the process has exited (a zombie has).
func (m *member) exited() bool {
	p := []unix.PollFd{{Fd: int32(m.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0
}

func (m *member) signal(sig unix.Signal) error {
	err := unix.PidfdSendSignal(m.fd, sig, nil, 0)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("netns: signal %v to pid %d (%s): %w", sig, m.PID, m.Cmd, err)
	}
	return nil
}

// hold opens a pidfd on pid and returns it if the process the pidfd refers
// to passes check. The pid could be reused at any moment, so the order
// matters: the pidfd is opened first, then check and the start time read
// /proc/PID, and then the pidfd's process must still exist. If it does, the
// pid was never free in between, so /proc/PID was that process.
func hold(pid int, check func(start uint64) bool) (*member, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return nil, errors.New("netns: ending a testbed's processes needs pidfd_open(2), Linux 5.3 or newer")
		}
		return nil, nil // gone already
	}
	m := &member{Proc: Proc{PID: pid}, fd: fd}
	start, state, err := readStat(pid)
	if err != nil || state == 'Z' || state == 'X' || !check(start) || unix.PidfdSendSignal(fd, 0, nil, 0) != nil {
		m.close()
		return nil, nil
	}
	m.Start = start
	m.Cmd = comm(pid)
	return m, nil
}

// scan finds the processes to end: those whose leader is in one of ids and
// the recorded ones that still run, except self and those in known (by pid
// and start time). The caller closes what it returns.
func scan(ids []ID, recorded []Proc, self int, known map[Proc]bool) ([]*member, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	var out []*member
	add := func(pid int, check func(uint64) bool) error {
		m, err := hold(pid, check)
		if m == nil || err != nil {
			return err
		}
		if known[Proc{PID: m.PID, Start: m.Start}] || slices.ContainsFunc(out, func(o *member) bool { return o.PID == m.PID }) {
			m.close()
			return nil
		}
		out = append(out, m)
		return nil
	}
	var errs []error
	if len(ids) > 0 {
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			if id, ok := nsOfPID(pid); !ok || !slices.Contains(ids, id) {
				continue
			}
			err = add(pid, func(uint64) bool {
				id, ok := nsOfPID(pid)
				return ok && slices.Contains(ids, id)
			})
			if err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	for _, p := range recorded {
		if p.PID == self || p.PID <= 0 {
			continue
		}
		if err := add(p.PID, func(start uint64) bool { return start == p.Start }); err != nil {
			errs = append(errs, err)
			break
		}
	}
	slices.SortFunc(out, func(a, b *member) int { return a.PID - b.PID })
	return out, errors.Join(errs...)
}

// How ending processes proceeds; variables so that tests can shorten them.
var (
	// rescanEvery is how often the namespaces are searched again for
	// processes that a process being ended has just forked.
	rescanEvery = 20 * time.Millisecond
	// killFor bounds the SIGKILL rounds: a process in uninterruptible
	// sleep dies only when it leaves it.
	killFor = 5 * time.Second
)

// endProcesses ends every process whose leader is in one of the namespaces
// ids and every recorded process that still runs, never self: each gets
// SIGTERM (and SIGCONT, so that a stopped one can act on it), those still
// running after grace get SIGKILL. The namespaces are searched again until
// they are empty, so children forked meanwhile are ended too. It fails only
// if processes outlive the SIGKILL rounds.
func endProcesses(ids []ID, recorded []Proc, self int, grace time.Duration) error {
	held := map[Proc]*member{}
	known := map[Proc]bool{}
	defer func() {
		for _, m := range held {
			m.close()
		}
	}()
	// collect adds newly found processes to held and sends them sig; it
	// returns how many held processes are still running.
	collect := func(sigs ...unix.Signal) (int, error) {
		fresh, err := scan(ids, recorded, self, known)
		var errs []error
		if err != nil {
			errs = append(errs, err)
		}
		for _, m := range fresh {
			k := Proc{PID: m.PID, Start: m.Start}
			held[k], known[k] = m, true
			for _, s := range sigs {
				if err := m.signal(s); err != nil {
					errs = append(errs, err)
				}
			}
		}
		live := 0
		for _, m := range held {
			if !m.exited() {
				live++
			}
		}
		return live, errors.Join(errs...)
	}
	deadline := time.Now().Add(grace)
	for {
		live, err := collect(unix.SIGTERM, unix.SIGCONT)
		if err != nil {
			return err
		}
		if live == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(rescanEvery)
	}
	deadline = time.Now().Add(killFor)
	for {
		// Everything held and still running gets SIGKILL, and so does
		// whatever the search finds anew.
		var errs []error
		for _, m := range held {
			if !m.exited() {
				if err := m.signal(unix.SIGKILL); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		live, err := collect(unix.SIGKILL)
		if err != nil {
			return err
		}
		if live == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var left []string
			for _, m := range held {
				if !m.exited() {
					left = append(left, fmt.Sprintf("%d (%s)", m.PID, m.Cmd))
				}
			}
			slices.Sort(left)
			return fmt.Errorf("netns: %d processes survived SIGKILL for %v: %s", len(left), killFor, strings.Join(left, ", "))
		}
		time.Sleep(rescanEvery)
	}
}
