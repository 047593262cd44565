package packet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func fuzzSeeds(f *testing.F, withByte bool) {
	udp := make([]byte, 64)
	WriteUDP4(udp, UDP4{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, SrcPort: 5, DstPort: 6, TOS: 2}, 64)
	seeds := [][]byte{
		udp,
		ipv4(1, ProtoTCP, 0, []byte{1, 1, 1, 0}, ports(1, 2, 20)),
		ipv4(3, ProtoUDP, 1<<13|9, nil, ports(1, 2, 8)),
		ipv4(0, ProtoICMP, 0, nil, icmpEcho(8, 3)),
		ipv6(0x21, 7, ProtoUDP, ports(1, 2, 8)),
		ipv6(0x02, 7, 0, cat(extHeader(44, 0), fragHeader(ProtoTCP, 0, true), ports(3, 4, 20))),
		ipv6(0x03, 7, ProtoICMPv6, icmpEcho(128, 9)),
		{0x45},
		nil,
	}
	for _, s := range seeds {
		if withByte {
			f.Add(s, uint8(2))
		} else {
			f.Add(s)
		}
	}
}

// FuzzParseTuple: ParseTuple never panics, fails only with its two errors,
// agrees with Transport and the header bytes, and hashes symmetrically.
func FuzzParseTuple(f *testing.F) {
	fuzzSeeds(f, false)
	f.Fuzz(func(t *testing.T, b []byte) {
		tu, err := ParseTuple(b)
		proto, off, terr := Transport(b)
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrVersion) {
				t.Fatalf("ParseTuple error %v", err)
			}
			if terr == nil && off >= 0 && len(b) >= off+8 {
				t.Fatalf("ParseTuple failed (%v) though Transport found proto %d at %d of %d", err, proto, off, len(b))
			}
			return
		}
		if terr != nil || tu.Proto != proto {
			t.Fatalf("tuple %+v, Transport %d %d %v", tu, proto, off, terr)
		}
		switch v := IPVersion(b); {
		case v == 4 && tu.Version == 4:
			if !bytes.Equal(tu.Src[:4], b[12:16]) || !bytes.Equal(tu.Dst[:4], b[16:20]) {
				t.Fatalf("IPv4 addresses %v %v from % x", tu.Src, tu.Dst, b[:20])
			}
		case v == 6 && tu.Version == 6:
			if !bytes.Equal(tu.Src[:], b[8:24]) || !bytes.Equal(tu.Dst[:], b[24:40]) {
				t.Fatalf("IPv6 addresses %v %v", tu.Src, tu.Dst)
			}
		default:
			t.Fatalf("tuple version %d, IPVersion %d", tu.Version, v)
		}
		if off >= 0 && (proto == ProtoTCP || proto == ProtoUDP) {
			if tu.SrcPort != binary.BigEndian.Uint16(b[off:]) || tu.DstPort != binary.BigEndian.Uint16(b[off+2:]) {
				t.Fatalf("ports %d %d, header says % x", tu.SrcPort, tu.DstPort, b[off:off+4])
			}
		}
		if off < 0 && (tu.SrcPort != 0 || tu.DstPort != 0) {
			t.Fatalf("ports %d %d without a transport header", tu.SrcPort, tu.DstPort)
		}
		for _, seed := range []uint64{0, 1, 1 << 63} {
			if tu.Hash(seed) != tu.Reverse().Hash(seed) {
				t.Fatalf("%+v: hash not symmetric", tu)
			}
		}
	})
}

// FuzzSetCE: SetCE and SetECN never panic; SetCE acts as INET_ECN_set_ce
// (Not-ECT untouched and false, ECT becomes CE, CE stays, both true),
// changes nothing but the ECN bits and the IPv4 checksum, and keeps a valid
// IPv4 checksum valid.
func FuzzSetCE(f *testing.F) {
	fuzzSeeds(f, true)
	f.Fuzz(func(t *testing.T, b []byte, e uint8) {
		c := append([]byte(nil), b...)
		marked := SetCE(c)
		v := IPVersion(b)
		var ecn ECN
		tosByte, mask := 1, byte(0)
		switch v {
		case 4:
			ecn, mask = ECN(b[1]&3), 0x03
		case 6:
			ecn, mask = ECN(b[1]>>4&3), 0x30
		}
		switch {
		case v == 0 || ecn == NotECT:
			if marked || !bytes.Equal(c, b) {
				t.Fatalf("SetCE on %v (IP version %d) changed it or said true", ecn, v)
			}
		case ecn == CE:
			if !marked || !bytes.Equal(c, b) {
				t.Fatal("SetCE on CE changed the packet or said false")
			}
		default:
			if !marked || ECNOf(c) != CE || c[tosByte] != b[tosByte]|mask {
				t.Fatalf("SetCE on %v: marked %v, now %v", ecn, marked, ECNOf(c))
			}
			for i := range b {
				if c[i] != b[i] && i != tosByte && !(v == 4 && (i == 10 || i == 11)) {
					t.Fatalf("SetCE changed byte %d", i)
				}
			}
		}
		if IPv4HeaderValid(b) {
			if !IPv4HeaderValid(c) || binary.BigEndian.Uint16(c[10:]) != recomputed(c) {
				t.Fatalf("checksum broken by SetCE: % x → % x", b[:20], c[:20])
			}
		}
		d := append([]byte(nil), b...)
		SetECN(d, ECN(e))
		if v != 0 && ECNOf(d) != ECN(e&3) {
			t.Fatalf("SetECN(%d) left %v", e, ECNOf(d))
		}
		if IPv4HeaderValid(b) && !IPv4HeaderValid(d) {
			t.Fatal("checksum broken by SetECN")
		}
	})
}
