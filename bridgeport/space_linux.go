package bridgeport

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"wanlab/netns"
)

// space is the namespace an interface is in: a named one, through its
// netns.Handle, or the calling process's own (a NIC of the machine),
// which has no Handle.
type space struct {
	h    *netns.Handle // nil: the process's own namespace
	nl   *netlink.Handle
	name string // "" for the process's own
	id   netns.ID
}

// openSpace returns the namespace of h, or the process's own for nil.
// close releases what it opened.
func openSpace(h *netns.Handle) (*space, error) {
	if h != nil {
		id, err := h.ID()
		if err != nil {
			return nil, err
		}
		return &space{h: h, nl: h.Netlink(), name: h.Name(), id: id}, nil
	}
	id, err := ownID()
	if err != nil {
		return nil, err
	}
	// Made on a goroutine outside netns.Do, whose thread is in the
	// process's own namespace, the handle's sockets belong to it.
	nl, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("bridgeport: netlink: %w", err)
	}
	return &space{nl: nl, id: id}, nil
}

// ownID returns the ID of the calling process's own namespace. Threads
// outside netns.Do are always in it (see package netns).
func ownID() (netns.ID, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
		return netns.ID{}, fmt.Errorf("bridgeport: own namespace: %w", err)
	}
	return netns.ID{Dev: st.Dev, Ino: st.Ino}, nil
}

func (s *space) close() {
	if s.h == nil {
		s.nl.Close()
	}
}

// label names the namespace in messages.
func (s *space) label() string {
	if s.name == "" {
		return "this namespace"
	}
	return "namespace " + s.name
}

// do runs f on a thread inside the namespace.
func (s *space) do(f func() error) error {
	if s.h == nil {
		return f()
	}
	return netns.Do(s.h, f)
}

// ipv6Path is the /proc/sys file of net.ipv6.conf.IF.disable_ipv6, the
// sysctl that turns IPv6 off on one interface.
func ipv6Path(ifname string) (string, error) {
	if err := netns.CheckIfName(ifname); err != nil {
		return "", err
	}
	if ifname == "." || ifname == ".." {
		return "", fmt.Errorf("bridgeport: interface name %q", ifname)
	}
	return filepath.Join("/proc/sys/net/ipv6/conf", ifname, "disable_ipv6"), nil
}

// disableIPv6 reads net.ipv6.conf.IF.disable_ipv6 in the namespace: "0"
// or "1", or "" when the kernel has no IPv6 (booted with ipv6.disable=1).
// It reads /proc/sys from a thread inside the namespace, which /proc/sys
// resolves against, for a named namespace and the process's own alike
// (netns.Handle.Sysctl needs a Handle, which the latter has not).
func (s *space) disableIPv6(ifname string) (string, error) {
	path, err := ipv6Path(ifname)
	if err != nil {
		return "", err
	}
	var v string
	err = s.do(func() error {
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat("/proc/sys/net/ipv6"); errors.Is(serr, os.ErrNotExist) {
				return nil
			}
		}
		v = strings.TrimSpace(string(b))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("bridgeport: %s: read %s: %w", s.label(), path, err)
	}
	return v, nil
}

// setDisableIPv6 writes v to net.ipv6.conf.IF.disable_ipv6.
func (s *space) setDisableIPv6(ifname, v string) error {
	path, err := ipv6Path(ifname)
	if err != nil {
		return err
	}
	err = s.do(func() error {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(v)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("bridgeport: %s: set net.ipv6.conf.%s.disable_ipv6=%s: %w", s.label(), ifname, v, err)
	}
	return nil
}
