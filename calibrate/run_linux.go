package calibrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"wanlab/clock"
	"wanlab/qdisc"
	"wanlab/traffic"
)

// Path is one engine's side of a measurement: two hosts and the counters
// of the path's qdiscs between them. Run builds its own; Measure takes a
// path built elsewhere (the ports of `wanlab bridge`, the same veths
// bridged by the kernel).
type Path interface {
	Client() traffic.Host
	Server() traffic.Host
	// Counters returns the packets (wire segments) the path's qdiscs
	// dropped and those its root qdisc sent, so far.
	Counters() (drops, sent uint64, err error)
}

// classPath is a Path that reads the drops of each class of a tree, by
// class ("1:10"), as the tree test needs.
type classPath interface {
	Path
	Classes() (map[string]uint64, error)
}

// path is a Path that Run built and removes.
type path interface {
	classPath
	Close() error
}

// step is the sampling grid's spacing, and the UDP probes' interval.
const step = 100 * time.Millisecond

// floodSize is the flood's UDP payload: 1472 bytes make a 1500-byte IPv4
// packet, a 1514-byte frame.
const floodSize = 1472

// Run runs every test of cfg on both engines, Runs times each, alternating
// kernel and wanlab on fresh paths, and returns the measurements in the
// order they were made. progress, if not nil, is told of each one.
func Run(ctx context.Context, cfg Config, progress io.Writer) ([]Measurement, error) {
	specs, err := cfg.Check()
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	rate := cfg.UDPRate
	if rate == 0 {
		rate = floodRate(specs)
	}
	cmds := chainCommands(Elements(cfg.Chain))
	var flows []classFlow
	if cfg.Script != "" {
		_, sc, err := scriptChain(cfg)
		if err != nil {
			return nil, err
		}
		cmds = scriptCommands(sc, devRouterOut)
		if flows, err = treeFlows(specs, cfg.UDPRate); err != nil {
			return nil, err
		}
	}
	// Compared with the kernel, wanlab's netem draws correlated values as
	// the kernel's does (wanlab's "correlation kernel"), not its default
	// corrected ones.
	for i, s := range specs {
		if n, ok := s.(qdisc.NetemConfig); ok {
			n.Correlation = qdisc.CorrelationKernel
			specs[i] = n
		}
	}
	var ms []Measurement
	for run := 0; run < cfg.Runs; run++ {
		for _, test := range cfg.Tests {
			for _, engine := range []Engine{Kernel, Wanlab} {
				var p path
				var err error
				if engine == Kernel {
					p, err = newKernelPath(cfg.Name+"-k", cmds)
				} else {
					var wp *wanlabPath
					wp, err = newWanlabPath(ctx, cfg.Name+"-w", specs, cfg.DataPlane)
					p = wp
				}
				if err != nil {
					return ms, err
				}
				m, err := measure(ctx, p, test, cfg, rate, flows)
				if cerr := p.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return ms, fmt.Errorf("calibrate: %s on %s: %w", test, engine, err)
				}
				m.Engine = engine
				ms = append(ms, m)
				if progress != nil {
					if test == Tree {
						fmt.Fprintf(progress, "run %d %s %-6s goodput %.3f Mbit/s, drops %d, sent %d",
							run+1, test, engine, m.GoodputBps/1e6, m.Drops, m.Sent)
					} else {
						fmt.Fprintf(progress, "run %d %s %-6s goodput %.3f Mbit/s, delay %.3f ms, drops %d, sent %d, retransmits %d",
							run+1, test, engine, m.GoodputBps/1e6, m.DelayMs, m.Drops, m.Sent, m.Retransmits)
					}
					for _, c := range m.Classes {
						fmt.Fprintf(progress, "; %s goodput %.3f Mbit/s, drops %d", c.Class, c.GoodputBps/1e6, c.Drops)
					}
					if r := m.Router; r != nil {
						fmt.Fprintf(progress, "; router late p50 %.3f p99 %.3f ms, ring stalls p99 %.3f ms", r.LatenessP50Ms, r.LatenessP99Ms, r.StallP99Ms)
					}
					fmt.Fprintln(progress)
				}
			}
		}
	}
	return ms, nil
}

// Measure runs test once through p, as Run does on each engine, with
// cfg's duration, warm-up, congestion control, flows and flood rate (cfg's
// defaults filled in; its Chain must be the chain p applies, which sets
// the flood's default rate) and returns what it measured (the Engine left
// empty): the figures Compare sets side by side.
func Measure(ctx context.Context, p Path, test Test, cfg Config) (Measurement, error) {
	specs, err := cfg.Check()
	if err != nil {
		return Measurement{}, err
	}
	cfg = cfg.withDefaults()
	rate := cfg.UDPRate
	if rate == 0 {
		rate = floodRate(specs)
	}
	return measure(ctx, p, test, cfg, rate, nil)
}

