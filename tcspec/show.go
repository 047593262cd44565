package tcspec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"wanlab/qdisc"
)

// This file prints a qdisc as `tc -s qdisc show` prints it on Linux, so that
// scripts written around tc's output read wanlab's the same way. What tc
// prints is not what it was given: tc sends the options to the kernel,
// which stores them in its own units (psched ticks of 64 ns, CoDel's
// 1024 ns, jiffies, 32-bit probabilities, rates turned into ns per byte by
// a multiply and a shift) and dumps them back, and tc prints the dump with
// its own rounding (sprint_time's three significant digits, sprint_size's
// "Kb" within 16 bytes). Each value below takes that round trip: iproute2's
// tc/q_*.c print functions and lib/utils.c, and the kernel's *_dump
// functions in net/sched, as of Linux 6.1 and iproute2 6.1.

// Placement says where a qdisc sits, as tc prints it.
type Placement struct {
	// Handle is the qdisc's own handle as tc prints it ("1:").
	Handle string
	// Parent is "root" or the parent class ("1:1").
	Parent string
	// RootRefcnt is what tc prints after "refcnt" for a root qdisc: one
	// more than the device's transmit queues. 0 means 2, a single-queue
	// device such as a TUN or most Ethernet cards.
	RootRefcnt int
	// DirectPackets is htb's direct_packets_stat, the packets its direct
	// queue took, which tc prints among its options.
	DirectPackets uint64
}

// ShowQdisc returns the qdisc line `tc qdisc show` prints for s, without
// the newline: "qdisc tbf 1: root refcnt 2 rate 10Mbit burst 32Kb lat 50ms "
// (tc leaves a space after most options). env supplies the device's
// properties that defaults depend on (psched_mtu, txqueuelen, HZ); nil
// means an Ethernet device with MTU 1500 at HZ 250. A Spec that is not one
// of package qdisc's configuration values prints its kind alone.
func ShowQdisc(s qdisc.Spec, at Placement, env *qdisc.Env) string {
	var b strings.Builder
	fmt.Fprintf(&b, "qdisc %s %s ", s.Kind(), at.Handle)
	if at.Parent == "" || at.Parent == "root" {
		refcnt := at.RootRefcnt
		if refcnt == 0 {
			refcnt = 2
		}
		fmt.Fprintf(&b, "root refcnt %d ", refcnt)
	} else {
		fmt.Fprintf(&b, "parent %s ", at.Parent)
	}
	b.WriteString(showOptions(s, at, env))
	return b.String()
}

// ShowStats returns the two statistics lines `tc -s qdisc show` prints
// under a qdisc, each ending in a newline:
//
//	Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
//	backlog 0b 0p requeues 0
//
// The kernel keeps drops, overlimits, requeues, backlog and qlen in 32
// bits (struct gnet_stats_queue), so they wrap as tc shows them.
func ShowStats(st qdisc.Stats) string {
	return fmt.Sprintf(" Sent %d bytes %d pkt (dropped %d, overlimits %d requeues %d) \n backlog %s %dp requeues %d\n",
		st.Bytes, st.Packets, uint32(st.Drops), uint32(st.Overlimits), uint32(st.Requeues),
		showSize(uint32(st.Backlog)), uint32(st.Qlen), uint32(st.Requeues))
}

// showOptions prints a configuration's options as its kind's print_opt
// does.
func showOptions(s qdisc.Spec, at Placement, env *qdisc.Env) string {
	switch c := s.(type) {
	case qdisc.HTBConfig:
		return showHTB(c, at, env)
	case qdisc.PrioConfig:
		return showPrio(c)
	case qdisc.NetemConfig:
		return showNetem(c)
	case qdisc.TBFConfig:
		return showTBF(c)
	case qdisc.FifoConfig:
		return showFifo(c, env)
	case qdisc.PfifoFastConfig:
		// pfifo_fast is printed by prio's printer: three bands and the
		// fixed priomap (sch_generic.c's sch_default_prio2band).
		return "bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1"
	case qdisc.CoDelConfig:
		return showCoDel(c)
	case qdisc.FQCoDelConfig:
		return showFQCoDel(c, env)
	case qdisc.PIEConfig:
		return showPIE(c, env)
	case qdisc.REDConfig:
		return showRED(c)
	case qdisc.SFQConfig:
		return showSFQ(c, env)
	case qdisc.DualPI2Config:
		return showDualPI2(c, env)
	case qdisc.CakeConfig:
		return showCake(c)
	case qdisc.FQPIEConfig:
		return showFQPIE(c, env)
	}
	return ""
}

