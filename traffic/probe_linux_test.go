package traffic

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/internal/traffictest"
)

// checkAnswered checks a probe stream on loopback: every probe answered,
// with the TOS asked for, and the one-way delays consistent with the round
// trips.
func checkAnswered(t *testing.T, r *ProbeResult, want int, tos int) {
	t.Helper()
	if r.Error != "" {
		t.Errorf("%s: error %s", r.Label, r.Error)
	}
	if len(r.Probes) != want || r.Answered != want {
		t.Fatalf("%s: %d probes sent, %d answered; want %d and %d", r.Label, len(r.Probes), r.Answered, want, want)
	}
	for i, p := range r.Probes {
		if p.Seq != uint32(i) || p.Lost {
			t.Errorf("%s: probe %d: %+v", r.Label, i, p)
		}
		if p.TOSDown != tos {
			t.Errorf("%s: probe %d: reply arrived with TOS %#x, want %#x", r.Label, i, p.TOSDown, tos)
		}
		if !r.OneWay {
			continue
		}
		if p.TOSUp != tos {
			t.Errorf("%s: probe %d: arrived at the server with TOS %#x, want %#x", r.Label, i, p.TOSUp, tos)
		}
		// One clock: both one-way delays are positive, and with the
		// server's turnaround they make up the round trip.
		if p.OWDUp <= 0 || p.OWDDown <= 0 || p.ServerTime < 0 {
			t.Errorf("%s: probe %d: owd up %v down %v server %v", r.Label, i, p.OWDUp, p.OWDDown, p.ServerTime)
		}
		if p.OWDUp+p.ServerTime+p.OWDDown != p.RTT {
			t.Errorf("%s: probe %d: up %v + server %v + down %v != rtt %v", r.Label, i, p.OWDUp, p.ServerTime, p.OWDDown, p.RTT)
		}
	}
}

// judgeLatency judges the figures of a probe stream on loopback that
// depend on the machine's load: the round trips are short, and so is the
// server's turnaround.
func judgeLatency(rep roottest.Reporter, r *ProbeResult) {
	var rtts, turns []float64
	for _, p := range r.Probes {
		rtts = append(rtts, float64(p.RTT)/1e6)
		turns = append(turns, float64(p.ServerTime)/1e6)
	}
	if len(rtts) == 0 {
		rep.Errorf("%s: no probes", r.Label)
		return
	}
	if r.OneWay {
		// The turnaround is a clock read and an encode: microseconds,
		// unless the machine took the thread away in between.
		slices.Sort(turns)
		if med := turns[len(turns)/2]; med > 0.1 {
			rep.Errorf("%s: median server turnaround %.3f ms, want under 0.1 ms", r.Label, med)
		}
	}
	slices.Sort(rtts)
	rep.Logf("%s: %d probes, rtt min %.3f median %.3f max %.3f ms", r.Label, len(rtts), rtts[0], rtts[len(rtts)/2], rtts[len(rtts)-1])
	if med := rtts[len(rtts)/2]; med > 2 {
		rep.Errorf("%s: median loopback rtt %.3f ms, want under 2 ms", r.Label, med)
	}
	if rtts[len(rtts)-1] > 50 {
		rep.Errorf("%s: largest loopback rtt %.3f ms, want under 50 ms", r.Label, rtts[len(rtts)-1])
	}
}

func TestUDPProbesLoopback(t *testing.T) {
	quiet(t)
	noLeaks(t)
	roottest.Twice(t, "UDP probes on loopback", func(rep roottest.Reporter) {
		c4, s4 := loopback(lo4)
		c6, s6 := loopback(lo6)
		v4 := traffictest.Must(t, NewUDPProbe, UDPProbeConfig{Label: "UDP EF", Client: c4, Server: s4, TOS: 0xb8, Interval: 10 * time.Millisecond, Stop: 500 * time.Millisecond})
		v6 := traffictest.Must(t, NewUDPProbe, UDPProbeConfig{Label: "UDP6 BK", Client: c6, Server: s6, TOS: 0x20, Size: 172, Stop: 500 * time.Millisecond})
		res, err := Run(context.Background(), Plan{Step: 20 * time.Millisecond, Length: 600 * time.Millisecond, Flows: []Flow{v4, v6}})
		if err != nil {
			t.Fatal(err)
		}
		r4, r6 := res.Flows[0].(*ProbeResult), res.Flows[1].(*ProbeResult)
		checkAnswered(t, r4, 50, 0xb8)
		checkAnswered(t, r6, 25, 0x20)
		judgeLatency(rep, r4)
		judgeLatency(rep, r6)
		if r6.Interval != 20*time.Millisecond || r6.Size != 172 {
			t.Errorf("interval %v size %d: want the plan's step, 20ms, and 172", r6.Interval, r6.Size)
		}
		// The send schedule is absolute: probe i leaves at T0 + i·interval,
		// give or take the wake-up's lateness, never early.
		for i, p := range r6.Probes {
			due := res.T0.Add(time.Duration(i) * 20 * time.Millisecond)
			if p.Sent < due {
				t.Errorf("probe %d sent %v before its time %v", i, p.Sent-res.T0, due-res.T0)
			}
		}
	})
}

