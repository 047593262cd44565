package packet

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestParseTupleIPv4(t *testing.T) {
	udp := make([]byte, 100)
	WriteUDP4(udp, UDP4{Src: [4]byte{192, 0, 2, 1}, Dst: [4]byte{198, 51, 100, 7}, SrcPort: 4000, DstPort: 53}, 100)
	checkTuples(t, 4, []tupleCase{
		{"udp", udp, ProtoUDP, 4000, 53},
		{"tcp", ipv4(0, ProtoTCP, 0, nil, ports(443, 50000, 20)), ProtoTCP, 443, 50000},
		{"tcp with options", ipv4(0, ProtoTCP, 0, []byte{0x94, 4, 0, 0, 1, 1, 1, 0}, ports(22, 1022, 20)), ProtoTCP, 22, 1022},
		{"sctp", ipv4(0, 132, 0, nil, ports(9, 10, 12)), 132, 9, 10},
		{"dccp", ipv4(0, 33, 0, nil, ports(11, 12, 12)), 33, 11, 12},
		{"udplite", ipv4(0, 136, 0, nil, ports(13, 14, 8)), 136, 13, 14},
		{"icmp echo", ipv4(0, ProtoICMP, 0, nil, icmpEcho(8, 0x4242)), ProtoICMP, 0x4242, 0x4242},
		{"first fragment", ipv4(0, ProtoUDP, 1<<13, nil, ports(5, 6, 8)), ProtoUDP, 5, 6},       // MF, offset 0
		{"later fragment", ipv4(0, ProtoUDP, 1<<13|185, nil, ports(5, 6, 8)), ProtoUDP, 0, 0},   // no ports there
		{"last fragment", ipv4(0, ProtoUDP, 185, nil, ports(5, 6, 8)), ProtoUDP, 0, 0},          // MF clear, offset ≠ 0
		{"df is not a fragment", ipv4(0, ProtoUDP, 2<<13, nil, ports(7, 8, 8)), ProtoUDP, 7, 8}, // DF
		{"gre has no ports", ipv4(0, 47, 0, nil, ports(1, 2, 8)), 47, 0, 0},
	}, func(tc tupleCase, tu Tuple) bool {
		return string(tu.Src[:4]) == string(tc.b[12:16]) && string(tu.Dst[:4]) == string(tc.b[16:20]) && tu.Src[4] == 0
	})
}

// tupleCase is a packet and the protocol and ports ParseTuple must find
// in it.
type tupleCase struct {
	name     string
	b        []byte
	proto    uint8
	src, dst uint16
}

// checkTuples parses the packet of each case, of IP version v, and checks
// the tuple: its version, protocol and ports, and its addresses with
// addrsOK.
func checkTuples(t *testing.T, v uint8, cases []tupleCase, addrsOK func(tupleCase, Tuple) bool) {
	t.Helper()
	for _, tc := range cases {
		tu, err := ParseTuple(tc.b)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tu.Version != v || tu.Proto != tc.proto || tu.SrcPort != tc.src || tu.DstPort != tc.dst {
			t.Errorf("%s: %+v, want proto %d ports %d→%d", tc.name, tu, tc.proto, tc.src, tc.dst)
		}
		if !addrsOK(tc, tu) {
			t.Errorf("%s: addresses %v → %v", tc.name, tu.Src, tu.Dst)
		}
	}
}

func TestParseTupleIPv6(t *testing.T) {
	const hop, route, dest, frag = 0, 43, 60, 44
	checkTuples(t, 6, []tupleCase{
		{"udp", ipv6(0, 0, ProtoUDP, ports(4000, 53, 8)), ProtoUDP, 4000, 53},
		{"tcp", ipv6(0, 0, ProtoTCP, ports(443, 50000, 20)), ProtoTCP, 443, 50000},
		{"icmpv6 echo", ipv6(0, 0, ProtoICMPv6, icmpEcho(128, 0x77)), ProtoICMPv6, 0x77, 0x77},
		{"hop-by-hop, routing, destination options", ipv6(0, 0, hop, cat(extHeader(route, 0), extHeader(dest, 2), extHeader(ProtoTCP, 1), ports(80, 8080, 20))), ProtoTCP, 80, 8080},
		{"first fragment", ipv6(0, 0, frag, cat(fragHeader(ProtoUDP, 0, true), ports(5, 6, 8))), ProtoUDP, 5, 6},
		{"later fragment", ipv6(0, 0, frag, cat(fragHeader(ProtoUDP, 181, true), ports(5, 6, 8))), ProtoUDP, 0, 0},
		{"hop-by-hop then later fragment", ipv6(0, 0, hop, cat(extHeader(frag, 0), fragHeader(ProtoTCP, 3, false), ports(5, 6, 20))), ProtoTCP, 0, 0},
		{"no next header", ipv6(0, 0, 59, nil), 59, 0, 0},
	}, func(_ tupleCase, tu Tuple) bool { return tu.Src == v6Src && tu.Dst == v6Dst })
	// More extension headers than Transport follows: no ports, no error.
	chain := []byte{}
	for i := 0; i < 9; i++ {
		chain = append(chain, extHeader(dest, 0)...)
	}
	chain[len(chain)-8] = ProtoUDP
	tu, err := ParseTuple(ipv6(0, 0, dest, cat(chain, ports(1, 2, 8))))
	if err != nil || tu.SrcPort != 0 || tu.DstPort != 0 {
		t.Errorf("nine extension headers: %+v, %v", tu, err)
	}
}

