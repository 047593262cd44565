package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"wanlab/bridgeport"
	"wanlab/internal/outfile"
	"wanlab/internal/rundir"
	"wanlab/internal/tracefile"
	"wanlab/lab"
	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/rootless"
	"wanlab/tcspec"
	"wanlab/tun"
)

// readyFDEnv names the descriptor on which a testbed started by `up
// --detach` reports, to the process that started it, that it is ready (or
// why it is not). Only that process sets it.
const readyFDEnv = "WANLAB_READY_FD"

// detachTimeout bounds the wait for a detached testbed: building one takes
// well under a second, removing a dead predecessor's programs a few.
const detachTimeout = 60 * time.Second

type upOptions struct {
	name       string
	path       pathFlags
	traceUp    string
	traceDown  string
	cc         string
	pcap       string
	rmem       string
	wmem       string
	ecn        string
	device     string
	plane      lab.DataPlane
	rtPriority int
	seed       uint64
	framing    qdisc.Framing
	gran       qdisc.Granularity
	hosts      lab.HostSpecs
	detach     bool
	json       bool
	changed    []*pflag.Flag // the flags given, for the detached copy
}

func newUpCommand(s *streams) *cobra.Command {
	var o upOptions
	c := &cobra.Command{
		Use:   "up [--name N] [path flags] [--clients N --servers M [--access-up HOST=CHAIN]...] [--cc reno|cubic|bbr] [--dataplane tun|packet] [--pcap FILE] [-d|--detach] [--json]",
		Short: "Build a testbed of hosts joined by the router and run it until stopped",
		Long: `up creates the namespaces wl-N-c (the client) and wl-N-s (the server), a TUN
device in each with a point-to-point pair of addresses (10.X.Y.1 and .2,
fd00:776c:0:XXYY::1 and ::2, X.Y from a hash of N), and runs the router
between them: --up shapes client→server traffic, --down the reverse, in tc's
syntax; an empty path is a direct connection.

A dumbbell: --clients N and --servers M (1 to 16 each) add hosts c2..cN
and s2..sM beside the client (c1) and the server (s1), in namespaces
wl-N-c2, wl-N-s2, ... with addresses 10.X.Y.(100+n) and 10.X.Y.(200+n)
(IPv6 ...::102, ::202, ...), each with a route to every host of the
other side. They share the --up and --down chains, the bottlenecks; each
host may have an access link of its own per direction (--access-up and
--access-down HOST=CHAIN, repeatable, as 'wanlab sim' takes them): up
packets cross the sending client's up access link, the bottleneck, then
the receiving server's; down packets the other way. --host-cc HOST=CC
sets one host's congestion control (--cc the others').

With --dataplane packet each host has one end of a veth pair instead of the
TUN (the same name and addresses), whose other end is in a third namespace,
wl-N-r, where the router reads and writes it through a packet socket: the
kernel stamps each packet's arrival, so the time it waits for the router
counts in its delay (see the README's "Two data planes").

It runs in the foreground until SIGINT, SIGTERM, SIGHUP or SIGQUIT, then
removes everything.
With --detach it continues in the background (log: /run/wanlab/N.log) and
returns once the testbed is ready; stop it with 'wanlab down N'. What a
killed run left behind, processes in its hosts included, is removed by the
next up or down.

Run programs in the hosts with 'wanlab exec' and 'wanlab shell'; watch the
router with 'wanlab status'; change a chain with 'wanlab set'.`,
		Example: `  wanlab up --both "netem delay 25ms"
  wanlab up --both "netem delay 25ms" --dataplane packet
  wanlab up --name wan --up "tbf rate 100mbit burst 32k latency 50ms" --cc bbr --detach --json
  wanlab up --up "netem delay 40ms 5ms; tbf rate 20mbit burst 32k latency 30ms; fq_codel" --pcap /tmp/wan.pcap
  wanlab up --clients 4 --up "tbf rate 20mbit burst 32k latency 30ms" \
      --access-up "c2=netem delay 40ms" --access-down "c2=netem delay 40ms" --host-cc c3=bbr`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			c.Flags().Visit(func(f *pflag.Flag) { o.changed = append(o.changed, f) })
			lo, err := o.options()
			if err != nil {
				return err
			}
			return runTestbed(s, &o, lo, []string{"up"}, lab.Up)
		},
	}
	o.register(c.Flags(), lab.DefaultName)
	return c
}

