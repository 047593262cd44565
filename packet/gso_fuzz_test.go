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
//
// The packet is the fuzzed bytes head (its IP and transport headers, or
// anything else) followed by payload bytes of a fuzzed length, filled by a
// fixed pattern: the layout rules read only headers and lengths, and the
// checksums are checked against an independent sum whatever the bytes.
// The fuzzed byte slice stays short on purpose. The fuzzing engine
// minimises every input that finds new coverage by running it again with
// byte ranges removed, up to len²/2 times, and the worker reports no
// executions meanwhile: with whole super-packets of 4.9 KB as inputs and
// 78 KB of output buffers allocated per execution, each try cost 50 µs
// and one new input took a worker the whole default minimisation time of
// 60 s, so that the CI's 8-second slot reported 0 executions per second
// after its first few dozen inputs. A head of at most maxFuzzHead bytes
// keeps a minimisation under a second.
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
		head, pay := p.b[:p.hdrLen], uint16(len(p.b)-p.hdrLen)
		f.Add(h.Flags, h.GSOType, h.HdrLen, h.GSOSize, h.CsumStart, h.CsumOffset, head, pay)
		f.Add(uint8(0), h.GSOType, uint16(0), h.GSOSize, uint16(0), uint16(0), head, pay)
		f.Add(h.Flags, GSONone, uint16(0), uint16(0), h.CsumStart, h.CsumOffset, head, pay)
	}
	// One set of buffers for every execution of this worker (a fuzz
	// function runs one input at a time): the packet, and as many output
	// segments as the router splits into, each able to hold a whole
	// packet.
	const maxPacket = maxFuzzHead + maxFuzzPayload
	pkt := make([]byte, 0, maxPacket)
	out, sizes := outBufs(fuzzSegments, maxPacket)
	f.Fuzz(func(t *testing.T, flags, gsoType uint8, hdrLen, gsoSize, csumStart, csumOffset uint16, head []byte, payloadLen uint16) {
		if len(head) > maxFuzzHead {
			head = head[:maxFuzzHead]
		}
		b := append(pkt[:0], head...)
		for i := range int(payloadLen) % (maxFuzzPayload + 1) {
			b = append(b, byte(i*7+1))
		}
		h := VirtioNetHdr{Flags: flags, GSOType: gsoType, HdrLen: hdrLen, GSOSize: gsoSize, CsumStart: csumStart, CsumOffset: csumOffset}
		orig := bytes.Clone(b)
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
		payload := make([]byte, 0, len(b))
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

// Bounds of FuzzSplitGSO's packets: headers of up to 128 bytes (the
// largest IPv4 header and TCP header are 60 bytes each) and up to 8 KiB of
// payload, split into up to 64 segments. Every layout rule and error but
// ErrGSOLength, which needs 64 KiB and has a unit test, is reachable.
const (
	maxFuzzHead    = 128
	maxFuzzPayload = 8192
	fuzzSegments   = 64
)
