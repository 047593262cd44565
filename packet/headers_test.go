package packet

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// INET_ECN_set_ce on every codepoint, for IPv4 with a range of DSCPs: only
// ECT packets change, they become CE, the DSCP survives and the checksum is
// exactly what a full recomputation gives.
func TestSetCEIPv4(t *testing.T) {
	for _, dscp := range []uint8{0, 10, 46, 63} {
		for _, e := range []ECN{NotECT, ECT1, ECT0, CE} {
			b := make([]byte, 60)
			WriteUDP4(b, UDP4{Src: [4]byte{192, 0, 2, 1}, Dst: [4]byte{198, 51, 100, 7}, SrcPort: 4000, DstPort: 53, TOS: dscp<<2 | uint8(e), ID: 777}, 60)
			before := append([]byte(nil), b...)
			got := SetCE(b)
			if want := e != NotECT; got != want {
				t.Errorf("dscp %d %v: SetCE = %v, want %v", dscp, e, got, want)
			}
			wantECN := CE
			if e == NotECT {
				wantECN = NotECT
			}
			if ECNOf(b) != wantECN || DSCP(b) != dscp {
				t.Errorf("dscp %d %v: after SetCE ECN %v DSCP %d, want %v %d", dscp, e, ECNOf(b), DSCP(b), wantECN, dscp)
			}
			if !IPv4HeaderValid(b) {
				t.Errorf("dscp %d %v: checksum no longer valid", dscp, e)
			}
			if sum := binary.BigEndian.Uint16(b[10:]); sum != recomputed(b) {
				t.Errorf("dscp %d %v: checksum %#04x, recomputed %#04x", dscp, e, sum, recomputed(b))
			}
			// Only the TOS byte and the checksum may change, and only for ECT.
			for i := range b {
				changed := b[i] != before[i]
				if changed && (e == NotECT || e == CE || (i != 1 && i != 10 && i != 11)) {
					t.Errorf("dscp %d %v: byte %d changed from %#02x to %#02x", dscp, e, i, before[i], b[i])
				}
			}
		}
	}
}

// Many random headers, options included: the incremental update agrees
// with a recomputation every time (RFC 1624 eqn. 3 has no -0 problem).
func TestSetCEIPv4RandomHeaders(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 20000; i++ {
		opts := make([]byte, 4*r.IntN(11))
		for j := range opts {
			opts[j] = byte(r.Uint32())
		}
		b := ipv4(byte(r.Uint32())|1, byte(r.Uint32()), uint16(r.Uint32()), opts, nil)
		for j := 2; j < 20; j++ {
			if j != 10 && j != 11 {
				b[j] = byte(r.Uint32())
			}
		}
		binary.BigEndian.PutUint16(b[10:], recomputed(b))
		SetCE(b)
		if !IPv4HeaderValid(b) || binary.BigEndian.Uint16(b[10:]) != recomputed(b) {
			t.Fatalf("header % x: checksum %#04x after SetCE, recomputed %#04x", b, binary.BigEndian.Uint16(b[10:]), recomputed(b))
		}
	}
}

func TestSetCEIPv6(t *testing.T) {
	const flow = 0xabcde
	for _, dscp := range []uint8{0, 10, 46, 63} {
		for _, e := range []ECN{NotECT, ECT1, ECT0, CE} {
			b := ipv6(dscp<<2|uint8(e), flow, ProtoUDP, ports(1, 2, 8))
			before := append([]byte(nil), b...)
			if got, want := SetCE(b), e != NotECT; got != want {
				t.Errorf("dscp %d %v: SetCE = %v, want %v", dscp, e, got, want)
			}
			wantECN := CE
			if e == NotECT {
				wantECN = NotECT
			}
			tos, _ := TOS(b)
			if ECNOf(b) != wantECN || tos>>2 != dscp {
				t.Errorf("dscp %d %v: after SetCE traffic class %#02x", dscp, e, tos)
			}
			if gotFlow := uint32(b[1]&0x0f)<<16 | uint32(b[2])<<8 | uint32(b[3]); gotFlow != flow || b[0]>>4 != 6 {
				t.Errorf("dscp %d %v: version or flow label damaged: % x", dscp, e, b[:4])
			}
			if e == NotECT || e == CE {
				if !bytes.Equal(b, before) {
					t.Errorf("dscp %d %v: packet changed", dscp, e)
				}
			}
		}
	}
}

func TestSetCENotIP(t *testing.T) {
	for _, b := range [][]byte{nil, {0x45}, make([]byte, 19), append([]byte{0x45, 0x02}, make([]byte, 18)...)[:19], {0x60, 0x20, 0, 0}} {
		before := append([]byte(nil), b...)
		if SetCE(b) || !bytes.Equal(b, before) {
			t.Errorf("SetCE(% x) changed a non-IP buffer", before)
		}
	}
}

