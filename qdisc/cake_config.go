package qdisc

import (
	"fmt"
	"math"
	"time"

	"wanlab/clock"
)

// CakeDiffserv is cake's tin layout (the kernel's CAKE_DIFFSERV_* values,
// in their order: the zero value is diffserv3, cake's default).
type CakeDiffserv uint8

// Tin layouts.
const (
	CakeDiffserv3  CakeDiffserv = iota // 3 tins: bulk (CS1, LE), best effort, voice (CS7, CS6, EF, VA, TOS4)
	CakeDiffserv4                      // 4 tins: bulk, best effort, video, voice
	CakeDiffserv8                      // 8 tins, by diffserv8's table
	CakeBestEffort                     // one tin
	CakePrecedence                     // 8 tins by the IP precedence (the top 3 DSCP bits)
	cakeDiffservCount
)

var cakeDiffservNames = [...]string{
	CakeDiffserv3:  "diffserv3",
	CakeDiffserv4:  "diffserv4",
	CakeDiffserv8:  "diffserv8",
	CakeBestEffort: "besteffort",
	CakePrecedence: "precedence",
}

// String returns tc's name of the layout.
func (d CakeDiffserv) String() string {
	if d < cakeDiffservCount {
		return cakeDiffservNames[d]
	}
	return "unknown"
}

// CakeFlowMode is cake's flow isolation. The zero value is
// triple-isolate, cake's default; the others are tc's keywords.
type CakeFlowMode uint8

// Flow isolation modes.
const (
	CakeTripleIsolate CakeFlowMode = iota // fair among source hosts, destination hosts and flows
	CakeFlowBlind                         // one queue per tin
	CakeSrcHost                           // a queue per source address
	CakeDstHost                           // a queue per destination address
	CakeHosts                             // a queue per source-destination pair
	CakeFlows                             // a queue per 5-tuple
	CakeDualSrcHost                       // per flow, fair among source hosts first
	CakeDualDstHost                       // per flow, fair among destination hosts first
	cakeFlowModeCount
)

// The kernel's CAKE_FLOW_* bits: bit 0 the source host, bit 1 the
// destination host, bit 2 the flow; the dual modes are a host bit with
// the flow bit, triple both hosts with it.
const (
	cakeFlowNone    = 0
	cakeFlowSrcIP   = 1
	cakeFlowDstIP   = 2
	cakeFlowHosts   = 3
	cakeFlowFlows   = 4
	cakeFlowDualSrc = 5
	cakeFlowDualDst = 6
	cakeFlowTriple  = 7
)

var cakeFlowModeKernel = [...]uint8{
	CakeTripleIsolate: cakeFlowTriple,
	CakeFlowBlind:     cakeFlowNone,
	CakeSrcHost:       cakeFlowSrcIP,
	CakeDstHost:       cakeFlowDstIP,
	CakeHosts:         cakeFlowHosts,
	CakeFlows:         cakeFlowFlows,
	CakeDualSrcHost:   cakeFlowDualSrc,
	CakeDualDstHost:   cakeFlowDualDst,
}

var cakeFlowModeNames = [...]string{
	CakeTripleIsolate: "triple-isolate",
	CakeFlowBlind:     "flowblind",
	CakeSrcHost:       "srchost",
	CakeDstHost:       "dsthost",
	CakeHosts:         "hosts",
	CakeFlows:         "flows",
	CakeDualSrcHost:   "dual-srchost",
	CakeDualDstHost:   "dual-dsthost",
}

// String returns tc's name of the mode.
func (m CakeFlowMode) String() string {
	if m < cakeFlowModeCount {
		return cakeFlowModeNames[m]
	}
	return "unknown"
}

// CakeATM is cake's link-layer cell compensation (CAKE_ATM_*).
type CakeATM uint8

// Link-layer compensations.
const (
	CakeNoATM    CakeATM = iota // none
	CakeATMCells                // atm: ceil(len/48) cells of 53 bytes
	CakePTM                     // ptm: one byte in 65 (64b/65b), len + ceil(len/64)
)

// CakeAckFilter is cake's ACK filter (CAKE_ACK_*).
type CakeAckFilter uint8

// ACK filter modes.
const (
	CakeNoAckFilter CakeAckFilter = iota
	CakeAckFilterOn
	CakeAckFilterAggressive
)

// Limits of cake's options, as tc's cake_parse_opt enforces them on
// "overhead N" and "mpu N". The framing keywords add to the overhead
// without a check, up to what the kernel's 16-bit rate_overhead holds
// (MaxCakeOverheadSum).
const (
	MinCakeOverhead    = -64
	MaxCakeOverhead    = 256
	MaxCakeOverheadSum = math.MaxInt16
	MaxCakeMPU         = 256
)

