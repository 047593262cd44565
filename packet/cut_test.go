package packet

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// superInPool puts s's packet, with its virtio_net_hdr in front, into a
// packet of pl and describes it.
func superInPool(t testing.TB, pl *Pool, s superPacket) *Packet {
	t.Helper()
	p := pl.Get()
	buf, off := p.Buffer()
	s.h.Encode(buf[off-VirtioNetHdrLen:])
	copy(buf[off:], s.b)
	p.SetLen(len(s.b))
	p.VNet = true
	if err := DescribeGSO(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// segmentsOf returns the wire segments of p as the receiving kernel would
// make them from p and its virtio_net_hdr (SplitGSO, which completes the
// checksums).
func segmentsOf(t testing.TB, p *Packet) [][]byte {
	t.Helper()
	h, _ := DecodeVirtioNetHdr(p.vnetHdr())
	out, sizes := outBufs(int(p.Segs)+1, 70000)
	n, err := SplitGSO(p.Bytes(), h, out, sizes)
	if err != nil {
		t.Fatalf("SplitGSO of a part: %v (header %+v)", err, h)
	}
	if n != p.Segments() {
		t.Fatalf("a part of %d segments segments into %d", p.Segments(), n)
	}
	segs := make([][]byte, n)
	for i := range n {
		segs[i] = bytes.Clone(out[i][:sizes[i]])
	}
	return segs
}

// cutAll cuts p at random points until every part is one segment, checking
// the parts' counts and lengths on the way, and returns the parts in
// order.
func cutAll(t *testing.T, pl *Pool, p *Packet, r *rand.Rand) []*Packet {
	t.Helper()
	if p.Segs <= 1 {
		return []*Packet{p}
	}
	k := 1 + r.IntN(int(p.Segs)-1)
	segs, wire := p.Segments(), p.WireLen()
	head, tail, err := pl.Cut(p, k)
	if err != nil {
		t.Fatalf("Cut(%d of %d): %v", k, segs, err)
	}
	if head != p && tail != p {
		t.Fatal("Cut returned neither part in p")
	}
	if head.Segments() != k || tail.Segments() != segs-k || head.WireLen()+tail.WireLen() != wire {
		t.Fatalf("Cut(%d of %d): parts of %d and %d segments, %d+%d wire bytes, want %d", k, segs,
			head.Segments(), tail.Segments(), head.WireLen(), tail.WireLen(), wire)
	}
	return append(cutAll(t, pl, head, r), cutAll(t, pl, tail, r)...)
}

// TestCutSegmentsAsWhole checks that the parts of a super-packet, cut at
// random points down to single segments or only once, segment into exactly
// the bytes the whole would (SplitGSO), for TCP and UDP over IPv4 with
// options and IPv6 with an extension header, with and without the flags
// each part must keep or lose.
func TestCutSegmentsAsWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	pl := NewPool(DefaultHeadroom+70000, DefaultHeadroom)
	for i, s := range []superSpec{
		{payload: 45 * 1448, mss: 1448, flags: 0x18, seq: 1 << 31},
		{payload: 10*1000 + 17, mss: 1000, flags: 0x80 | 0x10 | 0x08 | 0x01, seq: 0xfffff000, id: 0xfffe, tcpOpts: 12, ipOpts: 8},
		{v6: true, payload: 7*1220 + 1, mss: 1220, flags: 0x18, ext: 16},
		{v6: true, payload: 3 * 1220, mss: 1220, flags: 0x80 | 0x10},
		{udp: true, payload: 9*1400 + 3, mss: 1400},
		{udp: true, v6: true, payload: 20 * 1200, mss: 1200},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			sp := buildSuper(s)
			whole := superInPool(t, pl, sp)
			want := segmentsOf(t, whole)
			whole.Free()
			for try := range 20 {
				p := superInPool(t, pl, sp)
				var parts []*Packet
				if try%2 == 0 {
					parts = cutAll(t, pl, p, r)
				} else {
					head, tail, err := pl.Cut(p, 1+r.IntN(int(p.Segs)-1))
					if err != nil {
						t.Fatal(err)
					}
					parts = []*Packet{head, tail}
				}
				var got [][]byte
				for _, q := range parts {
					got = append(got, segmentsOf(t, q)...)
					q.Free()
				}
				if len(got) != len(want) {
					t.Fatalf("%d segments, want %d", len(got), len(want))
				}
				for j := range want {
					if !bytes.Equal(got[j], want[j]) {
						t.Fatalf("try %d: segment %d differs from the whole's", try, j)
					}
				}
			}
			if pl.Live() != 0 {
				t.Errorf("%d packets live", pl.Live())
			}
		})
	}
}

