package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"wanlab/internal/outfile"
	"wanlab/internal/tracefile"
	"wanlab/lab"
	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/sim"
)

type simOptions struct {
	path       pathFlags
	flows      []string
	duration   time.Duration
	seed       uint64
	json       bool
	events     string
	traceUp    string
	traceDown  string
	mtu        int
	txqueuelen int
	framing    qdisc.Framing
	hosts      lab.HostSpecs
}

func newSimCommand(s *streams) *cobra.Command {
	var o simOptions
	c := &cobra.Command{
		Use:   "sim [path flags] [--flow SPEC]... [--duration T]",
		Short: "Simulate a path on a virtual clock with synthetic traffic (no root needed)",
		Long: `sim drives synthetic flows through the path's qdisc chains on a virtual
clock and reports, per direction and per flow, what was delivered, dropped,
marked, duplicated and reordered, the throughput and the one-way delay.

Flows (repeatable --flow; default: one 10 Mbit/s CBR flow each way):
  cbr rate=RATE size=BYTES [dir=up|down] [start=T] [count=N] [tos=0xNN] [ecn=ect0|ect1|notect]
          [src=A.B.C.D|HOST] [dst=A.B.C.D|HOST]   (the packets' addresses as sent, or the hosts')
  poisson rate=RATE size=BYTES ...     (exponential gaps with the same mean rate)
RATE uses tc's units (10mbit, 1gbit, 100kbps = 800 kbit/s) or iperf's (20M = 20 Mbit/s).

A dumbbell: --clients N and --servers M (1 to 16 each; c1..cN, s1..sM)
share the --up and --down chains, the bottlenecks; each host may have an
access link of its own per direction (--access-up/--access-down
HOST=CHAIN, tc syntax). Up packets cross the sending client's up access
link, the up bottleneck, then the receiving server's up access link; down
packets the other way. A flow names its hosts with src=cI dst=sJ (a flow
from a server, src=sJ dst=cI, is down); flows without them go c1↔s1.`,
		Example: `  wanlab sim --both "netem delay 50ms" --flow "cbr rate=10mbit size=1500"
  wanlab sim --up "netem delay 20ms; tbf rate 10mbit burst 32k latency 50ms; fq_codel" \
      --flow "cbr rate=12mbit size=1500" --flow "poisson rate=100kbit size=100 tos=0xb8" --json
  wanlab sim --up "netem delay 100ms 10ms 25%" --events packets.csv
  wanlab sim --clients 2 --up "tbf rate 10mbit burst 1514 limit 30000" \
      --access-up "c1=netem delay 10ms" --access-up "c2=netem delay 40ms" \
      --flow "poisson rate=6mbit size=1500 src=c1 dst=s1" --flow "poisson rate=6mbit size=1500 src=c2 dst=s1"`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runSim(s, &o) },
	}
	fs := c.Flags()
	o.path.register(fs)
	fs.StringArrayVar(&o.flows, "flow", nil, "a synthetic flow (repeatable): cbr|poisson rate=RATE size=BYTES [dir=up|down] ...")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "virtual time to simulate")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of every random choice: the same seed gives the same run")
	fs.BoolVar(&o.json, "json", false, "print the result as JSON on stdout")
	fs.StringVar(&o.events, "events", "", "write one CSV row per packet to this file (- for stdout, not with --json): flow,seq,dir,size,sent_ns,left_ns,verdict")
	fs.StringVar(&o.traceUp, "trace-up", "", "mahimahi trace file limiting the up direction's capacity")
	fs.StringVar(&o.traceDown, "trace-down", "", "mahimahi trace file limiting the down direction's capacity")
	fs.IntVar(&o.mtu, "mtu", 1500, "device MTU the disciplines assume (the largest IP packet; psched_mtu adds the framing's header)")
	registerFraming(fs, &o.framing)
	fs.IntVar(&o.txqueuelen, "txqueuelen", 1000, "device txqueuelen: the default limit of the fifos and pfifo_fast's bands")
	registerHostFlags(fs, &o.hosts, false)
	return c
}

// longSimPackets is the work (packets) beyond which sim warns that it
// will take a while: about 5 s.
const longSimPackets = 5e7