// CakeConfig configures cake (Linux's sch_cake, as tc's q_cake sets it
// up). The zero value is cake's default: unlimited, diffserv3,
// triple-isolate, rtt 100ms, raw overhead, split-gso, no ACK filter.
type CakeConfig struct {
	// Bandwidth is the shaper's rate in bytes a second; 0 is unlimited.
	Bandwidth Rate
	// AutorateIngress asks cake to estimate the rate from the traffic it
	// receives. wanlab does not build it (see checkCakeConfig).
	AutorateIngress bool
	// RTT is CoDel's interval (tc's rtt), 100ms if zero; Target is CoDel's
	// target, 5ms if zero. tc sets Target to RTT/20 when given rtt, and
	// both from a preset (datacentre .. interplanetary). The kernel keeps
	// both in whole microseconds.
	RTT, Target time.Duration
	// Diffserv is the tin layout.
	Diffserv CakeDiffserv
	// FlowMode is the flow isolation.
	FlowMode CakeFlowMode
	// NAT asks cake to look flows up in connection tracking: wanlab's
	// router has none, so it is refused.
	NAT bool
	// Wash clears the DSCP of every packet after cake has read it.
	Wash bool
	// NoSplitGSO keeps GSO super-packets whole (cake splits them by
	// default).
	NoSplitGSO bool
	// AckFilter drops pure ACKs that a later ACK of their flow makes
	// redundant.
	AckFilter CakeAckFilter
	// Memlimit caps the memory (skb truesize) the queues may hold; 0 lets
	// cake size it from the rate (cake_reconfigure).
	Memlimit uint32
	// Fwmark is the mask of the firewall mark that selects a tin. wanlab's
	// packets carry no mark (there is no netfilter), so every packet's
	// masked mark is 0 and the tin comes from its DSCP, as on a host
	// whose firewall marks nothing.
	Fwmark uint32
	// ATM is the link-layer cell compensation.
	ATM CakeATM
	// Overhead is added to every packet's length; with Compensate it
	// replaces the device's own header (the adjusted length is the
	// network length plus Overhead), without it (tc's raw, the default)
	// it is added to the length the device counts.
	Overhead int
	// Compensate is the kernel's CAKE_FLAG_OVERHEAD: set by tc's
	// overhead keyword and its framing keywords, cleared by raw.
	Compensate bool
	// MPU is the smallest adjusted length (before the cell compensation).
	MPU int
	// Ingress makes packets cake drops count against the shaper, as
	// traffic that has already crossed the bottleneck does.
	Ingress bool
}

// Kind returns "cake".
func (CakeConfig) Kind() string { return "cake" }

// Defaults of cake_init (its interval and target in microseconds).
const (
	DefaultCakeRTT    = 100 * time.Millisecond
	DefaultCakeTarget = 5 * time.Millisecond
)

// WithDefaults returns c with the kernel's defaults for zero fields.
func (c CakeConfig) WithDefaults() CakeConfig {
	if c.RTT == 0 {
		c.RTT = DefaultCakeRTT
	}
	if c.Target == 0 {
		c.Target = DefaultCakeTarget
	}
	return c
}

