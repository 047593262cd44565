package lab

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"

	"wanlab/qdisc"
	"wanlab/tcspec"
)

// A run session is how a process that borrows a running testbed for a
// while (wanlab run --lab) changes it and gives it back. The process opens
// the session with a borrow request naming the host sysctls it may set;
// the testbed records their values then, and each direction's chain just
// before the session's first change of it. The session's changes to the
// chains go over the same connection. When the connection ends, with an
// end request or without one (the process was killed: the kernel closes
// its socket), the testbed sets back whatever differs from what it
// recorded. What it cannot set back stays listed in Status.Changed, so the
// testbed says it is no longer as it was set up.

// session is the testbed's record of one run session.
type session struct {
	peer    int // the borrowing process, for the log
	sysctls []sysctlValue
	chains  map[string][]qdisc.Spec // before the session's first change of each direction
}

// sysctlValue is a host's sysctl and its value when a session began.
type sysctlValue struct {
	SysctlKey
	val string
}

// serveSession serves a borrow request's connection until it ends, or
// until Close closes it.
func (t *Testbed) serveSession(c *net.UnixConn, keys []SysctlKey) {
	if !t.track(c) {
		send(c, response{Error: fmt.Sprintf("testbed %s is closing", t.opts.Name)})
		return
	}
	defer t.untrack(c)
	s := &session{peer: peerPID(c), chains: map[string][]qdisc.Spec{}}
	for _, k := range keys {
		v, err := t.sysctl(k)
		if err != nil {
			send(c, response{Error: fmt.Sprintf("run session: %v", err)})
			return
		}
		s.sysctls = append(s.sysctls, sysctlValue{k, v})
	}
	if err := send(c, response{}); err != nil {
		return
	}
	t.logf("testbed %s: run session of pid %d began", t.opts.Name, s.peer)
	for {
		var req request
		files, err := recv(c, &req)
		closeAll(files)
		if err != nil {
			// The borrowing process closed its end without ending the
			// session, or died: give the testbed back all the same.
			restored, rerr := t.endSession(s)
			t.logf("testbed %s: run session of pid %d dropped (%v); set back %s%s", t.opts.Name, s.peer, err, listOrNothing(restored), errSuffix(rerr))
			return
		}
		switch req.Op {
		case "set":
			done, err := t.sessionSet(s, req.Sets, req.Dists)
			resp := errResponse(err)
			resp.Changes = done
			send(c, resp)
		case "end":
			restored, err := t.endSession(s)
			t.logf("testbed %s: run session of pid %d ended; set back %s%s", t.opts.Name, s.peer, listOrNothing(restored), errSuffix(err))
			resp := errResponse(err)
			resp.Restored = restored
			send(c, resp)
			return
		default:
			send(c, response{Error: fmt.Sprintf("control socket: request %q in a run session: send set or end", req.Op)})
		}
	}
}

// sessionSet applies a set request of session s, first recording the
// chain of each direction it changes for the first time.
func (t *Testbed) sessionSet(s *session, sets []ChainText, dists map[string][]int16) ([]DirChange, error) {
	parsed, err := parseSets(sets, dists)
	if err != nil {
		return nil, err
	}
	done, err := t.set(parsed, func(dir string, old []qdisc.Spec) {
		if _, ok := s.chains[dir]; !ok {
			s.chains[dir] = old
		}
	})
	t.logSets(done)
	return done, err
}

// endSession sets back what session s changed: each chain it set and each
// sysctl it named that differ from what was recorded. It returns what it
// set back; what it could not is added to Status.Changed and to the error.
func (t *Testbed) endSession(s *session) (restored []string, err error) {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, nil // nothing left to give back
	}
	var failed []string
	// The directions, then the access links ("up:c2") it changed.
	for _, dir := range slices.Sorted(maps.Keys(s.chains)) {
		old := s.chains[dir]
		t.mu.Lock()
		same := tcspec.FormatChain(t.chains[dir]) == tcspec.FormatChain(old)
		t.mu.Unlock()
		if same {
			continue
		}
		what := fmt.Sprintf("%s chain %q", dir, tcspec.FormatChain(old))
		if _, err := t.set([]ChainSet{{Dir: dir, Chain: old}}, nil); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", what, err))
			continue
		}
		restored = append(restored, what)
	}
	for i := len(s.sysctls) - 1; i >= 0; i-- {
		sv := s.sysctls[i]
		cur, err := t.sysctl(sv.SysctlKey)
		if err == nil && cur == sv.val {
			continue
		}
		what := fmt.Sprintf("%s %s=%q", sv.Host, sv.Key, sv.val)
		if err == nil {
			err = t.hosts[sv.Host].SetSysctl(sv.Key, sv.val)
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", what, err))
			continue
		}
		restored = append(restored, what)
	}
	if len(failed) == 0 {
		return restored, nil
	}
	t.mu.Lock()
	for _, f := range failed {
		t.changed = append(t.changed, fmt.Sprintf("a run (pid %d) could not set back %s", s.peer, f))
	}
	t.mu.Unlock()
	return restored, fmt.Errorf("could not set back %s; `wanlab status` lists it until the testbed is rebuilt", strings.Join(failed, "; "))
}

