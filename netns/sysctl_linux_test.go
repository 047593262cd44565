package netns

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func rootSysctl(t *testing.T, key string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(key, ".", "/"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestSysctlLandsInTheNamespace(t *testing.T) {
	h := newNamespace(t)
	set := map[string]string{
		"net.ipv4.tcp_rmem":                  "4096 131071 3145727",
		"net.ipv4.tcp_wmem":                  "4096 16383 3145729",
		"net.ipv4.tcp_ecn":                   "1",
		"net.ipv4.tcp_no_metrics_save":       "1",
		"net.ipv4.tcp_congestion_control":    "reno",
		"net.ipv6.conf.all.disable_ipv6":     "1",
		"net/ipv6/conf/default/accept_dad":   "0",
		"net.core.somaxconn":                 "1023",
		"net.ipv4.tcp_notsent_lowat":         "131071",
		"net.ipv4.tcp_slow_start_after_idle": "0",
	}
	rootBefore := map[string]string{}
	for k := range set {
		rootBefore[k] = rootSysctl(t, strings.ReplaceAll(k, "/", "."))
	}
	for k, v := range set {
		if err := h.SetSysctl(k, v); err != nil {
			t.Fatalf("SetSysctl(%s): %v", k, err)
		}
	}
	for k, v := range set {
		key := strings.ReplaceAll(k, "/", ".")
		// The sysctl tool prints tabs between the numbers of a vector.
		got := strings.Join(strings.Fields(ipNetnsExec(t, h.Name(), "sysctl", "-n", key)), " ")
		if got != v {
			t.Errorf("ip netns exec sysctl %s = %q, want %q", key, got, v)
		}
		if back, err := h.Sysctl(k); err != nil || strings.Join(strings.Fields(back), " ") != v {
			t.Errorf("Sysctl(%s) = %q, %v; want %q", k, back, err, v)
		}
		if root := rootSysctl(t, key); root != rootBefore[k] {
			t.Errorf("root namespace's %s changed from %q to %q", key, rootBefore[k], root)
		}
	}
}

func TestSysctlErrors(t *testing.T) {
	h := newNamespace(t)
	err := h.SetSysctl("net.ipv4.tcp_congestion_control", "wl_nosuch")
	if err == nil {
		t.Fatal("an unknown congestion control was accepted")
	}
	avail, aerr := h.Sysctl("net.ipv4.tcp_available_congestion_control")
	if aerr != nil {
		t.Fatal(aerr)
	}
	for _, want := range []string{"wl_nosuch", avail, "modprobe tcp_wl_nosuch"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	for _, key := range []string{"kernel.hostname", "vm.swappiness", "net/../kernel/hostname"} {
		if err := h.SetSysctl(key, "x"); err == nil || !strings.Contains(err.Error(), "only net.*") {
			t.Errorf("SetSysctl(%s) = %v, want a refusal", key, err)
		}
	}
	// net.ipv4.tcp_mem is global: a namespace does not have it.
	if err := h.SetSysctl("net.ipv4.tcp_mem", "1 2 3"); err == nil || !strings.Contains(err.Error(), "does not exist in a network namespace") {
		t.Errorf("SetSysctl(net.ipv4.tcp_mem) = %v, want a does-not-exist error", err)
	}
}

// availableCC returns a namespace of a testbed of the test's own, and the
// congestion control algorithms available there.
func availableCC(t *testing.T) (*Handle, string) {
	t.Helper()
	h := newNamespace(t)
	avail, err := h.Sysctl("net.ipv4.tcp_available_congestion_control")
	if err != nil {
		t.Fatal(err)
	}
	return h, avail
}

func TestCongestionControlBBR(t *testing.T) {
	h, avail := availableCC(t)
	if !strings.Contains(" "+avail+" ", " bbr ") {
		// Try the module loader the way an operator would; the kernel
		// may also have bbr built in, or not at all.
		exec.Command("modprobe", "tcp_bbr").Run()
	}
	err := h.SetSysctl("net.ipv4.tcp_congestion_control", "bbr")
	if err != nil {
		if !strings.Contains(err.Error(), "modprobe tcp_bbr") && !strings.Contains(err.Error(), "tcp_allowed_congestion_control") {
			t.Fatalf("SetSysctl(bbr) failed without saying how to fix it: %v", err)
		}
		t.Skipf("bbr cannot be this namespace's default here: %v", err)
	}
	if got := strings.TrimSpace(ipNetnsExec(t, h.Name(), "sysctl", "-n", "net.ipv4.tcp_congestion_control")); got != "bbr" {
		t.Errorf("congestion control in %s is %q, want bbr", h.Name(), got)
	}
}

// An algorithm the kernel has but the root namespace does not allow as a
// namespace's default is refused by Linux with EPERM; the error must say
// which setting decides, not suggest loading a module that is loaded.
func TestCongestionControlNotAllowed(t *testing.T) {
	h, avail := availableCC(t)
	allowed, err := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control") // the root namespace's, read only
	if err != nil {
		t.Fatal(err)
	}
	var cc string
	for _, a := range strings.Fields(avail) {
		if !slices.Contains(strings.Fields(string(allowed)), a) {
			cc = a
			break
		}
	}
	if cc == "" {
		t.Skipf("every available algorithm (%s) is allowed here", avail)
	}
	err = h.SetSysctl("net.ipv4.tcp_congestion_control", cc)
	if err == nil {
		t.Skipf("%s was accepted although not in the allowed list (%s)", cc, strings.TrimSpace(string(allowed)))
	}
	if !strings.Contains(err.Error(), "tcp_allowed_congestion_control") || strings.Contains(err.Error(), "modprobe") {
		t.Errorf("error %q should name tcp_allowed_congestion_control, not modprobe", err)
	}
}
