package packet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

const tcpACK = 0x10

func TestSplitGSOTCP(t *testing.T) {
	cases := []struct {
		name      string
		spec      superSpec
		ecn       bool
		hdrLen    func(p superPacket) uint16 // virtio hdr_len as handed over
		segs      int
		wireBytes int
	}{
		{
			name: "ipv4 timestamps",
			spec: superSpec{tcpOpts: 12, payload: 3*1448 + 500, mss: 1448, flags: tcpACK | tcpPSH | tcpFIN | tcpCWR, seq: 1000, id: 0x1234, seed: 1},
			ecn:  true,
			// 20 + 32 header bytes, 4896 bytes in all, 3 repeated headers.
			segs: 4, wireBytes: 4896 + 3*52,
		},
		{
			name: "ipv4 options, seq and id wrap, hdr_len is skb_headlen",
			spec: superSpec{ipOpts: 8, tcpOpts: 4, payload: 3*1448 + 500, mss: 1448, flags: tcpACK | tcpPSH, seq: 0xffffffff - 2000, id: 0xfffe, seed: 2},
			// The kernel reports the linear part, here the whole packet.
			hdrLen: func(p superPacket) uint16 { return uint16(len(p.b)) },
			segs:   4, wireBytes: 4896 + 3*52,
		},
		{
			name:   "ipv6 hdr_len 0",
			spec:   superSpec{v6: true, payload: 3*1448 + 500, mss: 1448, flags: tcpACK | tcpFIN | tcpCWR, seq: 7, seed: 3},
			hdrLen: func(superPacket) uint16 { return 0 },
			segs:   4, wireBytes: 4904 + 3*60,
		},
		{
			name: "ipv6 destination options",
			spec: superSpec{v6: true, ext: 16, tcpOpts: 12, payload: 3*1428 + 1, mss: 1428, flags: tcpACK | tcpPSH, seq: 99, seed: 4},
			segs: 4, wireBytes: 40 + 16 + 32 + 3*1428 + 1 + 3*88,
		},
		{
			name: "exact multiple of mss",
			spec: superSpec{payload: 45 * 1448, mss: 1448, flags: tcpACK | tcpPSH, seed: 5},
			segs: 45, wireBytes: 40 + 45*1448 + 44*40,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := buildSuper(c.spec)
			if c.ecn {
				p.h.GSOType |= GSOECN
			}
			if c.hdrLen != nil {
				p.h.HdrLen = c.hdrLen(p)
			}
			orig := bytes.Clone(p.b)
			out, sizes := outBufs(c.segs+2, 1600)
			n, err := SplitGSO(p.b, p.h, out, sizes)
			if err != nil {
				t.Fatalf("SplitGSO: %v", err)
			}
			if n != c.segs {
				t.Fatalf("SplitGSO made %d segments, want %d", n, c.segs)
			}
			total := checkSplit(t, p, c.spec.v6, false, out, sizes, n)
			if !bytes.Equal(p.b, orig) {
				t.Error("SplitGSO modified its input")
			}
			segs, wire, err := GSOSegments(p.b, p.h)
			if err != nil {
				t.Fatalf("GSOSegments: %v", err)
			}
			if segs != c.segs || wire != c.wireBytes {
				t.Errorf("GSOSegments = %d segments, %d bytes; want %d, %d", segs, wire, c.segs, c.wireBytes)
			}
			if wire != total {
				t.Errorf("GSOSegments says %d wire bytes, the split made %d", wire, total)
			}
		})
	}
}

func TestSplitGSOUDP(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		p := buildSuper(superSpec{v6: v6, udp: true, payload: 3*1200 + 77, mss: 1200, id: 77, seed: 6})
		out, sizes := outBufs(4, 1500)
		n, err := SplitGSO(p.b, p.h, out, sizes)
		if err != nil {
			t.Fatalf("v6=%v: SplitGSO: %v", v6, err)
		}
		if n != 4 {
			t.Fatalf("v6=%v: %d segments, want 4", v6, n)
		}
		total := checkSplit(t, p, v6, true, out, sizes, n)
		segs, wire, err := GSOSegments(p.b, p.h)
		if err != nil || segs != 4 || wire != total || wire != len(p.b)+3*p.hdrLen {
			t.Errorf("v6=%v: GSOSegments = %d, %d, %v; split made 4 segments of %d bytes", v6, segs, wire, err, total)
		}
	}
}

