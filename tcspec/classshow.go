package tcspec

import (
	"fmt"
	"math"
	"strings"
	"time"

	"wanlab/qdisc"
)

// This file prints classes as `tc -s class show` prints them, and the
// options of htb's and prio's qdisc lines (tc_class.c's print_class,
// q_htb.c's htb_print_opt and htb_print_xstats, q_prio.c's
// prio_print_opt; the kernel's htb_dump, htb_dump_class and
// htb_dump_class_stats), as this machine's tc (iproute2 6.1) prints them
// for this kernel.

// ClassLine is one class as tc's class lines show it.
type ClassLine struct {
	// Kind is the kind of the qdisc the class belongs to (htb, prio,
	// netem, tbf).
	Kind string
	// ID is the class; Parent its parent, shown as "root" when Root.
	ID, Parent qdisc.ClassID
	Root       bool
	// Leaf is the handle of the qdisc on the class (0: none shown).
	Leaf qdisc.ClassID
	// HTB is an htb class's configuration as the kernel holds it, and
	// Level its level (0 for a leaf); nil for other kinds.
	HTB   *qdisc.HTBClass
	Level int
}

// HTBXStats are an htb class's own statistics (tc_htb_xstats).
type HTBXStats struct {
	Lends, Borrows, Giants uint64
	// Tokens and CTokens are the credit in the class's buckets.
	Tokens, CTokens time.Duration
}

// ShowClass returns the line `tc class show` prints for c, without the
// newline: "class htb 1:10 parent 1:1 leaf 10: prio 0 rate 1Mbit ceil
// 10Mbit burst 1600b cburst 1600b " (with a space at the end, as tc).
// An htb class's burst and cburst take the kernel's round trip: tc hands
// it ticks of credit (qdisc.HTBBuffer) and turns them back into bytes at
// the rate.
func ShowClass(c ClassLine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "class %s %v ", c.Kind, c.ID)
	if c.Root {
		b.WriteString("root ")
	} else {
		fmt.Fprintf(&b, "parent %v ", c.Parent)
	}
	if c.Leaf != 0 {
		fmt.Fprintf(&b, "leaf %x: ", c.Leaf.Major())
	}
	if h := c.HTB; h != nil {
		if c.Level == 0 {
			fmt.Fprintf(&b, "prio %d ", min(h.Prio, 7))
		}
		ceil := h.Ceil
		if ceil == 0 {
			ceil = h.Rate
		}
		b.WriteString("rate " + showRate(uint64(h.Rate)) + " ")
		if o := uint16(h.Overhead); o != 0 {
			fmt.Fprintf(&b, "overhead %d ", o)
		}
		b.WriteString("ceil " + showRate(uint64(ceil)) + " ")
		if h.Link == qdisc.LinkATM {
			b.WriteString("linklayer atm ")
		}
		burst, cburst := h.Burst, h.CBurst
		if burst == 0 {
			burst = qdisc.HTBDefaultBurst(h.Rate, h.MTU)
		}
		if cburst == 0 {
			cburst = qdisc.HTBDefaultBurst(ceil, h.MTU)
		}
		buffer, _ := qdisc.HTBBuffer(h.Rate, burst)
		cbuffer, _ := qdisc.HTBBuffer(ceil, cburst)
		b.WriteString("burst " + showSize(xmitSize(uint64(h.Rate), nsToTicks(int64(buffer)))) + " ")
		b.WriteString("cburst " + showSize(xmitSize(uint64(ceil), nsToTicks(int64(cbuffer)))) + " ")
	}
	return b.String()
}

// ShowClassStats returns the statistics lines `tc -s class show` prints
// under a class, each ending in a newline: the Sent and backlog lines of
// st, and for an htb class (x not nil) its lends, borrows, giants and
// tokens, the tokens in psched ticks of 64 ns, clamped to 32 bits as the
// kernel dumps them.
func ShowClassStats(st qdisc.Stats, x *HTBXStats) string {
	s := ShowStats(st)
	if x != nil {
		s += fmt.Sprintf(" lended: %d borrowed: %d giants: %d\n tokens: %d ctokens: %d\n",
			uint32(x.Lends), uint32(x.Borrows), uint32(x.Giants), ticks32(x.Tokens), ticks32(x.CTokens))
	}
	return s
}

// ticks32 is PSCHED_NS2TICKS clamped to an int32, as htb_dump_class_stats
// dumps tokens.
func ticks32(d time.Duration) int32 {
	t := int64(d) >> pschedShift
	return int32(max(min(t, math.MaxInt32), math.MinInt32))
}

// showHTB prints htb's qdisc options as htb_print_opt: r2q, the default
// class in hex, the packets that went to the direct queue, and
// direct_qlen (the device's txqueuelen when none was given).
func showHTB(c qdisc.HTBConfig, at Placement, env *qdisc.Env) string {
	r2q := c.R2Q
	if r2q == 0 {
		r2q = 10
	}
	dflt := "0"
	if c.Default != 0 {
		dflt = fmt.Sprintf("%#x", c.Default)
	}
	dq := c.DirectQLen
	if dq == 0 {
		dq = env.QueueLen()
	}
	return fmt.Sprintf("r2q %d default %s direct_packets_stat %d direct_qlen %d", r2q, dflt, uint32(at.DirectPackets), uint32(dq))
}

// showPrio prints prio's options as prio_print_opt: its bands and
// priomap.
func showPrio(c qdisc.PrioConfig) string {
	bands := c.Bands
	if bands == 0 {
		bands = 3
	}
	m := c.Priomap
	if m == nil {
		m = qdisc.DefaultPriomap()
	}
	return fmt.Sprintf("bands %d priomap %s", bands, strings.Trim(fmt.Sprint(m), "[]"))
}

// ClassRecord is a class as wanlab's snapshots and results files record
// it: its place and options as tc prints them ("1:10", "root", "10:",
// "htb rate 1Mbit ..."), its level, and its counters.
type ClassRecord struct {
	Kind, ClassID, Parent, Leaf, Options string
	Level                                int
	Stats                                qdisc.Stats
	Lends, Borrows                       uint64
	Tokens, CTokens                      time.Duration
}

// ShowClassRecord prints c as `tc -s class show` does (ShowClass, then
// ShowClassStats for an htb class or a prio band, whose counters tc
// shows; netem's and tbf's class have none), ending in an empty line.
func ShowClassRecord(c ClassRecord) string {
	line := ClassLine{Kind: c.Kind, Root: c.Parent == "root"}
	line.ID, _ = ParseClassID(c.ClassID)
	if !line.Root {
		line.Parent, _ = ParseClassID(c.Parent)
	}
	if c.Leaf != "" {
		line.Leaf, _ = ParseClassID(c.Leaf)
	}
	s := ""
	switch c.Kind {
	case "htb":
		if h, err := ParseHTBClass(c.Options, Options{}); err == nil {
			line.HTB, line.Level = &h, c.Level
		}
		s = ShowClass(line) + "\n" + ShowClassStats(c.Stats, &HTBXStats{Lends: c.Lends, Borrows: c.Borrows, Tokens: c.Tokens, CTokens: c.CTokens})
	case "prio":
		s = ShowClass(line) + "\n" + ShowClassStats(c.Stats, nil)
	default:
		s = ShowClass(line) + "\n"
	}
	return s + "\n"
}
