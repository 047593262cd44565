package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"wanlab/internal/rundir"
	"wanlab/lab"
	"wanlab/netns"
)

// What a testbed may leave on the machine, and what the root namespace
// looks like, for the tests that kill wanlab and check the next command
// leaves nothing.

// leftovers describes everything of testbed name still on the machine: its
// namespaces (mounted or as files under /run/netns), mounts, devices in the
// root namespace, files under /run/wanlab and its registry record.
func leftovers(t *testing.T, name string) []string {
	t.Helper()
	var left []string
	prefix := netns.Prefix + name + "-"
	for _, r := range []lab.Role{lab.Client, lab.Server} {
		if ns := lab.NamespaceName(name, r); netns.Exists(ns) {
			left = append(left, "namespace "+ns)
		}
	}
	if ents, err := os.ReadDir(rundir.Netns()); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				left = append(left, "file "+filepath.Join(rundir.Netns(), e.Name()))
			}
		}
	}
	for _, m := range mounts(t) {
		if strings.Contains(m, "/"+prefix) {
			left = append(left, "mount "+m)
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, prefix) || i.Name == lab.IfName(name, lab.Client) || i.Name == lab.IfName(name, lab.Server) {
			left = append(left, "device "+i.Name+" in the root namespace")
		}
	}
	if ents, err := os.ReadDir(lab.RunDir); err == nil {
		for _, e := range ents {
			n := strings.TrimPrefix(e.Name(), ".")
			if strings.HasPrefix(n, name+".") {
				left = append(left, "file "+filepath.Join(lab.RunDir, e.Name()))
			}
		}
	}
	states, _ := netns.Testbeds()
	for _, st := range states {
		if st.Name == name {
			left = append(left, fmt.Sprintf("record of %s (owner %d)", name, st.Owner.PID))
		}
	}
	return left
}

// mounts returns the mount points of /proc/self/mountinfo.
func mounts(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 4 {
			out = append(out, f[4])
		}
	}
	return out
}

// nsIDs returns the IDs of testbed name's namespaces that are mounted now.
// While a namespace lives its ID is its own; after it is gone the kernel
// may give the ID to a new namespace, so a test checks for processes by ID
// only before it builds another namespace.
func nsIDs(name string) []netns.ID {
	var ids []netns.ID
	// Every host's: wl-NAME-c, wl-NAME-s, and a dumbbell's wl-NAME-c2, ....
	all, _ := netns.List()
	for _, ns := range all {
		if !strings.HasPrefix(ns, netns.NamespaceName(name, "")) {
			continue
		}
		if id, err := netns.IDOf(ns); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// processesLeft describes the processes still in the namespaces ids and
// those of procs still running.
func processesLeft(t *testing.T, ids []netns.ID, procs []netns.Proc) []string {
	t.Helper()
	var left []string
	if len(ids) > 0 {
		in, err := netns.ProcessesIn(ids...)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range in {
			left = append(left, fmt.Sprintf("process %d (%s) in a namespace of the testbed", p.PID, p.Cmd))
		}
	}
	for _, p := range procs {
		if p.Alive() {
			left = append(left, fmt.Sprintf("process %d (%s) still runs", p.PID, p.Cmd))
		}
	}
	return left
}

// wanlabProcesses returns the running processes of the binary bin: after a
// command has finished and its testbed is down, there must be none.
func wanlabProcesses(t *testing.T, bin string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == bin {
			if p, err := netns.ProcOf(pid); err == nil && p.Alive() {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				out = append(out, fmt.Sprintf("pid %d: %s", pid, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
			}
		}
	}
	return out
}

// rootSysctls are the sysctls wanlab writes inside its namespaces (and
// reads in the root one), plus forwarding: their values in the root
// namespace must never change.
var rootSysctls = []string{
	"net/ipv4/tcp_congestion_control",
	"net/ipv4/tcp_allowed_congestion_control",
	"net/ipv4/tcp_rmem",
	"net/ipv4/tcp_wmem",
	"net/ipv4/tcp_ecn",
	"net/ipv4/ip_forward",
	"net/ipv6/conf/all/forwarding",
	"net/ipv6/conf/all/router_solicitations",
	"net/ipv6/conf/default/router_solicitations",
}

// rootState describes the root namespace in a normalised form: its links,
// addresses, routes (all tables) and rules as `ip -j` shows them without
// lifetimes and expiry times, which change by themselves, and the values
// of rootSysctls and of each interface's router_solicitations. Every line
// is one object; the lines are sorted.
func rootState(t *testing.T) []string {
	t.Helper()
	var lines []string
	for _, args := range [][]string{
		{"link", "show"},
		{"addr", "show"},
		{"-4", "route", "show", "table", "all"},
		{"-6", "route", "show", "table", "all"},
		{"-4", "rule", "show"},
		{"-6", "rule", "show"},
	} {
		out, err := exec.Command("ip", append([]string{"-j"}, args...)...).Output()
		if err != nil {
			t.Fatalf("ip -j %s: %v", strings.Join(args, " "), err)
		}
		var objs []map[string]any
		if err := json.Unmarshal(out, &objs); err != nil {
			t.Fatalf("ip -j %s: %v", strings.Join(args, " "), err)
		}
		for _, o := range objs {
			b, _ := json.Marshal(normalise(o))
			lines = append(lines, strings.Join(args, " ")+": "+string(b))
		}
	}
	keys := slices.Clone(rootSysctls)
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		keys = append(keys, "net/ipv6/conf/"+i.Name+"/router_solicitations")
	}
	for _, k := range keys {
		b, err := os.ReadFile("/proc/sys/" + k)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, "sysctl "+k+" = "+strings.TrimSpace(string(b)))
	}
	slices.Sort(lines)
	return lines
}

// volatile are the keys of `ip -j` output that change by themselves.
var volatile = map[string]bool{"valid_life_time": true, "preferred_life_time": true, "expires": true}

func normalise(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			if volatile[k] {
				delete(x, k)
			} else {
				x[k] = normalise(x[k])
			}
		}
	case []any:
		for i := range x {
			x[i] = normalise(x[i])
		}
	}
	return v
}

// sameRootState fails the test with the difference if the root namespace
// is not as before.
func sameRootState(t *testing.T, what string, before []string) {
	t.Helper()
	after := rootState(t)
	if slices.Equal(before, after) {
		return
	}
	var gone, added []string
	for _, l := range before {
		if !slices.Contains(after, l) {
			gone = append(gone, l)
		}
	}
	for _, l := range after {
		if !slices.Contains(before, l) {
			added = append(added, l)
		}
	}
	t.Fatalf("%s: the root namespace changed:\ngone:\n  %s\nnew:\n  %s", what, strings.Join(gone, "\n  "), strings.Join(added, "\n  "))
}

// waitGone waits until p has exited.
func waitGone(t *testing.T, p netns.Proc) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Alive() {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs after SIGKILL", p.PID)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// owner returns the process that owns testbed name.
func owner(t *testing.T, name string) netns.Proc {
	t.Helper()
	states, err := netns.Testbeds()
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range states {
		if st.Name == name {
			return st.Owner
		}
	}
	t.Fatalf("no record of testbed %s", name)
	return netns.Proc{}
}
