package router

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/link"
	"wanlab/netns"
	"wanlab/packet"
	"wanlab/packetsock"
	"wanlab/qdisc"
)

// frameBed is two hosts on one subnet, each with a veth into a third
// namespace where a router runs between packet sockets on the two other
// ends, which carry no addresses: everything the hosts say to each other,
// ARP included, crosses the router.
type frameBed struct {
	bed
	dc, ds *packetsock.Device
}

// frameBedOptions configure newFrameBed.
type frameBedOptions struct {
	up, down string        // chains in tc syntax
	upHold   time.Duration // how long the up loop is held before each read that finds a frame
}

// The router's ends of the two veth pairs, and the hosts'.
const (
	routerClientIf = "wl-rc"
	routerServerIf = "wl-rs"
	hostIf         = "wl-h0"
)

// newFrameBed builds namespaces wl-tNNNNNN-c, -r and -s: the client
// 10.246.X.1/24 and fd7a:X::1/64, the server 10.246.X.2/24 and
// fd7a:X::2/64, each on a veth to the router's namespace, whose ends carry
// no addresses and no IPv6 (their kernel drops its copy of every frame:
// no address is its, and it does not forward). It runs a router between
// packet sockets on those ends until the test ends.
func newFrameBed(t *testing.T, o frameBedOptions) *frameBed {
	t.Helper()
	roottest.NeedRealRoot(t, roottest.PacketPlaneNeedsRoot)
	tb := roottest.NewTestbed(t)
	x := rand.IntN(256)
	ns := func(role string) *netns.Handle {
		h, err := tb.Namespace(role)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.LoopbackUp(); err != nil {
			t.Fatal(err)
		}
		return h
	}
	c, r, s := ns("c"), ns("r"), ns("s")
	for _, k := range []string{"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"} {
		if err := r.SetSysctl(k, "1"); err != nil {
			t.Fatal(err)
		}
	}
	b := &frameBed{bed: bed{tb: tb}}
	for _, h := range []struct {
		ns   *netns.Handle
		end  string
		self **host
		i    int
	}{{c, routerClientIf, &b.c, 1}, {s, routerServerIf, &b.s, 2}} {
		roottest.Veth(t, tb, h.ns, hostIf, r, h.end)
		v4 := netip.MustParsePrefix(fmt.Sprintf("10.246.%d.%d/24", x, h.i))
		v6 := netip.MustParsePrefix(fmt.Sprintf("fd7a:%x::%d/64", x, h.i))
		for _, a := range []netip.Prefix{v4, v6} {
			if err := h.ns.AddAddr(hostIf, a); err != nil {
				t.Fatal(err)
			}
		}
		*h.self = &host{ns: h.ns, v4: v4.Addr(), v6: v6.Addr()}
	}
	open := func(ifname string) *packetsock.Device {
		d, err := packetsock.Open(r, ifname, packetsock.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	b.dc, b.ds = open(routerClientIf), open(routerServerIf)
	cfg := Config{
		Up:       link.Config{Name: "up", Chain: mustChain(t, o.up), Env: qdisc.Env{Seed: 1}},
		Down:     link.Config{Name: "down", Chain: mustChain(t, o.down), Env: qdisc.Env{Seed: 2}},
		Client:   b.dc,
		Server:   b.ds,
		ClientIf: routerClientIf,
		ServerIf: routerServerIf,
		UpRing:   PacketRing(b.dc),
		DownRing: PacketRing(b.ds),
	}
	b.run(t, cfg, func(r *Router) {
		if o.upHold > 0 {
			r.up.in.(*frameIngress).hold = func() { time.Sleep(o.upHold) }
		}
	})
	return b
}

// TestFramePing pings across the router on packet sockets, IPv4 and IPv6,
// through netem delay 10ms each way: the round trips are 20 ms and a
// little, never less; the hosts found each other by ARP and NDP, ARP
// outside the link and NDP (ICMPv6) through it.
func TestFramePing(t *testing.T) {
	b := newFrameBed(t, frameBedOptions{up: "netem delay 10ms", down: "netem delay 10ms"})
	roottest.Twice(t, "ping", func(r roottest.Reporter) {
		for _, dst := range []netip.Addr{b.s.v4, b.s.v6} {
			rtts := b.pingRTTs(t, b.c, dst, 10)
			med := rtts[len(rtts)/2]
			r.Logf("ping %s: min %.3f median %.3f max %.3f ms", dst, rtts[0], med, rtts[len(rtts)-1])
			if rtts[0] < 20 || med >= 25 && !raceEnabled {
				r.Errorf("ping %s: min %.3f median %.3f ms; want none below 20 ms and the median below 25", dst, rtts[0], med)
			}
		}
	})
	s := b.r.Snapshot()
	for _, d := range []DirSnapshot{s.Up, s.Down} {
		t.Logf("%s: delay min %.0f mean %.0f ns, lateness %+v, ring wait %+v, non-IP %+v, ring %d frames %d drops", d.Name,
			d.Counters.Delay.Min, d.Counters.Delay.Mean, d.Lateness, d.Ring.Wait, d.NonIP, d.Ring.Size, d.Ring.Drops)
		if d.NonIP == nil || d.NonIP.Frames == 0 || d.NonIP.Refused != 0 {
			t.Errorf("%s: non-IP frames %+v: ARP should have crossed", d.Name, d.NonIP)
		}
		if d.Counters.Delay.Min < 10e6 || d.Ring.Size < packetsock.DefaultFrames || d.Ring.Err != "" {
			t.Errorf("%s: delay min %.0f ns, ring %+v", d.Name, d.Counters.Delay.Min, d.Ring)
		}
		if !d.GSO.Whole {
			t.Errorf("%s: super-packets do not cross whole between veths", d.Name)
		}
	}
	var ndp bool
	for _, f := range s.Up.Flows {
		ndp = ndp || f.Flow.Proto == packet.ProtoICMPv6
	}
	if !ndp {
		t.Errorf("no ICMPv6 flow up: NDP should cross the link; flows %+v", s.Up.Flows)
	}
}

// TestFrameTCPThroughTBF sends a few MB over TCP through tbf at 50 Mbit/s:
// the transfer completes at the shaper's pace, in super-packets that the
// router counts byte for byte.
func TestFrameTCPThroughTBF(t *testing.T) {
	b := newFrameBed(t, frameBedOptions{up: "tbf rate 50mbit burst 32k latency 50ms"})
	const size = 4 << 20
	el := b.transfer(t, b.s.v4, randomData(size))
	rate := float64(size) * 8 / el.Seconds() / 1e6
	s := b.r.Snapshot()
	up := s.Up
	t.Logf("%d MB in %v = %.1f Mbit/s; up: sent %d delivered %d dropped %d, split %d, GRO writes %d, lateness %+v, ring wait %+v, ring drops %d",
		size>>20, el.Round(time.Millisecond), rate, up.Counters.Sent, up.Counters.Delivered, up.Counters.Dropped, up.GSO.Split, up.GSO.GROWrites, up.Lateness, up.Ring.Wait, up.Ring.Drops)
	if rate > 50 {
		t.Errorf("%.1f Mbit/s of payload through a 50 Mbit/s shaper", rate)
	}
	var payload uint64
	for _, f := range up.Flows {
		if f.Flow.Proto == packet.ProtoTCP {
			payload += f.Payload
		}
	}
	if payload < size || up.Malformed != 0 || up.WriteDrops != 0 {
		t.Errorf("up carried %d bytes of TCP payload (want at least %d), %d malformed, %d write drops", payload, size, up.Malformed, up.WriteDrops)
	}
	if !up.GSO.Whole {
		t.Error("super-packets did not enter the link whole")
	}
}

// TestFrameLateRead holds the up loop 5 ms before each read
// that finds a frame, as a loop busy elsewhere would be: the packets
// still enter netem delay 10ms at the kernel's time of their arrival, so
// the router's delay on them is 10 ms and the hosts see 10 ms, not 15,
// while the ring wait shows the late reads.
func TestFrameLateRead(t *testing.T) {
	b := newFrameBed(t, frameBedOptions{up: "netem delay 10ms", upHold: 5 * time.Millisecond})
	roottest.Twice(t, "ping", func(r roottest.Reporter) {
		rtts := b.pingRTTs(t, b.c, b.s.v4, 10)
		med := rtts[len(rtts)/2]
		r.Logf("ping: min %.3f median %.3f max %.3f ms", rtts[0], med, rtts[len(rtts)-1])
		// A read-time stamp would make it 15 ms and more.
		if rtts[0] < 10 || med >= 13 && !raceEnabled {
			r.Errorf("ping: min %.3f median %.3f ms; want 10 ms and a little, not the 15 of a late read", rtts[0], med)
		}
	})
	up := b.r.Snapshot().Up
	d, w := up.Counters.Delay, up.Ring.Wait
	t.Logf("up: delay min %.3f mean %.3f ms, ring wait %+v, lateness %+v", d.Min/1e6, d.Mean/1e6, w, up.Lateness)
	if d.Min < 10e6 || d.P50 >= 12e6 && !raceEnabled {
		t.Errorf("up: delay min %.3f median %.3f ms; want 10 and a little", d.Min/1e6, d.P50/1e6)
	}
	if w == nil || w.P50Ns < 5e6 {
		t.Errorf("up: ring wait %+v; want the 5 ms the loop was held", w)
	}
}