// lossyNet makes sockets as Local does, but the UDP sockets it listens
// with lose probes: dropUp(seq) makes the server never see the probe (it
// is read and thrown away below it), dropDown(seq) swallows the server's
// reply. The client side is real and untouched.
type lossyNet struct {
	Local
	dropUp, dropDown func(seq uint32) bool
}

func (n lossyNet) ListenPacket(ctx context.Context, network, address string, control Control) (net.PacketConn, error) {
	c, err := n.Local.ListenPacket(ctx, network, address, control)
	if err != nil {
		return nil, err
	}
	return &lossyConn{UDPConn: c.(*net.UDPConn), n: n}, nil
}

type lossyConn struct {
	*net.UDPConn
	n lossyNet
}

func (c *lossyConn) ReadMsgUDPAddrPort(b, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error) {
	for {
		n, oobn, flags, addr, err = c.UDPConn.ReadMsgUDPAddrPort(b, oob)
		if err != nil {
			return
		}
		if h, ok := decodeProbe(b[:n]); ok && c.n.dropUp != nil && c.n.dropUp(h.seq) {
			continue
		}
		return
	}
}

func (c *lossyConn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	if h, ok := decodeProbe(b); ok && c.n.dropDown != nil && c.n.dropDown(h.seq) {
		return len(b), nil
	}
	return c.UDPConn.WriteToUDPAddrPort(b, addr)
}

func TestUDPProbeLossDirection(t *testing.T) {
	noLeaks(t)
	every3rd := func(seq uint32) bool { return seq%3 == 2 }
	someDown := func(seq uint32) bool { return seq == 1 || seq == 7 || seq == 8 }
	c, s := loopback(lo4)
	sUp, sDown := s, s
	sUp.Net = lossyNet{dropUp: every3rd}
	sDown.Net = lossyNet{dropDown: someDown}
	// Probes over 300 ms; the run goes on past their loss timeout, so the
	// losses are declared on the grid, not at the end.
	up := traffictest.Must(t, NewUDPProbe, UDPProbeConfig{Label: "up", Client: c, Server: sUp, Interval: 20 * time.Millisecond, Stop: 300 * time.Millisecond})
	down := traffictest.Must(t, NewUDPProbe, UDPProbeConfig{Label: "down", Client: c, Server: sDown, Interval: 20 * time.Millisecond, Stop: 300 * time.Millisecond})
	res, err := Run(context.Background(), Plan{Step: 50 * time.Millisecond, Length: 300*time.Millisecond + LossTimeoutMin + 100*time.Millisecond, Flows: []Flow{up, down}})
	if err != nil {
		t.Fatal(err)
	}
	for i, drop := range []func(uint32) bool{every3rd, someDown} {
		r := res.Flows[i].(*ProbeResult)
		if len(r.Probes) != 15 {
			t.Fatalf("%s: %d probes, want 15", r.Label, len(r.Probes))
		}
		want := LostUp
		if i == 1 {
			want = LostDown
		}
		lost := 0
		for _, p := range r.Probes {
			switch {
			case drop(p.Seq) && (!p.Lost || p.LostDir != want || p.LostAtEnd || p.RTT != 0):
				t.Errorf("%s: probe %d: %+v, want lost %s by timeout", r.Label, p.Seq, p, want)
			case !drop(p.Seq) && p.Lost:
				t.Errorf("%s: probe %d lost (%s), want answered", r.Label, p.Seq, p.LostDir)
			}
			if p.Lost {
				lost++
			}
		}
		if r.Answered != 15-lost || (i == 0 && (r.LostUp != 5 || r.LostDown != 0)) || (i == 1 && (r.LostDown != 3 || r.LostUp != 0)) {
			t.Errorf("%s: answered %d, lost up %d down %d", r.Label, r.Answered, r.LostUp, r.LostDown)
		}
	}
}

func TestICMPProbes(t *testing.T) {
	roottest.NeedRoot(t)
	noLeaks(t)
	roottest.Twice(t, "ICMP probes on loopback", func(rep roottest.Reporter) {
		c4, _ := loopback(lo4)
		v4 := traffictest.Must(t, NewICMPProbe, ICMPProbeConfig{Label: "ICMP", Client: c4, Target: lo4, Interval: 10 * time.Millisecond, TOS: 0x20, Stop: 400 * time.Millisecond})
		v6 := traffictest.Must(t, NewICMPProbe, ICMPProbeConfig{Label: "ICMP6", Client: Host{Net: Local{}}, Target: lo6, Stop: 400 * time.Millisecond})
		res, err := Run(context.Background(), Plan{Step: 20 * time.Millisecond, Length: 500 * time.Millisecond, Flows: []Flow{v4, v6}})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []int{40, 20} {
			r := res.Flows[i].(*ProbeResult)
			checkAnswered(t, r, want, []int{0x20, 0}[i])
			judgeLatency(rep, r)
		}
	})
}
