package netns

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"wanlab/internal/rundir"
	"wanlab/internal/testlock"
	"wanlab/rootless"
)

// The main goroutine stays on the main thread in the root namespace, as in
// the wanlab command, so Do's goroutines never run on the main thread.
func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	// As roottest.EnterRootless, which this package's tests cannot import.
	rootless.Begin()
	if rootless.Needed(false) {
		fmt.Fprintf(os.Stderr, "the tests that need root will skip: %v\n", rootless.Enter(os.Args))
	}
	if os.Geteuid() == 0 {
		// Remove what an interrupted earlier run of these tests left.
		if gone, err := CleanStale(); err != nil {
			fmt.Fprintln(os.Stderr, "CleanStale:", err)
		} else if len(gone) > 0 {
			fmt.Fprintln(os.Stderr, "removed stale namespaces:", gone)
		}
	}
	os.Exit(m.Run())
}

// needRoot skips the test unless it runs as root; otherwise it holds the
// machine-wide test lock until the test ends, as every test that builds
// namespaces does.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to create network namespaces (run the tests as root)")
	}
	testlock.Hold(t)
}

// newTestbed registers a testbed with a random name and removes it, with all
// its namespaces, when the test ends.
func newTestbed(t *testing.T) *Testbed {
	t.Helper()
	needRoot(t)
	name := fmt.Sprintf("t%06x", rand.Uint32()&0xffffff)
	tb, err := NewTestbed(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st, _ := tb.State()
		if err := tb.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, n := range st.Namespaces {
			if Exists(n) {
				t.Errorf("namespace %s still exists after Close", n)
			}
		}
		if _, err := os.Stat(statePath(name)); !os.IsNotExist(err) {
			t.Errorf("state file of %s still there after Close (%v)", name, err)
		}
	})
	return tb
}

// newNamespace returns namespace "a" of a testbed of the test's own,
// removed when the test ends.
func newNamespace(t *testing.T) *Handle {
	t.Helper()
	return mustNamespace(t, newTestbed(t), "a")
}

func mustNamespace(t *testing.T, tb *Testbed, role string) *Handle {
	t.Helper()
	h, err := tb.Namespace(role)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// helperArg returns the value of env, which a test sets when it runs the
// test binary again as a helper process (startHelper), and skips the test
// otherwise: a helper is no test of its own.
func helperArg(t *testing.T, env string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Skip("helper process only")
	}
	return v
}

// helperMust ends a helper process that failed, telling its parent why on
// the standard output the parent reads.
func helperMust(err error) {
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

// startHelper runs the test binary again as the helper process test (a
// TestHelper function), named argv0 unless that is "", with env added to
// its environment, and returns it once it has said "ready"; it is killed,
// if it still runs, when the test ends.
func startHelper(t *testing.T, test, argv0, env string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	if argv0 != "" {
		cmd.Args[0] = argv0
	}
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("%s said %q", test, line)
	}
	return cmd
}

// needIPNetns skips a test that reaches the namespaces through iproute2's
// `ip netns`, which finds them only in /run/netns: in the user's namespace
// they are bind-mounted under the user's own directory (rundir), since an
// ordinary user cannot write to /run.
func needIPNetns(t *testing.T) {
	t.Helper()
	if rundir.Rootless() {
		t.Skip("skipped: needs real root: `ip netns` looks only in /run/netns, which an ordinary user cannot use")
	}
}

// ipNetnsExec runs a command through iproute2's `ip netns exec`, the
// independent view a person would use.
func ipNetnsExec(t *testing.T, ns string, args ...string) string {
	t.Helper()
	needIPNetns(t)
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns exec %s %s: %v\n%s", ns, strings.Join(args, " "), err, out)
	}
	return string(out)
}
