// Command routerbench measures wanlab's router against a plain veth pair:
// TCP throughput with iperf3 between two fresh wl- namespaces, and release
// lateness under UDP load. bench/router.sh runs it; it needs root.
//
//	routerbench veth [-t SECONDS]
//	routerbench router [-chain TC] [-granularity segment|gso] [-t SECONDS] [-udp RATE | -b RATE] [-kind vnet|offload|raw] [-rt PRIO] [-P STREAMS] [-rps MASK] [-probe]
//	routerbench probe [-t SECONDS] [-rt PRIO]
//	routerbench lab -dataplane tun|packet [-chain TC] [-t SECONDS] [-udp RATE | -b RATE] [-rt PRIO] [-P STREAMS]
//	routerbench dumbbell [-clients N] [-delays MS,MS,...] [-rate RATE] [-chain TC] [-t SECONDS] [-rt PRIO] [-probe]
//	routerbench ports [-load RATE] [-counts N,N,...] [-chain TC] [-t SECONDS]
//
// The lab mode measures the router as `wanlab up` builds it (package lab),
// on either data plane: a TUN device in each host (of kind vnet, as the
// router mode's default), or a veth pair from each host to the router's
// namespace, read and written through packet sockets.
//
// -probe runs, beside the router, a thread that measures its own wake-up
// delays from clock_nanosleep and ppoll (and, with -rt, a SCHED_FIFO one):
// the machine's scheduling-latency floor under the same load. The probe
// mode measures it without any load.
//
// -iperf-cpus CPUS pins the iperf3 processes (taskset -c), so that a router
// started under taskset on other CPUs is not preempted by them.
//
// The dumbbell mode builds, through package lab, N clients (8 by default)
// and one server; client i has access links of -delays' i-th one-way
// delay in each direction, and all share an up bottleneck of tbf at -rate
// (or -chain). Each client uploads over TCP (iperf3) to the server at once
// while it probes its RTT over UDP (dumbbell.go says what it prints). The
// ports mode measures the up loop's cost per extra port: the same total
// TCP load from 1, 2, 4 and 8 clients, and from the classic two hosts.
//
// It prints one line of key=value pairs per run, the dumbbell and ports
// modes a small table.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"wanlab/bench/internal/benchbed"
	"wanlab/lab"
	"wanlab/link"
	"wanlab/netns"
	"wanlab/qdisc"
	"wanlab/rootless"
	"wanlab/router"
	"wanlab/tcspec"
	"wanlab/tun"
)

func init() { runtime.LockOSThread() }