// track records c as a session's connection, for Close to end; it
// reports false if the testbed is closed.
func (t *Testbed) track(c *net.UnixConn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	if t.sessions == nil {
		t.sessions = map[*net.UnixConn]bool{}
	}
	t.sessions[c] = true
	return true
}

func (t *Testbed) untrack(c *net.UnixConn) {
	t.mu.Lock()
	delete(t.sessions, c)
	t.mu.Unlock()
}

// sysctl reads a host's sysctl named by k.
func (t *Testbed) sysctl(k SysctlKey) (string, error) {
	h := t.hosts[k.Host]
	if h == nil {
		if err := t.info.Has(k.Host); err != nil {
			return "", err
		}
		return "", fmt.Errorf("host %q is unknown: use client or server", k.Host)
	}
	return h.Sysctl(k.Key)
}

func listOrNothing(items []string) string {
	if len(items) == 0 {
		return "nothing"
	}
	return strings.Join(items, ", ")
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return "; " + err.Error()
}

// Session is a running testbed borrowed by a process that changes it for
// a while, as `wanlab run --lab` does: its chain changes go through Set,
// and End gives the testbed back. If the process dies or drops the
// session without End, the testbed sets back what the session changed by
// itself (see serveSession).
type Session struct {
	name string
	mu   sync.Mutex // one request at a time on c
	c    *net.UnixConn
}

// Borrow opens a session on the running testbed name. sysctls are the host
// sysctls the caller may change during it, which the testbed records now
// and sets back at the end.
func Borrow(name string, sysctls []SysctlKey) (*Session, error) {
	c, err := dial(name)
	if err != nil {
		return nil, err
	}
	s := &Session{name: name, c: c}
	if _, err := s.call(request{Op: "borrow", Sysctls: sysctls}); err != nil {
		c.Close()
		return nil, err
	}
	return s, nil
}

// Set changes chains of the borrowed testbed as lab.Set does.
func (s *Session) Set(sets ...ChainText) ([]DirChange, error) {
	req, err := setRequest(sets)
	if err != nil {
		return nil, err
	}
	resp, err := s.call(req)
	return resp.Changes, err
}

// End gives the testbed back: it sets back every chain the session
// changed and every sysctl named to Borrow that differs from its value
// then, and closes the session. It returns what it set back, and an error
// naming what it could not, which `wanlab status` then lists. If the
// testbed went away during the session, there is nothing to give back and
// the error matches ErrNotRunning.
func (s *Session) End() ([]string, error) {
	resp, err := s.call(request{Op: "end"})
	s.c.Close()
	return resp.Restored, err
}

// call sends req on the session and returns the response. An error of
// the connection itself means that the testbed has gone away (its owner
// closes the sessions, or dies): it matches ErrNotRunning.
func (s *Session) call(req request) (response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := send(s.c, req); err != nil {
		return response{}, fmt.Errorf("testbed %s is %w (%v)", s.name, ErrNotRunning, err)
	}
	var resp response
	files, err := recv(s.c, &resp)
	closeAll(files)
	if err != nil {
		return response{}, fmt.Errorf("testbed %s is %w (%v)", s.name, ErrNotRunning, err)
	}
	if resp.Error != "" {
		return resp, fmt.Errorf("testbed %s: %s", s.name, resp.Error)
	}
	return resp, nil
}

// peerPID returns the pid of the process at the other end of c, or 0.
func peerPID(c *net.UnixConn) int {
	cred, err := peerCred(c)
	if err != nil {
		return 0
	}
	return int(cred.Pid)
}
