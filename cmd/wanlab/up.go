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
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"wanlab/internal/outfile"
	"wanlab/lab"
	"wanlab/qdisc"
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
	cc         string
	pcap       string
	rmem       string
	wmem       string
	ecn        string
	device     string
	rtPriority int
	seed       uint64
	framing    qdisc.Framing
	gran       qdisc.Granularity
	detach     bool
	json       bool
	changed    []*pflag.Flag // the flags given, for the detached copy
}

func newUpCommand(s *streams) *cobra.Command {
	var o upOptions
	c := &cobra.Command{
		Use:   "up [--name N] [path flags] [--cc reno|cubic|bbr] [--pcap FILE] [--detach] [--json]",
		Short: "Build a testbed of two hosts joined by the router and run it until stopped",
		Long: `up creates the namespaces wl-N-c (the client) and wl-N-s (the server), a TUN
device in each with a point-to-point pair of addresses (10.X.Y.1 and .2,
fd00:776c:0:XXYY::1 and ::2, X.Y from a hash of N), and runs the router
between them: --up shapes client→server traffic, --down the reverse, in tc's
syntax; an empty path is a direct connection.

It runs in the foreground until SIGINT, SIGTERM, SIGHUP or SIGQUIT, then
removes everything.
With --detach it continues in the background (log: /run/wanlab/N.log) and
returns once the testbed is ready; stop it with 'wanlab down N'. What a
killed run left behind, processes in its hosts included, is removed by the
next up or down.

Run programs in the hosts with 'wanlab exec' and 'wanlab shell'; watch the
router with 'wanlab status'; change a chain with 'wanlab set'.`,
		Example: `  wanlab up --both "netem delay 25ms"
  wanlab up --name wan --up "tbf rate 100mbit burst 32k latency 50ms" --cc bbr --detach --json
  wanlab up --up "netem delay 40ms 5ms; tbf rate 20mbit burst 32k latency 30ms; fq_codel" --pcap /tmp/wan.pcap`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			c.Flags().Visit(func(f *pflag.Flag) { o.changed = append(o.changed, f) })
			return runUp(s, &o)
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.name, "name", lab.DefaultName, "testbed name: namespaces wl-NAME-c and wl-NAME-s (a-z, 0-9, '-', '_'; at most 32 bytes)")
	o.path.register(fs)
	fs.StringVar(&o.cc, "cc", "", "TCP congestion control of both hosts (reno, cubic, bbr, ...; default: the kernel's)")
	fs.StringVar(&o.pcap, "pcap", "", "write every packet the router forwards, both directions, to this pcap file (- for stdout; a FIFO, for a live reader such as tshark -i FIFO, is opened first and up waits for its reader; if writing it fails, the testbed goes on without it, status and the log say why, and up exits 1 at the end)")
	fs.StringVar(&o.rmem, "tcp-rmem", "", `net.ipv4.tcp_rmem of both hosts, e.g. "4096 131072 33554432"`)
	fs.StringVar(&o.wmem, "tcp-wmem", "", `net.ipv4.tcp_wmem of both hosts, e.g. "4096 16384 33554432"`)
	fs.StringVar(&o.ecn, "ecn", "", "net.ipv4.tcp_ecn of both hosts: off, 1 (request ECN) or 2 (accept it; the kernel's default)")
	fs.StringVar(&o.device, "device", "vnet", "TUN device kind: vnet (GSO super-packets enter the router's link whole), offload (split on read, coalesced on write) or raw (one packet per system call)")
	fs.IntVar(&o.rtPriority, "rt-priority", 0, "run the router's loops with SCHED_FIFO at this priority (1-99): less timing error where the loops have CPUs to themselves; on a machine whose CPUs the hosts' programs share, the kernel's real-time throttling can stall a loop for up to a second (see docs/benchmarks.md)")
	registerFraming(fs, &o.framing)
	registerGranularity(fs, &o.gran)
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the qdiscs' random choices: each direction derives its own stream from it, as in 'wanlab sim'")
	fs.BoolVar(&o.detach, "detach", false, "run in the background and return once the testbed is ready")
	fs.BoolVar(&o.json, "json", false, `print {"name", "client": {"ns", "ifname", "addr4", "addr6"}, "server": {...}} on one line once ready`)
	return c
}

