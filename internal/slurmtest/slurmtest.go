// Package slurmtest starts a Slurm cluster of one node, this machine, for a
// test: munged with a key and socket of its own, slurmctld and slurmd with
// a slurm.conf the test generates (unique cluster name, ports and
// directories under a temporary directory), all stopped by their PIDs when
// the test ends, whatever its outcome. Nothing of the machine's own Slurm
// or MUNGE configuration is read or changed: every daemon and client
// command is pointed at the test's files (SLURM_CONF, AuthInfo=socket=).
package slurmtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"wanlab/internal/rundir"
)

// Cluster is a running one-node cluster.
type Cluster struct {
	// Dir holds its configuration, state, logs and MUNGE socket.
	Dir string
	// Conf is its slurm.conf; Env is this process's environment with
	// SLURM_CONF pointing at it, for the client commands (sbatch, squeue,
	// scontrol) and whatever runs them.
	Conf string
	Env  []string
	// Node is the node's name (this machine's short host name) and
	// Partition the cluster's only partition.
	Node, Partition string
}

// programs are what a cluster needs: Debian's slurm-wlm and munge.
var programs = []string{"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel"}

// Need skips the test unless Slurm's and MUNGE's programs are installed.
func Need(t testing.TB) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("skipped: %s is not installed (apt-get install slurm-wlm munge)", p)
		}
	}
	if os.Geteuid() != 0 || rundir.Rootless() {
		t.Skip("skipped: needs real root: a Slurm cluster's daemons (slurmctld, slurmd, munged) run as the machine's root")
	}
}

// Start starts a cluster and waits until its node takes jobs; the test's
// cleanup cancels its jobs and stops its daemons.
func Start(t *testing.T) *Cluster {
	t.Helper()
	Need(t)
	dir := t.TempDir()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), Node: host, Partition: "wl"}
	c.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	for _, d := range []string{"state", "spool"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range []string{"munged.out", "slurmctld.log", "slurmd.log"} {
				t.Logf("%s:\n%s", l, tail(filepath.Join(dir, l), 40))
			}
		}
	})

	// MUNGE: a key of the test's own (munged reads 1024 bytes of it), a
	// socket in the test's directory.
	key := make([]byte, 1024)
	rand.Read(key)
	keyFile := filepath.Join(dir, "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "munge.socket")
	c.daemon(t, "munged", "--foreground", "--force", "--socket="+socket, "--key-file="+keyFile,
		"--pid-file="+filepath.Join(dir, "munged.pid"),
		"--seed-file="+filepath.Join(dir, "munged.seed"))
	waitFor(t, "munged's socket", 10*time.Second, func() bool {
		_, err := os.Stat(socket)
		return err == nil
	})

	mem, err := memoryMB()
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	conf := map[string]string{
		"ClusterName":   "wl" + hex.EncodeToString(suffix),
		"SlurmctldHost": host + "(127.0.0.1)",
		"SlurmctldPort": strconv.Itoa(freePort(t)),
		"SlurmdPort":    strconv.Itoa(freePort(t)),
		"SlurmUser":     "root",
		"SlurmdUser":    "root",
		"AuthType":      "auth/munge",
		"CredType":      "cred/munge",
		// cred_expire is also how long a requeued job waits before it
		// may start again (slurm.conf(5), AuthInfo; 120 s by default,
		// 5 s at least).
		"AuthInfo":              "socket=" + socket + ",cred_expire=5",
		"StateSaveLocation":     filepath.Join(dir, "state"),
		"SlurmdSpoolDir":        filepath.Join(dir, "spool"),
		"SlurmctldPidFile":      filepath.Join(dir, "slurmctld.pid"),
		"SlurmdPidFile":         filepath.Join(dir, "slurmd.pid"),
		"SlurmctldLogFile":      filepath.Join(dir, "slurmctld.log"),
		"SlurmdLogFile":         filepath.Join(dir, "slurmd.log"),
		"PlugStackConfig":       filepath.Join(dir, "plugstack.conf"),
		"ProctrackType":         "proctrack/linuxproc",
		"TaskPlugin":            "task/none",
		"JobAcctGatherType":     "jobacct_gather/none",
		"AccountingStorageType": "accounting_storage/none",
		"JobCompType":           "jobcomp/none",
		"SelectType":            "select/cons_tres",
		"SelectTypeParameters":  "CR_CPU",
		"SchedulerType":         "sched/builtin",
		"MpiDefault":            "none",
		"ReturnToService":       "2",
		"MailProg":              "/bin/true",
		// A requeue or a cancellation kills a task's processes 5 s after
		// its SIGTERM (default 30 s).
		"KillWait": "5",
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		fmt.Fprintf(&b, "%s=%s\n", k, conf[k])
	}
	fmt.Fprintf(&b, "NodeName=%s NodeAddr=127.0.0.1 CPUs=%d RealMemory=%d State=UNKNOWN\n", host, runtime.NumCPU(), mem)
	fmt.Fprintf(&b, "PartitionName=%s Nodes=%s Default=YES MaxTime=INFINITE State=UP\n", c.Partition, host)
	if err := os.WriteFile(c.Conf, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf["PlugStackConfig"], nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.daemon(t, "slurmctld", "-D", "-c", "-f", c.Conf)
	c.daemon(t, "slurmd", "-D", "-f", c.Conf, "-N", host)
	waitFor(t, "the node to take jobs", 30*time.Second, func() bool {
		out, err := c.Output("sinfo", "-h", "-N", "-o", "%T")
		return err == nil && strings.TrimSpace(out) == "idle"
	})
	// Registered last, run first: the jobs end before their daemons do.
	t.Cleanup(func() { c.cancelAll(t) })
	return c
}

// Command is a client command (sbatch, squeue, ...) of the cluster.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.Env
	return cmd
}

