package results

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"wanlab/fidelity"
	"wanlab/internal/errwriter"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// WriteSummary writes a text summary of the document in the style of
// Flent's `-f stats`: a header with the run's provenance (its hosts with
// their addresses and access links, and their sysctls, hosts of equal
// sysctls on one line: writeHosts, writeSysctls), a PARTIAL banner
// when the run did not complete and one for each output that failed, then for each series its data points
// (the samples summarised), lost probes, total (rate series), minimum,
// median, 90th and 99th percentiles, maximum, mean, standard deviation
// and variance, all over the series' window; with flowSeries, one line per
// flow series (otherwise a line saying how to see them), where a direction
// has two or more load flows each flow's share of its direction and a
// fairness line per direction (FlowFairness), and where the flows spread
// over several hosts of a side (rtt_fair's servers) each flow's hosts,
// each host's share and the hosts' fairness (FairnessOverHosts); the
// commands of a
// custom run; and last the router's report (writeRouter), with each
// host's path per direction on a testbed of many hosts (writePorts).
// The figures are the document's summaries, so call Summarize first.
func WriteSummary(w io.Writer, d *Document, flowSeries bool) error {
	ew := errwriter.New(w)
	r := &d.Run
	title := r.Test
	if r.Title != "" {
		title += " - " + r.Title
	}
	ew.Printf("wanlab %s\n", title)
	ew.Printf(" started:   %s\n", r.Start.UTC().Format(time.RFC3339Nano))
	if len(r.Argv) > 0 {
		ew.Printf(" command:   %s\n", ShellJoin(r.Argv))
	}
	if r.WanlabVersion != "" {
		ew.Printf(" version:   %s\n", r.WanlabVersion)
	}
	ew.Printf(" load:      %gs after a %gs lead, then a %gs tail; step %gs\n", r.DurationS, r.LeadS, r.TailS, r.StepS)
	if r.DelayS > 0 {
		ew.Printf(" schedule:  Flent's DELAY %gs; each flow runs over its own span (Flows, below)\n", r.DelayS)
	}
	rootless := ""
	if r.Rootless {
		rootless = "   rootless (user namespace)"
	}
	ew.Printf(" seed:      %d   framing: %s   kernel: %s%s\n", r.Seed, r.Framing, orDash(r.Kernel()), rootless)
	ew.Printf(" path up:   %s\n", orDash(r.Path.Up))
	ew.Printf(" path down: %s\n", orDash(r.Path.Down))
	if len(r.Options) > 0 {
		ew.Printf(" options:   %s\n", joinMap(r.Options))
	}
	writeHosts(ew, r.Hosts)
	writeSysctls(ew, r.Sysctls)
	writeBanners(ew, r)
	ew.Printf("\nEach series is summarised over its window; lost probes are counted, not summarised.\n")

	for i := range d.Series {
		writeSeriesStats(ew, &d.Series[i])
	}

	if len(d.Flows) > 0 {
		labelW, seriesW := 0, len("series")
		for _, f := range d.Flows {
			labelW = max(labelW, len(f.Label))
			for j := range f.Series {
				seriesW = max(seriesW, len(f.Series[j].Name))
			}
		}
		fair := d.FlowFairness()
		// Which hosts each flow ran between, where the run had several
		// on a side (rtt_fair's servers).
		side, _ := d.HostsSide()
		hostsOf := func(f *Flow) string { return "" }
		if side != "" {
			hostsOf = func(f *Flow) string {
				if f.Client == "" && f.Server == "" {
					return "  -      "
				}
				return fmt.Sprintf("  %-7s", f.ClientHost()+">"+f.ServerHost())
			}
		}
		ew.Printf("\nFlows:\n")
		if len(fair) > 0 {
			hosts := ""
			if side != "" {
				hosts = fmt.Sprintf("  %-7s", "hosts")
			}
			ew.Printf(" %3s  %-*s  %-4s%s  %-4s  %-8s  %6s  %s\n", "id", labelW, "label", "dir", hosts, "prot", "tos", "share", "congestion control")
		}
		for _, f := range d.Flows {
			if len(fair) > 0 {
				share := "-"
				if v, ok := FlowShareOf(fair, f.ID); ok {
					share = fmt.Sprintf("%.1f%%", 100*v)
				}
				ew.Printf(" %3d  %-*s  %-4s%s  %-4s  tos 0x%02x  %6s  %s\n", f.ID, labelW, f.Label, f.Direction, hostsOf(&f), f.Protocol, f.TOS, share, orDash(f.CongestionControl))
			} else {
				ew.Printf(" %3d  %-*s  %-4s%s  %-4s  tos 0x%02x  %s\n", f.ID, labelW, f.Label, f.Direction, hostsOf(&f), f.Protocol, f.TOS, orDash(f.CongestionControl))
			}
			if f.FiveTuple != "" {
				ew.Printf("      %s\n", f.FiveTuple)
			}
			if r.DelayS > 0 && f.Span != nil && f.Direction != "both" {
				ew.Printf("      from %gs to %gs\n", f.Span[0], f.Span[1])
			}
			if f.Error != "" {
				ew.Printf("      error: %s\n", f.Error)
			}
		}
		for _, f := range fair {
			ew.Printf(" fairness %-4s Jain's index %.4f of the %d %s flows' mean goodput, each over its span\n",
				f.Direction+":", f.Jain, len(f.Flows), dirWord[f.Direction])
		}
		writeHostFairness(ew, d.FairnessOverHosts())
		header := false
		for _, f := range d.Flows {
			if !flowSeries {
				if len(f.Series) > 0 {
					ew.Printf("\n Each flow has %d series of its own (TCP_INFO at both ends, the router's view): see them with 'wanlab show FILE --flow-series'.\n", len(f.Series))
				}
				break
			}
			for j := range f.Series {
				if !header {
					ew.Printf("\n %-*s %6s %6s %12s %12s %12s\n", seriesW, "series", "n", "lost", "mean", "median", "99th %")
					header = true
				}
				s := &f.Series[j]
				sm := &s.Summary
				ew.Printf(" %-*s %6d %6d %12s %12s %12s %s\n", seriesW, s.Name, sm.N, s.Lost, num(sm.Mean), num(sm.Median), num(sm.P99), s.Unit)
			}
		}
	}

	if len(d.Commands) > 0 {
		ew.Printf("\nCommands:\n")
		for _, c := range d.Commands {
			writeCommand(ew, &c)
		}
	}

	ew.Printf("\n")
	if d.Router != nil {
		writeRouter(ew, d.Router, d.Run.KernelPreemption)
	}
	writeBanners(ew, r)
	return ew.Err()
}