// checkCakeConfig refuses what the kernel refuses, and what wanlab cannot
// do: autorate-ingress (it estimates the rate of the traffic received,
// which wanlab's router does not measure) and nat (the router has no
// connection tracking to look the flows up in).
func checkCakeConfig(c CakeConfig) error {
	switch {
	case c.AutorateIngress:
		return fmt.Errorf("cake: autorate-ingress estimates the link's rate from the traffic received, which wanlab does not do; give the rate with bandwidth RATE")
	case c.NAT:
		return fmt.Errorf("cake: nat looks flows up in the kernel's connection tracking, which wanlab's router does not have; remove nat (nonat is the default)")
	case c.Diffserv >= cakeDiffservCount:
		return fmt.Errorf("cake: unknown diffserv mode %d; use diffserv3, diffserv4, diffserv8, besteffort or precedence", c.Diffserv)
	case c.FlowMode >= cakeFlowModeCount:
		return fmt.Errorf("cake: unknown flow mode %d; use flowblind, srchost, dsthost, hosts, flows, dual-srchost, dual-dsthost or triple-isolate", c.FlowMode)
	case c.ATM > CakePTM:
		return fmt.Errorf("cake: unknown atm mode %d; use noatm, atm or ptm", c.ATM)
	case c.AckFilter > CakeAckFilterAggressive:
		return fmt.Errorf("cake: unknown ack filter mode %d; use no-ack-filter, ack-filter or ack-filter-aggressive", c.AckFilter)
	case c.Overhead < MinCakeOverhead || c.Overhead > MaxCakeOverheadSum:
		return fmt.Errorf("cake: overhead %d is outside %d..%d: tc takes overhead N from %d to %d, and its framing keywords add to it up to what the kernel's 16-bit rate_overhead holds", c.Overhead, MinCakeOverhead, MaxCakeOverheadSum, MinCakeOverhead, MaxCakeOverhead)
	case c.MPU < 0 || c.MPU > MaxCakeMPU:
		return fmt.Errorf("cake: mpu %d is outside 0..%d, the range tc allows", c.MPU, MaxCakeMPU)
	case c.RTT < 0 || c.Target < 0:
		return fmt.Errorf("cake: negative rtt or target; give a time such as rtt 100ms")
	case c.RTT/time.Microsecond > math.MaxUint32 || c.Target/time.Microsecond > math.MaxUint32:
		return fmt.Errorf("cake: rtt or target above %d µs, the kernel's 32-bit microseconds; give a shorter time", uint32(math.MaxUint32))
	}
	return nil
}

// The kernel's DSCP-to-tin tables (sch_cake.c), indexed by DSCP. Each
// layout names its tins from the lowest priority up except diffserv3 and
// diffserv4, whose tin 0 is best effort and tin 1 bulk (their dump order
// is bulk_order).
var (
	cakePrecedenceTable = [64]uint8{
		0, 0, 0, 0, 0, 0, 0, 0,
		1, 1, 1, 1, 1, 1, 1, 1,
		2, 2, 2, 2, 2, 2, 2, 2,
		3, 3, 3, 3, 3, 3, 3, 3,
		4, 4, 4, 4, 4, 4, 4, 4,
		5, 5, 5, 5, 5, 5, 5, 5,
		6, 6, 6, 6, 6, 6, 6, 6,
		7, 7, 7, 7, 7, 7, 7, 7,
	}
	cakeDiffserv8Table = [64]uint8{
		2, 0, 1, 2, 4, 2, 2, 2,
		1, 2, 1, 2, 1, 2, 1, 2,
		5, 2, 4, 2, 4, 2, 4, 2,
		3, 2, 3, 2, 3, 2, 3, 2,
		6, 2, 3, 2, 3, 2, 3, 2,
		6, 2, 2, 2, 6, 2, 6, 2,
		7, 2, 2, 2, 2, 2, 2, 2,
		7, 2, 2, 2, 2, 2, 2, 2,
	}
	cakeDiffserv4Table = [64]uint8{
		0, 1, 0, 0, 2, 0, 0, 0,
		1, 0, 0, 0, 0, 0, 0, 0,
		2, 0, 2, 0, 2, 0, 2, 0,
		2, 0, 2, 0, 2, 0, 2, 0,
		3, 0, 2, 0, 2, 0, 2, 0,
		3, 0, 0, 0, 3, 0, 3, 0,
		3, 0, 0, 0, 0, 0, 0, 0,
		3, 0, 0, 0, 0, 0, 0, 0,
	}
	cakeDiffserv3Table = [64]uint8{
		0, 1, 0, 0, 2, 0, 0, 0,
		1, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 2, 0, 2, 0,
		2, 0, 0, 0, 0, 0, 0, 0,
		2, 0, 0, 0, 0, 0, 0, 0,
	}
	cakeBestEffortTable [64]uint8

	cakeNormalOrder = [cakeMaxTins]uint8{0, 1, 2, 3, 4, 5, 6, 7}
	cakeBulkOrder   = [cakeMaxTins]uint8{1, 0, 2, 3}
)

