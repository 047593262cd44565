package rootless

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"wanlab/internal/rundir"
)

// What a user namespace cannot do. The user is root inside it, with every
// capability over its own namespaces, and with none in the machine's:
// whatever the kernel checks against the machine's namespace (loading a
// module, CAP_SYS_NICE, CAP_NET_ADMIN over the machine's own settings) is
// refused. The functions below say so before anything is built, each
// naming the limit and what to do instead; the callers (lab's and
// testrun's checks, wanlab's commands) add the option that asked for it.

// Active reports whether wanlab's lab runs without real root: inside the
// user's namespace (rundir.Rootless), or as an ordinary user, whose lab
// commands enter it before they build anything. Root with --rootless is
// active only once inside; the checks it makes outside pass, and the same
// checks refuse inside, still before anything is built.
func Active() bool { return rundir.Rootless() || os.Geteuid() != 0 }

// CCNotLoaded is the error for congestion control cc, which is not among
// avail, the kernel's loaded ones, when Active; nil otherwise (the caller
// words it for root). The kernel loads a congestion control's module on
// demand only for a process with CAP_NET_ADMIN in the machine's namespace,
// never for a user namespace.
func CCNotLoaded(cc string, avail []string) error {
	if !Active() {
		return nil
	}
	return ccNotLoaded(cc, avail)
}

func ccNotLoaded(cc string, avail []string) error {
	return fmt.Errorf("congestion control %s is not loaded (net.ipv4.tcp_available_congestion_control has %s), and without root wanlab cannot load it: "+
		"the kernel loads a congestion control's module only for real root, never for a user namespace: "+
		"load it once as root with `sudo modprobe tcp_%s` (it stays loaded until the machine restarts)",
		cc, strings.Join(avail, ", "), cc)
}

// CCNotAllowed is the error for congestion control cc, loaded but not in
// allowed (net.ipv4.tcp_allowed_congestion_control), as a namespace's
// default, when Active; nil otherwise. Only an allowed one can be the
// default of a namespace other than the machine's, for root as well; the
// list is the machine's, read-only in every other namespace, so only real
// root changes it. A socket may still choose cc for itself: root in the
// user namespace has CAP_NET_ADMIN over the hosts' namespaces.
func CCNotAllowed(cc string, allowed []string) error {
	if !Active() {
		return nil
	}
	return ccNotAllowed(cc, allowed)
}

func ccNotAllowed(cc string, allowed []string) error {
	list := strings.Join(allowed, " ")
	return fmt.Errorf("congestion control %s is loaded but not in net.ipv4.tcp_allowed_congestion_control (%s), and only those can be a namespace's default; "+
		"that list is the machine's, which a user namespace cannot change: allow it once as root with `sudo sysctl -w net.ipv4.tcp_allowed_congestion_control=\"%s %s\"`, "+
		"or choose it per socket, which needs no root (iperf3 -C %s)",
		cc, list, list, cc, cc)
}

// CheckRTPriority reports whether the router's loops may run under
// SCHED_FIFO at prio (1 to 99; 0 asks for normal scheduling): when Active,
// the kernel allows it only up to RLIMIT_RTPRIO, since a user namespace
// gives no CAP_SYS_NICE over the machine's scheduler.
func CheckRTPriority(prio int) error {
	if prio <= 0 || !Active() {
		return nil
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_RTPRIO, &rl); err != nil {
		return nil // the kernel judges when the loop starts
	}
	return checkRTPriority(prio, rl.Cur, rl.Max)
}

