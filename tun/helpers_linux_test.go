package tun

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"wanlab/internal/roottest"
	"wanlab/netns"
)

func TestMain(m *testing.M) { roottest.Main(m, netns.CleanStale) }

const tunName = "wl-tun"

// host is one side of a two-namespace testbed.
type host struct {
	ns  *netns.Handle
	dev Device
	v4  netip.Addr
	v6  netip.Addr
}

// forwardingRing is the ring of the devices the forwarding tests join with
// their own copying loop: these tests check the devices, not the ring size
// DefaultTxQueueLen keeps small for the router, and a ring as deep as the
// one these tests were written with keeps a busy machine's stalls of the
// copying loop (one system call per packet with Raw) from showing as
// drops.
const forwardingRing = 10000

// newNamespace returns a namespace of a testbed of the test's own, which
// goes when the test ends.
func newNamespace(t *testing.T) *netns.Handle {
	t.Helper()
	h, err := roottest.NewTestbed(t).Namespace("a")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// newHost creates namespace role with a TUN device of the given kind,
// addressed as a point-to-point link from (self) to peer.
func newHost(t *testing.T, tb *netns.Testbed, role string, kind Kind, self, peer, self6, peer6 netip.Addr) *host {
	t.Helper()
	h, err := tb.Namespace(role)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := Open(h, tunName, Options{Kind: kind, TxQueueLen: forwardingRing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	roottest.PointToPoint(t, tb, h, tunName, self, peer, self6, peer6)
	return &host{ns: h, dev: dev, v4: self, v6: self6}
}

// newPair builds client namespace wl-NAME-c and server wl-NAME-s, each with
// a TUN: 10.250.X.1 <-> 10.250.X.2 and fd77:X::1 <-> fd77:X::2.
func newPair(t *testing.T, kind Kind) (tb *netns.Testbed, c, s *host) {
	tb = roottest.NewTestbed(t)
	x := rand.IntN(256)
	a4 := netip.MustParseAddr(fmt.Sprintf("10.250.%d.1", x))
	b4 := netip.MustParseAddr(fmt.Sprintf("10.250.%d.2", x))
	a6 := netip.MustParseAddr(fmt.Sprintf("fd77:%x::1", x))
	b6 := netip.MustParseAddr(fmt.Sprintf("fd77:%x::2", x))
	c = newHost(t, tb, "c", kind, a4, b4, a6, b6)
	s = newHost(t, tb, "s", kind, b4, a4, b6, a6)
	return tb, c, s
}

// fwdStats counts what a forwarder moved.
type fwdStats struct {
	reads, packets, writeErrs atomic.Int64
	lastErr                   atomic.Value
}

// forwardOffset leaves room for the virtio-net header.
const forwardOffset = 16

// forward copies batches from one device to the other until from is closed:
// the smallest possible router.
func forward(from, to Device, st *fwdStats) {
	n := from.BatchSize()
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = make([]byte, forwardOffset+MaxCoalesced)
	}
	sizes := make([]int, n)
	out := make([][]byte, n)
	for {
		k, err := from.Read(bufs, sizes, forwardOffset)
		if err != nil && !errors.Is(err, ErrTooManySegments) {
			if !errors.Is(err, os.ErrClosed) {
				st.lastErr.Store(err)
			}
			return
		}
		st.reads.Add(1)
		st.packets.Add(int64(k))
		// Write may coalesce into these slices; bufs keeps the full ones.
		for i := range k {
			out[i] = bufs[i][:forwardOffset+sizes[i]]
		}
		if _, err := to.Write(out[:k], forwardOffset); err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			st.writeErrs.Add(1)
			st.lastErr.Store(err)
		}
	}
}

// startForwarding runs one forwarder per direction until the test ends.
func startForwarding(t *testing.T, c, s *host) (up, down *fwdStats) {
	up, down = new(fwdStats), new(fwdStats)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); forward(c.dev, s.dev, up) }()
	go func() { defer wg.Done(); forward(s.dev, c.dev, down) }()
	t.Cleanup(func() {
		c.dev.Close()
		s.dev.Close()
		wg.Wait()
		for dir, st := range map[string]*fwdStats{"up": up, "down": down} {
			if n := st.writeErrs.Load(); n > 0 {
				t.Errorf("%s: %d failed writes, last: %v", dir, n, st.lastErr.Load())
			} else if err := st.lastErr.Load(); err != nil {
				t.Errorf("%s: forwarder stopped: %v", dir, err)
			}
		}
	})
	return up, down
}
