package bridgeport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"golang.org/x/sys/unix"

	"wanlab/internal/outfile"
	"wanlab/internal/rundir"
	"wanlab/netns"
)

// recordDir holds one restore record per port taken, and the lock that
// orders Take, Release and RestoreStale. /run is a tmpfs: a reboot, which
// undoes every change a record describes, empties it too. A variable so
// that tests keep their records apart from the machine's.
var recordDir = rundir.Ports()

const (
	recordVersion = 1
	// lockName is the lock file in recordDir; its leading dot keeps it
	// out of the records, as outfile's temporaries are.
	lockName = ".lock"
	// maxRecord bounds what is read of a record: a real one is under
	// 2 KiB, and a file there could be anything.
	maxRecord = 64 << 10
)

// record is what Take is about to change on one port, with the values
// before, and who changed it: all that Release or, after its owner died,
// RestoreStale needs to give the port back.
type record struct {
	Version int `json:"version"`
	// Owner is the process that holds the port; Who says what it is
	// ("wanlab bridge eth1 eth2"), for the refusals others get.
	Owner netns.Proc `json:"owner"`
	Who   string     `json:"who"`
	Taken time.Time  `json:"taken"`
	// Netns is the namespace's name, "" for the owner's own namespace;
	// NetnsID tells a namespace from a later one of the same name.
	Netns   string   `json:"netns,omitempty"`
	NetnsID netns.ID `json:"netns_id"`
	// Name is the interface's name when taken; Index is what the port
	// is found by, which a rename does not change.
	Name  string `json:"name"`
	Index int    `json:"index"`

	// SetUp says the port was down: Take sets it up.
	SetUp bool `json:"set_up"`
	// NoRootQdisc says the port had never been up: it had no root qdisc
	// (noop). Setting it up attaches the kernel's default one, which
	// Release takes off again.
	NoRootQdisc bool `json:"no_root_qdisc,omitempty"`
	// DisableIPv6 is net.ipv6.conf.IF.disable_ipv6 before; Take sets it
	// to 1 when it was 0 (and does nothing when the kernel has no IPv6,
	// "").
	DisableIPv6 string `json:"disable_ipv6"`
	// IPv6Addrs and IPv6Routes are what turning IPv6 off removes and the
	// kernel does not make again by itself when it is turned back on:
	// addresses and routes set by a person or a daemon.
	IPv6Addrs  []addr6  `json:"ipv6_addrs,omitempty"`
	IPv6Routes []route6 `json:"ipv6_routes,omitempty"`
	// Take also always adds a clsact qdisc holding its filter (named
	// filterName): it refuses a port that has one already.
}

// addr6 is an IPv6 address to put back.
type addr6 struct {
	Prefix netip.Prefix `json:"prefix"`
	Peer   netip.Prefix `json:"peer,omitzero"`
	Flags  int          `json:"flags,omitempty"` // IFA_F_*
}

// route6 is an IPv6 route to put back: what `ip -6 route add` takes
// besides metrics and preference, which are not kept.
type route6 struct {
	Dst      netip.Prefix `json:"dst"`
	Gw       netip.Addr   `json:"gw,omitzero"`
	Src      netip.Addr   `json:"src,omitzero"`
	Table    int          `json:"table"`
	Priority int          `json:"priority"`
	Protocol int          `json:"protocol"`
	Type     int          `json:"type"`
	Scope    int          `json:"scope"`
	Flags    int          `json:"flags,omitempty"` // RTNH_F_ONLINK
}

// where names the record's port in messages.
func (r *record) where() string {
	if r.Netns == "" {
		return r.Name
	}
	return r.Netns + "'s " + r.Name
}

// holder names the record's owner in messages.
func (r *record) holder() string {
	return fmt.Sprintf("%s (pid %d, since %s)", r.Who, r.Owner.PID, r.Taken.Local().Format(time.DateTime))
}

// check refuses a record that wanlab could not have written.
func (r *record) check() error {
	switch {
	case r.Version != recordVersion:
		return fmt.Errorf("has version %d, this wanlab reads %d", r.Version, recordVersion)
	case r.Owner.PID <= 0:
		return errors.New("names no owner")
	case r.Index <= 0:
		return fmt.Errorf("names interface index %d", r.Index)
	case r.DisableIPv6 != "" && r.DisableIPv6 != "0" && r.DisableIPv6 != "1":
		return fmt.Errorf("has disable_ipv6 %q", r.DisableIPv6)
	case strings.ContainsFunc(r.Who, unicode.IsControl):
		// Who is printed in others' messages.
		return fmt.Errorf("names its owner %q", r.Who)
	}
	if err := netns.CheckIfName(r.Name); err != nil {
		return err
	}
	if r.Netns != "" {
		return netns.CheckName(r.Netns)
	}
	return nil
}

// recordPath is where the record of interface index of namespace id is:
// one name per port, whatever the interface is called now.
func recordPath(id netns.ID, index int) string {
	return filepath.Join(recordDir, fmt.Sprintf("net%d-if%d.json", id.Ino, index))
}

