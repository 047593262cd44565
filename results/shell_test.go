package results

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestShellJoinRoundTrip has a real shell split ShellJoin's line back into
// words: every argv must come back unchanged.
func TestShellJoinRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to split the line")
	}
	argv := []string{"wanlab", "run", "rrul", "--up", "netem delay 20ms; tbf rate 10mbit burst 32k latency 50ms",
		"--title", `it's "quoted" $HOME ${x} \back`, "", "a\nb", "--opt=x,y:z%@+", "*", "~", "#c", "é"}
	line := ShellJoin(argv)
	// The script prints each word the shell split the line into, followed
	// by a NUL byte.
	out, err := exec.Command(sh, "-c", `set -- `+line+`; for a in "$@"; do printf '%s\0' "$a"; done`).Output()
	if err != nil {
		t.Fatalf("sh -c 'set -- %s': %v", line, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Equal(got, argv) {
		t.Errorf("ShellJoin gave %s\nthe shell split it into %q\nwant %q", line, got, argv)
	}
}