// TestCutRefuses checks the errors: no header, k out of range, a pool too
// small for the copied part, fields that disagree with the header; and
// that a refused cut changes nothing.
func TestCutRefuses(t *testing.T) {
	pl := NewPool(DefaultHeadroom+70000, DefaultHeadroom)
	sp := buildSuper(superSpec{payload: 10 * 1000, mss: 1000})
	p := superInPool(t, pl, sp)
	before := bytes.Clone(p.Bytes())
	small := NewPool(DefaultHeadroom+2000, DefaultHeadroom)
	for _, c := range []struct {
		pool *Pool
		k    int
		mod  func(*Packet)
		want error
	}{
		{pl, 0, nil, ErrCutRange},
		{pl, 10, nil, ErrCutRange},
		{small, 5, nil, ErrCutPool},
		{pl, 5, func(q *Packet) { q.VNet = false }, ErrNoVNet},
		{pl, 5, func(q *Packet) { q.SegSize = 999 }, ErrCutLayout},
	} {
		q := *p
		if c.mod != nil {
			c.mod(&q)
		}
		if _, _, err := c.pool.Cut(&q, c.k); err != c.want {
			t.Errorf("Cut(k=%d): %v, want %v", c.k, err, c.want)
		}
	}
	if !bytes.Equal(p.Bytes(), before) || small.Live() != 0 || pl.Live() != 1 {
		t.Error("a refused cut changed the packet or kept a buffer")
	}
}

// TestFinishChecksum checks that a one-segment part left with NEEDS_CSUM
// gets a complete, correct checksum and a header without the flag.
func TestFinishChecksum(t *testing.T) {
	pl := NewPool(DefaultHeadroom+70000, DefaultHeadroom)
	for _, s := range []superSpec{{payload: 3 * 1000, mss: 1000, flags: 0x18}, {v6: true, udp: true, payload: 2 * 900, mss: 900}} {
		p := superInPool(t, pl, buildSuper(s))
		head, tail, err := pl.Cut(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := FinishChecksum(tail); tail.Segs > 1 && err != ErrFinishGSO {
			t.Errorf("FinishChecksum of a super-packet: %v, want ErrFinishGSO", err)
		}
		if err := FinishChecksum(head); err != nil {
			t.Fatal(err)
		}
		proto := uint8(ProtoTCP)
		if s.udp {
			proto = ProtoUDP
		}
		thoff := 20
		if s.v6 {
			thoff = 40
		}
		if h, _ := DecodeVirtioNetHdr(head.vnetHdr()); h != (VirtioNetHdr{}) || !l4Valid(head.Bytes(), s.v6, proto, thoff) {
			t.Errorf("after FinishChecksum: header %+v, checksum valid %v", h, l4Valid(head.Bytes(), s.v6, proto, thoff))
		}
		head.Free()
		tail.Free()
	}
}

// TestBuildTCP checks that BuildTCP's packets describe themselves and
// segment into valid segments, ECN bits where asked.
func TestBuildTCP(t *testing.T) {
	pl := NewPool(DefaultHeadroom+70000, DefaultHeadroom)
	for _, s := range []TCP{
		{SrcPort: 1, DstPort: 2, Seq: 100, Payload: 10*1448 + 5, MSS: 1448, TOS: 2},
		{V6: true, SrcPort: 1, DstPort: 2, Payload: 3 * 1428, MSS: 1428, TOS: 1},
		{SrcPort: 1, DstPort: 2, Payload: 100, MSS: 1448},
	} {
		p := pl.Get()
		if err := BuildTCP(p, s); err != nil {
			t.Fatal(err)
		}
		wantSegs := max(1, (s.Payload+s.MSS-1)/s.MSS)
		if p.Segments() != wantSegs || int(p.SegHdr) != s.TCPHeaderLen() || p.WireLen() != s.Payload+wantSegs*s.TCPHeaderLen() {
			t.Errorf("%+v: %d segments, header %d, wire %d", s, p.Segments(), p.SegHdr, p.WireLen())
		}
		if ECNOf(p.Bytes()) != ECN(s.TOS&3) {
			t.Errorf("ECN %v, want %v", ECNOf(p.Bytes()), ECN(s.TOS&3))
		}
		thoff := 20
		if s.V6 {
			thoff = 40
		}
		if p.Segs > 1 {
			for i, seg := range segmentsOf(t, p) {
				if !l4Valid(seg, s.V6, ProtoTCP, thoff) {
					t.Errorf("segment %d: checksum invalid", i)
				}
			}
		} else if err := FinishChecksum(p); err != nil || !l4Valid(p.Bytes(), s.V6, ProtoTCP, thoff) {
			t.Errorf("single packet: %v, checksum valid %v", err, l4Valid(p.Bytes(), s.V6, ProtoTCP, thoff))
		}
		p.Free()
	}
}

// TestCloneKeepsVNet checks that a clone of a super-packet carries its
// virtio_net_hdr and segments as the original does.
func TestCloneKeepsVNet(t *testing.T) {
	pl := NewPool(DefaultHeadroom+70000, DefaultHeadroom)
	p := superInPool(t, pl, buildSuper(superSpec{payload: 5 * 1000, mss: 1000, flags: 0x18}))
	c := pl.Clone(p)
	want, got := segmentsOf(t, p), segmentsOf(t, c)
	for i := range want {
		if !bytes.Equal(want[i], got[i]) {
			t.Fatalf("segment %d of the clone differs", i)
		}
	}
	if c.Segs != p.Segs || c.SegSize != p.SegSize || c.SegHdr != p.SegHdr || !c.VNet {
		t.Errorf("clone's segments %d/%d/%d vnet %v", c.Segs, c.SegSize, c.SegHdr, c.VNet)
	}
}
