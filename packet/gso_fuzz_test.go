package packet

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzSplitGSO checks that SplitGSO never panics whatever the header and
// packet, and that whenever it succeeds: it made as many segments, of as
// many bytes in all, as GSOSegments says; the payloads concatenate back to
// the super-packet's; IPv4 headers are valid; and transport checksums
// verify whenever the super-packet's pseudo-header sum was right (always,
// without NEEDS_CSUM, since it is not used then).
func FuzzSplitGSO(f *testing.F) {
	seeds := []superSpec{
		{tcpOpts: 12, payload: 3*1448 + 500, mss: 1448, flags: tcpACK | tcpPSH | tcpFIN | tcpCWR, seq: 1000, id: 0x1234},
		{v6: true, ext: 8, payload: 2*1000 + 3, mss: 1000, flags: tcpACK | tcpFIN},
		{udp: true, payload: 3*200 + 7, mss: 200},
		{v6: true, udp: true, payload: 3 * 100, mss: 100},
		{ipOpts: 4, payload: 10, mss: 1448},
	}
	for i, s := range seeds {
		s.seed = uint64(i)
		p := buildSuper(s)
		h := p.h
		f.Add(h.Flags, h.GSOType, h.HdrLen, h.GSOSize, h.CsumStart, h.CsumOffset, p.b)
		f.Add(uint8(0), h.GSOType, uint16(0), h.GSOSize, uint16(0), uint16(0), p.b)
		f.Add(h.Flags, GSONone, uint16(0), uint16(0), h.CsumStart, h.CsumOffset, p.b)
	}
	f.Fuzz(func(t *testing.T, flags, gsoType uint8, hdrLen, gsoSize, csumStart, csumOffset uint16, b []byte) {
		h := VirtioNetHdr{Flags: flags, GSOType: gsoType, HdrLen: hdrLen, GSOSize: gsoSize, CsumStart: csumStart, CsumOffset: csumOffset}
		orig := bytes.Clone(b)
		out, sizes := outBufs(16, len(b))
		n, err := SplitGSO(b, h, out, sizes)
		if !bytes.Equal(b, orig) {
			t.Fatal("SplitGSO modified its input")
		}
		segs, wire, serr := GSOSegments(b, h)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with %d segments", err, n)
			}
			if serr == nil && err != ErrGSOSegments && err != ErrGSOBuffer && err != ErrCsumRange {
				t.Fatalf("SplitGSO failed with %v where GSOSegments succeeded", err)
			}
			return
		}
		if serr != nil || segs != n {
			t.Fatalf("split made %d segments, GSOSegments says %d, %v", n, segs, serr)
		}
		total := 0
		for i := range n {
			total += sizes[i]
		}
		if total != wire {
			t.Fatalf("split made %d bytes, GSOSegments says %d", total, wire)
		}
		if gsoType == GSONone {
			return
		}
		l, err := parseGSO(b, h)
		if err != nil {
			t.Fatal(err)
		}
		checkValid := true
		if l.partial {
			csumAt := l.thoff + 16
			if l.proto == ProtoUDP {
				csumAt = l.thoff + 6
			}
			got := uint32(binary.BigEndian.Uint16(b[csumAt:]))
			checkValid = got%0xffff == uint32(fold(refPseudo(b, l.v6, l.proto, len(b)-l.thoff)))%0xffff
		}
		var payload []byte
		for i := range n {
			seg := out[i][:sizes[i]]
			payload = append(payload, seg[l.hdrLen:]...)
			if !l.v6 && !IPv4HeaderValid(seg) {
				t.Fatalf("segment %d: IPv4 header invalid", i)
			}
			if checkValid && !l4Valid(seg, l.v6, l.proto, l.thoff) {
				t.Fatalf("segment %d: transport checksum invalid", i)
			}
		}
		if !bytes.Equal(payload, b[l.hdrLen:]) {
			t.Fatal("payloads do not concatenate back to the super-packet's")
		}
	})
}