// register adds the flags of up to fs, with the default name name: those
// of bridge too, which refuses the hosts' (hostFlags).
func (o *upOptions) register(fs *pflag.FlagSet, name string) {
	fs.StringVar(&o.name, "name", name, "testbed name: namespaces wl-NAME-c and wl-NAME-s, and wl-NAME-r on the packet plane (a-z, 0-9, '-', '_'; at most 32 bytes)")
	o.path.register(fs)
	fs.StringVar(&o.traceUp, "trace-up", "", "mahimahi trace file limiting the up direction's capacity, as wanlab run --trace-up")
	fs.StringVar(&o.traceDown, "trace-down", "", "mahimahi trace file limiting the down direction's capacity")
	fs.StringVar(&o.cc, "cc", "", "TCP congestion control of both hosts (reno, cubic, bbr, ...; default: the kernel's)")
	fs.StringVar(&o.pcap, "pcap", "", "write every packet the router forwards, both directions, to this pcap file (- for stdout; a FIFO, for a live reader such as tshark -i FIFO, is opened first and up waits for its reader; if writing it fails, the testbed goes on without it, status and the log say why, and up exits 1 at the end)")
	fs.StringVar(&o.rmem, "tcp-rmem", "", `net.ipv4.tcp_rmem of both hosts, e.g. "4096 131072 33554432"`)
	fs.StringVar(&o.wmem, "tcp-wmem", "", `net.ipv4.tcp_wmem of both hosts, e.g. "4096 16384 33554432"`)
	fs.StringVar(&o.ecn, "ecn", "", "net.ipv4.tcp_ecn of both hosts: off, 1 (request ECN) or 2 (accept it; the kernel's default)")
	registerDataPlane(fs, &o.plane)
	fs.StringVar(&o.device, "device", "vnet", "TUN device kind of the tun data plane: vnet (GSO super-packets enter the router's link whole), offload (split on read, coalesced on write) or raw (one packet per system call)")
	fs.IntVar(&o.rtPriority, "rt-priority", 0, "run the router's loops with SCHED_FIFO at this priority (1-99): less timing error where the loops have CPUs to themselves; on a machine whose CPUs the hosts' programs share, the kernel's real-time throttling can stall a loop for up to a second (see docs/benchmarks.md)")
	registerFraming(fs, &o.framing)
	registerGranularity(fs, &o.gran)
	registerHostFlags(fs, &o.hosts, true)
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the qdiscs' random choices: each direction derives its own stream from it, as in 'wanlab sim'")
	fs.BoolVarP(&o.detach, "detach", "d", false, "run in the background and return once the testbed is ready")
	fs.BoolVar(&o.json, "json", false, `print {"name", "client": {"ns", "ifname", "addr4", "addr6"}, "server": {...}} on one line once ready (and "hosts": [{"name", ...}, ...] on a dumbbell)`)
}

// given reports whether the flag name was given.
func (o *upOptions) given(name string) bool {
	return slices.ContainsFunc(o.changed, func(f *pflag.Flag) bool { return f.Name == name })
}

