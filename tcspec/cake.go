package tcspec

import (
	"math"
	"strconv"
	"strings"
	"time"

	"wanlab/qdisc"
)

const cakeTakes = "bandwidth RATE | unlimited, rtt TIME | datacentre | lan | metro | regional | internet | oceanic | satellite | interplanetary, " +
	"besteffort | diffserv8 | diffserv4 | diffserv3 | precedence, flowblind | srchost | dsthost | hosts | flows | dual-srchost | dual-dsthost | triple-isolate, " +
	"nonat, wash | nowash, split-gso | no-split-gso, ack-filter | ack-filter-aggressive | no-ack-filter, memlimit LIMIT, fwmark MASK, " +
	"ptm | atm | noatm, overhead N | conservative | raw, mpu N, ingress | egress, and the framings ipoa-vcmux, ipoa-llcsnap, bridged-vcmux, " +
	"bridged-llcsnap, pppoa-vcmux, pppoa-llc, pppoe-vcmux, pppoe-llcsnap, pppoe-ptm, bridged-ptm, via-ethernet, ethernet, ether-vlan, docsis"

// cakePreset is one of tc's RTT presets: target and interval in µs.
type cakePreset struct {
	name             string
	target, interval uint32
}

// cakePresets is q_cake.c's presets table.
var cakePresets = []cakePreset{
	{"datacentre", 5, 100},
	{"lan", 50, 1000},
	{"metro", 500, 10000},
	{"regional", 1500, 30000},
	{"internet", 5000, 100000},
	{"oceanic", 15000, 300000},
	{"satellite", 50000, 1000000},
	{"interplanetary", 50000000, 1000000000},
}

// cakeFramings are q_cake.c's framing keywords that add to the overhead,
// with the cell compensation they set (-1: leave it).
var cakeFramings = map[string]struct {
	add int
	atm int
}{
	"ipoa-vcmux":      {8, int(qdisc.CakeATMCells)},
	"ipoa-llcsnap":    {16, int(qdisc.CakeATMCells)},
	"bridged-vcmux":   {24, int(qdisc.CakeATMCells)},
	"bridged-llcsnap": {32, int(qdisc.CakeATMCells)},
	"pppoa-vcmux":     {10, int(qdisc.CakeATMCells)},
	"pppoa-llc":       {14, int(qdisc.CakeATMCells)},
	"pppoe-vcmux":     {32, int(qdisc.CakeATMCells)},
	"pppoe-llcsnap":   {40, int(qdisc.CakeATMCells)},
	"pppoe-ptm":       {30, int(qdisc.CakePTM)},
	"bridged-ptm":     {22, int(qdisc.CakePTM)},
	"ether-vlan":      {4, -1},
}

