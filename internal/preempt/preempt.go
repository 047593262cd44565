// Package preempt tells the running kernel's preemption mode, which
// decides how long a task inside the kernel (a program sending, a kernel
// thread) may keep its CPU from a thread that woke with a higher claim on
// it, such as the router's loops. In mode "none" that is until the task
// returns to user space or reaches a voluntary scheduling point, which
// can be milliseconds; "voluntary" adds such points; "full", "lazy" and
// "rt" preempt it at once or at the next tick (the kernel's
// Documentation/admin-guide/kernel-parameters.txt, "preempt=").
package preempt

import (
	"bufio"
	"io"
	"strings"
)

// The modes, as the kernel's debugfs file sched/preempt and its
// preempt= parameter name them.
const (
	None      = "none"
	Voluntary = "voluntary"
	Full      = "full"
	Lazy      = "lazy"
	RT        = "rt"
)

// FromDebugfs reads the kernel's sched/preempt file of a PREEMPT_DYNAMIC
// kernel, which lists the modes with the current one in parentheses
// ("none voluntary (full) lazy"); "" when none is marked.
func FromDebugfs(s string) string {
	for _, w := range strings.Fields(s) {
		if len(w) > 2 && w[0] == '(' && w[len(w)-1] == ')' {
			return w[1 : len(w)-1]
		}
	}
	return ""
}

// FromVersion reads the kernel's version string (uname -v, e.g. "#1 SMP
// PREEMPT_DYNAMIC Debian 6.1.129-1"): the mode it names, if it names
// one, and whether the mode may be chosen at boot (PREEMPT_DYNAMIC), in
// which case the mode is the boot parameter's or the build's default.
func FromVersion(v string) (mode string, dynamic bool) {
	for _, w := range strings.Fields(v) {
		switch w {
		case "PREEMPT_DYNAMIC":
			dynamic = true
		case "PREEMPT_RT":
			return RT, false
		case "PREEMPT_LAZY":
			mode = Lazy
		case "PREEMPT":
			mode = Full
		}
	}
	if dynamic {
		return "", true
	}
	return mode, false
}

// FromCmdline returns the mode the kernel's command line chooses with
// preempt=, or "".
func FromCmdline(s string) string {
	for _, w := range strings.Fields(s) {
		if m, ok := strings.CutPrefix(w, "preempt="); ok {
			return m
		}
	}
	return ""
}

// FromConfig returns the mode the kernel's build configuration (as
// /proc/config.gz or /boot/config-RELEASE hold it) chooses by default,
// or "" when it names none of them.
func FromConfig(r io.Reader) string {
	// The file lists CONFIG_PREEMPT (full) before CONFIG_PREEMPT_RT,
	// which a real-time build sets too: read it all, RT first.
	set := map[string]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if name, ok := strings.CutSuffix(strings.TrimSpace(sc.Text()), "=y"); ok {
			set[name] = true
		}
	}
	for _, c := range []struct{ option, mode string }{
		{"CONFIG_PREEMPT_RT", RT},
		{"CONFIG_PREEMPT_NONE", None},
		{"CONFIG_PREEMPT_VOLUNTARY", Voluntary},
		{"CONFIG_PREEMPT_LAZY", Lazy},
		{"CONFIG_PREEMPT", Full},
	} {
		if set[c.option] {
			return c.mode
		}
	}
	return ""
}
