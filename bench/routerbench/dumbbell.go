package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"wanlab/lab"
	"wanlab/link"
	"wanlab/netns"
	"wanlab/qdisc"
	"wanlab/router"
	"wanlab/tcspec"
	"wanlab/tun"
)

// The dumbbell mode: N clients, each behind an access link of its own
// delay, upload at once over TCP to one server through a shared tbf, while
// an ICMP echo probe from each client measures its RTT, first idle, then under
// the load. It prints, per host, the configured RTT, the probes' minimum
// (idle, with its error) and, under load, minimum and median, and the
// host's goodput; then the goodputs' sum against the tbf's rate, each
// direction's lateness, the verdict and the up loop's CPU per Gbit.

// idleProbeTime is how long the probes run before the uploads start: the
// minimum RTT of a host whose queue never empties under load is measured
// there.
const idleProbeTime = 2 * time.Second

// rampTime is how long after the uploads start the probes count as under
// load.
const rampTime = time.Second

// parseDelays reads -delays: one-way access delays in ms, one per client
// (the last repeats for clients beyond the list).
func parseDelays(s string, clients int) ([]float64, error) {
	var d []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("-delays %q: %q is not a delay in ms: give one-way delays such as 5,10,15", s, f)
		}
		d = append(d, v)
	}
	for len(d) < clients {
		d = append(d, d[len(d)-1])
	}
	return d[:clients], nil
}

// clientRole is client i's role (0 is Client, then c2, c3, ...).
func clientRole(i int) lab.Role { return lab.HostRole(link.Host{N: i + 1}) }

// hostRun is what one client's upload and probe gave.
type hostRun struct {
	res   result
	probe *rttProbe
	err   error
}

// uploads runs an iperf3 upload from each of n clients to the server at
// once, each on a port of its own, for secs seconds; with probe, every
// client also probes its RTT from idleProbeTime before the uploads to
// their end, under load from rampTime after their start.
func uploads(t *lab.Testbed, n, secs int, probe bool) ([]hostRun, error) {
	sa := t.Info().Server.Addr4
	runs := make([]hostRun, n)
	if probe {
		for i := range runs {
			var err error
			if runs[i].probe, err = startProbe(t.Namespace(clientRole(i)), sa); err != nil {
				return nil, err
			}
			defer runs[i].probe.stop()
		}
		time.Sleep(idleProbeTime)
		// The uploads' first second (iperf3's start, slow start over
		// up to 80 ms) counts as neither phase's: a probe of it may
		// find the queue still empty.
		for i := range runs {
			runs[i].probe.phase.Store(phaseRamp)
		}
		ramp := time.AfterFunc(rampTime, func() {
			for i := range runs {
				runs[i].probe.phase.Store(phaseLoaded)
			}
		})
		defer ramp.Stop()
	}
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := func(r lab.Role) func(string, ...string) *netns.Cmd {
				return func(name string, args ...string) *netns.Cmd { return t.Command(r, name, args...) }
			}
			runs[i].res, runs[i].err = iperf(cmd(clientRole(i)), cmd(lab.Server), sa, iperfPort+i, secs, "", 1)
		}()
	}
	wg.Wait()
	for i, r := range runs {
		if r.err != nil {
			return nil, fmt.Errorf("%s: %w", clientRole(i), r.err)
		}
	}
	return runs, nil
}

