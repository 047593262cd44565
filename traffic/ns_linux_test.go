package traffic

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
	"wanlab/netns"
)

// sniffer records the TOS byte of every TCP and UDP packet crossing the
// loopback device of a namespace, by the packet's two ports.
type sniffer struct {
	fd   int
	stop atomic.Bool
	wg   sync.WaitGroup
	mu   sync.Mutex
	tos  map[[2]uint16]map[int]int // ports (src, dst) → TOS → packets
}

type portPair = [2]uint16

func sniff(t *testing.T, h *netns.Handle) *sniffer {
	t.Helper()
	s := &sniffer{tos: map[portPair]map[int]int{}}
	err := netns.Do(h, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		s.fd = fd
		lo, err := net.InterfaceByName("lo")
		if err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: lo.Index})
	})
	if err != nil {
		t.Fatalf("packet socket: %v", err)
	}
	tv := unix.NsecToTimeval(int64(50 * time.Millisecond))
	unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		buf := make([]byte, 256)
		for !s.stop.Load() {
			n, _, err := unix.Recvfrom(s.fd, buf, 0)
			if err != nil || n < 1 {
				continue
			}
			s.record(buf[:min(n, len(buf))])
		}
	}()
	t.Cleanup(s.close)
	return s
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (s *sniffer) record(p []byte) {
	var tos, proto, off int
	switch p[0] >> 4 {
	case 4:
		if len(p) < 20 {
			return
		}
		tos, proto, off = int(p[1]), int(p[9]), int(p[0]&0x0f)*4
	case 6:
		if len(p) < 40 {
			return
		}
		tos, proto, off = int(p[0]&0x0f)<<4|int(p[1]>>4), int(p[6]), 40
	default:
		return
	}
	if (proto != unix.IPPROTO_TCP && proto != unix.IPPROTO_UDP) || len(p) < off+4 {
		return
	}
	k := portPair{binary.BigEndian.Uint16(p[off:]), binary.BigEndian.Uint16(p[off+2:])}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tos[k] == nil {
		s.tos[k] = map[int]int{}
	}
	s.tos[k][tos]++
}

func (s *sniffer) close() {
	if s.stop.Swap(true) {
		return
	}
	s.wg.Wait()
	unix.Close(s.fd)
}

// seen returns the TOS bytes (ECN bits cleared) seen between two
// addresses' ports, both ways, with their packet counts.
func (s *sniffer) seen(a, b netip.AddrPort) map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]int{}
	for _, k := range []portPair{{a.Port(), b.Port()}, {b.Port(), a.Port()}} {
		for tos, n := range s.tos[k] {
			out[tos&^3] += n
		}
	}
	return out
}

// In a namespace of its own, a TCP flow and a UDP probe stream over IPv4
// and IPv6 carry their TOS on the wire, on every packet both ways, as a
// packet socket on the namespace's loopback device sees them.
func TestTOSOnTheWireInNamespace(t *testing.T) {
	tb := roottest.NewTestbed(t)
	h, err := tb.Namespace("c")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LoopbackUp(); err != nil {
		t.Fatal(err)
	}
	noLeaks(t)
	sn := sniff(t, h)
	var flows []Flow
	for _, addr := range []netip.Addr{lo4, lo6} {
		host := Host{Net: InNamespace(h), Addr: addr}
		flows = append(flows,
			mustTCP(t, TCPConfig{Label: "tcp " + addr.String(), Client: host, Server: host, CC: "reno", TOS: 0xb8, Bytes: 1 << 20, Stop: 500 * time.Millisecond}),
			mustUDPProbe(t, UDPProbeConfig{Label: "udp " + addr.String(), Client: host, Server: host, TOS: 0x20, Interval: 50 * time.Millisecond, Stop: 500 * time.Millisecond}))
	}
	res, err := Run(context.Background(), Plan{Step: 100 * time.Millisecond, Length: 600 * time.Millisecond, Flows: flows})
	if err != nil {
		t.Fatal(err)
	}
	sn.close()
	for i, fr := range res.Flows {
		switch r := fr.(type) {
		case *TCPResult:
			if !r.Complete || r.ReceivedBytes != 1<<20 {
				t.Errorf("%s: complete %v, %d bytes", r.Label, r.Complete, r.ReceivedBytes)
			}
			seen := sn.seen(r.Sender.Local, r.Sender.Remote)
			// The handshake, the data and the acknowledgements: all EF.
			if len(seen) != 1 || seen[0xb8] < 6 {
				t.Errorf("%s: TOS on the wire (TOS: packets) %v, want only 0xb8", r.Label, seen)
			}
		case *ProbeResult:
			checkAnswered(t, r, 10, 0x20)
			srv := flows[i].(*UDPProbe).server.LocalAddr().(*net.UDPAddr).AddrPort()
			cl := addrPort(flows[i].(*UDPProbe).client.LocalAddr())
			seen := sn.seen(cl, srv)
			if len(seen) != 1 || seen[0x20] < 20 {
				t.Errorf("%s: TOS on the wire (TOS: packets) %v, want 20 or more of 0x20 only", r.Label, seen)
			}
		}
	}
}