func main() {
	// Without root, or with WANLAB_ROOTLESS=1, the benchmark runs in the
	// user's namespace as wanlab does (bench/rootless.sh compares them).
	rootless.Begin()
	if rootless.Needed(false) {
		fmt.Fprintln(os.Stderr, "routerbench:", rootless.Enter(os.Args))
		os.Exit(1)
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: routerbench veth|router|lab|probe|dumbbell|ports [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	secs := fs.Int("t", 5, "seconds per iperf3 run")
	chain := fs.String("chain", "", "qdisc chain of both directions, tc syntax")
	gran := fs.String("granularity", "segment", "what the qdiscs take as one packet of a GSO super-packet: segment or gso")
	udp := fs.String("udp", "", "send UDP at this rate (iperf3 -b) instead of TCP")
	rate := fs.String("b", "", "limit TCP to this rate (iperf3 -b)")
	kind := fs.String("kind", "vnet", "TUN kind: vnet, offload or raw")
	fs.StringVar(&dataPlane, "dataplane", "tun", "lab mode: the router's data plane, tun or packet")
	streams := fs.Int("P", 1, "parallel streams")
	rt := fs.Int("rt", 0, "SCHED_FIFO priority of the router's loops (0: normal scheduling)")
	cpus := fs.String("iperf-cpus", "", "run iperf3 under taskset -c CPUS")
	withProbe := fs.Bool("probe", false, "measure a probe thread's wake-up delays beside the router")
	pacing := fs.Int("pacing-us", 0, "iperf3 --pacing-timer in µs (0: iperf3's default of 1000 µs, which sends bursts every millisecond)")
	fs.IntVar(&txQueueLen, "txqlen", 0, "the TUNs' txqueuelen: the ring in front of the router (0: tun.DefaultTxQueueLen)")
	fs.StringVar(&rpsCPUs, "rps", "", "RPS CPU mask (hex, as in rps_cpus) of both TUNs' receive queue: the receiving host's IP and TCP input then runs on those CPUs instead of in the router's write")
	cpuProfile := fs.String("cpuprofile", "", "write the router process's CPU profile (go tool pprof) to this file")
	fs.StringVar(&snapshotFile, "snapshot", "", "write the router's final snapshot (JSON, as status --json shows it) to this file")
	clients := fs.Int("clients", 8, "dumbbell mode: how many clients upload")
	delays := fs.String("delays", "5,10,15,20,25,30,35,40", "dumbbell mode: each client's one-way access delay in ms, both ways (the last repeats)")
	bottleneck := fs.String("rate", "100mbit", "dumbbell mode: the up bottleneck's tbf rate (without -chain)")
	load := fs.String("load", "1G", "ports mode: the total TCP rate, split evenly over the clients (iperf3 -b)")
	counts := fs.String("counts", "1,2,4,8", "ports mode: the client counts")
	fs.Parse(os.Args[2:])
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "routerbench:", err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "routerbench:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	if *cpus != "" {
		iperfCmd = []string{"taskset", "-c", *cpus, "iperf3"}
	}
	pacingUs = *pacing
	probeOn = *withProbe
	if os.Args[1] == "probe" {
		stop := startProbes(*rt)
		time.Sleep(time.Duration(*secs) * time.Second)
		fmt.Println("mode=probe" + stop())
		return
	}
	if *udp == "" && *rate != "" {
		tcpRate = *rate
	}
	g, err := qdisc.ParseGranularity(*gran)
	if err != nil {
		fmt.Fprintln(os.Stderr, "routerbench:", err)
		os.Exit(2)
	}
	granularity = g
	switch os.Args[1] {
	case "dumbbell":
		err = runDumbbell(*secs, *clients, *delays, *bottleneck, *chain, *rt)
	case "ports":
		var c []int
		if c, err = parseCounts(*counts); err == nil {
			err = runPorts(*secs, *load, *chain, c)
		}
	default:
		err = run(os.Args[1], *secs, *chain, *udp, *kind, *streams, *rt)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "routerbench:", err)
		os.Exit(1)
	}
}

func run(mode string, secs int, chain, udp, kind string, streams, rt int) error {
	if mode == "lab" {
		return runLab(secs, chain, udp, streams, rt)
	}
	tb, c, s, err := benchbed.New("rb")
	if err != nil {
		return err
	}
	defer tb.Close()
	for _, h := range []*netns.Handle{c, s} {
		if err := tuneTCP(h); err != nil {
			return err
		}
	}
	ca, sa := netip.MustParseAddr("10.252.0.1"), netip.MustParseAddr("10.252.0.2")
	var r *router.Router
	switch mode {
	case "veth":
		if err := veth(tb, c, s, ca, sa); err != nil {
			return err
		}
	case "router":
		k := map[string]tun.Kind{"vnet": tun.VNet, "offload": tun.Offload, "raw": tun.Raw}
		kd, ok := k[kind]
		if !ok {
			return fmt.Errorf("unknown kind %q", kind)
		}
		specs, err := tcspec.ParseChain(chain, tcspec.Options{})
		if err != nil {
			return err
		}
		cd, err := openTUN(tb, c, kd, ca, sa)
		if err != nil {
			return err
		}
		defer cd.Close()
		sd, err := openTUN(tb, s, kd, sa, ca)
		if err != nil {
			return err
		}
		defer sd.Close()
		r, err = router.New(router.Config{
			Up:               link.Config{Name: "up", Chain: specs, Env: qdisc.Env{Seed: 1}},
			Down:             link.Config{Name: "down", Chain: specs, Env: qdisc.Env{Seed: 2}},
			Client:           cd,
			Server:           sd,
			UpRing:           router.TUNRing(c, "wl-tun"),
			DownRing:         router.TUNRing(s, "wl-tun"),
			RealTimePriority: rt,
			Granularity:      granularity,
		})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				fmt.Fprintln(os.Stderr, "router:", err)
			}
		}()
	default:
		return fmt.Errorf("unknown mode %q: use veth, router or lab", mode)
	}
	var stopProbes func() string
	if probeOn {
		stopProbes = startProbes(rt)
	}
	res, err := iperf(func(name string, args ...string) *netns.Cmd { return tb.Command(c, name, args...) },
		func(name string, args ...string) *netns.Cmd { return tb.Command(s, name, args...) }, sa, iperfPort, secs, udp, streams)
	if err != nil {
		return err
	}
	probes := ""
	if stopProbes != nil {
		probes = stopProbes()
	}
	line := fmt.Sprintf("mode=%s kind=%s chain=%q rt=%d proto=%s gbps=%.3f", mode, kind, chain, rt, res.proto, res.bps/1e9)
	if mode == "veth" {
		line = fmt.Sprintf("mode=veth proto=%s gbps=%.3f", res.proto, res.bps/1e9)
	}
	if udp != "" {
		line += fmt.Sprintf(" lost_pct=%.3f", res.lost)
	}
	if r != nil {
		f, err := snapshotFields(r.Snapshot(), res)
		if err != nil {
			return err
		}
		line += f
	}
	line += probes
	fmt.Println(line)
	return nil
}

