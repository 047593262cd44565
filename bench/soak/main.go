// Command soak runs wanlab's router for a long time under load and checks
// that it neither grows nor loses count. bench/soak.sh runs it; it needs
// root.
//
//	soak [-d DURATION] [-flows N] [-tcp N] [-pps RATE] [-every INTERVAL] [-chain TC] [-csv FILE]
//
// It builds a client and a server namespace (wl-sk<pid>-c, -s) joined by
// the router over TUNs of kind vnet, with the chain in both directions.
// A load process in the client's namespace keeps N flows open towards a
// sink process in the server's: -tcp bulk TCP connections and the rest
// UDP flows (one socket each) sending -pps datagrams per second in all.
// Load and sink are this program, started again in the namespaces, so
// that the process measured holds the router and nothing else.
//
// Every -every it samples the process (resident memory, live heap after a
// collection, goroutines, open files, threads) and the router's counters,
// and prints a CSV row. At the end it stops the load, lets the path drain,
// and judges:
//
//   - flat: after the first fifth of the run (warm-up), goroutines and
//     open files do not change, threads rise by at most 4 over the
//     warm-up's most, and the live heap and resident memory grow by at
//     most 10% + 4 MiB beyond the buffers the packet pools add for a new
//     high of packets in flight;
//   - balanced, in each direction: segments in + duplicates = segments out
//   - drops + still queued, with nothing queued once drained and every
//     discipline's queue empty by its own count; the flows' counts add up
//     to the direction's; every UDP datagram the load sent is counted by
//     the router as delivered or dropped, or by the kernel in the ring in
//     front of it; the sink received no more than the router delivered.
//
// It prints the verdict as JSON and exits 1 if any check fails.
package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"wanlab/bench/internal/benchbed"
	"wanlab/link"
	"wanlab/netns"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/router"
	"wanlab/tcspec"
	"wanlab/tun"
)

func init() { runtime.LockOSThread() }

// Addresses and ports inside the soak's own namespaces.
var (
	clientAddr = netip.MustParseAddr("10.253.0.1")
	serverAddr = netip.MustParseAddr("10.253.0.2")
)

const (
	udpPort = 9000
	tcpPort = 9001
	tunName = "wl-tun"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "load":
			os.Exit(runLoad(os.Args[2:]))
		case "sink":
			os.Exit(runSink(os.Args[2:]))
		}
	}
	fs := flag.NewFlagSet("soak", flag.ExitOnError)
	o := options{}
	fs.DurationVar(&o.duration, "d", 30*time.Minute, "how long the load runs")
	fs.IntVar(&o.flows, "flows", 1000, "concurrent flows in all")
	fs.IntVar(&o.tcp, "tcp", 100, "of those, bulk TCP connections (the rest are UDP flows)")
	fs.IntVar(&o.pps, "pps", 20000, "UDP datagrams per second, all UDP flows together")
	fs.IntVar(&o.size, "size", 200, "UDP payload bytes")
	fs.DurationVar(&o.every, "every", 10*time.Second, "sampling interval")
	fs.StringVar(&o.chain, "chain", "netem delay 20ms limit 20000; tbf rate 100mbit burst 64k latency 50ms; fq_codel", "the chain of both directions, tc syntax")
	fs.StringVar(&o.csv, "csv", "", "also write the samples to this CSV file")
	fs.StringVar(&o.heapProfile, "heapprofile", "", "write heap profiles (go tool pprof) to FILE.warm at the end of the warm-up and to FILE at the end of the load: -diff_base shows what grew")
	fs.Parse(os.Args[1:])
	if o.tcp < 0 || o.tcp > o.flows || o.flows-o.tcp == 0 && o.pps > 0 {
		fmt.Fprintln(os.Stderr, "soak: -tcp must be between 0 and -flows, and leave UDP flows for -pps")
		os.Exit(2)
	}
	v, err := soak(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	fmt.Println(string(out))
	if !v.Pass {
		os.Exit(1)
	}
}

type options struct {
	duration, every time.Duration
	flows, tcp, pps int
	size            int
	chain, csv      string
	heapProfile     string
}

// sample is one row of the time series.
type sample struct {
	at                          time.Duration
	rss, heap                   uint64 // bytes: resident, live heap after a GC
	goroutines, fds, threads    int
	up, down                    router.DirSnapshot
	upSent, downSent, upDropped uint64
}

