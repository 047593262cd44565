package scalableudp

import (
	"context"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"wanlab/internal/traffictest"
)

func listen(t testing.TB) net.PacketConn { return listenOn(t, "127.0.0.1:0") }

func listenOn(t testing.TB, addr string) net.PacketConn {
	t.Helper()
	c, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type pair struct {
	snd  *Sender
	rcv  *Receiver
	wait func(testing.TB) // waits for both Runs once ctx has ended
}

// start runs a sender and a receiver on loopback sockets until ctx ends.
func start(t testing.TB, ctx context.Context, cfg Config) *pair {
	t.Helper()
	return startOn(t, ctx, cfg, "127.0.0.1:0")
}

func startOn(t testing.TB, ctx context.Context, cfg Config, addr string) *pair {
	t.Helper()
	sc, rc := listenOn(t, addr), listenOn(t, addr)
	p := &pair{}
	var err error
	if p.rcv, err = NewReceiver(rc, 1, cfg.TOS); err != nil {
		t.Fatal(err)
	}
	if p.snd, err = NewSender(sc, rc.LocalAddr(), cfg); err != nil {
		t.Fatal(err)
	}
	p.wait = traffictest.Runs(ctx, p.rcv.Run, p.snd.Run)
	return p
}

// Over loopback every data packet arrives ECT(1) with the DSCP asked for,
// the ACKs carry the counters, and the sender's figures follow them.
// Ending the context leaves no goroutine or file descriptor behind.
func TestLoopbackECT1(t *testing.T) {
	for _, c := range []struct{ name, addr string }{{"IPv4", "127.0.0.1:0"}, {"IPv6", "[::1]:0"}} {
		t.Run(c.name, func(t *testing.T) { testLoopbackECT1(t, c.addr) })
	}
}

func testLoopbackECT1(t *testing.T, addr string) {
	if c, err := net.ListenPacket("udp", addr); err != nil {
		t.Skipf("skipped: no %s loopback: %v", addr, err)
	} else {
		c.Close()
	}
	traffictest.NoLeaks(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	p := startOn(t, ctx, Config{TOS: 0xb8 | 2, MaxWindow: 20}, addr) // EF, and ECT(0) asked for: replaced by ECT(1)
	time.Sleep(200 * time.Millisecond)
	cancel()
	p.wait(t)
	rs, ss := p.rcv.Stats(), p.snd.Stats()
	t.Logf("receiver %+v", rs.ReceiverStats)
	t.Logf("sender cwnd %.1f, SRTT %v, sent %d, acks %d", ss.Cwnd, ss.SRTT, ss.Sent, ss.Acks)
	if ss.TOS != 0xb9 {
		t.Errorf("sender TOS %#x, want 0xb9 (EF with ECT(1))", ss.TOS)
	}
	if rs.Packets < 100 || rs.ECT1Packets != rs.Packets || rs.CEPackets != 0 || rs.NoTOS != 0 || rs.BadPackets != 0 {
		t.Errorf("receiver: %d packets, %d ECT(1), %d CE, %d without a TOS, %d bad: want every one of at least 100 ECT(1)",
			rs.Packets, rs.ECT1Packets, rs.CEPackets, rs.NoTOS, rs.BadPackets)
	}
	if ss.Acks == 0 || ss.ECT1Packets == 0 || ss.SRTT <= 0 || ss.SRTT > 50*time.Millisecond || ss.Cwnd != 20 {
		t.Errorf("sender: %d ACKs, %d ECT(1) reported, SRTT %v, cwnd %v: want ACKs, a loopback RTT and the window at its bound of 20", ss.Acks, ss.ECT1Packets, ss.SRTT, ss.Cwnd)
	}
	if ss.Sent < rs.Packets || ss.BytesSent != ss.Sent*uint64(p.snd.PacketSize()) {
		t.Errorf("sent %d packets, %d bytes; received %d", ss.Sent, ss.BytesSent, rs.Packets)
	}
}

func TestConfigErrors(t *testing.T) {
	peer := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{PacketSize: 70000}, "at most 65507"},
		{Config{PacketSize: 20}, "must exceed the 20-byte header"},
		{Config{TOS: 256}, "not a byte"},
		{Config{MaxWindow: 1}, "at least 2"},
	} {
		c2 := listen(t)
		if _, err := NewSender(c2, peer, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewSender(%+v): %v, want an error saying %q", c.cfg, err, c.want)
		}
		c2.Close()
	}
	if _, err := NewSender(otherConn{}, peer, Config{}); err == nil || !strings.Contains(err.Error(), "give a *net.UDPConn") {
		t.Errorf("NewSender on a PacketConn that is not UDP: %v", err)
	}
}

type otherConn struct{ net.PacketConn }

// BenchmarkTransfer runs a loopback transfer; allocs/op are the
// allocations per data packet of both sides together.
func BenchmarkTransfer(b *testing.B) {
	ctx, cancel := context.WithCancel(b.Context())
	p := start(b, ctx, Config{MaxWindow: 20})
	time.Sleep(100 * time.Millisecond)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	n0 := p.rcv.Stats().Packets
	b.ResetTimer()
	for p.rcv.Stats().Packets-n0 < uint64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N), "allocs/packet")
	cancel()
	p.wait(b)
}