// options turns the flags into lab.Options; its errors are usage errors.
func (o *upOptions) options() (lab.Options, error) {
	lo := lab.Options{Name: o.name, CC: o.cc, TCPRmem: o.rmem, TCPWmem: o.wmem, Seed: o.seed, Framing: o.framing, Granularity: o.gran, DataPlane: o.plane}
	if err := lab.CheckName(o.name); err != nil {
		return lo, usagef("--name: %v", err)
	}
	var err error
	if lo.Up, lo.Down, err = o.path.labChains(&qdisc.Env{Framing: o.framing}); err != nil {
		return lo, err
	}
	for _, tr := range []struct {
		flag, path string
		to         **link.Trace
	}{{"--trace-up", o.traceUp, &lo.UpTrace}, {"--trace-down", o.traceDown, &lo.DownTrace}} {
		if tr.path == "" {
			continue
		}
		if *tr.to, err = tracefile.Load(tr.path); err != nil {
			return lo, usagef("%s: %v", tr.flag, err)
		}
	}
	for _, m := range []struct{ flag, val string }{{"--tcp-rmem", o.rmem}, {"--tcp-wmem", o.wmem}} {
		if m.val == "" {
			continue
		}
		if err := lab.CheckTCPMem(m.val); err != nil {
			return lo, usagef("%s %q: %v", m.flag, m.val, err)
		}
	}
	switch o.ecn {
	case "":
	case "off", "0":
		lo.ECN = lab.ECNOff
	case "1", "2":
		lo.ECN = int(o.ecn[0] - '0')
	default:
		return lo, usagef("--ecn %q: use off, 1 or 2", o.ecn)
	}
	switch o.device {
	case "offload":
		lo.DeviceKind = tun.Offload
	case "raw":
		lo.DeviceKind = tun.Raw
	case "vnet":
		lo.DeviceKind = tun.VNet
	default:
		return lo, usagef("--device %q: use vnet, offload or raw", o.device)
	}
	if o.plane != lab.TUNPlane && o.given("device") {
		return lo, usagef("--device chooses the TUN devices of the tun data plane, and --dataplane %s has none: drop --device", o.plane)
	}
	if o.rtPriority < 0 || o.rtPriority > 99 {
		return lo, usagef("--rt-priority %d: use 1 to 99, or 0 for normal scheduling", o.rtPriority)
	}
	if err := rootless.CheckRTPriority(o.rtPriority); err != nil {
		return lo, usagef("--rt-priority %d: %v", o.rtPriority, err)
	}
	lo.RealTimePriority = o.rtPriority
	if o.plane == lab.PacketPlane {
		if err := rootless.CheckPacketPlane(); err != nil {
			return lo, usagef("--dataplane %s: %v", o.plane, err)
		}
	}
	if o.cc != "" {
		if err := lab.CheckCC(o.cc); err != nil {
			return lo, usagef("--cc: %v", err)
		}
	}
	if err := checkHostCounts(o.hosts, o.given); err != nil {
		return lo, err
	}
	if err := o.hosts.Parse(&lo, hostFlagLabels, tcOptions(), &qdisc.Env{Framing: o.framing}); err != nil {
		return lo, usagef("%v", err)
	}
	if lo.Clients > 1 || lo.Servers > 1 || len(lo.Access) > 0 {
		// The router carries a dumbbell on VNet TUNs only.
		switch {
		case o.plane != lab.TUNPlane:
			return lo, usagef("--dataplane %s: a dumbbell (--clients, --servers above 1, or access links) runs on the tun data plane: drop --dataplane", o.plane)
		case lo.DeviceKind != tun.VNet:
			return lo, usagef("--device %s: a dumbbell (--clients, --servers above 1, or access links) runs on vnet devices: drop --device", o.device)
		}
	}
	if o.pcap != "" {
		// Checked now, before anything exists: the testbed opens the file
		// only once it is being built.
		if err := outfile.Check(o.pcap, outfile.Options{Label: "--pcap", Suggest: "wan.pcap"}); err != nil {
			return lo, usagef("%v", err)
		}
		lo.Pcap = o.pcap
		if o.pcap == "-" {
			if o.detach {
				return lo, usagef("--pcap - writes the capture to stdout, which a detached testbed does not have: give a file or a FIFO, e.g. --pcap /tmp/wan.pcap")
			}
		} else if lo.Pcap, err = filepath.Abs(o.pcap); err != nil {
			return lo, usagef("--pcap %s: %v", o.pcap, err)
		}
	}
	// Whatever lab.Up would refuse is refused here too, before up
	// touches anything (the checks above word it with the flags).
	if err := lo.Check(); err != nil {
		return lo, usagef("%v", err)
	}
	return lo, nil
}

