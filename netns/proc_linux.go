package netns

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
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

// Alive reports whether p still runs: the pid exists, is not a zombie and
// started at p.Start.
func (p Proc) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	start, state, err := readStat(p.PID)
	return err == nil && start == p.Start && state != 'Z' && state != 'X'
}

// terminate sends SIGTERM to each live process of ps, waits up to grace for
// them to exit and then sends SIGKILL to those left. It signals only
// processes whose start time still matches.
func terminate(ps []Proc, grace time.Duration) error {
	var errs []error
	signal := func(sig syscall.Signal) (left []Proc) {
		for _, p := range ps {
			if !p.Alive() {
				continue
			}
			if err := syscall.Kill(p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("netns: signal %v to %d: %w", sig, p.PID, err))
				continue
			}
			left = append(left, p)
		}
		return left
	}
	waitGone := func(ps []Proc, d time.Duration) []Proc {
		deadline := time.Now().Add(d)
		for {
			var left []Proc
			for _, p := range ps {
				if p.Alive() {
					left = append(left, p)
				}
			}
			if len(left) == 0 || time.Now().After(deadline) {
				return left
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	left := waitGone(signal(syscall.SIGTERM), grace)
	if len(left) > 0 {
		ps = left
		if left = waitGone(signal(syscall.SIGKILL), time.Second); len(left) > 0 {
			errs = append(errs, fmt.Errorf("netns: %d processes survived SIGKILL (first: pid %d)", len(left), left[0].PID))
		}
	}
	return errors.Join(errs...)
}