// dirWord names a direction's load flows: "upload" or "download".
var dirWord = map[string]string{"up": "upload", "down": "download"}

// writeHostFairness writes each direction's share of every host of the
// side with several (FairnessOverHosts) and the hosts' fairness line.
func writeHostFairness(ew *errwriter.Writer, hf []HostFairness) {
	if len(hf) == 0 {
		return
	}
	ew.Printf("\nHosts (each %s's sum of its flows' mean goodput):\n", hf[0].Side)
	ew.Printf(" %-4s  %-5s  %12s  %-8s  %6s  %s\n", "dir", "host", "mean", "unit", "share", "flows")
	for _, h := range hf {
		for _, s := range h.Hosts {
			ids := make([]string, len(s.Flows))
			for i, id := range s.Flows {
				ids[i] = strconv.Itoa(id)
			}
			ew.Printf(" %-4s  %-5s  %12s  %-8s  %5.1f%%  %s\n", h.Direction, s.Host, num(s.Mean), s.Unit, 100*s.Share, strings.Join(ids, ", "))
		}
	}
	for _, h := range hf {
		ew.Printf(" fairness %-4s Jain's index %.4f over the %d %ss' %s goodput\n", h.Direction+":", h.Jain, len(h.Hosts), h.Side, dirWord[h.Direction])
	}
}

// writeBanners says, at the top and the bottom of the summary, that the
// run did not complete and which of its outputs failed.
func writeBanners(ew *errwriter.Writer, r *Run) {
	if r.Partial {
		ew.Printf("\n*** PARTIAL RUN: %s ***\n", orDash(r.PartialReason))
	}
	for _, f := range r.FailedOutputs {
		ew.Printf("\n*** OUTPUT FAILED: %s; the measurements are whole ***\n", f.Error)
	}
}