// Output runs a client command for at most 30 s and returns its output.
func (c *Cluster) Output(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := c.Command(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// JobState returns a job's (or array task's, "JOBID_TASK") state as
// scontrol shows it: PENDING, RUNNING, COMPLETED, FAILED, ...; and the
// job's other fields.
func (c *Cluster) JobState(id string) (string, map[string]string, error) {
	out, err := c.Output("scontrol", "show", "job", "-o", id)
	if err != nil {
		return "", nil, err
	}
	fields := map[string]string{}
	first, _, _ := strings.Cut(out, "\n")
	for _, f := range strings.Fields(first) {
		if k, v, ok := strings.Cut(f, "="); ok {
			fields[k] = v
		}
	}
	return fields["JobState"], fields, nil
}

// daemon starts a daemon in the foreground of a child process and stops
// it, by its PID, when the test ends.
func (c *Cluster) daemon(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env
	// Should the test binary die without its cleanup (go test's
	// -timeout panics), the kernel ends the daemons too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := os.Create(filepath.Join(c.Dir, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); out.Close() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s (pid %d) did not end 10 s after SIGTERM: killed", name, cmd.Process.Pid)
			cmd.Process.Kill()
			<-done
		}
	})
	// A daemon that ends at once (a bad configuration) is reported with
	// its output, not as a node that never came up.
	select {
	case err := <-done:
		b, _ := os.ReadFile(out.Name())
		t.Fatalf("%s ended at once (%v):\n%s", name, err, b)
	case <-time.After(200 * time.Millisecond):
	}
}

// cancelAll cancels every job of the cluster and waits until none is
// left, so that no job step outlives the daemons.
func (c *Cluster) cancelAll(t *testing.T) {
	if out, err := c.Output("squeue", "-h", "-o", "%i"); err != nil || strings.TrimSpace(out) == "" {
		return
	}
	if _, err := c.Output("scancel", "--partition", c.Partition); err != nil {
		t.Errorf("cancelling the test's jobs: %v", err)
		return
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		out, err := c.Output("squeue", "-h", "-o", "%i")
		if err == nil && strings.TrimSpace(out) == "" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("the test's jobs were still there 20 s after scancel")
}

func waitFor(t *testing.T, what string, limit time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePort returns a TCP port free now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// memoryMB is the machine's memory in MiB, less a tenth: slurmd drains a
// node that has less than its RealMemory, and the kernel keeps some.
func memoryMB() (int, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kb int
		if _, err := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kb); err == nil {
			return kb / 1024 * 9 / 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/meminfo has no MemTotal")
}

// tail returns a file's last n lines.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
