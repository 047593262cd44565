package tfrcudp

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"wanlab/internal/traffictest"
	"wanlab/tfrc"
)

func listen(t testing.TB) net.PacketConn {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// settled waits until the goroutine count is back to n: goroutines that
// have been told to end take a moment to be reaped.
func settled(n int) int {
	got := runtime.NumGoroutine()
	for i := 0; i < 200 && got > n; i++ {
		time.Sleep(10 * time.Millisecond)
		got = runtime.NumGoroutine()
	}
	return got
}

type pair struct {
	snd  *Sender
	rcv  *Receiver
	sc   net.PacketConn
	rc   net.PacketConn
	wait func(testing.TB) // waits for both Runs once ctx has ended
}

// start runs a sender and a receiver on loopback sockets until ctx ends.
func start(t testing.TB, ctx context.Context, cfg Config) *pair {
	t.Helper()
	return startOn(t, ctx, cfg, listen(t), listen(t))
}

func startOn(t testing.TB, ctx context.Context, cfg Config, sc, rc net.PacketConn) *pair {
	t.Helper()
	p := &pair{sc: sc, rc: rc}
	var err error
	if p.snd, err = NewSender(p.sc, p.rc.LocalAddr(), cfg); err != nil {
		t.Fatal(err)
	}
	p.rcv = NewReceiver(p.rc)
	p.wait = traffictest.Runs(ctx, p.rcv.Run, p.snd.Run)
	return p
}

// otherConn hides that a PacketConn is a *net.UDPConn, so that the
// sockets' generic path is tested too.
type otherConn struct{ net.PacketConn }

// A bounded transfer over loopback arrives whole: no loss, every byte
// written is delivered, feedback flows and gives an RTT.
func TestTransferOverLoopback(t *testing.T) {
	t.Run("UDPConn", func(t *testing.T) { testTransfer(t, listen(t), listen(t)) })
	t.Run("PacketConn", func(t *testing.T) { testTransfer(t, otherConn{listen(t)}, otherConn{listen(t)}) })
}

func testTransfer(t *testing.T, sc, rc net.PacketConn) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	p := startOn(t, ctx, Config{TxQueueLen: DefaultTxQueueLen}, sc, rc)
	if p.snd.PayloadSize() != 1472-tfrc.DataHeaderLen {
		t.Errorf("payload size %d, want %d for IPv4", p.snd.PayloadSize(), 1472-tfrc.DataHeaderLen)
	}
	const packets = 500
	buf := make([]byte, p.snd.PayloadSize())
	for range packets {
		if _, err := p.snd.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	want := uint64(packets * len(buf))
	deadline := time.Now().Add(20 * time.Second)
	for p.rcv.Stats().PayloadBytes < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	rs, ss := p.rcv.Stats(), p.snd.Stats()
	cancel()
	p.wait(t)
	if rs.PayloadBytes != want || rs.Packets != packets || rs.Lost != 0 {
		t.Errorf("receiver %+v, want %d packets and %d bytes, none lost", rs, packets, want)
	}
	if ss.Sent != packets || ss.PayloadBytesSent != want || ss.Written != want || ss.BytesSent != packets*1472 {
		t.Errorf("sender %+v, want %d packets of 1472 bytes sent", ss, packets)
	}
	if ss.Feedbacks == 0 || ss.RTT <= 0 || ss.RTT > 100*time.Millisecond {
		t.Errorf("sender saw %d feedbacks and RTT %v, want some and a loopback RTT", ss.Feedbacks, ss.RTT)
	}
	if ss.X <= 1472 {
		t.Errorf("X = %g bytes/s, want more than the initial packet per second", ss.X)
	}
}

// Cancelling the context ends both sides, closes their sockets and leaves
// no goroutine or file descriptor behind.
func TestCancelLeavesNothing(t *testing.T) {
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)
	ctx, cancel := context.WithCancel(t.Context())
	p := start(t, ctx, Config{TxQueueLen: 0})
	bulk := make(chan error, 1)
	go func() { bulk <- p.snd.Bulk(t.Context()) }()
	time.Sleep(200 * time.Millisecond)
	if p.rcv.Stats().Packets == 0 {
		t.Error("no data arrived in 200 ms")
	}
	cancel()
	p.wait(t)
	if err := <-bulk; !errors.Is(err, ErrClosed) {
		t.Errorf("Bulk after the sender ended: %v, want ErrClosed", err)
	}
	if _, err := p.snd.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after the end: %v, want ErrClosed", err)
	}
	for _, c := range []net.PacketConn{p.sc, p.rc} {
		if _, _, err := c.ReadFrom(make([]byte, 10)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("socket %v still open: %v", c.LocalAddr(), err)
		}
	}
	if got := settled(goroutines); got > goroutines {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after the end, %d before\n%s", got, goroutines, buf[:runtime.Stack(buf, true)])
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d open file descriptors after the end, %d before", got, fds)
	}
	if err := p.snd.Run(ctx); err == nil {
		t.Error("a second Run succeeded")
	}
}

