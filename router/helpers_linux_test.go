package router

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/link"
	"wanlab/netns"
	"wanlab/qdisc"
	"wanlab/tcspec"
	"wanlab/tun"
)

func TestMain(m *testing.M) { roottest.Main(m, netns.CleanStale) }

const tunName = "wl-tun"

// host is one side of the testbed.
type host struct {
	ns     *netns.Handle
	dev    tun.Device
	v4, v6 netip.Addr
}

// bed is a client and a server namespace joined by a router, or the
// hosts of a dumbbell (newDumbbell: c and s are then c1 and s1).
type bed struct {
	tb   *netns.Testbed
	c, s *host
	// clients and servers are a dumbbell's hosts, in order.
	clients, servers []*host
	r                *Router
	pcap             *syncBuffer
	cancel           context.CancelFunc
	done             chan error
}

// syncBuffer is a bytes.Buffer safe for the router's flusher and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// bedOptions configure newBed.
type bedOptions struct {
	kind     tun.Kind
	up, down string // chains in tc syntax
	seed     uint64
	pcap     bool
	rtPrio   int       // Config.RealTimePriority
	upHook   link.Hook // Config.Up.Hook
}

// newBed builds namespaces wl-tNNNNNN-c and -s with a TUN each, addressed
// 10.251.X.1 <-> 10.251.X.2 and fd79:X::1 <-> fd79:X::2, and runs a router
// between them until the test ends.
func newBed(t *testing.T, o bedOptions) *bed {
	t.Helper()
	tb := roottest.NewTestbed(t)
	x := rand.IntN(256)
	a4 := netip.MustParseAddr(fmt.Sprintf("10.251.%d.1", x))
	b4 := netip.MustParseAddr(fmt.Sprintf("10.251.%d.2", x))
	a6 := netip.MustParseAddr(fmt.Sprintf("fd79:%x::1", x))
	b6 := netip.MustParseAddr(fmt.Sprintf("fd79:%x::2", x))
	b := &bed{tb: tb}
	b.c = newHost(t, tb, "c", o.kind, a4, b4, a6, b6)
	b.s = newHost(t, tb, "s", o.kind, b4, a4, b6, a6)
	cfg := Config{
		Up:               link.Config{Name: "up", Chain: mustChain(t, o.up), Env: qdisc.Env{Seed: o.seed}, Hook: o.upHook},
		Down:             link.Config{Name: "down", Chain: mustChain(t, o.down), Env: qdisc.Env{Seed: o.seed + 1}},
		Client:           b.c.dev,
		Server:           b.s.dev,
		ClientIf:         tunName,
		ServerIf:         tunName,
		UpRing:           TUNRing(b.c.ns, tunName),
		DownRing:         TUNRing(b.s.ns, tunName),
		RealTimePriority: o.rtPrio,
	}
	if o.pcap {
		b.pcap = new(syncBuffer)
		cfg.Pcap = b.pcap
	}
	b.run(t, cfg, nil)
	return b
}

// run makes the bed's router from cfg and runs it until the test ends;
// prepare, if not nil, sees it before it runs.
func (b *bed) run(t *testing.T, cfg Config, prepare func(*Router)) {
	t.Helper()
	var err error
	b.r, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(b.r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.done = make(chan error, 1)
	go func() { b.done <- b.r.Run(ctx) }()
	t.Cleanup(func() {
		if err := b.stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// stop ends the router and returns Run's error; it may be called twice.
func (b *bed) stop() error {
	if b.cancel == nil {
		return nil
	}
	b.cancel()
	b.cancel = nil
	select {
	case err := <-b.done:
		return err
	case <-time.After(5 * time.Second):
		return errors.New("Run did not return within 5 s of cancellation")
	}
}

func mustChain(t testing.TB, s string) []qdisc.Spec {
	t.Helper()
	c, err := tcspec.ParseChain(s, tcspec.Options{})
	if err != nil {
		t.Fatalf("chain %q: %v", s, err)
	}
	return c
}

// newHost creates namespace role with a TUN device of the given kind,
// addressed as a point-to-point link from (self) to peer.
func newHost(t *testing.T, tb *netns.Testbed, role string, kind tun.Kind, self, peer, self6, peer6 netip.Addr) *host {
	t.Helper()
	h, err := tb.Namespace(role)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := tun.Open(h, tunName, tun.Options{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	roottest.PointToPoint(t, tb, h, tunName, self, peer, self6, peer6)
	return &host{ns: h, dev: dev, v4: self, v6: self6}
}

// command runs name in h's namespace as a testbed process called wl-...
func (b *bed) command(h *host, name string, args ...string) *netns.Cmd {
	cmd := b.tb.Command(h.ns, name, args...)
	cmd.Args[0] = netns.Prefix + b.tb.Name() + "-" + name
	return cmd
}

// udpFlow opens a UDP socket on the server that reads and discards
// whatever arrives, and one on the client connected to it; both close when
// the test ends. It returns the client's socket and the server's address.
func (b *bed) udpFlow(t *testing.T) (net.Conn, netip.AddrPort) {
	t.Helper()
	var sink net.PacketConn
	if err := netns.Do(b.s.ns, func() (err error) {
		sink, err = net.ListenPacket("udp4", netip.AddrPortFrom(b.s.v4, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := sink.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	dst := sink.LocalAddr().(*net.UDPAddr).AddrPort()
	var conn net.Conn
	if err := netns.Do(b.c.ns, func() (err error) {
		conn, err = net.Dial("udp4", dst.String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, dst
}