// options turns the flags into lab.Options; its errors are usage errors.
func (o *upOptions) options() (lab.Options, error) {
	lo := lab.Options{Name: o.name, CC: o.cc, TCPRmem: o.rmem, TCPWmem: o.wmem, Seed: o.seed, Framing: o.framing, Granularity: o.gran}
	if err := lab.CheckName(o.name); err != nil {
		return lo, usagef("--name: %v", err)
	}
	var err error
	if lo.Up, lo.Down, err = o.path.labChains(&qdisc.Env{Framing: o.framing}); err != nil {
		return lo, err
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
	if o.rtPriority < 0 || o.rtPriority > 99 {
		return lo, usagef("--rt-priority %d: use 1 to 99, or 0 for normal scheduling", o.rtPriority)
	}
	lo.RealTimePriority = o.rtPriority
	if o.cc != "" {
		if err := lab.CheckCC(o.cc); err != nil {
			return lo, usagef("--cc: %v", err)
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

func runUp(s *streams, o *upOptions) error {
	lo, err := o.options()
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("up needs root for network namespaces and TUN devices: run it with sudo")
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
	if ready == "" {
		noteFIFO(s.err, "--pcap", o.pcap, "tshark -i")
	}
	if o.detach && ready == "" {
		return detach(ctx, s, o)
	}
	logger := log.New(s.err, "", log.LstdFlags)
	lo.Logf = logger.Printf
	tb, err := lab.Up(ctx, lo)
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
			logger.Printf("testbed %s is up: up %q, down %q", lo.Name, tcspec.FormatChain(lo.Up), tcspec.FormatChain(lo.Down))
		}
		tellParent(ready, tb, err)
	}
	if err != nil {
		return err
	}
	<-tb.Done()
	logger.Printf("testbed %s: stopping", lo.Name)
	cerr := tb.Close()
	return errors.Join(tb.Err(), cerr)
}

// readyMsg is what a detached testbed tells the process that started it.
type readyMsg struct {
	Info  *lab.Info `json:"info,omitempty"`
	Error string    `json:"error,omitempty"`
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
		m.Error = err.Error()
	} else {
		i := tb.Info()
		m.Info = &i
	}
	json.NewEncoder(f).Encode(m)
}

// detach starts this command again in a new session with its output in the
// testbed's log, and waits until that copy reports the testbed ready. If
// ctx ends first (Ctrl-C), the copy is stopped and removes what it built.
func detach(ctx context.Context, s *streams, o *upOptions) error {
	if names, _ := lab.Running(); slices.Contains(names, o.name) {
		return fmt.Errorf("testbed %s is already up; stop it first with `wanlab down %s`", o.name, o.name)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"up"}
	for _, f := range o.changed {
		if f.Name != "detach" {
			args = append(args, "--"+f.Name+"="+f.Value.String())
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
	fmt.Fprintf(w, "testbed %s is up\n", i.Name)
	for _, h := range []struct {
		role string
		h    lab.HostInfo
	}{{"client", i.Client}, {"server", i.Server}} {
		fmt.Fprintf(w, "  %-6s  netns %-14s  dev %-15s  %s  %s\n", h.role, h.h.NS, h.h.IfName, h.h.Addr4, h.h.Addr6)
	}
	fmt.Fprintf(w, "run programs with `wanlab exec %s -- CMD` (@peer is the other host), watch with `wanlab status %s`\n", i.Name, i.Name)
	if detached {
		fmt.Fprintf(w, "stop with `wanlab down %s`; log: %s\n", i.Name, lab.LogPath(i.Name))
	} else {
		fmt.Fprintf(w, "stop with Ctrl-C or `wanlab down %s`\n", i.Name)
	}
}