// A UDP segment whose checksum computes to 0 must carry 0xffff, since 0
// means "no checksum" (RFC 768; __udp_gso_segment's CSUM_MANGLED_0).
func TestSplitGSOUDPZeroChecksum(t *testing.T) {
	p := buildSuper(superSpec{udp: true, payload: 2*1000 + 10, mss: 1000, seed: 7})
	out, sizes := outBufs(3, 1500)
	last := len(p.b) - 2 // even offset from the UDP header: 20+8+2008
	p.b[last], p.b[last+1] = 0, 0
	if _, err := SplitGSO(p.b, p.h, out, sizes); err != nil {
		t.Fatal(err)
	}
	// Putting the segment's checksum into two payload bytes that were zero
	// makes its sum 0xffff, so the checksum it needs becomes 0.
	copy(p.b[last:], out[2][p.thoff+6:p.thoff+8])
	if _, err := SplitGSO(p.b, p.h, out, sizes); err != nil {
		t.Fatal(err)
	}
	seg := out[2][:sizes[2]]
	if got := binary.BigEndian.Uint16(seg[p.thoff+6:]); got != 0xffff {
		t.Errorf("last segment's UDP checksum %#04x, want 0xffff", got)
	}
	if !l4Valid(seg, false, ProtoUDP, p.thoff) {
		t.Error("last segment's UDP checksum does not verify")
	}
}

// Without NEEDS_CSUM the checksum field is not a pseudo-header sum and
// csum_start is not set: the transport header is found by parsing and the
// segments' checksums are computed from the addresses.
func TestSplitGSONoNeedsCsum(t *testing.T) {
	cases := []superSpec{
		{tcpOpts: 12, payload: 3*1448 + 500, mss: 1448, flags: tcpACK | tcpPSH, seed: 8},
		{v6: true, ext: 8, udp: true, payload: 2*1232 + 5, mss: 1232, seed: 9},
	}
	for _, s := range cases {
		p := buildSuper(s)
		p.h.Flags, p.h.CsumStart, p.h.CsumOffset = 0, 0, 0
		csumAt := p.thoff + 16
		if s.udp {
			csumAt = p.thoff + 6
		}
		p.b[csumAt], p.b[csumAt+1] = 0xde, 0xad
		out, sizes := outBufs(4, 1500)
		n, err := SplitGSO(p.b, p.h, out, sizes)
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		checkSplit(t, p, s.v6, s.udp, out, sizes, n)
	}
}

func TestSplitGSOSingleSegment(t *testing.T) {
	for _, payload := range []int{1448, 100, 0} {
		p := buildSuper(superSpec{tcpOpts: 12, payload: payload, mss: 1448, flags: tcpACK | tcpPSH | tcpFIN | tcpCWR, id: 5, seq: 9, seed: 10})
		out, sizes := outBufs(1, 1500)
		n, err := SplitGSO(p.b, p.h, out, sizes)
		if err != nil || n != 1 {
			t.Fatalf("payload %d: SplitGSO = %d, %v; want 1 segment", payload, n, err)
		}
		checkSplit(t, p, false, false, out, sizes, n)
		// One segment is the packet itself with its checksum completed.
		seg := out[0][:sizes[0]]
		want := bytes.Clone(p.b)
		copy(want[p.thoff+16:], seg[p.thoff+16:p.thoff+18])
		if !bytes.Equal(seg, want) {
			t.Errorf("payload %d: single segment differs from the packet beyond its checksum", payload)
		}
		segs, wire, err := GSOSegments(p.b, p.h)
		if err != nil || segs != 1 || wire != len(p.b) {
			t.Errorf("payload %d: GSOSegments = %d, %d, %v; want 1, %d", payload, segs, wire, err, len(p.b))
		}
	}
}