// runDumbbell is the dumbbell mode.
func runDumbbell(secs, clients int, delays, rate, chain string, rt int) error {
	if clients < 1 || clients > link.MaxHosts {
		return fmt.Errorf("-clients %d: give 1 to %d", clients, link.MaxHosts)
	}
	d, err := parseDelays(delays, clients)
	if err != nil {
		return err
	}
	bps, err := tcspec.ParseRate(rate)
	if err != nil {
		return fmt.Errorf("-rate %q: %w", rate, err)
	}
	if chain == "" {
		// A burst of 20 segments and a queue of 20 ms at 100 Mbit/s
		// (250 kB): room for 8 flows' windows without a bufferbloat.
		chain = fmt.Sprintf("tbf rate %s burst 30kb latency 20ms", rate)
	}
	up, err := tcspec.ParseChain(chain, tcspec.Options{})
	if err != nil {
		return err
	}
	o := lab.Options{Clients: clients, Up: up, RealTimePriority: rt}
	for i, ms := range d {
		c, err := tcspec.ParseChain(fmt.Sprintf("netem delay %gms limit 10000", ms), tcspec.Options{})
		if err != nil {
			return err
		}
		for _, dir := range []string{"up", "down"} {
			o.Access = append(o.Access, lab.Access{Host: link.Host{N: i + 1}, Dir: dir, Chain: c})
		}
	}
	t, closeTestbed, err := labTestbed(o)
	if err != nil {
		return err
	}
	defer closeTestbed()
	var stopProbes func() string
	if probeOn {
		stopProbes = startProbes(rt)
	}
	runs, err := uploads(t, clients, secs, true)
	if err != nil {
		return err
	}
	sn := t.Snapshot()
	if stopProbes != nil {
		fmt.Println("# wake-up probes beside the router:" + stopProbes())
	}
	fmt.Printf("# dumbbell: %d clients, 1 server, up %q, %ds of TCP uploads, probes every %v (%v idle first; under load from %v into the uploads)\n",
		clients, chain, secs, echoInterval, idleProbeTime, rampTime)
	fmt.Printf("%-6s %8s %12s %8s %12s %12s %8s %8s\n", "host", "rtt_ms", "idle_min_ms", "err_pct", "load_min_ms", "load_med_ms", "probes", "Mbit/s")
	var sum float64
	worst := 0.0
	for i, r := range runs {
		want := time.Duration(2 * d[i] * float64(time.Millisecond))
		r.probe.mu.Lock()
		imin, _ := rttStats(r.probe.idle)
		lmin, lmed := rttStats(r.probe.load)
		got := r.probe.replies
		r.probe.mu.Unlock()
		errPct := 100 * (imin - want).Seconds() / want.Seconds()
		worst = max(worst, abs(errPct))
		sum += r.res.bps
		fmt.Printf("%-6s %8.3f %12.3f %+8.2f %12.3f %12.3f %8d %8.1f\n", clientRole(i).Host(), ms(want), ms(imin), errPct, ms(lmin), ms(lmed), got, r.res.bps/1e6)
	}
	fmt.Printf("goodput_sum_mbps=%.1f rate_mbps=%.1f ratio=%.3f worst_idle_min_err_pct=%.2f\n", sum/1e6, bps/1e6, sum/bps, worst)
	for _, dir := range []router.DirSnapshot{sn.Up, sn.Down} {
		fmt.Printf("%s: lateness_p50_us=%.1f p99_us=%.1f max_us=%.1f n=%d ring_drops=%d faithful=%v causes=%s\n",
			dir.Name, float64(dir.Lateness.P50Ns)/1e3, float64(dir.Lateness.P99Ns)/1e3, float64(dir.Lateness.MaxNs)/1e3,
			dir.Lateness.N, dir.Ring.Drops, dir.Verdict != nil && dir.Verdict.Faithful, verdictCauses(dir))
	}
	for _, dir := range []router.DirSnapshot{sn.Up, sn.Down} {
		lp := dir.Loop
		fmt.Printf("%s loop: cpu_pct=%.1f busy_pct=%.1f sleeps=%d spins=%d\n", dir.Name,
			100*float64(lp.CPUNs)/float64(lp.RunNs), 100*float64(lp.BusyNs)/float64(lp.RunNs), lp.Sleeps, lp.Spins)
	}
	gbit := float64(sn.Up.Counters.BytesOut) * 8 / 1e9
	fmt.Printf("up loop: busy_ms_per_gbit=%.1f cpu_ms_per_gbit=%.1f busy_ns_per_pkt=%.0f carried_gbit=%.3f pkts=%d\n",
		float64(sn.Up.Loop.BusyNs)/1e6/gbit, float64(sn.Up.Loop.CPUNs)/1e6/gbit,
		float64(sn.Up.Loop.BusyNs)/float64(sn.Up.Counters.Delivered), gbit, sn.Up.Counters.Delivered)
	return nil
}