// runTestbed runs the testbed (up) or bridge (bridge) of lo, which start
// builds, until it is stopped: cmdArgs are the command and its arguments,
// for messages and for the detached copy.
func runTestbed(s *streams, o *upOptions, lo lab.Options, cmdArgs []string, start func(context.Context, lab.Options) (*lab.Testbed, error)) error {
	if cmdArgs[0] == "bridge" && (rootless.Needed(forceRootless) || rundir.Rootless()) {
		return errors.New("bridge takes interfaces of the machine itself, which only real root may change: run it with sudo (without --rootless)")
	}
	if err := enterLab(); err != nil {
		return err
	}
	for _, w := range append(chainWarnings("up", lo.Up, nil), chainWarnings("down", lo.Down, nil)...) {
		fmt.Fprintf(s.err, "wanlab: warning: %s\n", w)
	}
	// From here on the stopSignals end up cleanly, whenever they come:
	// while leftovers are removed, while the testbed is built or while it
	// runs. outfile.NotifyContext, not signal.NotifyContext: on these
	// signals the testbed closes cleanly and keeps the capture, so the
	// pcap's temporary must not be removed when they arrive.
	survivePipes()
	ctx, stop := outfile.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	ready := os.Getenv(readyFDEnv)
	os.Unsetenv(readyFDEnv) // not for the programs the testbed runs
	if ready == "" {
		if _, err := lab.CleanStale(); err != nil {
			fmt.Fprintf(s.err, "wanlab: warning: removing leftovers of earlier runs: %v\n", err)
		}
	}
	if ready == "" && len(lo.Ports[0]) > 0 {
		// The ports of bridges that were killed are given back first,
		// and judged as they are then.
		notes, err := bridgeport.RestoreStale()
		for _, n := range notes {
			fmt.Fprintf(s.err, "wanlab: port %s\n", n)
		}
		if err != nil {
			return err
		}
		// Refused before anything changes, and before a detached copy
		// starts, whose refusal could only say it failed.
		warnings, err := lab.CheckBridge(lo)
		if err != nil {
			return err
		}
		for _, w := range warnings {
			fmt.Fprintf(s.err, "wanlab: warning: %s\n", w)
		}
	}
	if ready == "" {
		noteFIFO(s.err, "--pcap", o.pcap, "tshark -i")
	}
	if o.detach && ready == "" {
		return detach(ctx, s, o, cmdArgs)
	}
	logger := log.New(s.err, "", log.LstdFlags)
	lo.Logf = logger.Printf
	tb, err := start(ctx, lo)
	switch {
	case ready == "" && err == nil:
		out := s.out
		if lo.Pcap == "-" {
			out = s.err // stdout carries the capture
		}
		printReady(out, tb.Info(), o.json, false)
	case ready != "":
		// The log says the testbed is up before up --detach returns.
		if err == nil {
			logger.Printf("%s is up: up %q, down %q", describeTestbed(tb.Info()), tcspec.FormatChain(lo.Up), tcspec.FormatChain(lo.Down))
		}
		tellParent(ready, tb, err)
	}
	if err != nil {
		return err
	}
	<-tb.Done()
	logger.Printf("%s: stopping", describeTestbed(tb.Info()))
	cerr := tb.Close()
	return errors.Join(tb.Err(), cerr)
}

// describeTestbed names a testbed, or a bridge with its ports, in a
// message: "testbed lab", "bridge br between eth1 and eth2".
func describeTestbed(i lab.Info) string {
	if len(i.Ports) == 2 {
		return fmt.Sprintf("bridge %s between %s and %s", i.Name, i.Ports[0].IfName, i.Ports[1].IfName)
	}
	return "testbed " + i.Name
}

// readyMsg is what a detached testbed tells the process that started it:
// its Info, or the Error it failed with, and whether that error was bad
// input, which changed nothing (a bridge's port taken by another bridge
// meanwhile).
type readyMsg struct {
	Info     *lab.Info `json:"info,omitempty"`
	Error    string    `json:"error,omitempty"`
	BadInput bool      `json:"bad_input,omitempty"`
}

func tellParent(fd string, tb *lab.Testbed, err error) {
	var n int
	if _, serr := fmt.Sscan(fd, &n); serr != nil {
		return
	}
	f := os.NewFile(uintptr(n), "ready")
	defer f.Close()
	m := readyMsg{}
	if err != nil {
		m.Error, m.BadInput = err.Error(), errors.Is(err, lab.ErrBadInput)
	} else {
		i := tb.Info()
		m.Info = &i
	}
	json.NewEncoder(f).Encode(m)
}