// A packet that is not a super-packet is copied whole, with its checksum
// completed when NEEDS_CSUM asks for it.
func TestSplitGSONone(t *testing.T) {
	p := buildSuper(superSpec{udp: true, payload: 1000, mss: 1000, seed: 11})
	p.h.GSOType, p.h.GSOSize = GSONone, 0
	orig := bytes.Clone(p.b)
	out, sizes := outBufs(1, 1500)
	n, err := SplitGSO(p.b, p.h, out, sizes)
	if err != nil || n != 1 || sizes[0] != len(p.b) {
		t.Fatalf("SplitGSO = %d, %v, size %d; want 1 segment of %d", n, err, sizes[0], len(p.b))
	}
	if !l4Valid(out[0][:sizes[0]], false, ProtoUDP, p.thoff) {
		t.Error("copied packet's UDP checksum does not verify")
	}
	if !bytes.Equal(p.b, orig) {
		t.Error("SplitGSO modified its input")
	}
	segs, wire, err := GSOSegments(p.b, p.h)
	if err != nil || segs != 1 || wire != len(p.b) {
		t.Errorf("GSOSegments = %d, %d, %v; want 1, %d", segs, wire, err, len(p.b))
	}
}

func TestSplitGSOErrors(t *testing.T) {
	base := superSpec{tcpOpts: 12, payload: 3*1448 + 500, mss: 1448, flags: tcpACK, seed: 12}
	cases := []struct {
		name   string
		spec   superSpec
		modify func(p *superPacket)
		nOut   int
		bufLen int
		want   error
	}{
		{"hdr_len beyond the packet", base, func(p *superPacket) { p.h.HdrLen = uint16(len(p.b) + 1) }, 8, 1600, ErrGSOHdrLen},
		{"gso_size 0", base, func(p *superPacket) { p.h.GSOSize = 0 }, 8, 1600, ErrGSOSize},
		{"unknown type", base, func(p *superPacket) { p.h.GSOType = 2 }, 8, 1600, ErrGSOType},
		{"UFO", base, func(p *superPacket) { p.h.GSOType = GSOUDP }, 8, 1600, ErrGSOType},
		{"NONE with ECN", base, func(p *superPacket) { p.h.GSOType = GSONone | GSOECN }, 8, 1600, ErrGSOType},
		{"too many segments", base, nil, 3, 1600, ErrGSOSegments},
		{"short output buffer", base, nil, 8, 1499, ErrGSOBuffer},
		{"TCPV6 on IPv4", base, func(p *superPacket) { p.h.GSOType = GSOTCPv6 }, 8, 1600, ErrGSOVersion},
		{"TCPV4 on IPv6", superSpec{v6: true, payload: 3000, mss: 1000}, func(p *superPacket) { p.h.GSOType = GSOTCPv4 }, 8, 1600, ErrGSOVersion},
		{"not IP", base, func(p *superPacket) { p.b[0] = 0x50 }, 8, 1600, ErrVersion},
		{"csum_start beyond the packet", base, func(p *superPacket) { p.h.CsumStart = uint16(len(p.b)) }, 8, 1600, ErrGSOCsum},
		{"csum_start past IHL", base, func(p *superPacket) { p.h.CsumStart += 4 }, 8, 1600, ErrGSOCsum},
		{"csum_offset of UDP on TCP", base, func(p *superPacket) { p.h.CsumOffset = 6 }, 8, 1600, ErrGSOCsum},
		{"IPv6 csum_start inside the fixed header", superSpec{v6: true, payload: 3000, mss: 1000}, func(p *superPacket) { p.h.CsumStart = 20 }, 8, 1600, ErrGSOCsum},
		{"UDP_L4 on TCP", base, func(p *superPacket) { p.h.GSOType, p.h.CsumOffset = GSOUDPL4, 6 }, 8, 1600, ErrGSOProto},
		{"IPv6 next header not TCP", superSpec{v6: true, payload: 3000, mss: 1000}, func(p *superPacket) { p.b[6] = ProtoUDP }, 8, 1600, ErrGSOProto},
		{"IPv4 fragment", base, func(p *superPacket) { p.b[6] |= 0x20 }, 8, 1600, ErrGSOFragment},
		{"TCP data offset 4", base, func(p *superPacket) { p.b[p.thoff+12] = 4 << 4 }, 8, 1600, ErrGSOTransport},
		{"TCP header beyond the packet", base, func(p *superPacket) { p.b = p.b[:p.thoff+19]; p.h.HdrLen = 0 }, 8, 1600, ErrGSOTransport},
		{"TCP options beyond the packet", base, func(p *superPacket) { p.b = p.b[:p.thoff+24]; p.h.HdrLen = 0 }, 8, 1600, ErrGSOTransport},
		{"segment too long for IPv4", superSpec{payload: 65500, mss: 65500}, func(p *superPacket) {}, 1, 70000, ErrGSOLength},
		{"no NEEDS_CSUM, fragment", base, func(p *superPacket) {
			p.h.Flags = 0
			binary.BigEndian.PutUint16(p.b[6:], 100)
		}, 8, 1600, ErrGSOFragment},
		{"no NEEDS_CSUM, UDP_L4 on TCP", base, func(p *superPacket) { p.h.Flags, p.h.GSOType = 0, GSOUDPL4 }, 8, 1600, ErrGSOProto},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := buildSuper(c.spec)
			if c.modify != nil {
				c.modify(&p)
			}
			out, sizes := outBufs(c.nOut, c.bufLen)
			n, err := SplitGSO(p.b, p.h, out, sizes)
			if !errors.Is(err, c.want) || n != 0 {
				t.Errorf("SplitGSO = %d, %v; want 0, %v", n, err, c.want)
			}
			if c.want == ErrGSOSegments || c.want == ErrGSOBuffer {
				return // about the output, which GSOSegments does not see
			}
			if segs, wire, err := GSOSegments(p.b, p.h); !errors.Is(err, c.want) || segs != 0 || wire != 0 {
				t.Errorf("GSOSegments = %d, %d, %v; want 0, 0, %v", segs, wire, err, c.want)
			}
		})
	}
}

