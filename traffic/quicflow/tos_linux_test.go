package quicflow

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
	"wanlab/netns"
	"wanlab/traffic"
)

// sniffer records the TOS byte of every UDP packet crossing the loopback
// device of a namespace, by the packet's two ports.
type sniffer struct {
	fd   int
	stop atomic.Bool
	wg   sync.WaitGroup
	mu   sync.Mutex
	tos  map[[2]uint16]map[int]int // ports (src, dst) → TOS → packets
}

func sniff(t *testing.T, h *netns.Handle) *sniffer {
	t.Helper()
	s := &sniffer{tos: map[[2]uint16]map[int]int{}}
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
	if proto != unix.IPPROTO_UDP || len(p) < off+4 {
		return
	}
	k := [2]uint16{binary.BigEndian.Uint16(p[off:]), binary.BigEndian.Uint16(p[off+2:])}
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

// seen returns the TOS bytes seen between two ports, both ways, with their
// packet counts.
func (s *sniffer) seen(a, b uint16) map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]int{}
	for _, k := range [][2]uint16{{a, b}, {b, a}} {
		for tos, n := range s.tos[k] {
			out[tos] += n
		}
	}
	return out
}

// In a namespace of its own, QUIC flows over IPv4 and IPv6 carry their
// DSCP on every packet both ways, as a packet socket on the namespace's
// loopback device sees them, together with the ECN codepoint quic-go
// sets: the DSCP survives quic-go's per-packet ECN control messages. A
// flow without a TOS is the control: DSCP 0.
func TestDSCPOnTheWire(t *testing.T) {
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
	var flows []traffic.Flow
	for _, c := range []struct {
		addr string
		tos  int
		dir  traffic.Direction
	}{{"127.0.0.1", 0xb8, traffic.Up}, {"::1", 0x20, traffic.Down}, {"127.0.0.1", 0, traffic.Up}} {
		host := traffic.Host{Net: traffic.InNamespace(h), Addr: lo4}
		if c.addr == "::1" {
			host.Addr = lo6
		}
		flows = append(flows, mustNew(t, Config{Label: c.addr, Client: host, Server: host, Dir: c.dir, TOS: c.tos, Bytes: 4 << 20, Stop: 900 * time.Millisecond}))
	}
	res, err := traffic.Run(context.Background(), traffic.Plan{Step: 100 * time.Millisecond, Length: time.Second, Flows: flows})
	if err != nil {
		t.Fatal(err)
	}
	sn.close()
	for i, fr := range res.Flows {
		r := fr.(*Result)
		tos := flows[i].(*Flow).cfg.TOS
		checkFlow(t, res, r, tos)
		seen := sn.seen(r.Sender.Local.Port(), r.Sender.Remote.Port())
		var packets, ect0 int
		for b, n := range seen {
			packets += n
			if b&^3 != tos {
				t.Errorf("%s: %d packets with TOS %#x, want DSCP %#x", r.Label, n, b, tos)
			}
			if b&3 == 2 {
				ect0 += n
			}
		}
		// 4 MiB take some 3000 datagrams, fewer packets on loopback,
		// which carries quic-go's GSO batches whole; quic-go marks ECT(0)
		// on the packets it sends while it validates ECN and once the
		// path proves capable.
		if packets < 100 || ect0 == 0 {
			t.Errorf("%s: %d packets seen, %d of them ECT(0): %v", r.Label, packets, ect0, seen)
		}
		t.Logf("%s: TOS on the wire (TOS: packets) %v; ECN state %q", r.Label, seen, r.Samples[len(r.Samples)-1].Sender.ECNState)
	}
}