// runLab measures the router of a testbed that package lab builds, on the
// data plane -dataplane names.
func runLab(secs int, chain, udp string, streams, rt int) error {
	plane, err := lab.ParseDataPlane(dataPlane)
	if err != nil {
		return err
	}
	specs, err := tcspec.ParseChain(chain, tcspec.Options{})
	if err != nil {
		return err
	}
	t, closeTestbed, err := labTestbed(lab.Options{
		Up: specs, Down: specs,
		DataPlane:        plane,
		DeviceKind:       tun.VNet,
		RealTimePriority: rt,
	})
	if err != nil {
		return err
	}
	defer closeTestbed()
	var stopProbes func() string
	if probeOn {
		stopProbes = startProbes(rt)
	}
	res, err := iperf(func(name string, args ...string) *netns.Cmd { return t.Command(lab.Client, name, args...) },
		func(name string, args ...string) *netns.Cmd { return t.Command(lab.Server, name, args...) },
		t.Info().Server.Addr4, iperfPort, secs, udp, streams)
	if err != nil {
		return err
	}
	probes := ""
	if stopProbes != nil {
		probes = stopProbes()
	}
	line := fmt.Sprintf("mode=lab dataplane=%s chain=%q rt=%d proto=%s gbps=%.3f", dataPlane, chain, rt, res.proto, res.bps/1e9)
	if udp != "" {
		line += fmt.Sprintf(" lost_pct=%.3f", res.lost)
	}
	f, err := snapshotFields(t.Snapshot(), res)
	if err != nil {
		return err
	}
	line += f + probes
	fmt.Println(line)
	return nil
}

// labTestbed builds, through package lab, the testbed o describes with the
// settings every lab-built run shares: its own name, tcpBuffers, the
// -granularity and seed 1. What a killed run left goes first, as
// benchbed.New does for the other modes. Until closed through the
// returned function, an interrupt removes the testbed, which ends the
// iperf3 processes it started (they would wait on the stopped router),
// and exits 130, as benchbed.New's testbeds do; closing it first
// unhooks that, so that neither a closed testbed's handler nor the
// ending of its context exits a run that goes on.
func labTestbed(o lab.Options) (*lab.Testbed, func() error, error) {
	if _, err := lab.CleanStale(); err != nil {
		return nil, nil, err
	}
	o.Name = fmt.Sprintf("rb%d", os.Getpid())
	o.TCPRmem, o.TCPWmem = tcpBuffers, tcpBuffers
	o.Granularity = granularity
	o.Seed = 1
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	t, err := lab.Up(ctx, o)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	unhook := context.AfterFunc(ctx, func() {
		if err := t.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "routerbench:", err)
		}
		os.Exit(130)
	})
	return t, func() error {
		unhook()
		cancel()
		return t.Close()
	}, nil
}