func runSim(s *streams, o *simOptions) error {
	up, down, err := o.path.chains(&qdisc.Env{MTU: o.mtu, TxQueueLen: o.txqueuelen, Framing: o.framing})
	if err != nil {
		return err
	}
	if o.duration <= 0 {
		return usagef("--duration %v must be positive, e.g. --duration 10s", o.duration)
	}
	// 0 would mean the default to qdisc.Env; here the defaults are the
	// flags' own, so a 0 is a mistake, refused with the range even when
	// no discipline of the chains reads the value.
	if o.mtu < qdisc.MinMTU || o.mtu > qdisc.MaxMTU {
		return usagef("--mtu %d: give %d to %d, the range Linux allows (1500 is Ethernet's)", o.mtu, qdisc.MinMTU, qdisc.MaxMTU)
	}
	if o.txqueuelen < 1 || int64(o.txqueuelen) > math.MaxUint32 {
		return usagef("--txqueuelen %d: give 1 to %d packets (1000 is Linux's default)", o.txqueuelen, uint32(math.MaxUint32))
	}
	if o.events == "-" && o.json {
		return usagef("--events - and --json both write to stdout, where the CSV rows and the JSON would mix: give --events a file (--events events.csv), or leave out --json")
	}
	access, err := o.access(&qdisc.Env{MTU: o.mtu, TxQueueLen: o.txqueuelen, Framing: o.framing})
	if err != nil {
		return err
	}
	specs := o.flows
	if len(specs) == 0 {
		specs = []string{"cbr rate=10mbit size=1500 dir=up", "cbr rate=10mbit size=1500 dir=down"}
	}
	flows := make([]sim.Flow, len(specs))
	for i, spec := range specs {
		if flows[i], err = sim.ParseFlow(spec); err != nil {
			return usagef("--flow %q: %v", spec, err)
		}
	}
	env := qdisc.Env{MTU: o.mtu, TxQueueLen: o.txqueuelen, Framing: o.framing}
	cfg := sim.Config{
		Up:       link.Config{Name: "up", Chain: up, Env: env},
		Down:     link.Config{Name: "down", Chain: down, Env: env},
		Clients:  o.hosts.Clients,
		Servers:  o.hosts.Servers,
		Access:   access,
		Flows:    flows,
		Duration: o.duration,
		Seed:     o.seed,
	}
	if err := sim.Check(cfg); err != nil {
		return usagef("%v%s", err, o.hostsHint(err))
	}
	if o.events != "" {
		if err := outfile.Check(o.events, eventsOutput(s)); err != nil {
			return usagef("%v", err)
		}
	}
	if cfg.Up.Trace, err = readTrace("--trace-up", o.traceUp); err != nil {
		return err
	}
	if cfg.Down.Trace, err = readTrace("--trace-down", o.traceDown); err != nil {
		return err
	}
	warnings := append(chainWarnings("up", up, &env), chainWarnings("down", down, &env)...)
	for _, a := range access {
		warnings = append(warnings, chainWarnings(a.Host.LinkName(a.Dir), a.Chain, &env)...)
	}
	for _, w := range warnings {
		fmt.Fprintf(s.err, "wanlab: warning: %s\n", w)
	}

	var events *outfile.File
	if o.events != "" {
		if events, err = outfile.Create(context.Background(), o.events, eventsOutput(s)); err != nil {
			return err
		}
		defer events.Abort() // no-op after a successful Commit
		events.WriteString("flow,seq,dir,size,sent_ns,left_ns,verdict\n")
		var row []byte
		cfg.OnPacket = func(r sim.PacketRecord) {
			row = row[:0]
			row = strconv.AppendInt(row, int64(r.Flow), 10)
			row = append(row, ',')
			row = strconv.AppendInt(row, r.Seq, 10)
			row = append(row, ',')
			row = append(row, r.Dir...)
			row = append(row, ',')
			row = strconv.AppendInt(row, int64(r.Size), 10)
			row = append(row, ',')
			row = strconv.AppendInt(row, r.SentNs, 10)
			row = append(row, ',')
			if r.LeftNs >= 0 {
				row = strconv.AppendInt(row, r.LeftNs, 10)
			}
			row = append(row, ',')
			row = append(row, r.Verdict...)
			row = append(row, '\n')
			events.Write(row)
		}
	}

	// A simulation runs at some 10 million packets a second; one that
	// will take long says so before it starts rather than look hung.
	if n := sim.Packets(cfg); n > longSimPackets {
		fmt.Fprintf(s.err, "wanlab: sim: %.3g packets to simulate, at least %v at 100 ns a packet; Ctrl-C stops it\n",
			n, (time.Duration(n) * 100 * time.Nanosecond).Round(time.Second))
	}
	res, err := sim.Run(cfg)
	if err != nil {
		return usagef("%v", err)
	}
	if events != nil {
		if err := events.Commit(); err != nil {
			return err
		}
	}
	if o.json {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printSim(s.out, res, up, down, access)
	return nil
}

// access checks --clients and --servers and parses the access links of
// --access-up and --access-down (link.ParseAccess), their chains in tc's
// syntax on env's device, as up and run do (lab.HostSpecs).
func (o *simOptions) access(env *qdisc.Env) ([]sim.Access, error) {
	var lo lab.Options
	// sim's counts have no "not given": a 0 is always a mistake.
	if err := checkHostCounts(o.hosts, func(string) bool { return true }); err != nil {
		return nil, err
	}
	if err := o.hosts.Parse(&lo, hostFlagLabels, tcOptions(), env); err != nil {
		return nil, usagef("%v", err)
	}
	out := make([]sim.Access, len(lo.Access))
	for i, a := range lo.Access {
		out[i] = sim.Access{Host: a.Host, Dir: a.Dir, Chain: a.Chain}
	}
	return out, nil
}

// hostsHint names the flags that set how many hosts there are, for an
// error about a host the dumbbell does not have.
func (o *simOptions) hostsHint(err error) string {
	if !errors.Is(err, link.ErrNoHost) {
		return ""
	}
	return fmt.Sprintf(" (--clients %d --servers %d)", o.hosts.Clients, o.hosts.Servers)
}

// eventsOutput is how --events is written: "-" is the command's standard
// output, a device or FIFO is written through, a file replaced atomically
// once the run has ended.
func eventsOutput(s *streams) outfile.Options {
	return outfile.Options{Label: "--events", Suggest: "events.csv", Stdout: s.out}
}

func readTrace(flag, path string) (*link.Trace, error) {
	if path == "" {
		return nil, nil
	}
	t, err := tracefile.Load(path)
	if err != nil {
		return nil, usagef("%s: %v", flag, err)
	}
	return t, nil
}

// printSim writes the human-readable report: the path, then one row per
// direction and per flow; for a dumbbell of more hosts or with access
// links, also a row per bottleneck and per host.
func printSim(w io.Writer, r *sim.Result, up, down []qdisc.Spec, access []sim.Access) {
	fmt.Fprintf(w, "path  up:   %s\n      down: %s\n", describeChain(up), describeChain(down))
	for _, a := range access {
		fmt.Fprintf(w, "      %s access %s: %s\n", a.Host, a.Dir, describeChain(a.Chain))
	}
	if r.Hosts != nil {
		fmt.Fprintf(w, "hosts %s, %s: up crosses the client's access link, the bottleneck, the server's; down the other way\n",
			hostRange(r.Hosts, false), hostRange(r.Hosts, true))
	}
	fmt.Fprintf(w, "simulated %gs, seed %d, %s framing\n\n", r.DurationS, r.Seed, r.Framing)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tsent\tdelivered\tdropped\tmarked\tdup\treordered\tqueued\tMbit/s\tdelay ms: min\tmean\tp50\tp90\tp99\tmax\t")
	row := func(name string, d sim.DirResult) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t", name, d.Sent, d.Delivered, d.Dropped, d.Marked, d.Duplicated, d.Reordered, d.Queued, d.ThroughputBps/1e6)
		m := d.Delay
		if m.N == 0 {
			fmt.Fprintln(tw, "-\t-\t-\t-\t-\t-\t")
			return
		}
		const ms = 1e6
		fmt.Fprintf(tw, "%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", m.Min/ms, m.Mean/ms, m.P50/ms, m.P90/ms, m.P99/ms, m.Max/ms)
	}
	row("up", r.Up)
	row("down", r.Down)
	if r.Hosts != nil {
		row("up bottleneck", *r.UpBottleneck)
		row("down bottleneck", *r.DownBottleneck)
		for _, h := range r.Hosts {
			row(h.Host+" up", h.Up)
			if h.UpAccess != nil {
				row(h.Host+" up access", *h.UpAccess)
			}
			row(h.Host+" down", h.Down)
			if h.DownAccess != nil {
				row(h.Host+" down access", *h.DownAccess)
			}
		}
	}
	for _, f := range r.Flows {
		row(fmt.Sprintf("flow %d %s", f.Flow, f.Dir), f.DirResult)
	}
	tw.Flush()
	if m := r.Up.Delay; m.N > 0 && !m.Exact || r.Down.Delay.N > 0 && !r.Down.Delay.Exact {
		fmt.Fprintf(w, "delay percentiles within 1%% (histograms): more packets than the %d exact delays kept per direction\n", link.DefaultMaxKeptDelays)
	}
	if r.Hosts != nil {
		fmt.Fprintln(w, "a host's rows are its packets end to end, sent or received; its delay percentiles within 1% (histograms)")
	}
	for _, d := range []struct {
		name string
		r    sim.DirResult
	}{{"up", r.Up}, {"down", r.Down}} {
		if d.r.Dropped > 0 {
			fmt.Fprintf(w, "%s drops by reason: %s\n", d.name, reasonList(d.r.DroppedByReason))
		}
	}
	fmt.Fprintln(w)
	for _, f := range r.Flows {
		fmt.Fprintf(w, "flow %d: %s\n", f.Flow, f.Spec)
	}
}

// hostRange describes the clients (or servers) of hosts: "2 clients
// (c1..c2)", "1 server (s1)".
func hostRange(hosts []sim.HostResult, server bool) string {
	var names []string
	for _, h := range hosts {
		if (h.Host[0] == 's') == server {
			names = append(names, h.Host)
		}
	}
	what := "client"
	if server {
		what = "server"
	}
	if len(names) == 1 {
		return fmt.Sprintf("1 %s (%s)", what, names[0])
	}
	return fmt.Sprintf("%d %ss (%s..%s)", len(names), what, names[0], names[len(names)-1])
}
