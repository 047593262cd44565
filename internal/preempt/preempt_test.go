package preempt

import (
	"strings"
	"testing"
)

func TestFromDebugfs(t *testing.T) {
	for in, want := range map[string]string{
		"none voluntary (full) lazy\n": Full,
		"(none) voluntary full lazy\n": None,
		"none (voluntary) full\n":      Voluntary,
		"none voluntary full lazy\n":   "",
		"()\n":                         "",
	} {
		if got := FromDebugfs(in); got != want {
			t.Errorf("FromDebugfs(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFromVersion(t *testing.T) {
	for _, c := range []struct {
		in      string
		mode    string
		dynamic bool
	}{
		{"#1 SMP PREEMPT_DYNAMIC Debian 6.1.129-1 (2025-03-06)", "", true},
		{"#1 SMP PREEMPT_DYNAMIC @0", "", true},
		{"#1 SMP PREEMPT Tue Mar 5 2024", Full, false},
		{"#1 SMP PREEMPT_RT Tue Mar 5 2024", RT, false},
		{"#1 SMP PREEMPT_LAZY Tue Mar 5 2025", Lazy, false},
		{"#1 SMP Tue Mar 5 2024", "", false},
	} {
		mode, dynamic := FromVersion(c.in)
		if mode != c.mode || dynamic != c.dynamic {
			t.Errorf("FromVersion(%q) = %q, %v; want %q, %v", c.in, mode, dynamic, c.mode, c.dynamic)
		}
	}
}

func TestFromCmdline(t *testing.T) {
	if got := FromCmdline("BOOT_IMAGE=/vmlinuz root=/dev/sda1 preempt=full quiet\n"); got != Full {
		t.Errorf("preempt=full: %q", got)
	}
	if got := FromCmdline("console=ttyS0 quiet\n"); got != "" {
		t.Errorf("no preempt=: %q", got)
	}
}

func TestFromConfig(t *testing.T) {
	for in, want := range map[string]string{
		"CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_NONE=y\n# CONFIG_PREEMPT_VOLUNTARY is not set\nCONFIG_PREEMPT_DYNAMIC=y\n": None,
		"# CONFIG_PREEMPT_NONE is not set\nCONFIG_PREEMPT_VOLUNTARY=y\n":                                                   Voluntary,
		"CONFIG_PREEMPT=y\nCONFIG_PREEMPT_COUNT=y\n":                                                                       Full,
		"CONFIG_PREEMPT=y\nCONFIG_PREEMPT_RT=y\n":                                                                          RT,
		"CONFIG_HZ=250\n": "",
	} {
		if got := FromConfig(strings.NewReader(in)); got != want {
			t.Errorf("FromConfig(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMode reads this machine's kernel: whatever it says must be one of
// the modes, or nothing.
func TestMode(t *testing.T) {
	switch m := Mode(); m {
	case "", None, Voluntary, Full, Lazy, RT:
		t.Logf("this kernel's preemption mode: %q", m)
	default:
		t.Errorf("Mode() = %q, not a mode", m)
	}
}
