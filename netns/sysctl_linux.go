package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

const (
	ccKey        = "net.ipv4.tcp_congestion_control"
	ccAvailable  = "net.ipv4.tcp_available_congestion_control"
	procSysRoot  = "/proc/sys"
	sysctlPrefix = "net."
)

// sysctlPath turns a sysctl key into its /proc/sys path. Keys use dots
// (net.ipv4.tcp_rmem) or, where a part holds a dot itself such as an
// interface name, slashes (net/ipv6/conf/eth0.1/disable_ipv6). Only net.*
// keys are accepted: they are the only ones Linux keeps per namespace.
func sysctlPath(key string) (string, error) {
	rel := key
	if !strings.Contains(key, "/") {
		rel = strings.ReplaceAll(key, ".", "/")
	}
	if !strings.HasPrefix(rel, "net/") || strings.Contains(rel, "..") {
		return "", fmt.Errorf("netns: sysctl %q: only net.* keys are per-namespace; others would change the whole machine", key)
	}
	return filepath.Join(procSysRoot, rel), nil
}

// SetSysctl writes value to the sysctl key (for instance
// "net.ipv4.tcp_rmem", "4096 131072 6291456") inside the namespace. The
// write goes through /proc/sys on a thread inside the namespace, which the
// function checks before writing, so it never lands in the root namespace.
// Keys Linux keeps only for the root namespace do not exist inside and give
// an error. Setting net.ipv4.tcp_congestion_control to an algorithm the
// kernel lacks gives an error that lists the available ones.
func (h *Handle) SetSysctl(key, value string) error {
	path, err := sysctlPath(key)
	if err != nil {
		return err
	}
	var avail string
	werr := Do(h, func() error {
		if err := h.checkInside(); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(value)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil && key == ccKey {
			b, _ := os.ReadFile(filepath.Join(procSysRoot, strings.ReplaceAll(ccAvailable, ".", "/")))
			avail = strings.TrimSpace(string(b))
		}
		return err
	})
	if werr == nil {
		return nil
	}
	if key == ccKey && avail != "" && errors.Is(werr, os.ErrPermission) && slices.Contains(strings.Fields(avail), value) {
		// Available but refused: outside the root namespace Linux lets a
		// namespace default only to the algorithms the root namespace allows.
		return fmt.Errorf("netns: %s: congestion control %q is available but not allowed as a namespace's default; the root namespace's net.ipv4.tcp_allowed_congestion_control must list it (or choose it per socket, e.g. iperf3 -C %s): %w",
			h.name, value, value, werr)
	}
	if key == ccKey && avail != "" {
		return fmt.Errorf("netns: %s: congestion control %q is not available (have: %s); load it in the root namespace with `modprobe tcp_%s`: %w",
			h.name, value, avail, value, werr)
	}
	if errors.Is(werr, os.ErrNotExist) {
		return fmt.Errorf("netns: %s: sysctl %s does not exist in a network namespace of this kernel: %w", h.name, key, werr)
	}
	return fmt.Errorf("netns: %s: set %s=%q: %w", h.name, key, value, werr)
}

// Sysctl reads the sysctl key inside the namespace, without the trailing
// newline.
func (h *Handle) Sysctl(key string) (string, error) {
	path, err := sysctlPath(key)
	if err != nil {
		return "", err
	}
	var b []byte
	err = Do(h, func() error {
		if err := h.checkInside(); err != nil {
			return err
		}
		var err error
		b, err = os.ReadFile(path)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("netns: %s: read %s: %w", h.name, key, err)
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// checkInside verifies that the calling thread is in h's namespace.
func (h *Handle) checkInside() error {
	same, err := sameNamespace(h.fd)
	if err != nil {
		return err
	}
	if !same {
		return fmt.Errorf("netns: thread is not inside %s; refusing to touch /proc/sys", h.name)
	}
	return nil
}
