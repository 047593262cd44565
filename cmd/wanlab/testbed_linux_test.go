package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
	"wanlab/lab"
	"wanlab/netns"
)

// These tests run the real wanlab binary, built once per test run, as
// root; they skip otherwise.

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	roottest.EnterRootless()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// wanlabBin builds the command into a temporary directory.
func wanlabBin(t *testing.T) string {
	t.Helper()
	roottest.NeedRoot(t)
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "wl-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "wanlab")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// cli runs the binary, for at most a minute, and returns its output and
// exit status.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return cliFor(t, 60*time.Second, args...)
}

// mustCLI runs the binary and fails the test unless it exits 0.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := cli(t, args...)
	if code != 0 {
		t.Fatalf("wanlab %q: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

func uniqueName() string { return fmt.Sprintf("tc%06x", rand.Uint32()&0xffffff) }

// upDetached starts a detached testbed and takes it down when the test
// ends, checking that nothing of it remains.
func upDetached(t *testing.T, name string, args ...string) lab.Info {
	t.Helper()
	out := mustCLI(t, append([]string{"up", "--name", name, "--detach", "--json"}, args...)...)
	t.Cleanup(func() {
		cli(t, "down", name)
		assertNothingLeft(t, name)
	})
	var i lab.Info
	if err := json.Unmarshal([]byte(out), &i); err != nil {
		t.Fatalf("up --json printed %q: %v", out, err)
	}
	return i
}

// startUp starts up, a `wanlab up` of testbed name in the foreground, and
// when the test ends kills it and takes the testbed down; then, if built
// (up was to build the testbed), it checks that nothing of it remains.
func startUp(t *testing.T, up *exec.Cmd, name string, built bool) {
	t.Helper()
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		up.Process.Kill()
		up.Wait()
		cli(t, "down", name)
		if built {
			assertNothingLeft(t, name)
		}
	})
}

// awaitUp reads from r, the output of a foreground up, to its message
// that testbed name is up, and discards the rest of r from then on.
func awaitUp(r io.Reader, name string) {
	lines := bufio.NewScanner(r)
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "testbed "+name+" is up") {
	}
	go io.Copy(io.Discard, r)
}

// noTestbed checks that nothing of testbed name is left, or was ever made:
// no namespace, no record.
func noTestbed(t *testing.T, name string) {
	t.Helper()
	roottest.NoTestbed(t, name, lab.NamespaceName(name, lab.Client), lab.NamespaceName(name, lab.Server))
}

// assertNothingLeft checks that testbed name has no namespace, record,
// socket, log or owner left.
func assertNothingLeft(t *testing.T, name string) {
	t.Helper()
	noTestbed(t, name)
	// Every host's namespace of a dumbbell too (wl-NAME-c2, ...).
	if left := leftovers(t, name); len(left) > 0 {
		t.Errorf("testbed %s left %v", name, left)
	}
	for _, p := range []string{lab.SocketPath(name), lab.LogPath(name)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
	// The devices live in the namespaces; none may have reached the root
	// namespace (where this goroutine's thread is).
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, netns.Prefix+name) || i.Name == lab.IfName(name, lab.Client) || i.Name == lab.IfName(name, lab.Server) {
			t.Errorf("device %s in the root namespace", i.Name)
		}
	}
}

var pingTime = regexp.MustCompile(`icmp_seq=\d+ .*time=([0-9.]+) ms`)

