package tcspec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"wanlab/clock"
	"wanlab/qdisc"
)

// ShowXStats returns the lines of extended statistics `tc -s qdisc show`
// prints under a qdisc's two statistics lines (iproute2's print_xstats:
// q_codel.c, q_fq_codel.c, q_pie.c, q_fq_pie.c, q_red.c, q_cake.c,
// q_dualpi2.c), each ending in a newline, or "" for a kind whose kernel module dumps none. now is the time the statistics are taken at: codel's
// drop_next is relative to it.
func ShowXStats(q qdisc.Qdisc, now clock.Time) string {
	switch x := q.(type) {
	case *qdisc.CoDel:
		return showCoDelXStats(x.XStats(now))
	case *qdisc.FQCoDel:
		return showFQCoDelXStats(x.XStats())
	case *qdisc.PIE:
		return showPIEXStats(x.XStats())
	case *qdisc.RED:
		return showREDXStats(x.XStats())
	case *qdisc.DualPI2:
		return showDualPI2XStats(x.XStats(now))
	case *qdisc.FQPIE:
		return showFQPIEXStats(x.XStats())
	case *qdisc.Cake:
		return showCakeXStats(x.XStats())
	}
	return ""
}

// ShowOptionStats returns the lines of statistics tc -s prints among a
// qdisc's options, right after its qdisc line and before its counters,
// each starting with two spaces and ending in a newline, or "": sfq's RED
// mode dumps its counters with its options (struct tc_sfq_qopt_v1), and
// q_sfq.c's sfq_print_opt prints them there.
func ShowOptionStats(q qdisc.Qdisc) string {
	if x, ok := q.(*qdisc.SFQ); ok && x.Dump().RED {
		st := x.XStats()
		return fmt.Sprintf("  prob_mark %d prob_mark_head %d prob_drop %d\n  forced_mark %d forced_mark_head %d forced_drop %d\n",
			uint32(st.ProbMark), uint32(st.ProbMarkHead), uint32(st.ProbDrop), uint32(st.ForcedMark), uint32(st.ForcedMarkHead), uint32(st.ForcedDrop))
	}
	return ""
}

// showSignedTime is codel's drop_next as tc prints it: sprint_time of
// the magnitude, with a minus sign before a time in the past.
func showSignedTime(d time.Duration) string {
	if d < 0 {
		return "-" + showTime(uint32(-d/time.Microsecond))
	}
	return showTime(uint32(d / time.Microsecond))
}

// showCoDelXStats is codel_print_xstats. The kernel dumps ldelay and
// drop_next in µs (codel_time_to_us), which tc prints with sprint_time.
func showCoDelXStats(x qdisc.CoDelXStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  count %d lastcount %d ldelay %s", x.Count, x.LastCount, showTime(uint32(x.LDelay/time.Microsecond)))
	if x.Dropping {
		b.WriteString(" dropping")
	}
	fmt.Fprintf(&b, " drop_next %s\n  maxpacket %d ecn_mark %d drop_overlimit %d", showSignedTime(x.DropNext), x.MaxPacket, x.ECNMark, x.DropOverlimit)
	if x.CEMark != 0 {
		fmt.Fprintf(&b, " ce_mark %d", x.CEMark)
	}
	b.WriteString("\n")
	return b.String()
}

// showFQCoDelXStats is fq_codel_print_xstats for the qdisc's statistics
// (TCA_FQ_CODEL_XSTATS_QDISC): ce_mark, memory_used and
// drop_overmemory only when not zero.
func showFQCoDelXStats(x qdisc.FQCoDelXStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  maxpacket %d drop_overlimit %d new_flow_count %d ecn_mark %d", x.MaxPacket, x.DropOverlimit, x.NewFlowCount, x.ECNMark)
	for _, f := range []struct {
		name string
		v    uint32
	}{{"ce_mark", x.CEMark}, {"memory_used", x.MemoryUsage}, {"drop_overmemory", x.DropOvermemory}} {
		if f.v != 0 {
			fmt.Fprintf(&b, " %s %d", f.name, f.v)
		}
	}
	fmt.Fprintf(&b, "\n  new_flows_len %d old_flows_len %d\n", x.NewFlowsLen, x.OldFlowsLen)
	return b.String()
}

// showPIEXStats is pie_print_xstats: the probability with %lg, the delay
// with sprint_time, the drain rate only while it is estimated.
func showPIEXStats(x qdisc.PIEXStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  prob %s delay %s", cG(x.Prob, 6), showTime(uint32(x.Delay/time.Microsecond)))
	if x.Estimator {
		fmt.Fprintf(&b, " avg_dq_rate %d", x.AvgDQRate)
	}
	fmt.Fprintf(&b, "\n  pkts_in %d overlimit %d dropped %d maxq %d ecn_mark %d\n", x.PacketsIn, x.Overlimit, x.Dropped, x.MaxQ, x.ECNMark)
	return b.String()
}

// showREDXStats is red_print_xstats. red_dump_stats sums the kernel's
// counters into four: marked (probabilistic and forced marks), early
// (probabilistic and forced drops), pdrop (the child's refusals) and
// other (always 0).
func showREDXStats(x qdisc.REDStats) string {
	return fmt.Sprintf("  marked %d early %d pdrop %d other %d \n",
		uint32(x.ProbMark+x.ForcedMark), uint32(x.ProbDrop+x.ForcedDrop), uint32(x.PDrop), 0)
}