func soak(o options) (*verdict, error) {
	tb, c, s, err := benchbed.New("sk")
	if err != nil {
		return nil, err
	}
	defer tb.Close()
	specs, err := tcspec.ParseChain(o.chain, tcspec.Options{})
	if err != nil {
		return nil, err
	}
	cd, err := openTUN(tb, c, clientAddr, serverAddr)
	if err != nil {
		return nil, err
	}
	defer cd.Close()
	sd, err := openTUN(tb, s, serverAddr, clientAddr)
	if err != nil {
		return nil, err
	}
	defer sd.Close()
	r, err := router.New(router.Config{
		Up:       link.Config{Name: "up", Chain: specs, Env: qdisc.Env{Seed: 1}},
		Down:     link.Config{Name: "down", Chain: specs, Env: qdisc.Env{Seed: 2}},
		Client:   cd,
		Server:   sd,
		ClientIf: tunName,
		ServerIf: tunName,
		UpRing:   router.TUNRing(c, tunName),
		DownRing: router.TUNRing(s, tunName),
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	sink, err := start(tb, s, exe, "sink")
	if err != nil {
		return nil, err
	}
	defer sink.kill()
	load, err := start(tb, c, exe, "load", "-dst", serverAddr.String(), "-udp", strconv.Itoa(o.flows-o.tcp),
		"-tcp", strconv.Itoa(o.tcp), "-pps", strconv.Itoa(o.pps), "-size", strconv.Itoa(o.size))
	if err != nil {
		return nil, err
	}
	defer load.kill()

	var w *csv.Writer
	if o.csv != "" {
		f, err := os.Create(o.csv)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		w = csv.NewWriter(f)
		defer w.Flush()
	}
	stdout := csv.NewWriter(os.Stderr)
	header := []string{"t_s", "rss_kib", "heap_kib", "goroutines", "fds", "threads",
		"up_sent", "up_delivered", "up_dropped", "up_queued", "up_max_in_flight", "up_split", "up_malformed", "up_ring_drops", "up_write_drops", "up_flows", "up_late_p99_us",
		"down_sent", "down_delivered", "down_dropped", "down_queued", "down_ring_drops", "down_flows"}
	for _, cw := range []*csv.Writer{stdout, w} {
		if cw != nil {
			cw.Write(header)
			cw.Flush()
		}
	}
	var samples []sample
	begin := time.Now()
	tick := time.NewTicker(o.every)
	defer tick.Stop()
	for end := begin.Add(o.duration); ; {
		select {
		case err := <-done:
			return nil, fmt.Errorf("the router stopped: %v", err)
		case <-tick.C:
		}
		sm := takeSample(r, time.Since(begin))
		samples = append(samples, sm)
		if o.heapProfile != "" && len(samples) == warmUp(o) {
			if err := writeHeapProfile(o.heapProfile + ".warm"); err != nil {
				return nil, err
			}
		}
		row := sm.row()
		for _, cw := range []*csv.Writer{stdout, w} {
			if cw != nil {
				cw.Write(row)
				cw.Flush()
			}
		}
		if !time.Now().Before(end) {
			break
		}
	}

	if o.heapProfile != "" {
		if err := writeHeapProfile(o.heapProfile); err != nil {
			return nil, err
		}
	}
	loadOut, err := load.stop()
	if err != nil {
		return nil, fmt.Errorf("load: %v", err)
	}
	// Drain: every packet still in the path leaves or is dropped, before
	// the sink stops and counts what it received.
	drained := drain(r)
	sinkOut, err := sink.stop()
	if err != nil {
		return nil, fmt.Errorf("sink: %v", err)
	}
	// The sink's sockets close as it exits: their FINs, and the load
	// side's RSTs in reply, cross the path after the first drain.
	drained = drain(r) && drained
	final := r.Snapshot()
	cancel()
	if err := <-done; err != nil {
		return nil, fmt.Errorf("router: %v", err)
	}
	var ld loadResult
	var sk sinkResult
	if err := json.Unmarshal(loadOut, &ld); err != nil {
		return nil, fmt.Errorf("load's result %s: %v", loadOut, err)
	}
	if err := json.Unmarshal(sinkOut, &sk); err != nil {
		return nil, fmt.Errorf("sink's result %s: %v", sinkOut, err)
	}
	return judge(o, samples, final, drained, ld, sk), nil
}

// drain waits up to 10 s for the path to be empty in both directions and
// to stay empty, with nothing new arriving, for quietFor: packets in
// flight outside the router (a reply on its way back through a host's
// stack) arrive within a round trip of the chain's delays, which the
// default chain keeps well under it.
func drain(r *router.Router) bool {
	const quietFor = 500 * time.Millisecond
	var quietSince time.Time
	var lastIn uint64
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		sn := r.Snapshot()
		in := sn.Up.Counters.Sent + sn.Down.Counters.Sent
		if sn.Up.Counters.Queued != 0 || sn.Down.Counters.Queued != 0 || in != lastIn {
			quietSince, lastIn = time.Time{}, in
			continue
		}
		if quietSince.IsZero() {
			quietSince = time.Now()
		} else if time.Since(quietSince) >= quietFor {
			return true
		}
	}
	return false
}

func openTUN(tb *netns.Testbed, h *netns.Handle, self, peer netip.Addr) (tun.Device, error) {
	d, err := tun.Open(h, tunName, tun.Options{Kind: tun.VNet})
	if err != nil {
		return nil, err
	}
	for _, err := range []error{
		tb.AddDevice(h, tunName), h.LoopbackUp(), h.SetLinkUp(tunName),
		h.AddPeerAddr(tunName, self, netip.PrefixFrom(peer, 32)),
		// IPv4 only: no neighbour discovery or MLD beside the load.
		h.SetSysctl("net.ipv6.conf.all.disable_ipv6", "1"),
	} {
		if err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

func takeSample(r *router.Router, at time.Duration) sample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	sn := r.Snapshot()
	// Only the counters are kept: a snapshot's flows would make the
	// samples themselves grow the heap the soak watches.
	sn.Up.Flows, sn.Down.Flows, sn.Up.Qdiscs, sn.Down.Qdiscs = nil, nil, nil, nil
	sm := sample{at: at, heap: ms.HeapAlloc, goroutines: runtime.NumGoroutine(), up: sn.Up, down: sn.Down}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		sm.fds = len(ents)
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			switch f[0] {
			case "VmRSS:":
				kib, _ := strconv.ParseUint(f[1], 10, 64)
				sm.rss = kib << 10
			case "Threads:":
				sm.threads, _ = strconv.Atoi(f[1])
			}
		}
	}
	return sm
}