// checkRTPriority decides CheckRTPriority for the limit's soft value cur
// and hard value max.
func checkRTPriority(prio int, cur, max uint64) error {
	if cur == unix.RLIM_INFINITY || cur >= uint64(prio) {
		return nil
	}
	limit := fmt.Sprintf("real-time priority %d needs RLIMIT_RTPRIO of at least %d without root (a user namespace gives no CAP_SYS_NICE over the machine's scheduler), and this process's is %d", prio, prio, cur)
	user := "USER"
	if u := os.Getenv("USER"); u != "" && u != "root" {
		user = u
	}
	conf := fmt.Sprintf("a line `%s - rtprio %d` in /etc/security/limits.conf (then log in again)", user, prio)
	if max == unix.RLIM_INFINITY || max >= uint64(prio) {
		return fmt.Errorf("%s: raise it in the shell that runs wanlab with `ulimit -r %d` (its hard limit allows up to %s), or for good with %s; or run wanlab as root (without --rootless), or leave the real-time priority out",
			limit, prio, rlimitText(max), conf)
	}
	return fmt.Errorf("%s, and its hard limit %d, which only root can raise: add %s, or run wanlab as root (without --rootless), or leave the real-time priority out",
		limit, max, conf)
}

// rlimitText writes a limit's value, "unlimited" for RLIM_INFINITY.
func rlimitText(v uint64) string {
	if v == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}

// CheckSysctl reports whether the sysctl key ("net.core.somaxconn") can be
// set to value in a host of a testbed: inside the user's namespace, only if it is
// one of a network namespace's own, which the namespace's root may write.
// It measures that in the namespace the process is in, which the same
// user namespace owns as it owns the hosts': the key exists there, and
// access(2) lets root write it. net.ipv4.ping_group_range takes only the
// groups the namespace maps: "0 0". Elsewhere (root, or an ordinary user
// before entering the namespace) it returns nil: the check runs again
// inside, before anything is built.
func CheckSysctl(key, value string) error {
	if !rundir.Rootless() {
		return nil
	}
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	_, err := os.Stat(path)
	exists := err == nil
	writable := exists && unix.Access(path, unix.W_OK) == nil
	return checkSysctl(key, value, exists, writable)
}

// hiddenSysctls are the prefixes of the sysctls that are a network
// namespace's own but that the kernel does not show in one that a user
// namespace owns ("Don't export sysctls to unprivileged users"): they
// exist in a namespace root made, not in the user's.
var hiddenSysctls = []string{"net.core.xfrm_", "net.ipv6.route."}

// checkSysctl decides CheckSysctl for a key that exists, or not, in a
// network namespace of the user namespace, and that its root may write,
// or not.
func checkSysctl(key, value string, exists, writable bool) error {
	const limit = "a user namespace can set only a network namespace's own sysctls"
	set := key + "=" + value
	if value == "" {
		set = key + "=VALUE"
	} else if strings.ContainsAny(value, " \t") {
		set = key + "=\"" + value + "\""
	}
	switch {
	case writable && key == "net.ipv4.ping_group_range":
		return checkPingGroupRange(value, mappedGroup)
	case writable:
		return nil
	case exists:
		return fmt.Errorf("%s is the machine's, read-only in a network namespace (%s): set it on the machine once as root, `sudo sysctl -w %s`, which the testbed's hosts then read too",
			key, limit, set)
	}
	for _, p := range hiddenSysctls {
		if strings.HasPrefix(key, p) {
			return fmt.Errorf("%s is a network namespace's own, but the kernel shows it only in namespaces that real root made, not in a user namespace's: run wanlab as root (without --rootless) to set it", key)
		}
	}
	return fmt.Errorf("%s is not a sysctl of a network namespace (%s; or no sysctl of this kernel at all: check its name with `sysctl -a | grep %s`): "+
		"if it is the machine's, set it there once as root, `sudo sysctl -w %s`, where it applies to every namespace",
		key, limit, key[strings.LastIndexByte(key, '.')+1:], set)
}

