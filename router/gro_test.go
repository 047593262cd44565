package router

import (
	"bytes"
	"encoding/binary"
	"testing"

	"wanlab/packet"
	"wanlab/tun"
)

// groPacket returns a packet of pool built from s, as the link would hand
// it to the egress (VNet, segments described).
func groPacket(t *testing.T, pool *packet.Pool, s packet.TCP) *packet.Packet {
	t.Helper()
	p := pool.Get()
	if err := packet.BuildTCP(p, s); err != nil {
		t.Fatal(err)
	}
	return p
}

// segmentsOfWrite returns the segments the receiving kernel makes of a
// write: the virtio-net header at buf[off-VNetHdrLen:off], the packet
// after it.
func segmentsOfWrite(t *testing.T, buf []byte, off int) [][]byte {
	t.Helper()
	h, _ := packet.DecodeVirtioNetHdr(buf[off-tun.VNetHdrLen : off])
	f := &fakeVNet{keep: true}
	f.keepSegments(buf[off:], h, 64)
	return f.got
}

// TestGROJoins checks which packets may join a batch, as the kernel's
// tcp_gro_receive decides: the next segments of the flow with the same
// headers, IPv4 identifications running on, no more than the segment size;
// nothing after a short segment or PSH; no CWR but on the first; and that
// what a batch writes segments into exactly the packets that joined it,
// over IPv4 and IPv6.
func TestGROJoins(t *testing.T) {
	pool := packet.NewPool(packet.DefaultHeadroom+70000, packet.DefaultHeadroom)
	for _, v6 := range []bool{false, true} {
		base := packet.TCP{V6: v6, SrcPort: 1, DstPort: 2, Seq: 1000, Ack: 7, Payload: 3 * segMSS, MSS: segMSS, ID: 10, TOS: 2, Fill: 1}
		next := func(mod func(*packet.TCP)) packet.TCP {
			s := base
			s.Seq += uint32(s.Payload)
			s.ID += 3
			s.Payload, s.Fill = segMSS, 2
			if mod != nil {
				mod(&s)
			}
			return s
		}
		for _, c := range []struct {
			name string
			s    packet.TCP
			join bool
		}{
			{"the next segment", next(nil), true},
			{"the next super-packet", next(func(s *packet.TCP) { s.Payload = 4 * segMSS }), true},
			{"a short last segment", next(func(s *packet.TCP) { s.Payload = 100 }), true},
			{"with PSH", next(func(s *packet.TCP) { s.Flags = 0x18 }), true},
			{"a gap in the sequence", next(func(s *packet.TCP) { s.Seq += segMSS }), false},
			{"another acknowledgement", next(func(s *packet.TCP) { s.Ack++ }), false},
			{"CE", next(func(s *packet.TCP) { s.TOS = 3 }), false},
			{"CWR", next(func(s *packet.TCP) { s.Flags = 0x90 }), false},
			{"another flow", next(func(s *packet.TCP) { s.SrcPort = 9 }), false},
			{"a larger segment size", next(func(s *packet.TCP) { s.MSS, s.Payload = segMSS+8, 2*(segMSS+8) }), false},
			{"an identification out of step", next(func(s *packet.TCP) { s.ID++ }), v6},
		} {
			first := groPacket(t, pool, base)
			p := groPacket(t, pool, c.s)
			tbl := newGROTable()
			fs, ok := tcpCandidate(first)
			ps, ok2 := tcpCandidate(p)
			if !ok || !ok2 {
				t.Fatalf("v6 %v %s: not candidates", v6, c.name)
			}
			tbl.start(0, first, fs, 0)
			b := tbl.open[0]
			if got := b.add(p, ps, 0); got != c.join {
				t.Errorf("v6 %v, %s: joined %v, want %v", v6, c.name, got, c.join)
				continue
			}
			if !c.join {
				first.Free()
				p.Free()
				continue
			}
			var want [][]byte
			for _, q := range []*packet.Packet{first, p} {
				buf, off := q.Buffer()
				want = append(want, segmentsOfWrite(t, buf[:off+q.Len()], off)...)
			}
			got := segmentsOfWrite(t, tbl.build(b), headroom)
			if len(got) != len(want) {
				t.Fatalf("v6 %v, %s: %d segments written, want %d", v6, c.name, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("v6 %v, %s: segment %d differs from the one that joined", v6, c.name, i)
				}
			}
			if c.name == "with PSH" || c.name == "a short last segment" {
				q := groPacket(t, pool, next(func(s *packet.TCP) { s.Seq += uint32(c.s.Payload) }))
				qs, _ := tcpCandidate(q)
				if b.add(q, qs, 0) {
					t.Errorf("v6 %v: a segment joined after %s", v6, c.name)
				}
				q.Free()
			}
			tbl.close(b)
			first.Free()
			p.Free()
		}
	}
	if pool.Live() != 0 {
		t.Errorf("%d packets live", pool.Live())
	}
}

// TestGROCandidates checks what may not be coalesced at all: a packet
// without data, one whose checksum is complete (netem corrupted it after
// completing it), and a non-TCP packet.
func TestGROCandidates(t *testing.T) {
	pool := packet.NewPool(packet.DefaultHeadroom+70000, packet.DefaultHeadroom)
	s := packet.TCP{SrcPort: 1, DstPort: 2, Payload: segMSS, MSS: segMSS}
	if _, ok := tcpCandidate(groPacket(t, pool, s)); !ok {
		t.Error("a segment with data is no candidate")
	}
	s.Payload = 0
	if _, ok := tcpCandidate(groPacket(t, pool, s)); ok {
		t.Error("a pure ACK is a candidate")
	}
	s.Payload = segMSS
	p := groPacket(t, pool, s)
	if err := packet.FinishChecksum(p); err != nil {
		t.Fatal(err)
	}
	if _, ok := tcpCandidate(p); ok {
		t.Error("a segment with a complete checksum is a candidate")
	}
	q := groPacket(t, pool, s)
	q.Bytes()[9] = packet.ProtoUDP
	binary.BigEndian.PutUint16(q.Bytes()[10:], 0)
	if _, ok := tcpCandidate(q); ok {
		t.Error("a UDP packet is a candidate")
	}
}
