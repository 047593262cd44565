// Package rootless runs wanlab's lab commands as an ordinary user, inside a
// user namespace in which the user is root (user_namespaces(7)): there the
// user may create network namespaces, TUN devices, veths, addresses, routes,
// the kernel's qdiscs and per-namespace sysctls, with no setuid helper.
//
// # One namespace per user, held by a keeper
//
// Go cannot move a running (multi-threaded) process into a user namespace,
// and a network namespace that a user namespace owns can be entered only
// from inside it. So a command that needs the lab replaces itself, before it
// builds anything, with a copy of itself inside the user's namespace (Enter):
// nsenter(1), a single-threaded program, joins the namespace and runs the
// command there. The namespace is held by a keeper, a wanlab process started
// for the purpose with CLONE_NEWUSER and CLONE_NEWNS, which maps the user to
// root and nothing else (so no /etc/subuid range is needed). Every rootless
// command of the user, and every detached testbed, runs in that one
// namespace, so `wanlab status`, `exec` and `down` find what `up --detach`
// built, just as root's commands do through /run.
//
// The keeper's mount namespace has a tmpfs of its own over the user's
// netns directory, where the testbeds' namespaces are bind-mounted (see
// rundir): they exist only in that mount namespace. The keeper ends once
// no command of the user holds it and no process is left in the namespace;
// the namespace, its mounts and whatever a killed command left behind in
// them end with it.
//
// # The user's directory
//
// The state lives in $XDG_RUNTIME_DIR/wanlab, or /tmp/wanlab-UID where
// there is no runtime directory: created with mode 0700, and refused if it
// is not a directory of the user's with no access for others. Another user
// can neither read it nor join the namespace (only its owner has
// capabilities over it), so one user's testbeds are invisible to another.
//
// # What a user namespace cannot do
//
// The user is root only over the namespace's own: what the kernel checks
// against the machine's namespace stays real root's. Active says whether
// wanlab runs so, and the checks that lab, testrun and the commands make
// before anything is built refuse, or warn of, each such thing with the
// limit and what to do instead: loading a congestion control's module
// (CCNotLoaded), the machine's list of allowed ones (CCNotAllowed),
// real-time priority beyond RLIMIT_RTPRIO (CheckRTPriority), sysctls
// that are not a network namespace's own or are read-only in one
// (CheckSysctl: net.core.wmem_max, default_qdisc; and a
// net.ipv4.ping_group_range of groups the namespace does not map), socket
// buffers beyond
// net.core.wmem_max and rmem_max (BufferWarnings, as SO_SNDBUFFORCE is
// refused), and the packet data plane (CheckPacketPlane).
package rootless