// checkPingGroupRange reports whether value can be a host's
// net.ipv4.ping_group_range: the kernel takes only groups that the user
// namespace maps (mapped reports whether one is), which wanlab's maps the
// user's group to 0 alone, so "0 0" and not the "1 0" that turns it off
// or the usual "0 2147483647".
func checkPingGroupRange(value string, mapped func(gid uint64) bool) error {
	f := strings.Fields(value)
	if len(f) != 2 {
		return nil // the kernel says what it takes
	}
	for _, v := range f {
		g, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil
		}
		if !mapped(g) {
			return fmt.Errorf("net.ipv4.ping_group_range %q: in a user namespace the kernel takes only the groups the namespace maps, and wanlab's maps one, group 0 (the user's own): "+
				"give \"0 0\", which lets the hosts' programs, all of group 0, open ICMP datagram sockets; or run wanlab as root (without --rootless)", value)
		}
	}
	return nil
}

// mappedGroup reports whether the user namespace of this process maps
// group gid (/proc/self/gid_map).
func mappedGroup(gid uint64) bool {
	b, err := os.ReadFile("/proc/self/gid_map")
	if err != nil {
		return true // the kernel judges
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		first, err1 := strconv.ParseUint(f[0], 10, 64)
		n, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 == nil && err2 == nil && gid >= first && gid < first+n {
			return true
		}
	}
	return false
}

// BufferWarnings returns, when Active, a warning for each socket buffer a
// run asks for explicitly (sndbuf for SO_SNDBUF, rcvbuf for SO_RCVBUF, in
// bytes; 0 is the kernel's autotuning) that the socket will not get: a
// user namespace has no CAP_NET_ADMIN in the machine's namespace, so
// SO_SNDBUFFORCE and SO_RCVBUFFORCE are refused, and the kernel caps the
// size at net.core.wmem_max or rmem_max without a word. Those limits are
// the machine's (a network namespace shows them read-only), so reading them
// here, before anything is built, predicts what every host's socket gets.
func BufferWarnings(sndbuf, rcvbuf int) []string {
	if !Active() {
		return nil
	}
	var out []string
	for _, b := range []struct {
		flag, opt, key string
		asked          int
	}{{"--sndbuf", "SO_SNDBUF", "net.core.wmem_max", sndbuf}, {"--rcvbuf", "SO_RCVBUF", "net.core.rmem_max", rcvbuf}} {
		if b.asked <= 0 {
			continue
		}
		v, err := strconv.Atoi(sysctl(strings.ReplaceAll(b.key, ".", "/")))
		if err != nil {
			continue
		}
		if w := bufferWarning(b.flag, b.opt, b.key, b.asked, v); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// bufferWarning is BufferWarnings' warning for the option flag, which asks
// for asked bytes of socket option opt, whose cap is the sysctl key of
// value max; "" if asked is within it.
func bufferWarning(flag, opt, key string, asked, max int) string {
	if asked <= max {
		return ""
	}
	force := strings.Replace(opt, "BUF", "BUFFORCE", 1)
	return fmt.Sprintf("%s %d: without root the sockets get %d bytes (%s reads back %d, twice that): %s caps them at %s %d, as %s, which would exceed it, needs real root; "+
		"raise the limit once as root, `sudo sysctl -w %s=%d`, or run wanlab as root (without --rootless)",
		flag, asked, max, opt, 2*max, opt, key, max, force, key, asked)
}

// CheckPacketPlane reports whether the packet data plane can run: not
// inside the user's namespace, since its sockets force their send buffers
// (SO_SNDBUFFORCE, which needs CAP_NET_ADMIN in the machine's namespace)
// and it loads an eBPF program on its ports, which the kernel refuses to
// a user namespace unless kernel.unprivileged_bpf_disabled is 0. Outside
// it passes, as CheckSysctl does: an ordinary user's command checks again
// inside, before anything is built, and the options of a run stay
// checkable (and testable) by any user.
func CheckPacketPlane() error {
	if !rundir.Rootless() {
		return nil
	}
	return errPacketPlane
}

var errPacketPlane = fmt.Errorf("the packet data plane needs real root: its packet sockets force their send buffers (SO_SNDBUFFORCE) and it loads an eBPF program on the router's ports, neither of which a user namespace may do: " +
	"use the tun data plane (the default), or run wanlab as root (without --rootless)")