func TestSetECN(t *testing.T) {
	for _, e := range []ECN{NotECT, ECT1, ECT0, CE} {
		b := ipv4(0xb8|uint8(ECT0), ProtoUDP, 0, nil, ports(1, 2, 8))
		SetECN(b, e)
		if ECNOf(b) != e || DSCP(b) != 46 || !IPv4HeaderValid(b) || binary.BigEndian.Uint16(b[10:]) != recomputed(b) {
			t.Errorf("IPv4 SetECN(%v): ECN %v DSCP %d valid %v", e, ECNOf(b), DSCP(b), IPv4HeaderValid(b))
		}
		b6 := ipv6(0xb8, 0x12345, ProtoUDP, ports(1, 2, 8))
		SetECN(b6, e)
		if ECNOf(b6) != e || DSCP(b6) != 46 || b6[1]&0x0f != 0x1 || b6[2] != 0x23 {
			t.Errorf("IPv6 SetECN(%v): % x", e, b6[:4])
		}
	}
}

func TestECNString(t *testing.T) {
	want := map[ECN]string{NotECT: "Not-ECT", ECT1: "ECT(1)", ECT0: "ECT(0)", CE: "CE", 7: "CE"}
	for e, s := range want {
		if e.String() != s {
			t.Errorf("%d.String() = %q, want %q", e, e.String(), s)
		}
	}
}

func TestIPVersion(t *testing.T) {
	tests := []struct {
		b    []byte
		want int
	}{
		{nil, 0}, {make([]byte, 20), 0},
		{append([]byte{0x45}, make([]byte, 19)...), 4},
		{append([]byte{0x44}, make([]byte, 19)...), 0}, // IHL below 5
		{append([]byte{0x45}, make([]byte, 18)...), 0}, // shorter than 20
		{append([]byte{0x60}, make([]byte, 39)...), 6},
		{append([]byte{0x60}, make([]byte, 38)...), 0},
	}
	for _, tt := range tests {
		if got := IPVersion(tt.b); got != tt.want {
			t.Errorf("IPVersion(% x) = %d, want %d", tt.b, got, tt.want)
		}
	}
}

func TestIPv4HeaderValid(t *testing.T) {
	b := ipv4(0, ProtoTCP, 0, []byte{1, 1, 1, 0}, nil)
	if !IPv4HeaderValid(b) {
		t.Fatal("fresh header with options is not valid")
	}
	b[8]--
	if IPv4HeaderValid(b) {
		t.Error("header with a changed TTL still valid")
	}
	b = ipv4(0, ProtoTCP, 0, make([]byte, 8), nil)
	if IPv4HeaderValid(b[:24]) {
		t.Error("header cut inside its options is valid")
	}
}

func TestCheckIPLength(t *testing.T) {
	v4 := func(n, total int, ihl byte) []byte {
		b := make([]byte, n)
		b[0] = 0x40 | ihl
		binary.BigEndian.PutUint16(b[2:], uint16(total))
		return b
	}
	v6 := func(n, payload int) []byte {
		b := make([]byte, n)
		b[0] = 0x60
		binary.BigEndian.PutUint16(b[4:], uint16(payload))
		return b
	}
	for _, tc := range []struct {
		name  string
		b     []byte
		exact bool
		want  error
	}{
		{"empty", nil, false, ErrVersion},
		{"version 5", append([]byte{0x55}, make([]byte, 59)...), false, ErrVersion},
		{"IPv4 cut at 19 bytes", v4(20, 20, 5)[:19], false, ErrVersion},
		{"IPv4 IHL 4", v4(60, 60, 4), false, ErrVersion},
		{"IPv4", v4(60, 60, 5), true, nil},
		{"IPv4 with options", v4(60, 60, 15), true, nil},
		{"IPv4 IHL beyond the packet", v4(40, 40, 15), false, ErrIPLength},
		{"IPv4 total beyond the packet", v4(60, 61, 5), false, ErrIPLength},
		{"IPv4 total below the header", v4(60, 19, 5), false, ErrIPLength},
		{"IPv4 trailing bytes", v4(60, 40, 5), false, nil},
		{"IPv4 super-packet with trailing bytes", v4(60, 40, 5), true, ErrIPLength},
		{"IPv6", v6(100, 60), true, nil},
		{"IPv6 cut at 39 bytes", v6(40, 0)[:39], false, ErrVersion},
		{"IPv6 payload beyond the packet", v6(100, 61), false, ErrIPLength},
		{"IPv6 trailing bytes", v6(100, 0), false, nil},
		{"IPv6 super-packet with trailing bytes", v6(100, 59), true, ErrIPLength},
	} {
		if err := CheckIPLength(tc.b, tc.exact); err != tc.want {
			t.Errorf("%s: CheckIPLength = %v, want %v", tc.name, err, tc.want)
		}
	}
}
