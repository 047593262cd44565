package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests run the binary as an ordinary user (ordinaryUser), who runs
// it inside a user namespace (package rootless), and check that what a
// user namespace cannot do is refused, or warned of, with the limit and
// the fix, before anything is built. They need root to switch users.

// missingCC returns a congestion control the kernel has not loaded, or
// "" if every candidate is.
func missingCC() string {
	b, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	avail := strings.Fields(string(b))
	for _, cc := range []string{"dctcp", "vegas", "westwood", "htcp", "illinois", "hybla", "lp"} {
		if !slices.Contains(avail, cc) {
			return cc
		}
	}
	return ""
}

// TestCLIRootlessRefusals runs, as an ordinary user, each thing a user
// namespace cannot do: each is a usage error (exit 2) naming the limit
// and the fix, and nothing is built.
func TestCLIRootlessRefusals(t *testing.T) {
	u := newOrdinaryUser(t, rootlessUserA)
	dir := u.home
	out := filepath.Join(dir, "r.json.gz")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"sysctl read-only in a namespace", []string{"run", "ping", "--duration", "1s", "--sysctl", "net.core.wmem_max=8388608", "-o", out},
			[]string{`--sysctl "net.core.wmem_max=8388608": net.core.wmem_max is the machine's, read-only in a network namespace`, "`sudo sysctl -w net.core.wmem_max=8388608`"}},
		{"sysctl of the machine alone", []string{"run", "ping", "--duration", "1s", "--sysctl", "client:net.core.default_qdisc=fq", "-o", out},
			[]string{"net.core.default_qdisc is not a sysctl of a network namespace", "a user namespace can set only a network namespace's own sysctls"}},
		{"packet plane", []string{"run", "ping", "--duration", "1s", "--dataplane", "packet", "-o", out},
			[]string{"--dataplane packet: the packet data plane needs real root", "use the tun data plane"}},
		{"packet plane of up", []string{"up", "--dataplane", "packet"},
			[]string{"--dataplane packet: the packet data plane needs real root"}},
	}
	if cc := missingCC(); cc != "" {
		cases = append(cases, struct {
			name string
			args []string
			want []string
		}{"congestion control not loaded", []string{"run", "tcp_upload", "--duration", "1s", "--cc", cc, "-o", out},
			[]string{"congestion control " + cc + " is not loaded", "never for a user namespace", "`sudo modprobe tcp_" + cc + "`"}})
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_RTPRIO, &rl) == nil && rl.Cur != unix.RLIM_INFINITY && rl.Cur < 50 {
		cases = append(cases, struct {
			name string
			args []string
			want []string
		}{"real-time priority", []string{"up", "--rt-priority", "50"},
			[]string{"--rt-priority 50: real-time priority 50 needs RLIMIT_RTPRIO of at least 50", "this process's is " + strconv.FormatUint(rl.Cur, 10), "rtprio 50", "run wanlab as root (without --rootless)"}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := u.run(t, 30*time.Second, c.args...)
			if code != 2 {
				t.Fatalf("wanlab %q: exit %d, want 2 (a usage error)\nstdout: %s\nstderr: %s", c.args, code, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
	// Root with --rootless takes the same path: the check refuses inside
	// the namespace, where it measures what the hosts could set.
	t.Run("as root with --rootless", func(t *testing.T) {
		_, stderr, code := cli(t, "--rootless", "run", "ping", "--duration", "1s", "--sysctl", "net.core.wmem_max=8388608", "-o", filepath.Join(t.TempDir(), "r.json.gz"))
		if code != 2 || !strings.Contains(stderr, "read-only in a network namespace") {
			t.Errorf("exit %d, want 2\n%s", code, stderr)
		}
	})
}

// TestCLIRootlessRun runs a test as an ordinary user with a send buffer
// beyond net.core.wmem_max: the run warns once, before anything is built,
// of the size asked, the size got, the limit and the fix, and its results
// record that it ran rootless, which `wanlab show` prints.
func TestCLIRootlessRun(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/core/wmem_max")
	if err != nil {
		t.Skip("no net.core.wmem_max")
	}
	wmax, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	u := newOrdinaryUser(t, rootlessUserA)
	dir := u.home
	out := filepath.Join(dir, "r.json.gz")
	asked := strconv.Itoa(wmax + 4096)
	_, stderr, code := u.run(t, 90*time.Second, "run", "tcp_upload", "--duration", "1s", "--lead", "0s", "--tail", "0s",
		"--up", "tbf rate 20mbit burst 32k latency 50ms", "--sndbuf", asked, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	warn := "wanlab: warning: --sndbuf " + asked + ": without root the sockets get " + strconv.Itoa(wmax) + " bytes"
	if n := strings.Count(stderr, warn); n != 1 {
		t.Errorf("the warning %q appears %d times, want once:\n%s", warn, n, stderr)
	}
	for _, w := range []string{"net.core.wmem_max " + strconv.Itoa(wmax), "SO_SNDBUFFORCE", "`sudo sysctl -w net.core.wmem_max=" + asked + "`"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	js := mustCLI(t, "show", out, "--json")
	if !strings.Contains(js, `"rootless": true`) && !strings.Contains(js, `"rootless":true`) {
		t.Errorf("the results do not record rootless:\n%.600s", js)
	}
	if text := mustCLI(t, "show", out); !strings.Contains(text, "rootless (user namespace)") {
		t.Errorf("show does not say rootless:\n%.600s", text)
	}
}