func (sm sample) row() []string {
	u, d := sm.up, sm.down
	n := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return []string{
		strconv.FormatFloat(sm.at.Seconds(), 'f', 1, 64), n(sm.rss >> 10), n(sm.heap >> 10),
		strconv.Itoa(sm.goroutines), strconv.Itoa(sm.fds), strconv.Itoa(sm.threads),
		n(u.Counters.Sent), n(u.Counters.Delivered), n(u.Counters.Dropped), n(u.Counters.Queued), strconv.Itoa(u.MaxInFlight), n(u.GSO.Split),
		n(u.Malformed), n(u.Ring.Drops), n(u.WriteDrops), strconv.Itoa(u.FlowsTotal), strconv.FormatFloat(float64(u.Lateness.P99Ns)/1e3, 'f', 1, 64),
		n(d.Counters.Sent), n(d.Counters.Delivered), n(d.Counters.Dropped), n(d.Counters.Queued), n(d.Ring.Drops), strconv.Itoa(d.FlowsTotal),
	}
}

// verdict is what the soak prints at the end.
type verdict struct {
	Pass     bool     `json:"pass"`
	Failures []string `json:"failures"`
	Seconds  float64  `json:"seconds"`
	Samples  int      `json:"samples"`
	// Flatness, from the end of the warm-up to the end.
	Goroutines [2]int     `json:"goroutines"`
	Fds        [2]int     `json:"fds"`
	Threads    [2]int     `json:"threads"`
	RSSMiB     [2]float64 `json:"rss_mib"`
	HeapMiB    [2]float64 `json:"heap_mib"`
	// Balance of each direction.
	Up   balance    `json:"up"`
	Down balance    `json:"down"`
	Load loadResult `json:"load"`
	Sink sinkResult `json:"sink"`
}

type balance struct {
	Sent        uint64 `json:"sent"`
	Duplicated  uint64 `json:"duplicated"`
	Delivered   uint64 `json:"delivered"`
	Dropped     uint64 `json:"dropped"`
	Queued      uint64 `json:"queued"`
	Split       uint64 `json:"gso_split"`
	Whole       bool   `json:"gso_whole"`
	GROWrites   uint64 `json:"gro_writes"`
	Malformed   uint64 `json:"malformed"`
	WriteDrops  uint64 `json:"write_drops"`
	RingDrops   uint64 `json:"ring_drops"`
	Flows       int    `json:"flows"`
	MaxInFlight int    `json:"max_in_flight"`
	QdiscQlen   int    `json:"qdisc_qlen"`
	// UDPCounted is what the router counted of the load's UDP flows:
	// delivered + dropped.
	UDPCounted   uint64  `json:"udp_counted,omitempty"`
	UDPDelivered uint64  `json:"udp_delivered,omitempty"`
	TCPPayload   uint64  `json:"tcp_payload_bytes,omitempty"`
	LateP99Us    float64 `json:"lateness_p99_us"`
	LateMaxUs    float64 `json:"lateness_max_us"`
}

