package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"wanlab/fidelity"
	"wanlab/internal/preempt"
	"wanlab/lab"
	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/results"
	"wanlab/router"
	"wanlab/tcspec"
)

func newStatusCommand(s *streams) *cobra.Command {
	var asJSON bool
	var flows int
	c := &cobra.Command{
		Use:   "status [N] [--json] [--flows N]",
		Short: "Show a running testbed's paths and the router's live counters",
		Long: `status prints the testbed's hosts (name, namespace, device, addresses and
access links; on a dumbbell of more hosts, every one), then, for each direction, the qdisc chain in tc syntax (a tree of
classes as the tc lines that make it) with each qdisc's counters as 'tc -s
qdisc show' prints them (Sent bytes and packets, dropped, overlimits,
requeues, backlog) and each class's as 'tc -s class show' does, then what the direction delivered
and dropped (by reason), marked, duplicated and reordered, the delay
percentiles, how late the router released packets against their deadlines and the
fidelity verdict (whether the router did what the chain said, and if not
why: late releases, drops in the ring in front of it, a saturated loop),
the kernel's ring in front of the router (its drops, and how many packets
waited there), on a dumbbell each host's part (what entered from it or
left to it, and its access link), and the busiest flows. Packets are wire segments; bytes are
framed as the emulated interface counts them (see the framing).

--json prints the same as JSON (docs/results-format.md describes every key).
--flows N lists the N busiest flows per direction, 0 all of them; without
it the text lists 5 and --json all.

N may be left out when one testbed is running.`,
		Example: `  wanlab status
  wanlab status wan --json | jq .up.counters
  wanlab status wan --flows 0`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if flows < 0 {
				return usagef("--flows %d: give 0 (all flows) or more", flows)
			}
			if err := enterLab(); err != nil {
				return err
			}
			name, err := testbedArg(args)
			if err != nil {
				return err
			}
			if !c.Flags().Changed("flows") && !asJSON {
				flows = 5
			}
			st, err := lab.GetStatus(name, flows)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			printStatus(s.out, st)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	c.Flags().IntVar(&flows, "flows", 0, "how many of the busiest flows to list per direction, 0 for all (default 5 for text, all for --json)")
	return c
}

// testbedArg returns the testbed an optional argument names, or the only
// running one. An invalid or ambiguous name is a usage error; a testbed
// that is not running is not.
func testbedArg(args []string) (string, error) {
	var name string
	if len(args) > 0 {
		name = args[0]
		if err := lab.CheckName(name); err != nil {
			return "", usagef("%v", err)
		}
	}
	n, err := lab.Resolve(name)
	if errors.Is(err, lab.ErrAmbiguous) {
		return "", usagef("%v", err)
	}
	return n, err
}

func printStatus(w io.Writer, st lab.Status) {
	var what []string
	what = append(what, fmt.Sprintf("owner pid %d, up %s", st.Owner, time.Since(st.Created).Round(time.Second)))
	if len(st.Ports) == 0 {
		what = append(what, "cc "+st.CC)
	}
	what = append(what, fmt.Sprintf("seed %d, dataplane %s", st.Seed, st.DataPlane))
	if st.Device != "" {
		what = append(what, "device "+st.Device)
	}
	what = append(what, fmt.Sprintf("framing %s, granularity %s", st.Framing, st.Up.Granularity))
	fmt.Fprintf(w, "%s: %s\n", describeTestbed(st.Info), strings.Join(what, ", "))
	printMembers(w, st.Info)
	switch {
	case st.PcapError != "":
		fmt.Fprintf(w, "  pcap    %s: STOPPED: %s; the testbed goes on without recording\n", st.Pcap, st.PcapError)
	case st.Pcap != "":
		fmt.Fprintf(w, "  pcap    %s\n", st.Pcap)
	}
	for _, c := range st.Changed {
		fmt.Fprintf(w, "  CHANGED: %s\n", c)
	}
	switch {
	case len(st.Ports) == 2:
		a, b := st.Ports[0].IfName, st.Ports[1].IfName
		printDir(w, "up ("+a+" → "+b+")", st.Up, a, st.Framing)
		printDir(w, "down ("+b+" → "+a+")", st.Down, b, st.Framing)
	case len(st.Hosts) > 0:
		printDir(w, "up (clients → servers)", st.Up, "the clients' devices", st.Framing)
		printDir(w, "down (servers → clients)", st.Down, "the servers' devices", st.Framing)
	case st.RouterNS != "":
		printDir(w, "up (client → server)", st.Up, st.Client.RouterIf, st.Framing)
		printDir(w, "down (server → client)", st.Down, st.Server.RouterIf, st.Framing)
	default:
		printDir(w, "up (client → server)", st.Up, st.Client.IfName, st.Framing)
		printDir(w, "down (server → client)", st.Down, st.Server.IfName, st.Framing)
	}
	var verdicts []fidelity.Verdict
	for _, d := range []router.DirSnapshot{st.Up, st.Down} {
		if d.Verdict != nil && !d.Verdict.Faithful {
			verdicts = append(verdicts, *d.Verdict)
		}
	}
	if len(verdicts) > 0 {
		if note := results.LateReleasesNote(preempt.Mode(), verdicts...); note != "" {
			fmt.Fprintf(w, "NOTE: %s\n", note)
		}
	}
}

// printDir prints one direction: its qdiscs as `tc -s qdisc show` does,
// then the router's own figures. ingress is the device the direction reads
// (a TUN, or the interface of a packet socket), whose ring holds what the
// router has not taken yet; framing is what the emulated interface counts
// in a packet, which some defaults depend on.
func printDir(w io.Writer, title string, d router.DirSnapshot, ingress string, framing qdisc.Framing) {
	specs, _ := tcspec.ParseChain(d.Chain, tcOptions())
	switch {
	case d.Chain == "":
		fmt.Fprintf(w, "\n%s: direct (no qdisc)\n", title)
	case tcspec.HasTree(specs):
		// A tree is the tc lines that make it, one a line.
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, line := range tcspec.FormatScript(specs, "DEV") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	default:
		fmt.Fprintf(w, "\n%s: %s\n", title, d.Chain)
	}
	printTree(w, d, framing)
	c := d.Counters
	fmt.Fprintf(w, " delivered %d pkt %d bytes; in %d pkt %d bytes; queued %d\n", c.Delivered, c.BytesOut, c.Sent, c.BytesIn, c.Queued)
	fmt.Fprintf(w, " dropped %d%s; marked %d; duplicated %d; reordered %d\n", c.Dropped, byReason(c.DroppedByReason), c.Marked, c.Duplicated, c.Reordered)
	if c.Delay.N > 0 {
		ms := func(ns float64) float64 { return ns / 1e6 }
		fmt.Fprintf(w, " delay ms: min %.3f mean %.3f p50 %.3f p90 %.3f p99 %.3f max %.3f\n",
			ms(c.Delay.Min), ms(c.Delay.Mean), ms(c.Delay.P50), ms(c.Delay.P90), ms(c.Delay.P99), ms(c.Delay.Max))
	}
	if l := d.Lateness; l.N > 0 {
		us := func(ns int64) float64 { return float64(ns) / 1e3 }
		fmt.Fprintf(w, " release lateness µs: p50 %.1f p99 %.1f max %.1f (%d releases)\n", us(l.P50Ns), us(l.P99Ns), us(l.MaxNs), l.N)
	}
	if v := d.Verdict; v != nil {
		if v.Faithful {
			fmt.Fprintf(w, " faithful: lateness p99 within %v, no ring drops, loop busy %.0f%%, held %.0f%%\n", time.Duration(v.ToleranceNs), loopPct(d.Loop, d.Loop.BusyNs), loopPct(d.Loop, d.Loop.HeldNs))
		}
		for _, c := range v.Causes {
			fmt.Fprintf(w, " NOT FAITHFUL (%s): %s\n", c.Code, c.Text)
		}
	}
	r := d.Ring
	fmt.Fprintf(w, " ring at %s: dropped %d", ingress, r.Drops)
	if r.Size > 0 {
		fmt.Fprintf(w, " (holds %d)", r.Size)
	}
	if r.Err != "" {
		fmt.Fprintf(w, " (%s)", r.Err)
	}
	if r.Waiting.N > 0 {
		fmt.Fprintf(w, "; waiting at a wake-up p50 %.0f p99 %.0f max %d packets", r.Waiting.P50, r.Waiting.P99, r.Waiting.Max)
	}
	if s := r.Stall; s.N > 0 {
		fmt.Fprintf(w, "; stalls µs p50 %.1f p99 %.1f max %.1f", float64(s.P50Ns)/1e3, float64(s.P99Ns)/1e3, float64(s.MaxNs)/1e3)
	}
	if wt := r.Wait; wt != nil && wt.N > 0 {
		fmt.Fprintf(w, "; wait µs (kernel's arrival to read) p50 %.1f p99 %.1f max %.1f", float64(wt.P50Ns)/1e3, float64(wt.P99Ns)/1e3, float64(wt.MaxNs)/1e3)
	}
	fmt.Fprintln(w)
	if n := d.NonIP; n != nil && n.Frames > 0 {
		fmt.Fprintf(w, " frames that are not IP (ARP, ...), crossed unshaped: %d, %d bytes, refused %d\n", n.Frames, n.Bytes, n.Refused)
	}
	fmt.Fprintf(w, " refused writes %d%s, malformed %d\n", d.WriteDrops, byErrno(d.WriteDropsByReason), d.Malformed)
	gso := fmt.Sprintf("split into segments before the link (%d so far)", d.GSO.Split)
	if d.GSO.Whole {
		gso = fmt.Sprintf("enter the link whole, decided per %s; %d TCP writes coalesced %d packets", d.Granularity, d.GSO.GROWrites, d.GSO.GROPackets)
	}
	fmt.Fprintf(w, " GSO super-packets %s; at most %d packets held\n", gso, d.MaxInFlight)
	printPorts(w, d)
	if len(d.Flows) > 0 {
		fmt.Fprintf(w, " flows (busiest first):\n")
		for _, f := range d.Flows {
			fmt.Fprintf(w, "  %-4s %s > %s  %d pkt %d bytes (payload %d), dropped %d, reordered %d\n",
				f.Flow.Proto, f.Flow.Src, f.Flow.Dst, f.Packets, f.Bytes, f.Payload, f.Dropped, f.Reordered)
		}
		if more := d.FlowsTotal - len(d.Flows); more > 0 {
			fmt.Fprintf(w, "  ... %d more (see --flows 0)\n", more)
		}
	}
}

// printPorts prints a dumbbell direction's hosts, one line each: what
// entered the direction from the host or left it to the host, and the
// host's access link there.
func printPorts(w io.Writer, d router.DirSnapshot) {
	if len(d.Ports) == 0 {
		return
	}
	fmt.Fprintf(w, " hosts (%d packets to no host's address dropped):\n", d.NoRoute)
	for _, p := range d.Ports {
		c := p.Counters
		fmt.Fprintf(w, "  %-4s %-7s %-15s in %d pkt, delivered %d pkt %d bytes, dropped %d%s", p.Host, p.Place, p.If, c.Sent, c.Delivered, c.BytesOut, c.Dropped, byReason(c.DroppedByReason))
		if c.Delay.N > 0 {
			fmt.Fprintf(w, ", delay ms p50 %.3f p99 %.3f", c.Delay.P50/1e6, c.Delay.P99/1e6)
		}
		switch {
		case p.Access != nil && p.Chain == "":
			fmt.Fprintf(w, "; access direct: dropped %d", p.Access.Dropped)
		case p.Access != nil:
			fmt.Fprintf(w, "; access %s: dropped %d, queued %d", p.Chain, p.Access.Dropped, p.Access.Queued)
		}
		if p.Place == "ingress" && p.Ring.Drops > 0 {
			fmt.Fprintf(w, "; ring dropped %d", p.Ring.Drops)
		}
		if p.WriteDrops > 0 {
			fmt.Fprintf(w, "; refused writes %d", p.WriteDrops)
		}
		fmt.Fprintln(w)
	}
}

// loopPct returns ns as a share of l's running time, in percent.
func loopPct(l router.LoopSnapshot, ns int64) float64 {
	if l.RunNs == 0 {
		return 0
	}
	return 100 * float64(ns) / float64(l.RunNs)
}

// printTree prints a direction's qdiscs and then its classes exactly as
// `tc -s qdisc show` and `tc -s class show` print them on Linux
// (tcspec.ShowQdisc, tcspec.ShowClass), so that scripts written around
// tc's output read these the same way; each qdisc's drops are those of
// the qdiscs under it too, as tc shows them (TCDrops), and each qdisc's
// extended statistics follow its counters as tc -s prints them.
func printTree(w io.Writer, d router.DirSnapshot, framing qdisc.Framing) {
	env := &qdisc.Env{Framing: framing}
	drops := d.TCDrops()
	for i, q := range d.Qdiscs {
		c := q.Counters
		at := tcspec.Placement{Handle: q.Handle, Parent: q.Parent, DirectPackets: q.DirectPackets}
		spec, err := tcspec.Parse(q.Kind+" "+q.Options, tcOptions())
		if err != nil {
			// Not expected: the options are tcspec.Format's. Print them
			// as they are rather than nothing.
			fmt.Fprintf(w, "qdisc %s %s %s %s\n", q.Kind, q.Handle, q.Parent, q.Options)
		} else {
			fmt.Fprintln(w, tcspec.ShowQdisc(spec, at, env))
		}
		fmt.Fprint(w, q.OptionStats)
		fmt.Fprint(w, tcspec.ShowStats(qdisc.Stats{Bytes: c.Bytes, Packets: c.Packets, Drops: drops[i],
			Overlimits: c.Overlimits, Requeues: c.Requeues, Qlen: c.Qlen, Backlog: c.Backlog}))
		fmt.Fprint(w, q.XStats)
	}
	for _, c := range d.Classes {
		k := c.Counters
		fmt.Fprint(w, tcspec.ShowClassRecord(tcspec.ClassRecord{Kind: c.Kind, ClassID: c.ClassID, Parent: c.Parent, Leaf: c.Leaf, Options: c.Options, Level: c.Level,
			Stats: qdisc.Stats{Bytes: k.Bytes, Packets: k.Packets, Drops: k.Dropped, Overlimits: k.Overlimits, Requeues: k.Requeues, Qlen: k.Qlen, Backlog: k.Backlog},
			Lends: c.Lends, Borrows: c.Borrows, Tokens: time.Duration(c.TokensNs), CTokens: time.Duration(c.CTokens)}))
	}
}

func byErrno(m map[string]uint64) string {
	if len(m) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func byReason(r link.Reasons) string {
	if r.Total() == 0 {
		return ""
	}
	return " (" + reasonList(r) + ")"
}

// reasonList lists the non-zero counts of r by reason name: "limit 3,
// codel 12".
func reasonList(r link.Reasons) string {
	var parts []string
	for _, why := range qdisc.Reasons() {
		if n := r[why]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", why, n))
		}
	}
	return strings.Join(parts, ", ")
}
