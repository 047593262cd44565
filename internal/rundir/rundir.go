// Package rundir names the directories where wanlab keeps what lasts only
// as long as a testbed: the namespaces' bind mounts, the testbeds' state
// files and control sockets, the bridge's port records and the tests'
// machine-wide lock.
//
// As root they are under /run, where iproute2 keeps its own (/run/netns),
// so that `ip netns exec` reaches wanlab's namespaces. A rootless process
// (one that the rootless package started inside the user's namespace) has
// them under the user's private directory, named by the environment
// variable Env, which the rootless package sets: an ordinary user cannot
// write to /run, and one user's testbeds must not be visible to another.
package rundir

import (
	"os"
	"path/filepath"
)

// Env names the directory that replaces /run for a rootless process. It is
// set only inside the user namespace, so its presence also says that the
// process is rootless.
const Env = "WANLAB_ROOTLESS_DIR"

// Rootless reports whether this process runs inside wanlab's user
// namespace, as an ordinary user mapped to root.
func Rootless() bool { return os.Getenv(Env) != "" }

// base is /run, or the user's private directory when rootless.
func base() string {
	if d := os.Getenv(Env); d != "" {
		return d
	}
	return "/run"
}

// Netns is where named network namespaces are bind-mounted: /run/netns.
func Netns() string { return filepath.Join(base(), "netns") }

// State holds the testbeds' state files, control sockets and logs:
// /run/wanlab.
func State() string { return filepath.Join(base(), "wanlab") }

// Ports holds the bridge's restore record of each port it took:
// /run/wanlab/ports.
func Ports() string { return filepath.Join(State(), "ports") }

// TestLock is the file whose lock serialises the tests that build real
// namespaces: /run/wl-tests.lock.
func TestLock() string { return filepath.Join(base(), "wl-tests.lock") }