// parseCake follows cake_parse_opt: each keyword as a whole word, a later
// one replacing an earlier one of its group, the framing keywords adding
// to the overhead tc accumulates (overhead N and conservative replace it;
// raw zeroes it and asks the kernel to count the device's length; ethernet
// and docsis also set the mpu); tc sends the kernel only what was given,
// which the zero values of qdisc.CakeConfig stand for. autorate-ingress
// and nat are refused: wanlab measures no received rate and has no
// connection tracking.
func parseCake(a *args, _ Options) (qdisc.Spec, error) {
	var c qdisc.CakeConfig
	var preset string
	var interval, target uint32
	overhead, mpu, atm := 0, 0, -1
	overheadSet, raw := false, false
	for a.more() {
		w := a.take()
		var err error
		if f, ok := cakeFramings[w]; ok {
			overhead += f.add
			overheadSet = true
			if f.atm >= 0 {
				atm = f.atm
			}
			continue
		}
		if p, ok := findCakePreset(w); ok {
			if preset != "" {
				return nil, a.fail(w, "%q after %q: tc takes one RTT preset (\"duplicate\"); keep one", w, preset)
			}
			preset = w
			target, interval = p.target, p.interval
			continue
		}
		switch w {
		case "bandwidth":
			var v string
			if v, err = a.value(w, "RATE"); err == nil {
				c.Bandwidth, err = getRate64(v)
				if err != nil {
					err = a.fail(v, "%q: tc says Illegal \"bandwidth\": %v", w+" "+v, err)
				}
			}
		case "unlimited":
			c.Bandwidth = 0
		case "autorate-ingress":
			err = a.fail(w, "autorate-ingress estimates the link's rate from the traffic cake receives, which wanlab does not do; give the rate with \"bandwidth RATE\"")
		case "rtt":
			var v string
			if v, err = a.value(w, "TIME"); err == nil {
				var d time.Duration
				if d, err = getTime(v); err != nil {
					err = a.fail(v, "%q: tc says Illegal \"rtt\": %v", w+" "+v, err)
				} else {
					interval = durationUs(d)
					target = max(interval/20, 1)
				}
			}
		case "besteffort":
			c.Diffserv = qdisc.CakeBestEffort
		case "precedence":
			c.Diffserv = qdisc.CakePrecedence
		case "diffserv8":
			c.Diffserv = qdisc.CakeDiffserv8
		case "diffserv4", "diffserv":
			c.Diffserv = qdisc.CakeDiffserv4
		case "diffserv3":
			c.Diffserv = qdisc.CakeDiffserv3
		case "nowash":
			c.Wash = false
		case "wash":
			c.Wash = true
		case "split-gso":
			c.NoSplitGSO = false
		case "no-split-gso":
			c.NoSplitGSO = true
		case "flowblind":
			c.FlowMode = qdisc.CakeFlowBlind
		case "srchost":
			c.FlowMode = qdisc.CakeSrcHost
		case "dsthost":
			c.FlowMode = qdisc.CakeDstHost
		case "hosts":
			c.FlowMode = qdisc.CakeHosts
		case "flows":
			c.FlowMode = qdisc.CakeFlows
		case "dual-srchost":
			c.FlowMode = qdisc.CakeDualSrcHost
		case "dual-dsthost":
			c.FlowMode = qdisc.CakeDualDstHost
		case "triple-isolate":
			c.FlowMode = qdisc.CakeTripleIsolate
		case "nat":
			err = a.fail(w, "nat looks flows up in the kernel's connection tracking, which wanlab's router does not have; remove \"nat\" (nonat is the default)")
		case "nonat":
		case "ptm":
			atm = int(qdisc.CakePTM)
		case "atm":
			atm = int(qdisc.CakeATMCells)
		case "noatm":
			atm = int(qdisc.CakeNoATM)
		case "raw":
			atm, overhead, overheadSet, raw = int(qdisc.CakeNoATM), 0, true, true
		case "conservative":
			// One whole ATM cell plus ATM framing: a safe guess.
			atm, overhead, overheadSet = int(qdisc.CakeATMCells), 48, true
		case "via-ethernet":
			// Ignored by tc: cake compensates for the device's header
			// itself.
		case "ethernet":
			// Preamble, inter-frame gap and FCS.
			overhead += 38
			overheadSet = true
			mpu = 84
		case "docsis":
			atm = int(qdisc.CakeNoATM)
			overhead += 18
			overheadSet = true
			mpu = 64
		case "overhead":
			var v string
			if v, err = a.value(w, "N"); err == nil {
				n, e := strconv.ParseInt(v, 10, 64)
				if e != nil || n < qdisc.MinCakeOverhead || n > qdisc.MaxCakeOverhead {
					err = a.fail(v, "%q: tc says Illegal \"overhead\", valid range is %d to %d", w+" "+v, qdisc.MinCakeOverhead, qdisc.MaxCakeOverhead)
				} else {
					overhead, overheadSet = int(n), true
				}
			}
		case "mpu":
			var v string
			if v, err = a.value(w, "N"); err == nil {
				n, e := strconv.ParseInt(v, 10, 64)
				if e != nil || n < 0 || n > qdisc.MaxCakeMPU {
					err = a.fail(v, "%q: tc says Illegal \"mpu\", valid range is 0 to %d", w+" "+v, qdisc.MaxCakeMPU)
				} else {
					mpu = int(n)
				}
			}
		case "ingress":
			c.Ingress = true
		case "egress":
			c.Ingress = false
		case "no-ack-filter":
			c.AckFilter = qdisc.CakeNoAckFilter
		case "ack-filter":
			c.AckFilter = qdisc.CakeAckFilterOn
		case "ack-filter-aggressive":
			c.AckFilter = qdisc.CakeAckFilterAggressive
		case "memlimit":
			var n uint32
			n, err = a.size(w, "LIMIT")
			c.Memlimit = n
		case "fwmark":
			var n uint64
			n, err = a.uint(w, "MASK", 0, math.MaxUint32)
			c.Fwmark = uint32(n)
		default:
			err = a.unknown(w, cakeTakes)
		}
		if err != nil {
			return nil, err
		}
	}
	if interval != 0 {
		c.RTT = time.Duration(interval) * time.Microsecond
	}
	if target != 0 {
		c.Target = time.Duration(target) * time.Microsecond
	}
	if atm >= 0 {
		c.ATM = qdisc.CakeATM(atm)
	}
	if overheadSet {
		c.Overhead = overhead
		c.Compensate = !raw
	}
	c.MPU = mpu
	return c.WithDefaults(), nil
}

func findCakePreset(w string) (cakePreset, bool) {
	for _, p := range cakePresets {
		if p.name == w {
			return p, true
		}
	}
	return cakePreset{}, false
}