func TestParseTupleErrors(t *testing.T) {
	tcp := ipv4(0, ProtoTCP, 0, nil, ports(1, 2, 20))
	opts := ipv4(0, ProtoTCP, 0, make([]byte, 8), nil)
	// An extension header whose length runs past the end of the packet.
	long := ipv6(0, 0, 0, extHeader(ProtoUDP, 0))
	long[41] = 10
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrVersion},
		{"ipx", make([]byte, 40), ErrVersion},
		{"ipv4 ports cut", tcp[:22], ErrTruncated},
		{"ipv4 options cut", opts[:24], ErrTruncated},
		{"icmp cut", ipv4(0, ProtoICMP, 0, nil, icmpEcho(8, 1))[:24], ErrTruncated},
		{"ipv6 ports cut", ipv6(0, 0, ProtoUDP, ports(1, 2, 8))[:42], ErrTruncated},
		{"ipv6 extension cut", ipv6(0, 0, 0, extHeader(ProtoUDP, 0))[:44], ErrTruncated},
		{"ipv6 extension longer than the packet", long, ErrTruncated},
		{"ipv6 fragment cut", ipv6(0, 0, 44, fragHeader(ProtoUDP, 0, true))[:46], ErrTruncated},
	}
	for _, tt := range tests {
		if _, err := ParseTuple(tt.b); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func randomTuple(r *rand.Rand) Tuple {
	var tu Tuple
	tu.Version = 4
	n := 4
	if r.IntN(2) == 0 {
		tu.Version, n = 6, 16
	}
	for i := 0; i < n; i++ {
		tu.Src[i] = byte(r.Uint32())
		tu.Dst[i] = byte(r.Uint32())
	}
	switch r.IntN(4) {
	case 0:
		tu.Dst = tu.Src // same host on both ends
	case 1:
		tu.Dst[n-1] = tu.Src[n-1] ^ 1 // addresses differing in the last byte only
	}
	tu.SrcPort, tu.DstPort = uint16(r.Uint32()), uint16(r.Uint32())
	if r.IntN(4) == 0 {
		tu.DstPort = tu.SrcPort
	}
	tu.Proto = []uint8{ProtoTCP, ProtoUDP, ProtoICMP}[r.IntN(3)]
	return tu
}

func TestHashSymmetric(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	seen := map[uint32]bool{}
	for i := 0; i < 20000; i++ {
		tu := randomTuple(r)
		seed := r.Uint64()
		if h, hr := tu.Hash(seed), tu.Reverse().Hash(seed); h != hr {
			t.Fatalf("%+v: Hash %#x, reverse %#x", tu, h, hr)
		}
		if c := tu.Canonical(); c != tu.Reverse().Canonical() || c.Canonical() != c {
			t.Fatalf("%+v: Canonical not shared by both directions", tu)
		}
		if tu.Reverse().Reverse() != tu {
			t.Fatalf("%+v: Reverse twice is not the identity", tu)
		}
		seen[tu.Hash(1)] = true
	}
	if len(seen) < 19900 {
		t.Errorf("20000 random tuples gave only %d distinct hashes", len(seen))
	}
	a := Tuple{Version: 4, Src: [16]byte{10, 0, 0, 1}, Dst: [16]byte{10, 0, 0, 2}, SrcPort: 1, DstPort: 2, Proto: ProtoUDP}
	b := a
	b.Proto = ProtoTCP
	if a.Hash(0) == b.Hash(0) || a.Hash(0) == a.Hash(1) {
		t.Error("protocol or seed does not change the hash")
	}
}

func TestFlowHash(t *testing.T) {
	pool := NewPool(2048, DefaultHeadroom)
	p := pool.Get()
	p.SetLen(60)
	WriteUDP4(p.Bytes(), UDP4{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, SrcPort: 1000, DstPort: 2000}, 60)
	tu, _ := ParseTuple(p.Bytes())
	want := tu.Hash(9)
	if want == 0 {
		want = 1
	}
	if got := p.FlowHash(9); got != want || p.Hash != want {
		t.Errorf("FlowHash = %#x (cached %#x), want %#x", got, p.Hash, want)
	}
	q := pool.Get()
	q.SetLen(10) // not IP
	if got := q.FlowHash(9); got != 1 {
		t.Errorf("non-IP FlowHash = %d, want 1", got)
	}
	p.Free()
	q.Free()
	if pool.Live() != 0 {
		t.Errorf("Live = %d", pool.Live())
	}
}

// KeyedHash is the hash under each key, computed afresh: a cached FlowHash
// does not stand in for it.
func TestKeyedHash(t *testing.T) {
	pool := NewPool(2048, DefaultHeadroom)
	p := pool.Get()
	p.SetLen(60)
	WriteUDP4(p.Bytes(), UDP4{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, SrcPort: 1000, DstPort: 2000}, 60)
	tu, _ := ParseTuple(p.Bytes())
	p.FlowHash(9)
	if got, want := p.KeyedHash(10), tu.Hash(10); got != want || got == p.Hash {
		t.Errorf("KeyedHash(10) = %#x, want %#x (not the cached %#x)", got, want, p.Hash)
	}
	p.Free()
}

func TestQueuePopBack(t *testing.T) {
	pool := NewPool(2048, DefaultHeadroom)
	var q Queue
	for i := range 20 { // past the first growth
		p := pool.Get()
		p.SetLen(100 + i)
		p.Seq = int64(i)
		q.Push(p)
	}
	p := q.PopBack()
	if p.Seq != 19 || q.Len() != 19 || q.Bytes() != 19*100+171 || q.Back().Seq != 18 || q.Front().Seq != 0 {
		t.Errorf("PopBack = %d; len %d bytes %d", p.Seq, q.Len(), q.Bytes())
	}
	p.Free()
	for p := q.Pop(); p != nil; p = q.Pop() {
		p.Free()
	}
	if q.PopBack() != nil {
		t.Error("PopBack of an empty queue")
	}
	if pool.Live() != 0 {
		t.Errorf("Live = %d", pool.Live())
	}
}