// writeSeriesStats writes one series' block, with Flent's labels in Flent's
// order and our extra figures (window, lost, 90th percentile) beside them.
func writeSeriesStats(ew *errwriter.Writer, s *Series) {
	sm := &s.Summary
	ew.Printf("\n %s:\n", s.Name)
	ew.Printf("  Window:      %g to %g s\n", s.Window[0], s.Window[1])
	ew.Printf("  Data points: %d\n", sm.N)
	ew.Printf("  Lost:        %d\n", s.Lost)
	if sm.N == 0 {
		ew.Printf("  No data.\n")
		return
	}
	unit := ""
	if s.Unit != "" {
		unit = " " + s.Unit
	}
	if s.IsRate() {
		ew.Printf("  Total:       %s %s\n", num(sm.Total), s.TotalUnit())
	}
	ew.Printf("  Min:         %s%s\n", num(sm.Min), unit)
	ew.Printf("  Median:      %s%s\n", num(sm.Median), unit)
	ew.Printf("  90th %%:      %s%s\n", num(sm.P90), unit)
	ew.Printf("  99th %%:      %s%s\n", num(sm.P99), unit)
	ew.Printf("  Max:         %s%s\n", num(sm.Max), unit)
	ew.Printf("  Mean:        %s%s\n", num(sm.Mean), unit)
	ew.Printf("  Std dev:     %s\n", num(sm.StdDev))
	ew.Printf("  Variance:    %s\n", num(sm.Variance))
}

// num formats a figure as Flent does (%f), "-" for NaN.
func num(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf("%f", f)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// DropReasons formats the router's drops by reason as they print after
// the drop count, in the summary and in the report alike:
// " (limit 3, loss 12)", by name; "" when there are none.
func DropReasons(m map[string]uint64) string {
	if len(m) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+" "+strconv.FormatUint(m[k], 10))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// joinMap writes a map as "k=v k=v", keys sorted.
func joinMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + shellQuote(m[k]))
	}
	return b.String()
}

// ShellJoin writes a command line so that a POSIX shell splits it back
// into argv: words made only of letters, digits and -_./:=,%@+ as they
// are, every other word in single quotes (a quote inside it closed,
// escaped and reopened). Reports show a run's recorded argv this way, as
// the command that runs it again.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,%@+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeCommand writes how one of the user's commands ran.
func writeCommand(ew *errwriter.Writer, c *Command) {
	ew.Printf(" %-6s  sh -c %s\n", c.Role, ShellJoin([]string{c.Expanded}))
	switch {
	case !c.Started:
		ew.Printf("         did not start\n")
	case c.EndedByWanlab:
		ew.Printf("         ran from %.3fs to %.3fs, ended by wanlab (status %d); printed %d bytes to stdout, %d to stderr\n",
			c.StartS, c.EndS, c.ExitCode, c.StdoutBytes, c.StderrBytes)
	default:
		ew.Printf("         ran from %.3fs to %.3fs, exit status %d; printed %d bytes to stdout, %d to stderr\n",
			c.StartS, c.EndS, c.ExitCode, c.StdoutBytes, c.StderrBytes)
	}
	if c.Error != "" {
		ew.Printf("         error: %s\n", c.Error)
	}
}