func TestSplitGSONoneErrors(t *testing.T) {
	p := buildSuper(superSpec{udp: true, payload: 100, mss: 100})
	p.h.GSOType = GSONone
	if n, err := SplitGSO(p.b, p.h, nil, nil); n != 0 || !errors.Is(err, ErrGSOSegments) {
		t.Errorf("no output: SplitGSO = %d, %v; want ErrGSOSegments", n, err)
	}
	out, sizes := outBufs(1, len(p.b)-1)
	if n, err := SplitGSO(p.b, p.h, out, sizes); n != 0 || !errors.Is(err, ErrGSOBuffer) {
		t.Errorf("short output: SplitGSO = %d, %v; want ErrGSOBuffer", n, err)
	}
	out, sizes = outBufs(1, len(p.b))
	p.h.CsumStart = uint16(len(p.b))
	if n, err := SplitGSO(p.b, p.h, out, sizes); n != 0 || !errors.Is(err, ErrCsumRange) {
		t.Errorf("bad csum_start: SplitGSO = %d, %v; want ErrCsumRange", n, err)
	}
}

func TestCompleteChecksum(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		p := buildSuper(superSpec{v6: v6, tcpOpts: 12, payload: 1001, mss: 1448, flags: tcpACK | tcpPSH, seed: 13})
		p.h.GSOType, p.h.GSOSize = GSONone, 0
		if err := CompleteChecksum(p.b, p.h); err != nil {
			t.Fatal(err)
		}
		if !l4Valid(p.b, v6, ProtoTCP, p.thoff) {
			t.Errorf("v6=%v: TCP checksum does not verify", v6)
		}
	}

	// UDP whose checksum computes to 0 gets 0xffff (skb_checksum_help's
	// CSUM_MANGLED_0).
	p := buildSuper(superSpec{udp: true, payload: 200, mss: 200, seed: 14})
	p.h.GSOType = GSONone
	partial := binary.BigEndian.Uint16(p.b[p.thoff+6:])
	last := len(p.b) - 2
	p.b[last], p.b[last+1] = 0, 0
	if err := CompleteChecksum(p.b, p.h); err != nil {
		t.Fatal(err)
	}
	copy(p.b[last:], p.b[p.thoff+6:p.thoff+8])
	binary.BigEndian.PutUint16(p.b[p.thoff+6:], partial)
	if err := CompleteChecksum(p.b, p.h); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint16(p.b[p.thoff+6:]); got != 0xffff {
		t.Errorf("UDP checksum %#04x, want 0xffff", got)
	}
	if !l4Valid(p.b, false, ProtoUDP, p.thoff) {
		t.Error("UDP checksum does not verify")
	}

	// Without NEEDS_CSUM nothing is touched.
	orig := bytes.Clone(p.b)
	if err := CompleteChecksum(p.b, VirtioNetHdr{CsumStart: 20, CsumOffset: 6}); err != nil || !bytes.Equal(p.b, orig) {
		t.Errorf("without NEEDS_CSUM: err %v, packet changed %v", err, !bytes.Equal(p.b, orig))
	}
}