// Write blocks while the transmit buffer holds TxQueueLen packets; with
// TxQueueLen 0 the send buffer bounds it.
func TestTransmitBufferBlocksWrites(t *testing.T) {
	done, cancel := context.WithCancel(t.Context())
	cancel()
	for _, c := range []struct {
		cfg  Config
		want int // packets accepted
	}{
		{Config{TxQueueLen: 5}, 5},
		{Config{TxQueueLen: 0, SendBuffer: 10 * 1448}, 10},
		{Config{TxQueueLen: 0}, DefaultSendBuffer / 1448},
	} {
		s, err := NewSender(listen(t), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, s.PayloadSize())
		for i := range c.want {
			if n, err := s.write(done, buf); err != nil || n != len(buf) {
				t.Fatalf("%+v: write %d: %d, %v", c.cfg, i, n, err)
			}
		}
		// The buffer is full: the next write waits, here until its
		// (already cancelled) context gives up.
		if n, err := s.write(done, buf); n != 0 || !errors.Is(err, context.Canceled) {
			t.Errorf("%+v: write to a full buffer: %d, %v; want it to block", c.cfg, n, err)
		}
		if q := s.Stats().Queued; q != c.want {
			t.Errorf("%+v: %d queued, want %d", c.cfg, q, c.want)
		}
		ctx, stop := context.WithCancel(t.Context())
		stop()
		s.Run(ctx) // closes the socket and the eventfd
	}
}

func TestConfigErrors(t *testing.T) {
	peer := &net.UDPAddr{IP: net.ParseIP("::1"), Port: 9}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{PacketSize: 70000}, "at most 65507"},
		{Config{PacketSize: 20}, "must exceed the 24-byte header"},
		{Config{SendBuffer: -1}, "use 0 for the default"},
		{Config{TxQueueLen: -1}, "use 0 for an unbounded queue"},
	} {
		if _, err := NewSender(nil, peer, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewSender(%+v): %v, want an error saying %q", c.cfg, err, c.want)
		}
	}
	size, _, err := Config{}.resolve(peer)
	if err != nil || size != 1452 {
		t.Errorf("default packet size to an IPv6 peer: %d, %v; want 1452", size, err)
	}
}

// BenchmarkTransfer moves b.N packets over loopback; allocs/op are the
// allocations per packet of both sides together.
func BenchmarkTransfer(b *testing.B) {
	ctx, cancel := context.WithCancel(b.Context())
	p := start(b, ctx, Config{TxQueueLen: DefaultTxQueueLen})
	buf := make([]byte, p.snd.PayloadSize())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := p.snd.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	for p.rcv.Stats().Packets+p.rcv.Stats().Lost < uint64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	cancel()
	p.wait(b)
}