// lockRecords takes the exclusive lock of recordDir, which the caller
// releases with unlock. It is an flock, so the kernel releases it when
// its holder dies.
func lockRecords() (unlock func(), err error) {
	if err := outfile.MkdirAll(recordDir, 0o755); err != nil {
		return nil, fmt.Errorf("bridgeport: %w", err)
	}
	path := filepath.Join(recordDir, lockName)
	// O_NOFOLLOW: a link planted at the lock's name is refused, not
	// followed; O_NONBLOCK: a FIFO there does not hang the open.
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EISDIR) {
			return nil, notWanlabs(path, "the lock of the restore records")
		}
		return nil, fmt.Errorf("bridgeport: open %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, notWanlabs(path, "the lock of the restore records")
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("bridgeport: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// notWanlabs refuses what is at path, which should be a regular file of
// wanlab's (what says which) and is not: a symbolic link, a directory or
// a special file that someone else put there. It is neither followed nor
// removed.
func notWanlabs(path, what string) error {
	var fi os.FileInfo
	var err error
	if fi, err = os.Lstat(path); err != nil {
		return fmt.Errorf("bridgeport: %s %s: %w", what, path, err)
	}
	var is, fix string
	switch m := fi.Mode(); {
	case m&os.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		is, fix = fmt.Sprintf("a symbolic link (to %s)", outfile.Printable(target)), "rm"
	case m.IsDir():
		is, fix = "a directory", "rmdir"
	default:
		is, fix = "not a regular file ("+m.Type().String()+")", "rm"
	}
	return refusef("%s %s is %s, which wanlab never makes there: someone else put it there, and wanlab neither follows nor removes it; remove it (%s %s) once you know what it is",
		what, outfile.Printable(path), is, fix, outfile.Printable(path))
}

// readRecord reads the record at path. It does not follow a link or open
// anything but a regular file: a link, directory or FIFO there is refused
// with the fix. A missing record gives an error wrapping os.ErrNotExist.
func readRecord(path string) (record, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return record{}, fmt.Errorf("bridgeport: %s: %w", path, os.ErrNotExist)
	}
	if errors.Is(err, unix.ELOOP) {
		return record{}, notWanlabs(path, "restore record")
	}
	if err != nil {
		return record{}, fmt.Errorf("bridgeport: restore record %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return record{}, notWanlabs(path, "restore record")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return record{}, fmt.Errorf("bridgeport: restore record %s: %w", path, err)
	}
	var r record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if len(b) > maxRecord {
		err = fmt.Errorf("is over %d bytes", maxRecord)
	} else if err = dec.Decode(&r); err == nil {
		err = r.check()
	}
	if err != nil {
		return record{}, fmt.Errorf("bridgeport: restore record %s is not one this wanlab can read (%v): look at it, restore the interface it names by hand if need be, and remove it", outfile.Printable(path), err)
	}
	return r, nil
}

// writeRecord writes r at path, atomically and durably (outfile syncs the
// file and its directory), replacing the record there. A link or
// directory at path is refused, not followed or replaced.
func writeRecord(path string, r record) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return notWanlabs(path, "restore record")
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	f, err := outfile.Create(context.Background(), path, outfile.Options{Label: "restore record"})
	if err != nil {
		return fmt.Errorf("bridgeport: %w", err)
	}
	defer f.Abort()
	f.Write(append(b, '\n'))
	if err := f.Commit(); err != nil {
		return fmt.Errorf("bridgeport: %w", err)
	}
	return nil
}

// RestoreStale gives back the ports whose owner is no longer running (the
// pid is gone, or now belongs to a process with another start time), and
// removes their records; it returns one line for each: what it restored,
// or why a record was removed or kept without restoring (the namespace or
// the interface is gone; the record belongs to another namespace). Ports
// of live owners are left alone. A record it cannot read, or a link or
// directory where a record should be, is reported in the error and left
// where it is.
func RestoreStale() ([]string, error) {
	unlock, err := lockRecords()
	if err != nil {
		return nil, err
	}
	defer unlock()
	entries, err := os.ReadDir(recordDir)
	if err != nil {
		return nil, fmt.Errorf("bridgeport: %w", err)
	}
	var notes []string
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue // the lock, outfile's temporaries
		}
		path := filepath.Join(recordDir, e.Name())
		r, err := readRecord(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if r.Owner.Alive() {
			continue
		}
		note, err := restore(r, path)
		if note != "" {
			notes = append(notes, note)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	slices.Sort(notes)
	return notes, errors.Join(errs...)
}

// restore gives back the port of r, whose owner is dead, and removes its
// record at path; it says what it did. A record whose namespace or
// interface is gone is removed with a note. The caller holds the lock.
func restore(r record, path string) (string, error) {
	left := fmt.Sprintf("%s, left by %s,", r.where(), r.holder())
	var s *space
	if r.Netns == "" {
		id, err := ownID()
		if err != nil {
			return "", err
		}
		if id != r.NetnsID {
			// Not this process's namespace, and with no name to reach
			// it by: only a wanlab running there can restore it.
			return fmt.Sprintf("%s is in another namespace than this wanlab's (inode %d): run wanlab down from there to restore it; record %s kept", left, r.NetnsID.Ino, path), nil
		}
		if s, err = openSpace(nil); err != nil {
			return "", err
		}
	} else {
		if !netns.Exists(r.Netns) {
			return gone(left+" was in a namespace that is gone", path)
		}
		h, err := netns.Open(r.Netns)
		if err != nil {
			return "", err
		}
		defer h.Close()
		if id, err := h.ID(); err != nil || id != r.NetnsID {
			return gone(left+" was in a namespace that is gone (another has its name now)", path)
		}
		if s, err = openSpace(h); err != nil {
			return "", err
		}
	}
	defer s.close()
	if _, err := s.nl.LinkByIndex(r.Index); err != nil {
		return gone(left+" is gone", path)
	}
	retry, err := s.undo(r)
	if err != nil && retry {
		return "", fmt.Errorf("bridgeport: %s could not be restored (record %s kept for a later try): %w", left, path, err)
	}
	if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return "", fmt.Errorf("bridgeport: %w", rerr)
	}
	return fmt.Sprintf("%s restored", left), err
}

// gone removes the record at path of a port that no longer exists, and
// says so.
func gone(note, path string) (string, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("bridgeport: %w", err)
	}
	return note + ": record removed", nil
}