func judge(o options, samples []sample, final router.Snapshot, drained bool, ld loadResult, sk sinkResult) *verdict {
	v := &verdict{Load: ld, Sink: sk, Samples: len(samples)}
	fail := func(f string, args ...any) { v.Failures = append(v.Failures, fmt.Sprintf(f, args...)) }
	if len(samples) < 2 {
		fail("%d samples: run longer than two sampling intervals", len(samples))
	} else {
		v.Seconds = samples[len(samples)-1].at.Seconds()
		warm := max(len(samples)/5, 1)
		if warm >= len(samples)-1 {
			warm = len(samples) - 2
		}
		rest := samples[warm:]
		first, last := rest[0], rest[len(rest)-1]
		v.Goroutines = spread(rest, func(s sample) int { return s.goroutines })
		v.Fds = spread(rest, func(s sample) int { return s.fds })
		v.Threads = spread(rest, func(s sample) int { return s.threads })
		v.RSSMiB = [2]float64{mib(first.rss), mib(last.rss)}
		v.HeapMiB = [2]float64{mib(first.heap), mib(last.heap)}
		for _, x := range []struct {
			name string
			r    [2]int
		}{{"goroutines", v.Goroutines}, {"open files", v.Fds}} {
			if x.r[0] != x.r[1] {
				fail("%s ranged from %d to %d after the warm-up", x.name, x.r[0], x.r[1])
			}
		}
		// The runtime adds a thread when goroutines block in system
		// calls at once; a few more than in the warm-up is its
		// scheduling, a steady rise a leak.
		warmThreads := spread(samples[:warm+1], func(s sample) int { return s.threads })
		if v.Threads[1] > warmThreads[1]+4 {
			fail("threads rose from at most %d in the warm-up to %d", warmThreads[1], v.Threads[1])
		}
		// The packet pools keep the buffers of the most packets ever in
		// flight: a new high in the queues' occupancy grows the heap by
		// a small buffer each, and that is not a leak.
		inFlight := func(s sample) int { return s.up.MaxInFlight + s.down.MaxInFlight }
		pools := float64(inFlight(last)-inFlight(first)) * poolBufferBytes
		grow := func(a, b uint64) bool { return float64(b) > float64(a)*1.1+4<<20+pools }
		if grow(first.heap, maxOf(rest, func(s sample) uint64 { return s.heap })) {
			fail("live heap grew from %.1f MiB to a peak of %.1f MiB after the warm-up (%.1f MiB of it new pool buffers)", mib(first.heap), mib(maxOf(rest, func(s sample) uint64 { return s.heap })), pools/(1<<20))
		}
		if grow(first.rss, last.rss) {
			fail("resident memory grew from %.1f MiB to %.1f MiB after the warm-up (%.1f MiB of it new pool buffers)", mib(first.rss), mib(last.rss), pools/(1<<20))
		}
	}
	if !drained {
		fail("the path did not drain within 10 s of the load's end")
	}
	for i, d := range []router.DirSnapshot{final.Up, final.Down} {
		c := d.Counters
		b := balance{Sent: c.Sent, Duplicated: c.Duplicated, Delivered: c.Delivered, Dropped: c.Dropped, Queued: c.Queued,
			Split: d.GSO.Split, Whole: d.GSO.Whole, GROWrites: d.GSO.GROWrites, Malformed: d.Malformed, WriteDrops: d.WriteDrops, RingDrops: d.Ring.Drops, Flows: d.FlowsTotal, MaxInFlight: d.MaxInFlight,
			LateP99Us: float64(d.Lateness.P99Ns) / 1e3, LateMaxUs: float64(d.Lateness.MaxNs) / 1e3}
		if c.Sent+c.Duplicated != c.Delivered+c.Dropped+c.Queued {
			fail("%s: sent %d + duplicated %d != delivered %d + dropped %d + queued %d", d.Name, c.Sent, c.Duplicated, c.Delivered, c.Dropped, c.Queued)
		}
		for _, q := range d.Qdiscs {
			b.QdiscQlen += q.Counters.Qlen
			if q.Counters.Qlen != 0 || q.Counters.Backlog != 0 {
				fail("%s: %s %s holds %d packets, %d bytes after draining", d.Name, q.Kind, q.Handle, q.Counters.Qlen, q.Counters.Backlog)
			}
		}
		if d.Ring.Err != "" {
			fail("%s: ring counters: %s", d.Name, d.Ring.Err)
		}
		// The flows' counts add up to the direction's: every segment
		// delivered or dropped belongs to a flow (all traffic here is
		// IPv4 TCP or UDP), and write drops count as dropped in flows.
		var fDelivered, fDropped uint64
		for _, f := range d.Flows {
			fDelivered += f.Packets
			fDropped += f.Dropped
			if f.Flow.Proto == packet.ProtoUDP && f.Flow.Dst.Port() == udpPort {
				b.UDPCounted += f.Packets + f.Dropped
				b.UDPDelivered += f.Packets
			}
			if f.Flow.Proto == packet.ProtoTCP && f.Flow.Dst.Port() == tcpPort {
				b.TCPPayload += f.Payload
			}
		}
		if fDelivered+d.WriteDrops != c.Delivered || fDropped != c.Dropped+d.WriteDrops {
			fail("%s: flows delivered %d and dropped %d; the direction delivered %d (of which %d refused by the device) and dropped %d",
				d.Name, fDelivered, fDropped, c.Delivered, d.WriteDrops, c.Dropped)
		}
		if i == 0 {
			v.Up = b
			// Every datagram the load's kernel accepted reached the
			// router or was dropped in the ring in front of it.
			if b.UDPCounted > ld.UDPSent || ld.UDPSent-b.UDPCounted > b.RingDrops {
				fail("up: the load sent %d UDP datagrams, the router counted %d delivered or dropped, the ring dropped %d",
					ld.UDPSent, b.UDPCounted, b.RingDrops)
			}
			// The server's kernel takes every datagram the router
			// delivered: to the sink, or counted in its own UDP drops
			// (a full socket buffer).
			if sk.UDPReceived+sk.UDPInErrors != b.UDPDelivered {
				fail("up: the sink received %d UDP datagrams and its kernel dropped %d, but the router delivered %d",
					sk.UDPReceived, sk.UDPInErrors, b.UDPDelivered)
			}
			if sk.TCPReceived > b.TCPPayload {
				fail("up: the sink received %d TCP bytes, more than the %d of payload the router carried", sk.TCPReceived, b.TCPPayload)
			}
			// The TCP load sends GSO super-packets. They cross whole
			// (the chain deciding per segment) and leave coalesced again
			// where they can, or they are split before the link; either
			// way the super-packet path must have been exercised.
			if o.tcp > 0 && b.Split == 0 && !(b.Whole && b.GROWrites > 0) {
				fail("up: no GSO super-packet crossed whole or split: the TCP load did not exercise the super-packet path")
			}
		} else {
			v.Down = b
		}
	}
	v.Pass = len(v.Failures) == 0
	return v
}