// formatCake prints cake as parseCake reads it: the options away from
// their defaults, the RTT as a preset where one matches it.
func formatCake(c qdisc.CakeConfig) string {
	c = c.WithDefaults()
	var b words
	b.add("cake")
	if c.Bandwidth != 0 {
		b.rate("bandwidth", c.Bandwidth)
	} else {
		b.add("unlimited")
	}
	b.flag("autorate-ingress", c.AutorateIngress)
	iv, tg := durationUs(c.RTT), durationUs(c.Target)
	switch {
	case iv == durationUs(qdisc.DefaultCakeRTT) && tg == durationUs(qdisc.DefaultCakeTarget):
	case tg == max(iv/20, 1):
		b.add("rtt", formatDuration(c.RTT))
	case iv == durationUs(qdisc.DefaultCakeRTT) && tg == 1:
		b.add("rtt", "0")
	default:
		named := false
		for _, p := range cakePresets {
			if p.interval == iv && p.target == tg {
				b.add(p.name)
				named = true
			}
		}
		if !named {
			// tc has no way to give these two apart; rtt sets both.
			b.add("rtt", formatDuration(c.RTT))
		}
	}
	b.add(c.Diffserv.String(), c.FlowMode.String())
	b.flag("nat", c.NAT)
	b.flag("wash", c.Wash)
	b.flag("no-split-gso", c.NoSplitGSO)
	switch c.AckFilter {
	case qdisc.CakeAckFilterOn:
		b.add("ack-filter")
	case qdisc.CakeAckFilterAggressive:
		b.add("ack-filter-aggressive")
	}
	b.size("memlimit", int(c.Memlimit))
	if c.Fwmark != 0 {
		b.add("fwmark", "0x"+strconv.FormatUint(uint64(c.Fwmark), 16))
	}
	if !c.Compensate && c.Overhead != 0 {
		b.add("raw")
	}
	if c.Compensate || c.Overhead != 0 {
		// Above what overhead N takes, tc reaches the sum by adding
		// ether-vlan's 4 bytes to it.
		n, vlans := c.Overhead, 0
		if n > qdisc.MaxCakeOverhead {
			vlans = (n - qdisc.MaxCakeOverhead + 3) / 4
			n -= 4 * vlans
		}
		b.add("overhead", strconv.Itoa(n))
		for range vlans {
			b.add("ether-vlan")
		}
	}
	switch c.ATM {
	case qdisc.CakeATMCells:
		b.add("atm")
	case qdisc.CakePTM:
		b.add("ptm")
	}
	b.count("mpu", c.MPU)
	b.flag("ingress", c.Ingress)
	return b.String()
}

// showCake prints cake's options as iproute2's cake_print_opt does
// without -d, from what cake_dump gives it: the rate ("unlimited" for
// 0), the modes, nonat, wash, ingress, the ACK filter, split-gso, the
// RTT (the kernel's interval in µs, sprint_time), raw when the overhead
// flag is off, the cell mode (noatm only when not raw), the overhead, and
// the mpu, memlimit and fwmark when not zero.
func showCake(c qdisc.CakeConfig) string {
	c = c.WithDefaults()
	var b strings.Builder
	if c.Bandwidth != 0 {
		b.WriteString("bandwidth " + showRate(uint64(c.Bandwidth)) + " ")
	} else {
		b.WriteString("bandwidth unlimited ")
	}
	if c.AutorateIngress {
		b.WriteString("autorate-ingress ")
	}
	b.WriteString(c.Diffserv.String() + " " + c.FlowMode.String() + " ")
	if c.NAT {
		b.WriteString("nat ")
	} else {
		b.WriteString("nonat ")
	}
	if c.Wash {
		b.WriteString("wash ")
	} else {
		b.WriteString("nowash ")
	}
	if c.Ingress {
		b.WriteString("ingress ")
	}
	switch c.AckFilter {
	case qdisc.CakeAckFilterAggressive:
		b.WriteString("ack-filter-aggressive ")
	case qdisc.CakeAckFilterOn:
		b.WriteString("ack-filter ")
	default:
		b.WriteString("no-ack-filter ")
	}
	if c.NoSplitGSO {
		b.WriteString("no-split-gso ")
	} else {
		b.WriteString("split-gso ")
	}
	// The kernel raises an interval of 0 to 1 µs.
	b.WriteString("rtt " + showTime(max(durationUs(c.RTT), 1)) + " ")
	raw := !c.Compensate
	if raw {
		b.WriteString("raw ")
	}
	switch c.ATM {
	case qdisc.CakeATMCells:
		b.WriteString("atm ")
	case qdisc.CakePTM:
		b.WriteString("ptm ")
	default:
		if !raw {
			b.WriteString("noatm ")
		}
	}
	b.WriteString("overhead " + strconv.Itoa(c.Overhead) + " ")
	if c.MPU != 0 {
		b.WriteString("mpu " + strconv.Itoa(c.MPU) + " ")
	}
	if c.Memlimit != 0 {
		b.WriteString("memlimit " + showSize(c.Memlimit) + " ")
	}
	if c.Fwmark != 0 {
		b.WriteString("fwmark 0x" + strconv.FormatUint(uint64(c.Fwmark), 16) + " ")
	}
	return b.String()
}
