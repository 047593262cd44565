package rootless

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"wanlab/internal/rundir"
)

// fakeRootless makes the checks that only read rundir.Env take this
// process for one inside the user's namespace.
func fakeRootless(t *testing.T) {
	t.Helper()
	t.Setenv(rundir.Env, t.TempDir())
}

func TestActive(t *testing.T) {
	t.Setenv(rundir.Env, "")
	if got, want := Active(), os.Geteuid() != 0; got != want {
		t.Errorf("Active() = %v as uid %d outside the namespace, want %v", got, os.Geteuid(), want)
	}
	fakeRootless(t)
	if !Active() {
		t.Error("Active() = false inside the namespace")
	}
}

func TestCCNotLoaded(t *testing.T) {
	err := ccNotLoaded("dctcp", []string{"reno", "cubic"})
	for _, want := range []string{"dctcp is not loaded", "reno, cubic", "only for real root, never for a user namespace", "`sudo modprobe tcp_dctcp`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %v", want, err)
		}
	}
	if os.Geteuid() == 0 {
		t.Setenv(rundir.Env, "")
		if err := CCNotLoaded("dctcp", nil); err != nil {
			t.Errorf("as root: %v, want nil (root's own message)", err)
		}
	}
	fakeRootless(t)
	if err := CCNotLoaded("dctcp", []string{"reno"}); err == nil {
		t.Error("rootless: nil")
	}
}

func TestCCNotAllowed(t *testing.T) {
	err := ccNotAllowed("cubic", []string{"reno", "bbr"})
	for _, want := range []string{"not in net.ipv4.tcp_allowed_congestion_control (reno bbr)", "a user namespace cannot change",
		"`sudo sysctl -w net.ipv4.tcp_allowed_congestion_control=\"reno bbr cubic\"`", "per socket, which needs no root"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %v", want, err)
		}
	}
}

func TestCheckRTPriorityDecision(t *testing.T) {
	inf := uint64(unix.RLIM_INFINITY)
	for _, c := range []struct {
		prio      int
		cur, max  uint64
		wantOK    bool
		wantInErr []string
	}{
		{50, 50, 50, true, nil},
		{50, 99, 99, true, nil},
		{50, inf, inf, true, nil},
		{50, 0, 99, false, []string{"RLIMIT_RTPRIO of at least 50", "this process's is 0", "`ulimit -r 50`", "allows up to 99", "rtprio 50", "/etc/security/limits.conf", "run wanlab as root"}},
		{50, 0, inf, false, []string{"`ulimit -r 50`", "allows up to unlimited"}},
		{50, 10, 20, false, []string{"this process's is 10", "hard limit 20, which only root can raise", "rtprio 50", "run wanlab as root"}},
	} {
		err := checkRTPriority(c.prio, c.cur, c.max)
		if (err == nil) != c.wantOK {
			t.Errorf("prio %d, limit %d/%d: %v, want ok %v", c.prio, c.cur, c.max, err, c.wantOK)
			continue
		}
		for _, w := range c.wantInErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("prio %d, limit %d/%d: message lacks %q: %v", c.prio, c.cur, c.max, w, err)
			}
		}
		if c.max < uint64(c.prio) && err != nil && strings.Contains(err.Error(), "ulimit -r") {
			t.Errorf("prio %d above the hard limit %d: suggests ulimit -r, which cannot raise it: %v", c.prio, c.max, err)
		}
	}
}

// TestCheckRTPriority checks the decision on this process's own limit,
// which it only reads.
func TestCheckRTPriority(t *testing.T) {
	fakeRootless(t)
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_RTPRIO, &rl); err != nil {
		t.Fatal(err)
	}
	if err := CheckRTPriority(0); err != nil {
		t.Errorf("priority 0 (normal scheduling): %v", err)
	}
	err := CheckRTPriority(99)
	if want := rl.Cur == unix.RLIM_INFINITY || rl.Cur >= 99; (err == nil) != want {
		t.Errorf("priority 99 with RLIMIT_RTPRIO %d: %v", rl.Cur, err)
	}
	if os.Geteuid() == 0 {
		t.Setenv(rundir.Env, "")
		if err := CheckRTPriority(99); err != nil {
			t.Errorf("as root: %v", err)
		}
	}
}