// cG prints v as C's printf("%.*g", prec, v): prec significant digits,
// trailing zeros dropped, an exponent below 1e-4 or from 10^prec on.
// strconv's 'g' follows the same rules.
func cG(v float64, prec int) string { return strconv.FormatFloat(v, 'g', prec, 64) }

// showTime is iproute2's sprint_time of a count of µs: "%.3gs", "%.3gms"
// or "%uus".
func showTime(us uint32) string {
	switch t := float64(us); {
	case t >= 1e6:
		return cG(t/1e6, 3) + "s"
	case t >= 1e3:
		return cG(t/1e3, 3) + "ms"
	}
	return strconv.FormatUint(uint64(us), 10) + "us"
}

// showTime64 is iproute2's sprint_time64 of a count of ns.
func showTime64(ns int64) string {
	switch t := float64(ns); {
	case ns >= 1e9:
		return cG(t/1e9, 3) + "s"
	case ns >= 1e6:
		return cG(t/1e6, 3) + "ms"
	case ns >= 1e3:
		return cG(t/1e3, 3) + "us"
	}
	return strconv.FormatInt(ns, 10) + "ns"
}

// showSize is iproute2's sprint_size: "NMb" or "NKb" when the count is
// within 1024 or 16 bytes of a whole number of them, else "Nb".
func showSize(n uint32) string {
	const kilo, mega = 1024, 1024 * 1024
	t := float64(n)
	if n >= mega && math.Abs(mega*math.RoundToEven(t/mega)-t) < 1024 {
		return cG(math.RoundToEven(t/mega), 6) + "Mb"
	}
	if n >= kilo && math.Abs(kilo*math.RoundToEven(t/kilo)-t) < 16 {
		return cG(math.RoundToEven(t/kilo), 6) + "Kb"
	}
	return strconv.FormatUint(uint64(n), 10) + "b"
}

// showRate is iproute2's print_rate of a rate in bytes/s, in decimal units:
// it divides by 1000 while the value is exact or still at least a million.
func showRate(bytesPerSec uint64) string {
	units := []string{"", "K", "M", "G", "T"}
	r := bytesPerSec << 3
	i := 0
	for ; i < len(units)-1; i++ {
		if r < 1000 || (r%1000 != 0 && r < 1000*1000) {
			break
		}
		r /= 1000
	}
	return strconv.FormatUint(r, 10) + units[i] + "bit"
}

// showPercent is netem's print of a probability the kernel holds as a
// fraction of 2^32-1: tc's set_percent rounds p·(2^32-1) to an integer and
// the printer shows it as "%g%%".
func showPercent(p float64) string {
	return cG(100*float64(percentU32(p))/math.MaxUint32, 6) + "%"
}