// showDualPI2XStats is q_dualpi2.c's dualpi2_print_xstats. Unlike the
// older kinds' printers it starts its lines without spaces and ends with
// a line break of its own, which tc follows with another: an empty line.
func showDualPI2XStats(x qdisc.DualPI2XStats) string {
	queue := "L-queue"
	if x.Credit > 0 {
		queue = "C-queue"
	}
	return fmt.Sprintf("prob %.6f delay_c %dus delay_l %dus\npkts_in_c %d pkts_in_l %d maxq %d\necn_mark %d step_mark %d\ncredit %d (%s)\nmemory_used %d (max %d) of memory limit %d\n\n",
		float64(x.Prob)/math.MaxUint32, x.DelayC, x.DelayL, x.PacketsInC, x.PacketsInL, x.MaxQ, x.ECNMark, x.StepMarks, x.Credit, queue, x.MemoryUsed, x.MaxMemoryUsed, x.MemoryLimit)
}

// showFQPIEXStats is q_fq_pie.c's fq_pie_print_xstats.
func showFQPIEXStats(x qdisc.FQPIEXStats) string {
	return fmt.Sprintf("  pkts_in %d overlimit %d overmemory %d dropped %d ecn_mark %d\n  new_flow_count %d new_flows_len %d old_flows_len %d memory_used %d\n",
		x.PacketsIn, x.Overlimit, x.Overmemory, x.Dropped, x.ECNMark, x.NewFlowCount, x.NewFlowsLen, x.OldFlowsLen, x.MemoryUsage)
}

// showCakeXStats is q_cake.c's cake_print_xstats for a qdisc (not a
// class): the memory, the capacity and the sizes seen, then one column
// per tin, headed by the tins' names where diffserv3 and diffserv4 give
// them, and an empty line, which tc's own line break after the statistics
// makes.
func showCakeXStats(x qdisc.CakeXStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, " memory used: %s of %s\n", showSize(x.MemoryUsed), showSize(x.MemoryLimit))
	fmt.Fprintf(&b, " capacity estimate: %s\n", showRate(x.CapacityEstimate))
	fmt.Fprintf(&b, " min/max network layer size: %12d /%8d\n", x.MinNetlen, x.MaxNetlen)
	fmt.Fprintf(&b, " min/max overhead-adjusted size: %8d /%8d\n", x.MinAdjlen, x.MaxAdjlen)
	fmt.Fprintf(&b, " average network hdr offset: %12d\n\n", x.AvgNetoff)
	switch len(x.Tins) {
	case 0:
		return b.String()
	case 3:
		b.WriteString("                   Bulk  Best Effort        Voice\n")
	case 4:
		b.WriteString("                   Bulk  Best Effort        Video        Voice\n")
	default:
		b.WriteString("          ")
		for i := range x.Tins {
			fmt.Fprintf(&b, "        Tin %d", i)
		}
		b.WriteString("\n")
	}
	row := func(name string, cell func(t qdisc.CakeTinStats) string) {
		b.WriteString(name)
		for _, t := range x.Tins {
			fmt.Fprintf(&b, " %12s", cell(t))
		}
		b.WriteString("\n")
	}
	us := func(v uint32) string { return showTime(v) }
	n := func(v uint64) string { return strconv.FormatUint(v, 10) }
	row("  thresh  ", func(t qdisc.CakeTinStats) string { return showRate(t.ThresholdRate) })
	row("  target  ", func(t qdisc.CakeTinStats) string { return us(t.TargetUs) })
	row("  interval", func(t qdisc.CakeTinStats) string { return us(t.IntervalUs) })
	row("  pk_delay", func(t qdisc.CakeTinStats) string { return us(t.PeakDelayUs) })
	row("  av_delay", func(t qdisc.CakeTinStats) string { return us(t.AvgDelayUs) })
	row("  sp_delay", func(t qdisc.CakeTinStats) string { return us(t.BaseDelayUs) })
	row("  backlog ", func(t qdisc.CakeTinStats) string { return showSize(t.BacklogBytes) })
	row("  pkts    ", func(t qdisc.CakeTinStats) string { return n(uint64(t.SentPackets)) })
	row("  bytes   ", func(t qdisc.CakeTinStats) string { return n(t.SentBytes) })
	row("  way_inds", func(t qdisc.CakeTinStats) string { return n(uint64(t.WayIndirect)) })
	row("  way_miss", func(t qdisc.CakeTinStats) string { return n(uint64(t.WayMisses)) })
	row("  way_cols", func(t qdisc.CakeTinStats) string { return n(uint64(t.WayCollisions)) })
	row("  drops   ", func(t qdisc.CakeTinStats) string { return n(uint64(t.DroppedPackets)) })
	row("  marks   ", func(t qdisc.CakeTinStats) string { return n(uint64(t.ECNMarked)) })
	row("  ack_drop", func(t qdisc.CakeTinStats) string { return n(uint64(t.AcksDropped)) })
	row("  sp_flows", func(t qdisc.CakeTinStats) string { return n(uint64(t.SparseFlows)) })
	row("  bk_flows", func(t qdisc.CakeTinStats) string { return n(uint64(t.BulkFlows)) })
	row("  un_flows", func(t qdisc.CakeTinStats) string { return n(uint64(t.Unresponsive)) })
	row("  max_len ", func(t qdisc.CakeTinStats) string { return n(uint64(t.MaxSkblen)) })
	row("  quantum ", func(t qdisc.CakeTinStats) string { return n(uint64(t.FlowQuantum)) })
	b.WriteString("\n")
	return b.String()
}