// poolBufferBytes is what one more packet in flight costs the router's
// pools: a small buffer (2 KiB of data and 64 bytes of headroom) and its
// packet.Packet.
const poolBufferBytes = 2048 + 64 + 256

func spread(ss []sample, f func(sample) int) [2]int {
	lo, hi := f(ss[0]), f(ss[0])
	for _, s := range ss {
		lo, hi = min(lo, f(s)), max(hi, f(s))
	}
	return [2]int{lo, hi}
}

func maxOf(ss []sample, f func(sample) uint64) uint64 {
	m := uint64(0)
	for _, s := range ss {
		m = max(m, f(s))
	}
	return m
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// child is a load or sink process in a namespace: it prints "ready" when
// it is set up, runs until SIGTERM and then prints its result as JSON.
type child struct {
	cmd *netns.Cmd
	out *bufio.Scanner
}

func start(tb *netns.Testbed, ns *netns.Handle, exe string, args ...string) (*child, error) {
	cmd := tb.Command(ns, exe, args...)
	cmd.Args[0] = netns.Prefix + tb.Name() + "-" + args[0]
	cmd.Stderr = os.Stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, out: bufio.NewScanner(pipe)}
	if !c.out.Scan() || c.out.Text() != "ready" {
		c.kill()
		return nil, fmt.Errorf("%s did not start: %q %v", args[0], c.out.Text(), c.out.Err())
	}
	return c, nil
}

// stop ends the child with SIGTERM and returns the JSON it printed.
func (c *child) stop() (json.RawMessage, error) {
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return nil, err
	}
	var out json.RawMessage
	if c.out.Scan() {
		out = json.RawMessage(c.out.Text())
	}
	err := c.cmd.Wait()
	if err == nil && out == nil {
		err = errors.New("no result printed")
	}
	return out, err
}

func (c *child) kill() {
	if c.cmd.ProcessState == nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// warmUp returns the number of samples the warm-up takes: the first fifth
// of the run.
func warmUp(o options) int { return max(int(o.duration/o.every)/5, 1) }
