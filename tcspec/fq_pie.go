package tcspec

import (
	"fmt"
	"strings"

	"wanlab/qdisc"
)

const fqPIETakes = "limit PACKETS, flows NUMBER, target TIME, tupdate TIME, alpha 1-32, beta 1-32, quantum BYTES, memory_limit BYTES, ecn_prob 1-99, ecn | noecn, bytemode | nobytemode, dq_rate_estimator | no_dq_rate_estimator; wanlab extension: mem_overhead BYTES"

// parseFQPIE follows fq_pie_parse_opt (whole words only): limit, flows,
// alpha, beta and ecn_prob with get_unsigned, the times with get_time,
// quantum and memory_limit with get_size. tc sends no option whose value
// is 0, leaving the kernel's default; tcspec refuses a 0 rather than
// silently meaning the default. The defaults of options left out are
// filled in, except quantum, which the kernel derives from the device.
func parseFQPIE(a *args, _ Options) (qdisc.Spec, error) {
	var c qdisc.FQPIEConfig
	for a.more() {
		w := a.take()
		var err error
		switch w {
		case "limit":
			c.Limit, err = count(a, w, fmt.Sprint(qdisc.DefaultFQPIELimit))
		case "flows":
			c.Flows, err = count(a, w, fmt.Sprint(qdisc.DefaultFQPIEFlows))
			if err == nil && c.Flows > qdisc.MaxFQPIEFlows {
				err = a.fail(a.words[a.i-1], "%q: the kernel takes 1 to %d flows (\"Number of flows must range in [1..65536]\")", w+" "+a.words[a.i-1], qdisc.MaxFQPIEFlows)
			}
		case "target":
			c.Target, err = duration(a, w, formatDuration(qdisc.DefaultPIETarget))
		case "tupdate":
			c.TUpdate, err = duration(a, w, formatDuration(qdisc.DefaultPIETUpdate))
		case "alpha":
			c.Alpha, err = pieWeight(a, w)
		case "beta":
			c.Beta, err = pieWeight(a, w)
		case "quantum":
			c.Quantum, err = fqPIESize(a, w, "the device's MTU with its header, 1514 on Ethernet")
			if err == nil && c.Quantum > qdisc.MaxFQPIEQuantum {
				err = a.fail(a.words[a.i-1], "%q: the kernel takes a quantum of 1 to %d bytes (1 MiB)", w+" "+a.words[a.i-1], qdisc.MaxFQPIEQuantum)
			}
		case "memory_limit":
			c.MemoryLimit, err = fqPIESize(a, w, "32Mb")
		case "ecn_prob":
			c.ECNProb, err = count(a, w, fmt.Sprint(qdisc.DefaultFQPIEECNProb))
			if err == nil && c.ECNProb > qdisc.MaxFQPIEECNProb {
				err = a.fail(a.words[a.i-1], "%q: ecn_prob is a percentage below 100; tc accepts 1 to %d", w+" "+a.words[a.i-1], qdisc.MaxFQPIEECNProb)
			}
		case "ecn":
			c.ECN = true
		case "noecn":
			c.ECN = false
		case "bytemode":
			c.Bytemode = true
		case "nobytemode":
			c.Bytemode = false
		case "dq_rate_estimator":
			c.DQRateEstimator = true
		case "no_dq_rate_estimator":
			c.DQRateEstimator = false
		case "mem_overhead":
			c.MemOverhead, err = count(a, w, fmt.Sprint(qdisc.DefaultFQCoDelMemOverhead))
		default:
			err = a.unknown(w, fqPIETakes)
		}
		if err != nil {
			return nil, err
		}
	}
	return c.WithDefaults(), nil
}

// fqPIESize reads a get_size value that tc sends only when it is not 0.
func fqPIESize(a *args, w, dflt string) (int, error) {
	n, err := a.size(w, "SIZE")
	if err == nil && n == 0 {
		err = zeroIsDefault(a, w, dflt)
	}
	return int(n), err
}

func formatFQPIE(c qdisc.FQPIEConfig) string {
	var b words
	b.add("fq_pie")
	b.count("limit", c.Limit)
	b.count("flows", c.Flows)
	b.time("target", c.Target)
	b.time("tupdate", c.TUpdate)
	b.count("alpha", c.Alpha)
	b.count("beta", c.Beta)
	b.count("quantum", c.Quantum)
	b.size("memory_limit", c.MemoryLimit)
	b.count("ecn_prob", c.ECNProb)
	b.flag("ecn", c.ECN)
	b.flag("bytemode", c.Bytemode)
	b.flag("dq_rate_estimator", c.DQRateEstimator)
	b.count("mem_overhead", c.MemOverhead)
	return b.String()
}

// showFQPIE prints fq_pie as fq_pie_print_opt prints fq_pie_dump's
// attributes: every option, the flags only when set.
func showFQPIE(c qdisc.FQPIEConfig, env *qdisc.Env) string {
	var b strings.Builder
	c = c.WithDefaults()
	quantum := c.Quantum
	if quantum == 0 {
		quantum = env.PschedMTU()
	}
	targetUs, tupdateUs := pieShowTimes(c.Target, c.TUpdate, env)
	fmt.Fprintf(&b, "limit %dp flows %d target %s tupdate %s alpha %d beta %d quantum %s memory_limit %s ecn_prob %d ",
		uint32(c.Limit), uint32(c.Flows), showTime(targetUs), showTime(tupdateUs), uint32(c.Alpha), uint32(c.Beta),
		showSize(uint32(quantum)), showSize(uint32(c.MemoryLimit)), uint32(c.ECNProb))
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