func TestCompleteChecksumErrors(t *testing.T) {
	b := make([]byte, 40)
	cases := []struct {
		name string
		h    VirtioNetHdr
		want error
	}{
		{"GSO", VirtioNetHdr{Flags: VirtioNetHdrNeedsCsum, GSOType: GSOTCPv4, GSOSize: 10, CsumStart: 20, CsumOffset: 16}, ErrCsumGSO},
		{"csum_start at the end", VirtioNetHdr{Flags: VirtioNetHdrNeedsCsum, CsumStart: 40}, ErrCsumRange},
		{"field past the end", VirtioNetHdr{Flags: VirtioNetHdrNeedsCsum, CsumStart: 20, CsumOffset: 19}, ErrCsumRange},
		{"huge offsets", VirtioNetHdr{Flags: VirtioNetHdrNeedsCsum, CsumStart: 0xffff, CsumOffset: 0xffff}, ErrCsumRange},
	}
	for _, c := range cases {
		if err := CompleteChecksum(b, c.h); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// A checksum field inside the IP header (a request a raw socket can
	// make) would overwrite it: refused, the packet left as it was.
	for _, v6 := range []bool{false, true} {
		p := buildSuper(superSpec{v6: v6, ipOpts: 8, payload: 100, mss: 1448, seed: 16})
		orig := bytes.Clone(p.b)
		for _, start := range []uint16{0, uint16(p.thoff - 1)} {
			h := VirtioNetHdr{Flags: VirtioNetHdrNeedsCsum, CsumStart: start, CsumOffset: 0}
			if err := CompleteChecksum(p.b, h); !errors.Is(err, ErrCsumRange) || !bytes.Equal(p.b, orig) {
				t.Errorf("v6=%v, csum_start %d inside the IP header: %v (changed %v), want ErrCsumRange", v6, start, err, !bytes.Equal(p.b, orig))
			}
		}
	}
}

func TestSplitGSOAllocs(t *testing.T) {
	p := buildSuper(superSpec{tcpOpts: 12, payload: 45 * 1448, mss: 1448, flags: tcpACK, seed: 15})
	out, sizes := outBufs(45, 1500)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := SplitGSO(p.b, p.h, out, sizes); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("SplitGSO allocates %.1f times per call, want 0", allocs)
	}
}

func TestCsumAddMatchesReference(t *testing.T) {
	p := buildSuper(superSpec{payload: 1 << 16, mss: 1000, seed: 16})
	data := p.b
	for start := 0; start < 9; start++ {
		for n := 0; n <= 300; n++ {
			b := data[start : start+n]
			if got, want := ChecksumFold(ChecksumAdd(b, 0)), fold(sum16(b, 0)); got != want {
				t.Fatalf("sum of %d bytes at %d: %#04x, want %#04x", n, start, got, want)
			}
		}
	}
	// All-ones data drives every 64-bit add to carry.
	ones := bytes.Repeat([]byte{0xff}, 65535)
	if got, want := ChecksumFold(ChecksumAdd(ones, 0xffffffffffffffff)), fold(sum16(ones, 0xffff)); got != want {
		t.Errorf("all-ones sum %#04x, want %#04x", got, want)
	}
	if got, want := ChecksumFold(ChecksumAdd(data, 0)), fold(sum16(data, 0)); got != want {
		t.Errorf("64 KiB sum %#04x, want %#04x", got, want)
	}
}
