package packetsock

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/netns"
	"wanlab/packet"
)

func TestMain(m *testing.M) { roottest.Main(m, netns.CleanStale) }

// The interfaces of a pair: the host's end and the end the device opens.
const (
	hostIf = "wl-a0"
	tapIf  = "wl-r0"
)

// pair is a host namespace joined by a veth pair to a namespace where a
// Device opens the other end.
type pair struct {
	tb              *netns.Testbed
	host, tap       *netns.Handle
	hostMAC, tapMAC net.HardwareAddr
	hostIP, tapIP   netip.Addr // 10.249.X.1 and .2
}

// newPair builds namespaces wl-tNNNNNN-a (the host, 10.249.X.1/24 on
// hostIf) and wl-tNNNNNN-r (tapIf, 10.249.X.2/24 when tapAddr is set, no
// address otherwise), joined by a veth pair.
func newPair(t testing.TB, tapAddr bool) *pair {
	t.Helper()
	roottest.NeedRealRoot(t, roottest.PacketPlaneNeedsRoot)
	tb := roottest.NewTestbed(t)
	p := &pair{tb: tb}
	var err error
	if p.host, err = tb.Namespace("a"); err != nil {
		t.Fatal(err)
	}
	if p.tap, err = tb.Namespace("r"); err != nil {
		t.Fatal(err)
	}
	roottest.Veth(t, tb, p.host, hostIf, p.tap, tapIf)
	x := rand.IntN(256)
	hostPfx := netip.MustParsePrefix(fmt.Sprintf("10.249.%d.1/24", x))
	tapPfx := netip.MustParsePrefix(fmt.Sprintf("10.249.%d.2/24", x))
	p.hostIP, p.tapIP = hostPfx.Addr(), tapPfx.Addr()
	for _, err := range []error{p.host.LoopbackUp(), p.tap.LoopbackUp(), p.host.AddAddr(hostIf, hostPfx)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if tapAddr {
		if err := p.tap.AddAddr(tapIf, tapPfx); err != nil {
			t.Fatal(err)
		}
	}
	p.hostMAC = p.mac(t, p.host, hostIf)
	p.tapMAC = p.mac(t, p.tap, tapIf)
	return p
}

func (p *pair) mac(t testing.TB, h *netns.Handle, ifname string) net.HardwareAddr {
	t.Helper()
	l, err := h.Netlink().LinkByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().HardwareAddr
}

// open opens a Device on the tap end, closed when the test ends.
func (p *pair) open(t testing.TB, o Options) *Device {
	t.Helper()
	d, err := Open(p.tap, tapIf, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// listenUDP opens a UDP socket on the host's address, closed when the test
// ends.
func (p *pair) listenUDP(t *testing.T) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	if err := netns.Do(p.host, func() (err error) {
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.hostIP, 0)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// sendUDP sends n datagrams of size bytes from the host to the tap's
// address port 9 (the discard port), from an unconnected socket, which the
// port-unreachable replies of a tap with that address do not stop.
func (p *pair) sendUDP(t testing.TB, n, size int) {
	t.Helper()
	var c *net.UDPConn
	if err := netns.Do(p.host, func() (err error) {
		c, err = net.ListenUDP("udp4", nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, size)
	for range n {
		if _, err := c.WriteToUDPAddrPort(msg, netip.AddrPortFrom(p.tapIP, 9)); err != nil {
			t.Fatal(err)
		}
	}
}

// record is one frame a reader took: the frame, its virtio-net header, a
// copy of its packet and when the read that took it ended.
type record struct {
	fr     Frame
	hdr    packet.VirtioNetHdr
	pkt    []byte
	readAt int64 // ns since the Unix epoch
}

// reader takes every frame the device reads, on a goroutine of its own,
// until stop.
type reader struct {
	d    *Device
	mu   sync.Mutex
	recs []record
	err  error
	stop chan struct{}
	done chan struct{}
}

const testOffset = 64

func startReader(d *Device) *reader {
	r := &reader{d: d, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		bufs := make([][]byte, 8)
		for i := range bufs {
			bufs[i] = make([]byte, testOffset+MaxPacket)
		}
		frames := make([]Frame, len(bufs))
		for {
			n, err := d.TryRead(bufs, frames, testOffset)
			at := time.Now().UnixNano()
			if err != nil {
				r.fail(err)
				return
			}
			r.mu.Lock()
			for i := range n {
				h, _ := packet.DecodeVirtioNetHdr(bufs[i][testOffset-VNetHdrLen:])
				pkt := append([]byte(nil), bufs[i][testOffset:testOffset+frames[i].Len]...)
				r.recs = append(r.recs, record{fr: frames[i], hdr: h, pkt: pkt, readAt: at})
			}
			r.mu.Unlock()
			if n > 0 {
				continue
			}
			select {
			case <-r.stop:
				return
			default:
			}
			if _, _, err := d.Wait(-1, 20*time.Millisecond); err != nil {
				r.fail(err)
				return
			}
		}
	}()
	return r
}

func (r *reader) fail(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

// records stops the reader and returns what it read.
func (r *reader) records(t *testing.T) []record {
	t.Helper()
	close(r.stop)
	<-r.done
	if r.err != nil && !errors.Is(r.err, errClosed) {
		t.Fatalf("reader: %v", r.err)
	}
	return r.recs
}