// percentU32 is tc's set_percent: rint(p·UINT32_MAX).
func percentU32(p float64) uint32 {
	v := math.RoundToEven(p * math.MaxUint32)
	switch {
	case v <= 0:
		return 0
	case v >= math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(v)
}

// Psched ticks (include/net/pkt_sched.h): the kernel dumps times in units
// of 64 ns, and tc (tc_core.c, from /proc/net/psched, which every kernel
// since 2.6.31 fills the same way) reads 15.625 of them per µs.
const (
	pschedShift = 6
	ticksPerUs  = 15.625
)

// nsToTicks is PSCHED_NS2TICKS truncated to the u32 the dump carries.
func nsToTicks(ns int64) uint32 {
	t := uint64(ns) >> pschedShift
	if t > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(t)
}

// tickToUs is tc_core_tick2time.
func tickToUs(ticks uint32) uint32 { return uint32(float64(ticks) / ticksPerUs) }

// showTicks is tc's sprint_ticks.
func showTicks(ticks uint32) string { return showTime(tickToUs(ticks)) }

// durationUs is a duration as the µs count tc's get_time hands the kernel.
func durationUs(d time.Duration) uint32 {
	us := d / time.Microsecond
	if us > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(us)
}

func showNetem(c qdisc.NetemConfig) string {
	var b strings.Builder
	limit := c.Limit
	if limit == 0 {
		limit = 1000
	}
	fmt.Fprintf(&b, "limit %d", limit)
	if lat := nsToTicks(int64(c.Delay)); lat != 0 {
		b.WriteString(" delay " + showTicks(lat))
		jit := nsToTicks(int64(c.Jitter))
		if jit != 0 {
			b.WriteString("  " + showTicks(jit))
		}
		if jit != 0 && percentU32(c.DelayCorr) != 0 {
			b.WriteString(" " + showPercent(c.DelayCorr))
		}
	}
	corr := func(p float64) {
		if percentU32(p) != 0 {
			b.WriteString(" " + showPercent(p))
		}
	}
	switch l := c.Loss; l.Kind {
	case qdisc.LossRandom:
		if percentU32(l.P) != 0 {
			b.WriteString(" loss " + showPercent(l.P))
			corr(l.Corr)
		}
	case qdisc.LossState:
		fmt.Fprintf(&b, " loss state p13 %s p31 %s p32 %s p23 %s p14 %s",
			showPercent(l.P13), showPercent(l.P31), showPercent(l.P32), showPercent(l.P23), showPercent(l.P14))
	case qdisc.LossGEModel:
		fmt.Fprintf(&b, " loss gemodel p %s r %s 1-h %s 1-k %s",
			showPercent(l.GEP), showPercent(l.GER), showPercent(l.OneMinusH), showPercent(l.OneMinusK))
	}
	if percentU32(c.Duplicate) != 0 {
		b.WriteString(" duplicate " + showPercent(c.Duplicate))
		corr(c.DuplicateCorr)
	}
	if percentU32(c.Reorder) != 0 {
		b.WriteString(" reorder " + showPercent(c.Reorder))
		corr(c.ReorderCorr)
	}
	if percentU32(c.Corrupt) != 0 {
		b.WriteString(" corrupt " + showPercent(c.Corrupt))
		corr(c.CorruptCorr)
	}
	if c.Rate != 0 {
		b.WriteString(" rate " + showRate(uint64(c.Rate)))
		if c.PacketOverhead != 0 {
			fmt.Fprintf(&b, " packetoverhead %d", c.PacketOverhead)
		}
		if c.CellSize != 0 {
			fmt.Fprintf(&b, " cellsize %d", c.CellSize)
		}
		if c.CellOverhead != 0 {
			fmt.Fprintf(&b, " celloverhead %d", c.CellOverhead)
		}
	}
	if s := c.Slot; s.Min != 0 || s.Max != 0 || s.DistJitter != 0 || s.DistDelay != 0 {
		if s.DistJitter > 0 {
			b.WriteString(" slot distribution " + showTime64(int64(s.DistDelay)) + " " + showTime64(int64(s.DistJitter)))
		} else {
			b.WriteString(" slot " + showTime64(int64(s.Min)) + " " + showTime64(int64(s.Max)))
		}
		if s.Packets != 0 {
			fmt.Fprintf(&b, " packets %d", s.Packets)
		}
		if s.Bytes != 0 {
			fmt.Fprintf(&b, " bytes %d", s.Bytes)
		}
	}
	if c.ECN {
		b.WriteString(" ecn ")
	}
	if c.Gap != 0 {
		fmt.Fprintf(&b, " gap %d", c.Gap)
	}
	return b.String()
}

// pschedRate is the kernel's psched_ratecfg: len·mult >> shift ns per
// packet, with the largest mult that keeps the product in 64 bits
// (psched_ratecfg_precompute), and psched_l2t_ns's length adjustments.
type pschedRate struct {
	mult     uint64
	shift    uint
	overhead int
	mpu      int
	atm      bool
}

func newPschedRate(r qdisc.Rate, overhead, mpu int, link qdisc.LinkLayer) pschedRate {
	p := pschedRate{overhead: overhead, mpu: mpu, atm: link == qdisc.LinkATM}
	if r == 0 {
		return p
	}
	factor := uint64(1e9)
	for {
		p.mult = factor / uint64(r)
		if p.mult&(1<<31) != 0 || factor&(1<<63) != 0 {
			break
		}
		factor <<= 1
		p.shift++
	}
	return p
}

// l2tNs is psched_l2t_ns: the time in ns that n bytes cost.
func (p pschedRate) l2tNs(n int) int64 {
	n += p.overhead
	if n < p.mpu {
		n = p.mpu
	}
	if p.atm {
		n = (n + 47) / 48 * 53
	}
	return int64((uint64(n) * p.mult) >> p.shift)
}

// xmitSize is tc_calc_xmitsize: the bytes that ticks of credit buy at rate.
func xmitSize(rate uint64, ticks uint32) uint32 {
	return uint32(float64(rate) * float64(tickToUs(ticks)) / 1e6)
}

func showTBF(c qdisc.TBFConfig) string {
	var b strings.Builder
	rate := uint64(c.Rate)
	b.WriteString("rate " + showRate(rate) + " ")
	// The kernel turns burst into ns of credit (TCA_TBF_BURST through
	// psched_l2t_ns, so overhead, mpu and the link layer count) and dumps
	// it in ticks; tc turns the ticks back into bytes at the rate.
	buffer := nsToTicks(newPschedRate(c.Rate, c.Overhead, c.MPU, c.Link).l2tNs(c.Burst))
	b.WriteString("burst " + showSize(xmitSize(rate, buffer)) + " ")
	var mtu uint32
	peak := uint64(c.PeakRate)
	if peak != 0 {
		b.WriteString("peakrate " + showRate(peak) + " ")
		mtu = nsToTicks(newPschedRate(c.PeakRate, c.Overhead, c.MPU, c.Link).l2tNs(c.MTU))
		if mtu != 0 || c.MPU != 0 {
			b.WriteString("minburst " + showSize(xmitSize(peak, mtu)) + " ")
		}
	}
	limit := uint32(c.Limit)
	latency := 1e6*(float64(limit)/float64(rate)) - float64(tickToUs(buffer))
	if peak != 0 {
		if lat2 := 1e6*(float64(limit)/float64(peak)) - float64(tickToUs(mtu)); lat2 > latency {
			latency = lat2
		}
	}
	if latency >= 0 {
		b.WriteString("lat " + showTime(uint32(latency)) + " ")
	} else {
		b.WriteString("limit " + showSize(limit) + " ")
	}
	if o := uint16(c.Overhead); o != 0 {
		fmt.Fprintf(&b, "overhead %d ", o)
	}
	if c.Link == qdisc.LinkATM {
		b.WriteString("linklayer atm ")
	}
	return b.String()
}

func showFifo(c qdisc.FifoConfig, env *qdisc.Env) string {
	limit := c.Limit
	bytes := c.Kind() == "bfifo"
	if limit == 0 {
		// fifo_init: txqueuelen packets, times psched_mtu for bfifo.
		limit = 1000
		if env != nil && env.TxQueueLen != 0 {
			limit = env.TxQueueLen
		}
		if bytes {
			limit *= env.PschedMTU()
		}
	}
	if bytes {
		return "limit " + showSize(uint32(limit))
	}
	return fmt.Sprintf("limit %dp", uint32(limit))
}

// CoDel's time unit (include/net/codel.h): ns >> 10.
const codelShift = 10

// codelUs is the µs count the kernel dumps for a CoDel time given in µs:
// codel_time_to_us of (us·1000) >> CODEL_SHIFT.
func codelUs(us uint32) uint32 {
	t := uint64(us) * 1000 >> codelShift
	return uint32((t << codelShift) / 1000)
}

// codelTimes prints target, ce_threshold and interval as codel and
// fq_codel do (ce_threshold only when set), the defaults filled in.
func codelTimes(b *strings.Builder, target, ceThreshold, interval time.Duration) {
	b.WriteString("target " + showTime(codelUs(durationUs(target))) + " ")
	if ceThreshold != 0 {
		b.WriteString("ce_threshold " + showTime(codelUs(durationUs(ceThreshold))) + " ")
	}
	b.WriteString("interval " + showTime(codelUs(durationUs(interval))) + " ")
}

func showCoDel(c qdisc.CoDelConfig) string {
	var b strings.Builder
	c = c.WithDefaults()
	fmt.Fprintf(&b, "limit %dp ", uint32(c.Limit))
	codelTimes(&b, c.Target, c.CEThreshold, c.Interval)
	if c.ECN {
		b.WriteString("ecn ")
	}
	return b.String()
}

func showFQCoDel(c qdisc.FQCoDelConfig, env *qdisc.Env) string {
	var b strings.Builder
	c = c.WithDefaults()
	memory := min(c.MemoryLimit, 1<<31)
	quantum := c.Quantum
	if quantum == 0 {
		quantum = env.PschedMTU()
	}
	quantum = max(quantum, qdisc.MinFQCoDelQuantum)
	fmt.Fprintf(&b, "limit %dp flows %d quantum %d ", uint32(c.Limit), uint32(c.Flows), uint32(quantum))
	codelTimes(&b, c.Target, c.CEThreshold, c.Interval)
	b.WriteString("memory_limit " + showSize(uint32(memory)) + " ")
	if c.ECN {
		b.WriteString("ecn ")
	}
	fmt.Fprintf(&b, "drop_batch %d ", uint32(c.DropBatch))
	return b.String()
}

// pieShowTimes returns target and tupdate in µs as pie_dump and
// fq_pie_dump hand them to tc: the target, held in psched ticks, through a
// u32 of ns ((u32)PSCHED_TICKS2NS(target) / NSEC_PER_USEC, which wraps
// above 4.29 s); tupdate, held in jiffies (usecs_to_jiffies rounds up),
// back in µs (jiffies_to_usecs is exact for the HZ values Linux has).
func pieShowTimes(target, tupdate time.Duration, env *qdisc.Env) (uint32, uint32) {
	ticks := uint64(durationUs(target)) * 1000 >> pschedShift
	targetUs := uint32(ticks<<pschedShift) / 1000
	hz := uint64(250)
	if env != nil && env.HZ != 0 {
		hz = uint64(env.HZ)
	}
	usPerJiffy := 1000000 / hz
	jiffies := (uint64(durationUs(tupdate)) + usPerJiffy - 1) / usPerJiffy
	return targetUs, uint32(jiffies * usPerJiffy)
}

func showPIE(c qdisc.PIEConfig, env *qdisc.Env) string {
	var b strings.Builder
	c = c.WithDefaults()
	targetUs, tupdateUs := pieShowTimes(c.Target, c.TUpdate, env)
	fmt.Fprintf(&b, "limit %dp target %s tupdate %s alpha %d beta %d ",
		uint32(c.Limit), showTime(targetUs), showTime(tupdateUs), uint32(c.Alpha), uint32(c.Beta))
	if c.ECN {
		b.WriteString("ecn ")
	}
	if c.Bytemode {
		b.WriteString("bytemode ")
	}
	if c.DQRateEstimator {
		b.WriteString("dq_rate_estimator ")
	}
	return b.String()
}