func TestCheckSysctlDecision(t *testing.T) {
	for _, c := range []struct {
		key              string
		exists, writable bool
		want             []string // nil: allowed
	}{
		{"net.ipv4.tcp_ecn", true, true, nil},
		{"net.core.somaxconn", true, true, nil},
		{"net.core.wmem_max", true, false, []string{"net.core.wmem_max is the machine's, read-only in a network namespace", "only a network namespace's own sysctls", "`sudo sysctl -w net.core.wmem_max=VALUE`"}},
		{"net.ipv6.route.gc_thresh", false, false, []string{"only in namespaces that real root made", "run wanlab as root"}},
		{"net.core.xfrm_larval_drop", false, false, []string{"only in namespaces that real root made"}},
		{"net.core.default_qdisc", false, false, []string{"net.core.default_qdisc is not a sysctl of a network namespace", "`sysctl -a | grep default_qdisc`", "`sudo sysctl -w net.core.default_qdisc=VALUE`"}},
	} {
		err := checkSysctl(c.key, "", c.exists, c.writable)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.key, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: allowed", c.key)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: message lacks %q: %v", c.key, w, err)
			}
		}
	}
	if err := checkSysctl("net.ipv4.tcp_rmem", "4096 131072 6291456", true, false); err == nil || !strings.Contains(err.Error(), "`sudo sysctl -w net.ipv4.tcp_rmem=\"4096 131072 6291456\"`") {
		t.Errorf("a value with spaces: %v", err)
	}
	if err := checkSysctl("net.core.wmem_max", "8388608", true, false); err == nil || !strings.Contains(err.Error(), "`sudo sysctl -w net.core.wmem_max=8388608`") {
		t.Errorf("a value: %v", err)
	}
	t.Setenv(rundir.Env, "")
	if err := CheckSysctl("net.core.default_qdisc", "fq"); err != nil {
		t.Errorf("outside the namespace: %v, want nil (checked again inside)", err)
	}
}

func TestCheckPingGroupRange(t *testing.T) {
	zero := func(g uint64) bool { return g == 0 }
	for v, ok := range map[string]bool{"0 0": true, "0 2147483647": false, "1 0": false, "0\t1": false, "junk": true} {
		err := checkPingGroupRange(v, zero)
		if (err == nil) != ok {
			t.Errorf("%q: %v, want ok %v", v, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), `give "0 0"`) {
			t.Errorf("%q: %v", v, err)
		}
	}
	if err := checkSysctl("net.ipv4.ping_group_range", "0 0", true, true); err != nil {
		t.Errorf("0 0: %v", err)
	}
}

func TestBufferWarning(t *testing.T) {
	if w := bufferWarning("--sndbuf", "SO_SNDBUF", "net.core.wmem_max", 4096, 4096); w != "" {
		t.Errorf("within the limit: %q", w)
	}
	w := bufferWarning("--sndbuf", "SO_SNDBUF", "net.core.wmem_max", 8000000, 212992)
	for _, want := range []string{"--sndbuf 8000000", "get 212992 bytes", "SO_SNDBUF reads back 425984", "net.core.wmem_max 212992", "SO_SNDBUFFORCE",
		"`sudo sysctl -w net.core.wmem_max=8000000`", "run wanlab as root"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning lacks %q: %s", want, w)
		}
	}
}

// TestBufferWarnings reads the machine's limits as the run does.
func TestBufferWarnings(t *testing.T) {
	rmax, err1 := strconv.Atoi(sysctl("net/core/rmem_max"))
	wmax, err2 := strconv.Atoi(sysctl("net/core/wmem_max"))
	if err1 != nil || err2 != nil {
		t.Skip("no net.core.rmem_max or wmem_max here")
	}
	if os.Geteuid() == 0 {
		t.Setenv(rundir.Env, "")
		if w := BufferWarnings(wmax+1, rmax+1); w != nil {
			t.Errorf("as root, whose sockets force their buffers: %q", w)
		}
	}
	fakeRootless(t)
	if w := BufferWarnings(0, 0); w != nil {
		t.Errorf("autotuning: %q", w)
	}
	if w := BufferWarnings(wmax, rmax); w != nil {
		t.Errorf("at the limits: %q", w)
	}
	w := BufferWarnings(wmax+1, rmax+1)
	if len(w) != 2 || !strings.HasPrefix(w[0], "--sndbuf ") || !strings.HasPrefix(w[1], "--rcvbuf ") {
		t.Errorf("above both limits: %q", w)
	}
}