// setRate is cake_set_rate: the tin's time per byte as a multiply and a
// shift (rate_ns >> rate_shft ns a byte, rate_ns kept below 2^34), its flow
// quantum, and COBALT's parameters: the target raised to 1.5 MTU times,
// the interval to the RTT plus what the target was raised by (at least
// twice the target), and the MTU's serialisation time.
func (b *cakeTin) setRate(rate uint64, mtu uint32, targetNs, rttNs uint64) {
	const minRate = 64
	var rateNs uint64
	var shift uint8
	b.flowQuantum = 1514
	if rate != 0 {
		b.flowQuantum = uint16(max(min(rate>>12, 1514), 300))
		shift = 34
		rateNs = (uint64(time.Second) << shift) / max(minRate, rate)
		for rateNs>>34 != 0 {
			rateNs >>= 1
			shift--
		}
	}
	b.rateBps, b.rateNs, b.rateShft = rate, rateNs, shift
	byteTargetNs := (uint64(mtu) * rateNs) >> shift
	b.cp.target = max(byteTargetNs*3/2, targetNs)
	b.cp.interval = max(rttNs+b.cp.target-targetNs, b.cp.target*2)
	b.cp.mtuTime = byteTargetNs
	b.cp.pInc = 1 << 24 // 1/256
	b.cp.pDec = 1 << 20 // 1/4096
}

// reconfigure is cake_reconfigure with the cake_config_* functions: the
// tins' thresholds and quanta, the global shaper's rate (tin 0's), and the
// memory limit.
func (q *Cake) reconfigure(now clock.Time) {
	mtu := uint32(q.env.PschedMTU())
	rate := uint64(q.cfg.Bandwidth)
	target := uint64(q.targetUs) * 1000
	rtt := uint64(q.intervalUs) * 1000
	switch q.cfg.Diffserv {
	case CakeBestEffort:
		q.tinCnt, q.tinIndex, q.tinOrder = 1, &cakeBestEffortTable, &cakeNormalOrder
		q.tins[0].setRate(rate, mtu, target, rtt)
		q.tins[0].tinQuantum = 65535
	case CakePrecedence, CakeDiffserv8:
		q.tinCnt, q.tinIndex, q.tinOrder = 8, &cakePrecedenceTable, &cakeNormalOrder
		if q.cfg.Diffserv == CakeDiffserv8 {
			q.tinIndex = &cakeDiffserv8Table
		}
		// Each tin's threshold and weight are 7/8 of the one before.
		quantum := uint32(256)
		for i := range 8 {
			b := &q.tins[i]
			b.setRate(rate, mtu, target, rtt)
			b.tinQuantum = uint16(max(1, quantum))
			rate = rate * 7 >> 3
			quantum = quantum * 7 >> 3
		}
	case CakeDiffserv4:
		q.tinCnt, q.tinIndex, q.tinOrder = 4, &cakeDiffserv4Table, &cakeBulkOrder
		const quantum = 1024
		for i, sh := range [4]uint{0, 4, 1, 2} {
			q.tins[i].setRate(rate>>sh, mtu, target, rtt)
			q.tins[i].tinQuantum = quantum >> sh
		}
	default: // diffserv3
		q.tinCnt, q.tinIndex, q.tinOrder = 3, &cakeDiffserv3Table, &cakeBulkOrder
		const quantum = 1024
		for i, sh := range [3]uint{0, 4, 2} {
			q.tins[i].setRate(rate>>sh, mtu, target, rtt)
			q.tins[i].tinQuantum = quantum >> sh
		}
	}
	for c := q.tinCnt; c < cakeMaxTins; c++ {
		q.clearTin(now, c)
		q.tins[c].cp.mtuTime = q.tins[0].cp.mtuTime
	}
	q.rateNs, q.rateShft = q.tins[0].rateNs, q.tins[0].rateShft

	switch {
	case q.cfg.Memlimit != 0:
		q.bufferLimit = q.cfg.Memlimit
	case q.cfg.Bandwidth != 0:
		// Four intervals' worth of bytes at the rate, at least 4 MiB
		// (max_t(u32, ...) truncates the product to 32 bits first).
		t := uint64(q.cfg.Bandwidth) * uint64(q.intervalUs) / (1000000 / 4)
		q.bufferLimit = max(uint32(t), 4<<20)
	default:
		q.bufferLimit = math.MaxUint32
	}
	// sch->limit is 10240 packets, which tc cannot change.
	q.bufferLimit = min(q.bufferLimit, max(uint32(min(uint64(cakeLimit)*uint64(q.env.PschedMTU()), math.MaxUint32)), q.cfg.Memlimit))
}

// cakeLimit is cake_init's sch->limit, in packets.
const cakeLimit = 10240

// cakeWarnings says what of a valid cake behaves otherwise than its
// options suggest: a fwmark mask selects nothing, since wanlab's packets
// carry no firewall mark.
func cakeWarnings(c CakeConfig, _ *Env) []string {
	if c.Fwmark != 0 {
		return []string{fmt.Sprintf("fwmark 0x%x selects no tin: wanlab's packets carry no firewall mark, so every packet's tin comes from its DSCP", c.Fwmark)}
	}
	return nil
}