// writeRouter writes the router's report: the verdict first (with
// LateReleasesNote for the kernel's preemption mode, preemption), then each direction's chain and its configured
// and achieved figures, then the timed changes.
func writeRouter(ew *errwriter.Writer, rep *RouterReport, preemption string) {
	switch {
	case rep.Mode == RouterDirect:
		ew.Printf("Router: none (%s)\n", rep.Note)
		return
	case rep.Faithful == nil:
		ew.Printf("Router: no readings (%s)\n", rep.Note)
		return
	case *rep.Faithful:
		ew.Printf("Verdict: faithful: the router released every packet on time, lost none in front of the chains and kept up\n")
	default:
		ew.Printf("Verdict: NOT FAITHFUL\n")
		verdicts := make([]fidelity.Verdict, 0, len(rep.Directions))
		for _, d := range rep.Directions {
			for _, c := range d.Verdict.Causes {
				ew.Printf("  %s: %s\n", d.Name, c.Text)
			}
			verdicts = append(verdicts, d.Verdict)
		}
		if note := LateReleasesNote(preemption, verdicts...); note != "" {
			ew.Printf("  %s\n", note)
		}
	}
	where := "testbed " + rep.Testbed
	if rep.Mode == RouterLab {
		where = "running " + where
	}
	ew.Printf("\nRouter (%s):\n", where)
	for _, d := range rep.Directions {
		ew.Printf(" %-4s %s\n", d.Name, chainLines(d.ChainStart))
		if d.ChainEnd != d.ChainStart {
			ew.Printf("      at the end: %s\n", chainLines(d.ChainEnd))
		}
		rate := "unlimited"
		if d.ConfiguredRateBps > 0 {
			rate = fmt.Sprintf("%.3f Mbit/s", float64(d.ConfiguredRateBps)/1e6)
		}
		ew.Printf("      configured: rate %s, delay %.3f ms\n", rate, float64(d.ConfiguredDelayNs)/1e6)
		ew.Printf("      achieved:   %.3f Mbit/s during the load, delay mean %.3f ms, median %.3f, 99th %% %.3f, max %.3f ms\n",
			d.LoadRateBps/1e6, d.Delay.MeanNs/1e6, d.Delay.P50Ns/1e6, d.Delay.P99Ns/1e6, d.Delay.MaxNs/1e6)
		ew.Printf("      packets:    %d in, %d delivered, %d dropped%s, %d marked, %d duplicated, %d reordered\n",
			d.Sent, d.Delivered, d.Dropped, DropReasons(d.DroppedByReason), d.Marked, d.Duplicated, d.Reordered)
		ew.Printf("      router:     lateness median %s, 99th %% %s, max %s (tolerance %s); ring drops %d, write drops %d; loop busy %.0f%%, held %.0f%%\n",
			time.Duration(d.Lateness.P50Ns), time.Duration(d.Lateness.P99Ns), time.Duration(d.Lateness.MaxNs),
			time.Duration(d.Verdict.ToleranceNs), d.RingDrops, d.WriteDrops, 100*d.LoopBusy, 100*d.LoopHeld)
		if w := d.RingWait; w != nil {
			ew.Printf("      ring wait:  median %s, 99th %% %s, max %s (from the kernel's arrival stamps to the router's reads)\n",
				time.Duration(w.P50Ns), time.Duration(w.P99Ns), time.Duration(w.MaxNs))
		}
		writePorts(ew, d)
		if len(d.Classes) > 0 {
			ew.Printf("      at the end, as tc -s qdisc show and tc -s class show (counts over the run):\n")
			writeTree(ew, d)
		}
	}
	for _, c := range rep.Changes {
		if c.Error != "" {
			ew.Printf(" change at %gs: %s to %q FAILED: %s\n", c.AtS, c.Direction, c.Chain, c.Error)
		} else {
			ew.Printf(" change at %gs (applied at %.3fs): %s to %s\n", c.AtS, c.AppliedS, c.Direction, orNone(c.Chain))
			if c.Effect != "" {
				ew.Printf("      %s\n", c.Effect)
			}
		}
	}
	if rep.Note != "" {
		ew.Printf(" note: %s\n", rep.Note)
	}
}

// writeTree prints a direction's tree at the end of the run as tc -s
// qdisc show and tc -s class show print it (tcspec's printers), without
// the spaces tc leaves at the ends of lines.
func writeTree(ew *errwriter.Writer, d DirectionReport) {
	var b strings.Builder
	for _, q := range d.Qdiscs {
		spec, err := tcspec.Parse(q.Kind+" "+q.Options, tcspec.Options{})
		at := tcspec.Placement{Handle: q.Handle, Parent: q.Parent, DirectPackets: q.DirectPackets}
		if err != nil {
			fmt.Fprintf(&b, "qdisc %s %s %s %s\n", q.Kind, q.Handle, q.Parent, q.Options)
		} else {
			b.WriteString(tcspec.ShowQdisc(spec, at, nil) + "\n")
		}
		b.WriteString(tcspec.ShowStats(qdisc.Stats{Bytes: q.Bytes, Packets: q.Packets, Drops: q.Dropped,
			Overlimits: q.Overlimits, Requeues: q.Requeues, Qlen: q.Qlen, Backlog: q.Backlog}))
	}
	for _, c := range d.Classes {
		b.WriteString(tcspec.ShowClassRecord(tcspec.ClassRecord{Kind: c.Kind, ClassID: c.ClassID, Parent: c.Parent, Leaf: c.Leaf,
			Options: c.Options, Level: c.Level, Lends: c.Lends, Borrows: c.Borrows,
			Tokens: time.Duration(c.TokensNs), CTokens: time.Duration(c.CTokensNs),
			Stats: qdisc.Stats{Bytes: c.Bytes, Packets: c.Packets, Drops: c.Dropped, Overlimits: c.Overlimits, Qlen: c.Qlen, Backlog: c.Backlog}}))
	}
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if line != "" {
			ew.Printf("%s\n", strings.TrimRight(line, " \n"))
		}
	}
}

// chainLines writes a chain on one line, or a tree (the tc lines that
// make it, joined with "; ") one tc line a line under it.
func chainLines(chain string) string {
	if !strings.HasPrefix(chain, "tc ") {
		return orNone(chain)
	}
	return "tree of tc lines:\n        " + strings.Join(strings.Split(chain, "; "), "\n        ")
}

// orNone names an empty chain.
func orNone(chain string) string {
	if chain == "" {
		return "(no qdisc)"
	}
	return chain
}