// measure runs one test through p; the tree test floods each of
// classes, and needs a classPath.
func measure(ctx context.Context, p Path, test Test, cfg Config, rate int64, classes []classFlow) (Measurement, error) {
	m := Measurement{Test: test}
	var flows []traffic.Flow
	var tcps []*traffic.TCP
	var probe *traffic.UDPProbe
	var flood *traffic.Flood
	var floods []*traffic.Flood
	var err error
	switch test {
	case Tree:
		for _, c := range classes {
			f, err := traffic.NewFlood(traffic.FloodConfig{Label: "class " + c.class.String(), Client: p.Client(), Server: p.Server(), Dir: traffic.Up,
				Rate: c.rate, Size: floodSize, TOS: int(c.tos), Stop: cfg.Duration})
			if err != nil {
				return m, err
			}
			floods = append(floods, f)
			flows = append(flows, f)
		}
	case TCP:
		for i := range cfg.Flows {
			tcp, err := traffic.NewTCP(traffic.TCPConfig{Label: fmt.Sprintf("tcp %d", i+1), Client: p.Client(), Server: p.Server(), Dir: traffic.Up, CC: cfg.CC, Stop: cfg.Duration})
			if err != nil {
				return m, err
			}
			tcps = append(tcps, tcp)
			flows = append(flows, tcp)
		}
		if probe, err = traffic.NewUDPProbe(traffic.UDPProbeConfig{Label: "probe", Client: p.Client(), Server: p.Server(), Interval: step, Stop: cfg.Duration}); err != nil {
			return m, err
		}
		flows = append(flows, probe)
	case UDP:
		if flood, err = traffic.NewFlood(traffic.FloodConfig{Label: "flood", Client: p.Client(), Server: p.Server(), Dir: traffic.Up, Rate: rate, Size: floodSize, Stop: cfg.Duration}); err != nil {
			return m, err
		}
		flows = []traffic.Flow{flood}
	}
	// A second after the senders stop lets what is queued drain.
	res, err := traffic.Run(ctx, traffic.Plan{Step: step, Length: cfg.Duration + time.Second, Flows: flows, Clock: clock.NewReal()})
	if err != nil {
		return m, err
	}
	if res.Partial {
		return m, errors.New("the run was cut short")
	}
	from, to := res.T0.Add(cfg.Warmup), res.T0.Add(cfg.Duration)
	switch test {
	case TCP:
		for _, tcp := range tcps {
			r := tcp.Result().(*traffic.TCPResult)
			if !r.Connected {
				return m, fmt.Errorf("TCP flow %q never connected", r.Label)
			}
			m.GoodputBps += tcpGoodput(r.Samples, from, to)
			if n := len(r.Samples); n > 0 {
				m.Retransmits += uint64(r.Samples[n-1].Sender.TotalRetrans)
			}
		}
		m.DelayMs = probeDelay(probe.Result().(*traffic.ProbeResult).Probes, from, to)
	case UDP:
		r := flood.Result().(*traffic.FloodResult)
		m.GoodputBps, m.DelayMs = floodFigures(r.Steps, from, to)
	case Tree:
		cp, ok := p.(classPath)
		if !ok {
			return m, fmt.Errorf("calibrate: the tree test needs a path that reads its classes' drops")
		}
		drops, err := cp.Classes()
		if err != nil {
			return m, err
		}
		for i, f := range floods {
			c := classes[i]
			bps, _ := floodFigures(f.Result().(*traffic.FloodResult).Steps, from, to)
			m.Classes = append(m.Classes, ClassFigures{Class: c.class.String(), TOS: int(c.tos), RateBps: c.rate, GoodputBps: bps, Drops: drops[c.class.String()]})
			m.GoodputBps += bps
		}
	}
	if m.Drops, m.Sent, err = p.Counters(); err != nil {
		return m, err
	}
	if w, ok := p.(*wanlabPath); ok {
		m.Router = w.Router()
	}
	return m, nil
}

// tcpGoodput is the rate, in bit/s, at which the flow's segments were
// delivered between the samples nearest from and to: the sender's count
// of segments delivered (tcpi_delivered, which counts a segment as soon as
// it is acknowledged or SACKed) times its MSS. What the receiver has read
// in order would be the same rate over a long window, but over a short one
// it is not: after a loss, in-order bytes stand still until the
// retransmission has crossed the queue (up to the whole queue's delay),
// then jump, and a window that starts or ends in such a hole misses or
// gains that much. The link delivers at its rate all the while, and that
// rate is what the engines are compared on.
func tcpGoodput(ss []traffic.TCPSample, from, to clock.Time) float64 {
	var first, last clock.Time
	var bytes float64
	var prev *traffic.TCPSample
	for i := range ss {
		s := &ss[i]
		if s.T.Before(from) || to.Before(s.T) || !s.Connected {
			continue
		}
		if prev == nil {
			first = s.T
		} else {
			// uint32 arithmetic: a count that wrapped still subtracts right.
			bytes += float64(s.Sender.Delivered-prev.Sender.Delivered) * float64(s.Sender.SndMSS)
		}
		prev, last = s, s.T
	}
	if prev == nil || !first.Before(last) {
		return 0
	}
	return bytes * 8 / last.Sub(first).Seconds()
}

// probeDelay is the median RTT, in ms, of the probes sent in [from, to)
// and answered.
func probeDelay(ps []traffic.Probe, from, to clock.Time) float64 {
	var rtts []time.Duration
	for _, p := range ps {
		if !p.Lost && !p.Sent.Before(from) && p.Sent.Before(to) {
			rtts = append(rtts, p.RTT)
		}
	}
	if len(rtts) == 0 {
		return 0
	}
	slices.Sort(rtts)
	n := len(rtts)
	med := rtts[n/2]
	if n%2 == 0 {
		med = (rtts[n/2-1] + rtts[n/2]) / 2
	}
	return float64(med) / 1e6
}

// floodFigures are a flood's received rate (bit/s of UDP payload) and mean
// one-way delay (ms) over the steps that end in (from, to].
func floodFigures(steps []traffic.FloodStep, from, to clock.Time) (bps, delayMs float64) {
	var bytes, pkts uint64
	var span time.Duration
	var owd float64
	for _, s := range steps {
		if !from.Before(s.T) || to.Before(s.T) {
			continue
		}
		bytes += s.ReceivedBytes
		pkts += s.ReceivedPackets
		span += s.Interval
		owd += float64(s.OWDMean) * float64(s.ReceivedPackets)
	}
	if span == 0 || pkts == 0 {
		return 0, 0
	}
	return float64(bytes) * 8 / span.Seconds(), owd / float64(pkts) / 1e6
}