// detach starts this command (cmdArgs) again in a new session with its
// output in the testbed's log, and waits until that copy reports the
// testbed ready. If ctx ends first (Ctrl-C), the copy is stopped and
// removes what it built.
func detach(ctx context.Context, s *streams, o *upOptions, cmdArgs []string) error {
	if names, _ := lab.Running(); slices.Contains(names, o.name) {
		return fmt.Errorf("testbed %s is already up; stop it first with `wanlab down %s`", o.name, o.name)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := slices.Clone(cmdArgs)
	for _, f := range o.changed {
		switch v := f.Value.(type) {
		case pflag.SliceValue:
			// A repeatable flag (--access-up) again once per value: its
			// String is the values in brackets.
			for _, x := range v.GetSlice() {
				args = append(args, "--"+f.Name+"="+x)
			}
		default:
			if f.Name != "detach" {
				args = append(args, "--"+f.Name+"="+f.Value.String())
			}
		}
	}
	// The log is claimed before the background copy starts: a second up
	// of this name fails here rather than empty the log of the first.
	logPath := lab.LogPath(o.name)
	logf, err := lab.ClaimLog(o.name)
	if err != nil {
		return fmt.Errorf("%w; stop it with `wanlab down %s`", err, o.name)
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), readyFDEnv+"=3")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("start the background testbed: %w", err)
	}
	pw.Close()
	type result struct {
		m   readyMsg
		err error
	}
	got := make(chan result, 1)
	go func() {
		var r result
		line, err := bufio.NewReader(pr).ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(line, &r.m)
		}
		r.err = err
		got <- r
	}()
	var r result
	select {
	case r = <-got:
	case <-ctx.Done():
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		return fmt.Errorf("interrupted while the background testbed %s was starting; it stopped and removed what it had built (see %s)", o.name, logPath)
	case <-time.After(detachTimeout):
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("the background testbed was not ready within %v and was killed; see %s, then remove what it left with `wanlab down %s`", detachTimeout, logPath, o.name)
	}
	switch {
	case r.err == nil && r.m.Info != nil:
		cmd.Process.Release()
		printReady(s.out, *r.m.Info, o.json, true)
		return nil
	case r.err == nil && r.m.Error != "":
		// Reported here, so the log holds nothing more: remove it while
		// this process still holds it.
		err = errors.New(r.m.Error)
		if r.m.BadInput {
			err = usagef("%s", r.m.Error)
		}
		cmd.Wait()
		os.Remove(logPath)
		return err
	default:
		err = fmt.Errorf("the background testbed failed to start (%v); see %s", r.err, logPath)
	}
	cmd.Wait()
	return err
}

func printReady(w io.Writer, i lab.Info, asJSON, detached bool) {
	if asJSON {
		b, _ := json.Marshal(i)
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	fmt.Fprintf(w, "%s is up\n", describeTestbed(i))
	printMembers(w, i)
	if len(i.Ports) > 0 {
		fmt.Fprintf(w, "watch with `wanlab status %s`, change its chains with `wanlab set %s`\n", i.Name, i.Name)
	} else {
		fmt.Fprintf(w, "run programs with `wanlab exec %s -- CMD` (@peer is the other host), watch with `wanlab status %s`\n", i.Name, i.Name)
	}
	if detached {
		fmt.Fprintf(w, "stop with `wanlab down %s`; log: %s\n", i.Name, lab.LogPath(i.Name))
	} else {
		fmt.Fprintf(w, "stop with Ctrl-C or `wanlab down %s`\n", i.Name)
	}
}

// printMembers lists a testbed's hosts (and its router's namespace, on
// the packet plane) or a bridge's ports, one line each.
func printMembers(w io.Writer, i lab.Info) {
	for n, p := range i.Ports {
		reads := map[int]string{0: "up reads it, down writes it", 1: "down reads it, up writes it"}[n]
		if p.Err != "" {
			fmt.Fprintf(w, "  port    %-15s  %s (%s)\n", p.IfName, p.Err, reads)
			continue
		}
		fmt.Fprintf(w, "  port    %-15s  mac %s  mtu %d  promiscuity %d, one held by wanlab's packet socket (%s)\n", p.IfName, p.MAC, p.MTU, p.Promiscuity, reads)
	}
	if len(i.Ports) > 0 {
		return
	}
	var routerIfs []string
	for _, h := range i.All() {
		fmt.Fprintf(w, "  %-6s  netns %-14s  dev %-15s  %s  %s%s\n", h.Name, h.NS, h.IfName, h.Addr4, h.Addr6, accessNote(h))
		routerIfs = append(routerIfs, h.RouterIf)
	}
	if i.RouterNS != "" {
		fmt.Fprintf(w, "  router  netns %-14s  dev %s (packet sockets)\n", i.RouterNS, strings.Join(routerIfs, ", "))
	}
}

// accessNote describes a host's access links and its own congestion
// control, "" without any.
func accessNote(h lab.HostInfo) string {
	cc := ""
	if h.CC != "" {
		cc = "  cc " + h.CC
	}
	if h.AccessUp == "" && h.AccessDown == "" {
		return cc
	}
	or := func(c string) string {
		if c == "" {
			return "none"
		}
		return c
	}
	return fmt.Sprintf("  access up: %s; down: %s%s", or(h.AccessUp), or(h.AccessDown), cc)
}