// runPorts is the ports mode: the router's cost per extra port. The same
// total TCP load (-load, split evenly, each client's iperf3 -b) crosses
// the up bottleneck (-chain, empty by default) from 1, 2, 4 and 8 clients,
// each with a direct access link up (the router's dumbbell even for one
// client), and from the one client of the classic two-host path, the
// baseline (first and again last). Per run: the up loop's busy ns per
// packet and per Mbit, and its ratios to the one-client dumbbell's and to
// the classic path's first run.
func runPorts(secs int, load, chain string, counts []int) error {
	total, err := tcspec.ParseRate(load)
	if err != nil {
		return fmt.Errorf("-load %q: %w", load, err)
	}
	var up []qdisc.Spec
	if chain != "" {
		if up, err = tcspec.ParseChain(chain, tcspec.Options{}); err != nil {
			return err
		}
	}
	fmt.Printf("# ports: %s of TCP in all, up %q, %ds per run\n", load, chain, secs)
	fmt.Printf("%-16s %8s %12s %12s %8s %8s %10s %10s %11s %s\n", "run", "Mbit/s", "busy_ns_pkt", "busy_ns_Mbit", "vs_1", "vs_2host", "cpu_ns_pkt", "up_p99_us", "ring_drops", "causes")
	var one, classic float64
	// The classic path runs first and last: the difference between its
	// two runs is the drift of a shared machine over the series.
	for k, n := range append(append([]int{0}, counts...), 0) {
		// VNet TUNs on both paths, so that only the dumbbell's ports
		// differ (the classic path's zero kind is Offload).
		o := lab.Options{Clients: max(n, 1), Up: up, DeviceKind: tun.VNet}
		name := "classic 2 hosts"
		if k > 0 && n == 0 {
			name = "classic again"
		}
		if n > 0 {
			name = fmt.Sprintf("dumbbell %d", n)
			for i := range n {
				o.Access = append(o.Access, lab.Access{Host: link.Host{N: i + 1}, Dir: "up"})
			}
		}
		tcpRate = strconv.FormatFloat(total/float64(max(n, 1)), 'f', 0, 64)
		t, closeTestbed, err := labTestbed(o)
		if err != nil {
			return err
		}
		runs, err := uploads(t, max(n, 1), secs, false)
		sn := t.Snapshot()
		if cerr := closeTestbed(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		var sum float64
		for _, r := range runs {
			sum += r.res.bps
		}
		u := sn.Up
		perPkt := float64(u.Loop.BusyNs) / float64(u.Counters.Delivered)
		perMbit := float64(u.Loop.BusyNs) / (float64(u.Counters.BytesOut) * 8 / 1e6)
		switch {
		case k == 0:
			classic = perPkt
		case n == 1:
			one = perPkt
		}
		ratio := func(base float64) string {
			if base <= 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", perPkt/base)
		}
		fmt.Printf("%-16s %8.1f %12.0f %12.0f %8s %8s %10.0f %10.1f %11d %s\n", name, sum/1e6, perPkt, perMbit, ratio(one), ratio(classic),
			float64(u.Loop.CPUNs)/float64(u.Counters.Delivered), float64(u.Lateness.P99Ns)/1e3, u.Ring.Drops, verdictCauses(u))
	}
	return nil
}

// verdictCauses lists the codes of a direction's verdict's causes, "none"
// for a faithful run.
func verdictCauses(d router.DirSnapshot) string {
	if d.Verdict == nil || len(d.Verdict.Causes) == 0 {
		return "none"
	}
	codes := make([]string, len(d.Verdict.Causes))
	for i, c := range d.Verdict.Causes {
		codes[i] = c.Code
	}
	return strings.Join(codes, ",")
}

func ms(d time.Duration) float64 { return d.Seconds() * 1e3 }

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// parseCounts reads -counts: the client counts of the ports mode.
func parseCounts(s string) ([]int, error) {
	var c []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > link.MaxHosts {
			return nil, fmt.Errorf("-counts %q: %q is not a client count from 1 to %d", s, f, link.MaxHosts)
		}
		c = append(c, n)
	}
	return c, nil
}