// snapshotFields is the router's side of a run's line: lateness, rings,
// offloads, loop load, the verdict's causes and the drops by reason.
func snapshotFields(sn router.Snapshot, res result) (string, error) {
	line := ""
	up := sn.Up
	if snapshotFile != "" {
		b, err := json.MarshalIndent(sn, "", "  ")
		if err == nil {
			err = os.WriteFile(snapshotFile, b, 0o644)
		}
		if err != nil {
			return "", err
		}
	}
	line += fmt.Sprintf(" up_p50_us=%.1f up_p99_us=%.1f up_max_us=%.1f up_n=%d down_p99_us=%.1f whole=%v split=%d dropped=%d write_drops=%d ring_size=%d ring_drops=%d,%d ring_waiting_p99=%.0f,%.0f ring_waiting_max=%d,%d",
		float64(up.Lateness.P50Ns)/1e3, float64(up.Lateness.P99Ns)/1e3, float64(up.Lateness.MaxNs)/1e3, up.Lateness.N,
		float64(sn.Down.Lateness.P99Ns)/1e3, up.GSO.Whole, up.GSO.Split, up.Counters.Dropped, up.WriteDrops, up.Ring.Size,
		up.Ring.Drops, sn.Down.Ring.Drops, up.Ring.Waiting.P99, sn.Down.Ring.Waiting.P99, up.Ring.Waiting.Max, sn.Down.Ring.Waiting.Max)
	line += fmt.Sprintf(" uso_writes=%d uso_dgrams=%d gro_writes=%d gro_pkts=%d up_cpu_s=%.2f down_cpu_s=%.2f up_sleeps=%d up_spins=%d down_sleeps=%d down_spins=%d",
		up.GSO.USOWrites, up.GSO.USODatagrams, up.GSO.GROWrites, up.GSO.GROPackets, float64(up.Loop.CPUNs)/1e9, float64(sn.Down.Loop.CPUNs)/1e9, up.Loop.Sleeps, up.Loop.Spins, sn.Down.Loop.Sleeps, sn.Down.Loop.Spins)
	busy := 0.0
	if up.Loop.RunNs > 0 {
		busy = 100 * float64(up.Loop.BusyNs) / float64(up.Loop.RunNs)
	}
	line += fmt.Sprintf(" granularity=%s up_busy_pct=%.0f up_faithful=%v up_causes=%s", up.Granularity, busy, up.Verdict.Faithful, verdictCauses(up))
	for _, q := range up.Qdiscs {
		if q.Counters.Dropped > 0 {
			for why, n := range q.Counters.DroppedByReason {
				if n > 0 {
					line += fmt.Sprintf(" drops_%s_%s=%d", q.Kind, qdisc.Reason(why), n)
				}
			}
		}
	}
	for _, f := range up.Flows {
		if f.Payload > 1<<20 {
			line += fmt.Sprintf(" flow_payload_mb=%.1f", float64(f.Payload)/1e6)
		}
	}
	line += fmt.Sprintf(" iperf_mb=%.1f", res.bytes/1e6)
	return line, nil
}

// tcpBuffers are tcp_rmem and tcp_wmem of every host: room for 10 Gbit/s
// at 20 ms.
const tcpBuffers = "4096 131072 67108864"

// tuneTCP gives the namespace's TCP buffers tcpBuffers.
func tuneTCP(h *netns.Handle) error {
	for k, v := range map[string]string{
		"net.ipv4.tcp_rmem": tcpBuffers,
		"net.ipv4.tcp_wmem": tcpBuffers,
	} {
		if err := h.SetSysctl(k, v); err != nil {
			return err
		}
	}
	return nil
}

