package packet

import "testing"

// BenchmarkSplitGSO splits a 64 KiB TCPv4 super-packet (45 segments of
// 1448 bytes with timestamps, as a 1500-byte MTU path carries them) and
// reports the throughput in Gbit/s of super-packet bytes.
func BenchmarkSplitGSO(b *testing.B) {
	p := buildSuper(superSpec{tcpOpts: 12, payload: 45 * 1448, mss: 1448, flags: tcpACK | tcpPSH, seed: 1})
	out, sizes := outBufs(45, 1500)
	b.SetBytes(int64(len(p.b)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SplitGSO(p.b, p.h, out, sizes); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p.b))*8*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "Gbit/s")
}

// BenchmarkGSOSegments is the per-packet cost of accounting a super-packet
// without splitting it.
func BenchmarkGSOSegments(b *testing.B) {
	p := buildSuper(superSpec{tcpOpts: 12, payload: 45 * 1448, mss: 1448, flags: tcpACK, seed: 1})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := GSOSegments(p.b, p.h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompleteChecksum completes the checksum of a 1500-byte TCP
// packet.
func BenchmarkCompleteChecksum(b *testing.B) {
	p := buildSuper(superSpec{tcpOpts: 12, payload: 1448, mss: 1448, flags: tcpACK, seed: 1})
	p.h.GSOType, p.h.GSOSize = GSONone, 0
	b.SetBytes(int64(len(p.b)))
	b.ReportAllocs()
	for b.Loop() {
		if err := CompleteChecksum(p.b, p.h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChecksum is the Internet checksum of a 20-byte IPv4 header and
// of a 1500-byte packet.
func BenchmarkChecksum(b *testing.B) {
	for _, n := range []int{20, 1500} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*7 + 3)
		}
		b.Run(map[int]string{20: "20B", 1500: "1500B"}[n], func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			var s uint16
			for b.Loop() {
				s += Checksum(data)
			}
			sink16 = s
		})
	}
}

var sink16 uint16
