package lab

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"

	"wanlab/router"
	"wanlab/tcspec"
)

// listen opens the control socket and serves it on its own goroutine. A
// socket file left by a dead owner is replaced: netns.NewTestbed has made
// this process the name's owner.
func (t *Testbed) listen() error {
	path := SocketPath(t.opts.Name)
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("control socket: %w", err)
	}
	ln, err := net.ListenUnix(network, &net.UnixAddr{Name: path, Net: network})
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	// Whoever reaches the socket can run programs as this process's
	// user; the mode and the check in serveConn keep it to that user.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("control socket: %w", err)
	}
	t.ln = ln
	go t.serve(ln)
	return nil
}

func (t *Testbed) serve(ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		go t.serveConn(c)
	}
}

// serveConn answers the one request of a connection.
func (t *Testbed) serveConn(c *net.UnixConn) {
	defer c.Close()
	if uid, err := peerUID(c); err != nil || uid != os.Geteuid() {
		send(c, response{Error: fmt.Sprintf("control socket: only uid %d may use testbed %s", os.Geteuid(), t.opts.Name)})
		return
	}
	var req request
	files, err := recv(c, &req)
	if err != nil {
		send(c, response{Error: err.Error()})
		return
	}
	if req.Op != "exec" {
		closeAll(files)
	}
	if req.Op == "exec" || req.Op == "borrow" {
		if err := t.noHosts(map[string]string{"exec": "run programs in", "borrow": "run tests between"}[req.Op]); err != nil {
			closeAll(files)
			send(c, response{Error: err.Error()})
			return
		}
	}
	switch req.Op {
	case "borrow":
		t.serveSession(c, req.Sysctls)
	case "status":
		st := t.Status()
		st.Up.Flows = topFlows(st.Up.Flows, req.Flows)
		st.Down.Flows = topFlows(st.Down.Flows, req.Flows)
		send(c, response{Status: &st})
	case "set":
		done, err := t.setText(req.Sets, req.Dists)
		resp := errResponse(err)
		resp.Changes = done
		send(c, resp)
	case "down":
		t.logf("testbed %s: down requested", t.opts.Name)
		send(c, response{})
		t.requestStop()
	case "exec":
		if req.Exec == nil {
			closeAll(files)
			send(c, response{Error: "control socket: exec request without a program"})
			return
		}
		t.serveExec(c, *req.Exec, files)
	default:
		send(c, response{Error: fmt.Sprintf("control socket: unknown request %q", req.Op)})
	}
}

// setText parses the chains of a set request and applies them (Set).
func (t *Testbed) setText(sets []ChainText, dists map[string][]int16) ([]DirChange, error) {
	parsed, err := parseSets(sets, dists)
	if err != nil {
		return nil, err
	}
	done, err := t.Set(parsed...)
	t.logSets(done)
	return done, err
}

// logSets logs what a set request did.
func (t *Testbed) logSets(done []DirChange) {
	for _, d := range done {
		t.logf("testbed %s: %s chain set to %q", t.opts.Name, d.Dir, d.Chain)
	}
}

// parseSets parses the chains of a set request. Their distribution tables
// are those the client read and sent: a file name in a chain is the
// client's, relative to its working directory, and never looked up here.
func parseSets(sets []ChainText, dists map[string][]int16) ([]ChainSet, error) {
	if len(sets) == 0 {
		return nil, errors.New("control socket: set request without a chain")
	}
	load := func(name string) ([]int16, error) {
		if table, ok := dists[name]; ok {
			return table, nil
		}
		return nil, fmt.Errorf("distribution %q: the client sent no table of that name (send the tables the chains name, as lab.Set does)", name)
	}
	var parsed []ChainSet
	for _, c := range sets {
		if c.Script != "" {
			sc, err := tcspec.ParseScript(c.Script, tcspec.ScriptOptions{Options: tcspec.Options{LoadDist: load}})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Dir, err)
			}
			parsed = append(parsed, ChainSet{Dir: c.Dir, Script: sc})
			continue
		}
		specs, err := tcspec.ParseChain(c.Chain, tcspec.Options{LoadDist: load})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Dir, err)
		}
		parsed = append(parsed, ChainSet{Dir: c.Dir, Chain: specs})
	}
	return parsed, nil
}

// topFlows returns the n busiest of fs (by bytes delivered, ties in their
// order), or all of them, busiest first, when n is 0 or more than there
// are.
func topFlows(fs []router.FlowSnapshot, n int) []router.FlowSnapshot {
	fs = slices.Clone(fs)
	slices.SortStableFunc(fs, func(a, b router.FlowSnapshot) int { return cmp.Compare(b.Bytes, a.Bytes) })
	if n > 0 && len(fs) > n {
		fs = fs[:n]
	}
	return fs
}

func errResponse(err error) response {
	if err != nil {
		return response{Error: err.Error(), BadInput: errors.Is(err, ErrBadInput)}
	}
	return response{}
}