func TestCheckPacketPlane(t *testing.T) {
	fakeRootless(t)
	err := CheckPacketPlane()
	if err == nil || !strings.Contains(err.Error(), "use the tun data plane") {
		t.Errorf("rootless: %v", err)
	}
	if os.Geteuid() == 0 {
		t.Setenv(rundir.Env, "")
		if err := CheckPacketPlane(); err != nil {
			t.Errorf("as root: %v", err)
		}
	}
}

// childEnv marks the copy of the test binary that runs inside a user
// namespace for TestLimitsInUserNamespace.
const childEnv = "WANLAB_LIMITS_TEST_CHILD"

// TestLimitsInUserNamespace measures, in a user and network namespace as
// the keeper makes them (root inside, mapped to this uid), what the
// checks assume: which sysctls CheckSysctl allows, that SO_SNDBUFFORCE is
// refused, and that SCHED_FIFO beyond RLIMIT_RTPRIO is.
func TestLimitsInUserNamespace(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		limitsChild()
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to map itself into a user namespace")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLimitsInUserNamespace$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1", rundir.Env+"="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 unix.CLONE_NEWUSER | unix.CLONE_NEWNET,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok && strings.HasPrefix(k, "limit ") {
			got[strings.TrimPrefix(k, "limit ")] = v
		}
	}
	t.Logf("inside a user namespace:\n%s", out)
	for key, want := range map[string]string{
		"net.ipv4.tcp_ecn":                        "ok",
		"net.ipv4.tcp_congestion_control":         "ok",
		"net.ipv4.ping_group_range":               "ok",
		"net.core.somaxconn":                      "ok",
		"net.core.wmem_max":                       "read-only",
		"net.core.rmem_max":                       "read-only",
		"net.ipv4.tcp_allowed_congestion_control": "read-only",
		"net.core.default_qdisc":                  "not a sysctl of a network namespace",
		"net.core.netdev_max_backlog":             "not a sysctl of a network namespace",
		"SO_SNDBUFFORCE":                          "operation not permitted",
		"ping_group_range 0 0":                    "ok",
		"ping_group_range 0 2147483647":           `give "0 0"`,
	} {
		if !strings.Contains(got[key], want) {
			t.Errorf("%s: %q, want %q", key, got[key], want)
		}
	}
	if v := got["SCHED_FIFO"]; v != "ok" && v != "refused as checked" {
		t.Errorf("SCHED_FIFO: %s", v)
	}
}

// limitsChild prints, one per line, what the checks say inside the
// namespace.
func limitsChild() {
	for _, key := range []string{"net.ipv4.tcp_ecn", "net.ipv4.tcp_congestion_control", "net.ipv4.ping_group_range", "net.core.somaxconn",
		"net.core.wmem_max", "net.core.rmem_max", "net.ipv4.tcp_allowed_congestion_control", "net.core.default_qdisc", "net.core.netdev_max_backlog"} {
		res := "ok"
		if err := CheckSysctl(key, "1"); err != nil {
			res = err.Error()
		}
		os.Stdout.WriteString("limit " + key + "\t" + res + "\n")
	}
	for _, v := range []string{"0 0", "0 2147483647"} {
		res := "ok"
		if err := CheckSysctl("net.ipv4.ping_group_range", v); err != nil {
			res = err.Error()
		}
		os.Stdout.WriteString("limit ping_group_range " + v + "\t" + res + "\n")
	}
	res := "ok"
	if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0); err != nil {
		res = err.Error()
	} else {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 1<<24); err != nil {
			res = err.Error()
		}
		unix.Close(fd)
	}
	os.Stdout.WriteString("limit SO_SNDBUFFORCE\t" + res + "\n")
	// SCHED_FIFO at 1 on a thread of its own, given back at once: the
	// kernel's answer must be the check's.
	checked := CheckRTPriority(1)
	res = "ok"
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The thread ends with the goroutine, whatever its policy.
		runtime.LockOSThread()
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
		err := unix.SchedSetAttr(0, &attr, 0)
		switch {
		case err == nil && checked == nil:
			normal := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
			unix.SchedSetAttr(0, &normal, 0)
		case errors.Is(err, unix.EPERM) && checked != nil:
			res = "refused as checked"
		default:
			res = "kernel: " + errText(err) + "; check: " + errText(checked)
		}
	}()
	<-done
	os.Stdout.WriteString("limit SCHED_FIFO\t" + res + "\n")
}

func errText(err error) string {
	if err == nil {
		return "allowed"
	}
	return err.Error()
}
