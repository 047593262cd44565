package traffictest

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
	"wanlab/netns"
)

// Sniffer records the TOS byte of every TCP and UDP packet crossing the
// loopback device of a namespace, by the packet's two ports.
type Sniffer struct {
	fd   int
	stop atomic.Bool
	wg   sync.WaitGroup
	mu   sync.Mutex
	tos  map[portPair]map[int]int // ports (src, dst) → TOS → packets
}

type portPair = [2]uint16

// SniffedNamespace makes a testbed of one namespace with its loopback
// device up, and starts a Sniffer on that device with a packet socket; the
// sniffer stops at Close or when the test ends, and the testbed goes
// after it.
func SniffedNamespace(t testing.TB) (*netns.Handle, *Sniffer) {
	t.Helper()
	tb := roottest.NewTestbed(t)
	h, err := tb.Namespace("c")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LoopbackUp(); err != nil {
		t.Fatal(err)
	}
	s := &Sniffer{tos: map[portPair]map[int]int{}}
	err = netns.Do(h, func() error {
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
		buf := make([]byte, 128)
		for !s.stop.Load() {
			// MSG_TRUNC: the headers are all this needs of a packet.
			n, _, err := unix.Recvfrom(s.fd, buf, unix.MSG_TRUNC)
			if err != nil || n < 1 {
				continue
			}
			s.record(buf[:min(n, len(buf))])
		}
	}()
	t.Cleanup(s.Close)
	return h, s
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// record counts one packet (from its IP header on) by its ports and TOS.
func (s *Sniffer) record(p []byte) {
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

// Close stops the sniffer; what it recorded stays readable.
func (s *Sniffer) Close() {
	if s.stop.Swap(true) {
		return
	}
	s.wg.Wait()
	unix.Close(s.fd)
}

// Seen returns the TOS bytes seen between two ports, both ways, with
// their packet counts.
func (s *Sniffer) Seen(a, b uint16) map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]int{}
	for _, k := range []portPair{{a, b}, {b, a}} {
		for tos, n := range s.tos[k] {
			out[tos] += n
		}
	}
	return out
}

// SeenDSCP is Seen with the ECN bits of every TOS byte cleared.
func (s *Sniffer) SeenDSCP(a, b uint16) map[int]int {
	out := map[int]int{}
	for tos, n := range s.Seen(a, b) {
		out[tos&^3] += n
	}
	return out
}