func veth(tb *netns.Testbed, c, s *netns.Handle, ca, sa netip.Addr) error {
	// Through netlink, with the peer's namespace by descriptor: `ip
	// link ... netns NAME` finds names only in /run/netns, which a
	// rootless run does not use.
	f, err := os.Open(s.Path())
	if err != nil {
		return fmt.Errorf("veth: %w", err)
	}
	defer f.Close()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "wl-va"}, PeerName: "wl-vb", PeerNamespace: netlink.NsFd(int(f.Fd()))}
	if err := c.Netlink().LinkAdd(v); err != nil {
		return fmt.Errorf("veth: %w", err)
	}
	for _, x := range []struct {
		h          *netns.Handle
		dev        string
		self, peer netip.Addr
	}{{c, "wl-va", ca, sa}, {s, "wl-vb", sa, ca}} {
		if err := tb.AddDevice(x.h, x.dev); err != nil {
			return err
		}
		for _, err := range []error{x.h.LoopbackUp(), x.h.SetLinkUp(x.dev), x.h.AddPeerAddr(x.dev, x.self, netip.PrefixFrom(x.peer, 32))} {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func openTUN(tb *netns.Testbed, h *netns.Handle, k tun.Kind, self, peer netip.Addr) (tun.Device, error) {
	d, err := tun.Open(h, "wl-tun", tun.Options{Kind: k, TxQueueLen: txQueueLen})
	if err != nil {
		return nil, err
	}
	for _, err := range []error{tb.AddDevice(h, "wl-tun"), h.LoopbackUp(), h.SetLinkUp("wl-tun"), h.AddPeerAddr("wl-tun", self, netip.PrefixFrom(peer, 32)), setRPS(h, "wl-tun")} {
		if err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// setRPS sets the device's receive packet steering mask to rpsCPUs. A
// write to a TUN hands the packet to the receiving stack on the writer's
// thread; with RPS the kernel queues it to the backlog of a CPU in the
// mask instead (the writer's own CPU, if it is in the mask, still
// processes it at once).
func setRPS(h *netns.Handle, dev string) error {
	if rpsCPUs == "" {
		return nil
	}
	// sysfs shows the devices of the namespace it was mounted in: ip
	// netns exec mounts a fresh one (as root only: -rps is for root).
	out, err := exec.Command("ip", "netns", "exec", h.Name(), "sh", "-c",
		fmt.Sprintf("echo %s > /sys/class/net/%s/queues/rx-0/rps_cpus", rpsCPUs, dev)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("rps_cpus %s on %s: %v: %s", rpsCPUs, dev, err, out)
	}
	return nil
}

// dataPlane is the lab mode's data plane, tun or packet.
var dataPlane string

// rpsCPUs is the TUNs' RPS mask ("": RPS off, the kernel's default).
var rpsCPUs string

// granularity is what the router's qdiscs take as one packet of a GSO
// super-packet.
var granularity qdisc.Granularity

// txQueueLen is the TUNs' txqueuelen, the ring in front of the router (0:
// tun.DefaultTxQueueLen).
var txQueueLen int

// tcpRate is iperf3's -b for TCP ("": as fast as it goes).
var tcpRate string

// pacingUs is iperf3's --pacing-timer for UDP (0: its default).
var pacingUs int

// snapshotFile receives the router's final snapshot ("": none).
var snapshotFile string

// probeOn runs the wake-up probes during the iperf3 run.
var probeOn bool

// iperfCmd runs iperf3, pinned to the CPUs of -iperf-cpus if given.
var iperfCmd = []string{"iperf3"}

type result struct {
	proto      string
	bps, bytes float64
	lost       float64
}

// iperfPort is iperf3's own port, where a run of one client meets its
// server.
const iperfPort = 5201

// iperf runs an iperf3 server through server and a client through client
// (each makes a command in its host) for secs seconds, on port.
func iperf(client, server func(name string, args ...string) *netns.Cmd, sa netip.Addr, port, secs int, udp string, streams int) (result, error) {
	srv := server(iperfCmd[0], append(iperfCmd[1:], "-s", "-1", "-B", sa.String(), "-p", strconv.Itoa(port))...)
	srv.Args[0] = netns.Prefix + "iperf3-s"
	if err := srv.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		srv.Process.Kill()
		srv.Wait()
	}()
	args := []string{"-c", sa.String(), "-p", strconv.Itoa(port), "-t", strconv.Itoa(secs), "-J", "-P", strconv.Itoa(streams)}
	if udp != "" {
		args = append(args, "-u", "-b", udp, "-l", "1400")
		if pacingUs > 0 {
			args = append(args, "--pacing-timer", strconv.Itoa(pacingUs))
		}
	} else if tcpRate != "" {
		args = append(args, "-b", tcpRate)
	}
	var out []byte
	var err error
	for try := 0; try < 20; try++ {
		time.Sleep(100 * time.Millisecond)
		cl := client(iperfCmd[0], append(iperfCmd[1:], args...)...)
		cl.Args[0] = netns.Prefix + "iperf3-c"
		out, err = cl.Output()
		if err == nil {
			break
		}
	}
	if err != nil {
		return result{}, fmt.Errorf("iperf3 client: %v\n%s", err, out)
	}
	var j struct {
		End struct {
			SumReceived struct {
				Bps   float64 `json:"bits_per_second"`
				Bytes float64 `json:"bytes"`
			} `json:"sum_received"`
			Sum struct {
				Bps   float64 `json:"bits_per_second"`
				Bytes float64 `json:"bytes"`
				Lost  float64 `json:"lost_percent"`
			} `json:"sum"`
		} `json:"end"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &j); err != nil {
		return result{}, fmt.Errorf("iperf3 output: %v", err)
	}
	if j.Error != "" {
		return result{}, errors.New("iperf3: " + j.Error)
	}
	if udp != "" {
		return result{proto: "udp", bps: j.End.Sum.Bps, bytes: j.End.Sum.Bytes, lost: j.End.Sum.Lost}, nil
	}
	return result{proto: "tcp", bps: j.End.SumReceived.Bps, bytes: j.End.SumReceived.Bytes}, nil
}