func TestCLITestbedLifecycle(t *testing.T) {
	name := uniqueName()
	info := upDetached(t, name, "--both", "netem delay 25ms", "--cc", "reno")
	if info.Name != name || info.Client.NS != "wl-"+name+"-c" || !info.Server.Addr4.IsValid() {
		t.Fatalf("up --json: %+v", info)
	}
	// A second up of the same name is refused and names the fix.
	_, errOut, code := cli(t, "up", "--name", name, "--detach")
	if code != 1 || !strings.Contains(errOut, "wanlab down "+name) {
		t.Errorf("second up: exit %d, %q; want 1 and a message naming `wanlab down %s`", code, errOut, name)
	}

	out := mustCLI(t, "exec", name, "--", "ping", "-c", "5", "-i", "0.1", "@peer")
	var rtts []float64
	for _, m := range pingTime.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		rtts = append(rtts, v)
	}
	if len(rtts) != 5 {
		t.Fatalf("ping through wanlab exec: %d replies, want 5:\n%s", len(rtts), out)
	}
	slices.Sort(rtts)
	t.Logf("ping through wanlab exec: RTTs %v ms", rtts)
	if med := rtts[2]; med < 49 || med > 51 {
		t.Errorf("ping RTT median %.3f ms, want 50±1 ms", med)
	}
	if out := mustCLI(t, "exec", name, "--on", "server", "--", "sh", "-c", "echo $WANLAB_HOST $WANLAB_PEER4"); out != "server "+info.Client.Addr4.String()+"\n" {
		t.Errorf("server's environment: %q", out)
	}
	if _, _, code := cli(t, "exec", name, "--", "sh", "-c", "exit 7"); code != 7 {
		t.Errorf("exec of a program exiting 7: wanlab exited %d", code)
	}

	var st lab.Status
	if err := json.Unmarshal([]byte(mustCLI(t, "status", name, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.CC != "reno" || st.Up.Chain == "" || st.Up.Counters.Delivered < 5 {
		t.Errorf("status: cc %q, up chain %q, delivered %d; want reno, the netem chain, >= 5", st.CC, st.Up.Chain, st.Up.Counters.Delivered)
	}
	text := mustCLI(t, "status", name)
	for _, want := range []string{"qdisc netem 1: root", "Sent ", "backlog ", "delay ms:"} {
		if !strings.Contains(text, want) {
			t.Errorf("status text lacks %q:\n%s", want, text)
		}
	}

	// The up chain keeps netem at the root (changed in place); the down
	// chain has tbf where netem was (replaced).
	out = mustCLI(t, "set", name, "--up", "netem loss 100%", "--down", "tbf rate 1gbit burst 100k latency 10ms")
	for _, want := range []string{name + " up: netem", "  1 netem: changed", name + " down: tbf", "  1 netem -> tbf: replaced"} {
		if !strings.Contains(out, want) {
			t.Errorf("set's report lacks %q:\n%s", want, out)
		}
	}
	mustCLI(t, "set", name, "--down", "")
	if _, _, code := cli(t, "exec", name, "--", "ping", "-c", "1", "-W", "1", "@peer"); code != 1 {
		t.Errorf("ping through loss 100%%: exit %d, want ping's 1", code)
	}
	mustCLI(t, "set", name, "--up", "")
	mustCLI(t, "exec", name, "--", "ping", "-c", "1", "-W", "2", "@peer")

	for _, bad := range [][]string{
		{"set", name, "--up", "netem delay"},
		{"set", name},
		{"exec", name, "ping"},
		{"exec", name, "--on", "router", "--", "true"},
		{"up", "--name", "Bad Name"},
		{"up", "--cc", "nosuchcc"},
	} {
		_, errOut, code := cli(t, bad...)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("wanlab %q: exit %d, stderr %q; want 2 and one line", bad, code, errOut)
		}
	}

	// A program still running in a host when the testbed goes down.
	sleeper := exec.Command(wanlabBin(t), "exec", name, "--", "sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	var child netns.Proc
	waitFor(t, "the sleep to be recorded", func() bool {
		cs := netnsChildren(name)
		if len(cs) == 1 {
			child = cs[0]
		}
		return len(cs) == 1
	})
	mustCLI(t, "down", name)
	assertNothingLeft(t, name)
	if child.Alive() {
		t.Errorf("the sleep (pid %d) survived down", child.PID)
	}
	if err := sleeper.Wait(); err == nil {
		t.Errorf("wanlab exec of a program that down killed exited 0")
	}
	if _, errOut, code := cli(t, "status", name); code != 1 || !strings.Contains(errOut, "not running") {
		t.Errorf("status after down: exit %d, %q; want 1, not running", code, errOut)
	}
}

// TestCLISigkillLeavesNothingAfterNextUp kills a foreground `wanlab up`
// with SIGKILL while a program it started runs in a host; the next `up` of
// the same name must remove the leftovers, and `down` everything.
func TestCLISigkillLeavesNothingAfterNextUp(t *testing.T) {
	bin := wanlabBin(t)
	name := uniqueName()
	up := exec.Command(bin, "up", "--name", name, "--json")
	stdout, err := up.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startUp(t, up, name, true)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("up printed nothing: %v", err)
	}
	var info lab.Info
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatalf("up --json: %q: %v", line, err)
	}
	// A program inside the server, recorded in the testbed.
	sleeper := exec.Command(bin, "exec", name, "--on", "server", "--", "sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Wait()
	var child netns.Proc
	waitFor(t, "the sleep to be recorded", func() bool {
		states, _ := netns.Testbeds()
		for _, st := range states {
			if st.Name == name && len(st.Children) == 1 {
				child = st.Children[0]
				return true
			}
		}
		return false
	})

	if err := up.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	up.Wait()
	if !netns.Exists(info.Client.NS) || !child.Alive() {
		t.Fatalf("after SIGKILL: namespace there %v, sleep alive %v; the test expects leftovers", netns.Exists(info.Client.NS), child.Alive())
	}

	// The next up removes them and builds a fresh testbed.
	mustCLI(t, "up", "--name", name, "--detach")
	if child.Alive() {
		t.Errorf("the sleep (pid %d) of the killed testbed survived the next up", child.PID)
	}
	states, _ := netns.Testbeds()
	var owner netns.Proc
	for _, st := range states {
		if st.Name == name {
			owner = st.Owner
		}
	}
	if !owner.Alive() || len(netnsChildren(name)) != 0 {
		t.Fatalf("the new testbed: owner %+v alive %v, children %v", owner, owner.Alive(), netnsChildren(name))
	}
	mustCLI(t, "down", name)
	assertNothingLeft(t, name)
	if owner.Alive() {
		t.Errorf("the detached owner (pid %d) still runs after down", owner.PID)
	}
	if out, _ := exec.Command("ip", "-n", info.Client.NS, "link").CombinedOutput(); !strings.Contains(string(out), "No such file") && !strings.Contains(string(out), "Cannot open") {
		t.Errorf("ip -n %s link after down: %s", info.Client.NS, out)
	}
}

func netnsChildren(name string) []netns.Proc {
	states, _ := netns.Testbeds()
	for _, st := range states {
		if st.Name == name {
			return st.Children
		}
	}
	return nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCLIIperf3AgreesWithRouter runs iperf3 through `wanlab exec` across a
// 100 Mbit/s token bucket and compares what iperf3's receiver counted with
// the router's count of the data flow's payload bytes.
func TestCLIIperf3AgreesWithRouter(t *testing.T) {
	bin := wanlabBin(t)
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("skipped: iperf3 is not installed (apt-get install -y iperf3)")
	}
	name := uniqueName()
	upDetached(t, name, "--up", "tbf rate 100mbit burst 32k latency 50ms")
	srv := exec.Command(bin, "exec", name, "--on", "server", "--", "iperf3", "-s", "-1", "-p", "5201")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Wait()
	waitFor(t, "iperf3 to listen", func() bool {
		out, _, _ := cli(t, "exec", name, "--on", "server", "--", "ss", "-Hltn", "sport = :5201")
		return strings.Contains(out, "LISTEN")
	})
	out := mustCLI(t, "exec", name, "--", "iperf3", "-c", "@peer", "-p", "5201", "-t", "3", "--json")
	var res struct {
		End struct {
			SumSent     struct{ Bytes uint64 } `json:"sum_sent"`
			SumReceived struct {
				Bytes         uint64
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("iperf3 --json: %v\n%s", err, out)
	}
	var st lab.Status
	if err := json.Unmarshal([]byte(mustCLI(t, "status", name, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	var payload, pkts uint64
	for _, f := range st.Up.Flows {
		if f.Flow.Dst.Port() == 5201 && f.Payload > payload {
			payload, pkts = f.Payload, f.Packets
		}
	}
	got := res.End.SumReceived.Bytes
	diff := (float64(payload) - float64(got)) / float64(got)
	t.Logf("iperf3: sent %d, received %d bytes (%.2f Mbit/s); router: data flow %d pkts, %d payload bytes (%+.3f%%)",
		res.End.SumSent.Bytes, got, res.End.SumReceived.BitsPerSecond/1e6, pkts, payload, 100*diff)
	if got == 0 || diff < -0.01 || diff > 0.01 {
		t.Errorf("router's payload bytes %d vs iperf3's %d: %+.3f%%, want within 1%%", payload, got, 100*diff)
	}
}

// TestCLIShellOnATerminal drives `wanlab shell` from a pseudo-terminal, as
// a person at a terminal would: the prompt names the host, and commands run
// inside it.
func TestCLIShellOnATerminal(t *testing.T) {
	bin := wanlabBin(t)
	name := uniqueName()
	info := upDetached(t, name)
	master, slave, err := openTestPTY()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	sh := exec.Command(bin, "shell", name, "--on", "server")
	sh.Env = append(os.Environ(), "SHELL=/bin/bash")
	sh.Stdin, sh.Stdout, sh.Stderr = slave, slave, slave
	sh.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	out := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			b.Write(buf[:n])
			if err != nil || strings.Contains(b.String(), "done-server-") {
				out <- b.String()
				return
			}
		}
	}()
	fmt.Fprintf(master, "echo done-$WANLAB_HOST-$(ip -br addr show dev %s | wc -l)\nexit\n", info.Server.IfName)
	var got string
	select {
	case got = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("no output from the shell within 10 s")
	}
	if err := sh.Wait(); err != nil {
		t.Errorf("wanlab shell: %v", err)
	}
	if !strings.Contains(got, "(wanlab "+name+":server)") || !strings.Contains(got, "done-server-1") {
		t.Errorf("the shell's terminal showed:\n%s\nwant the prompt (wanlab %s:server) and done-server-1", got, name)
	}
}

// openTestPTY opens a pseudo-terminal pair.
func openTestPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}
