package router

import (
	"testing"
	"time"

	"wanlab/packet"
	"wanlab/tun"
)

// FuzzReadPath hands the router's read path one fuzzed packet at a time,
// with a fuzzed virtio-net header, as a VNet device would, on a path that
// keeps super-packets whole, one that splits them with jitter, and a
// shaper. Whatever the bytes: nothing panics; the packet is either counted
// as malformed or enters the link as one or more segments, never both and
// never neither; once the link has released it, no pool packet is left
// behind; every packet written to the server's device is an IP packet
// whose header and lengths fit it (what the receiving kernel checks first),
// and the egress refuses none (but what a whole path passes as the kernel
// gave it); and the segments written are those delivered.
//
// The packet is a fuzzed head of at most maxFuzzHead bytes followed by a
// pattern payload of fuzzed length, so that the fuzzing engine's
// minimisation of each new input stays short (see FuzzSplitGSO in package
// packet); the routers are built once and reused, as a running router is.
func FuzzReadPath(f *testing.F) {
	tcp4h, tcp4 := tcpSuper(false, 3*1448+100, 1448, 0x18)
	tcp6h, tcp6 := tcpSuper(true, 2*1000, 1000, 0x10)
	plainh := make([]byte, tun.VNetHdrLen)
	for _, s := range []struct {
		hdr, pkt []byte
	}{
		{tcp4h, tcp4}, {tcp6h, tcp6}, {plainh, tcp4[:1400]}, {plainh, []byte{0x45, 0, 0, 20}}, {plainh, nil},
	} {
		head := s.pkt[:min(len(s.pkt), 52+20)]
		for chain := range uint8(len(fuzzChains)) {
			f.Add(chain, s.hdr, head, uint16(len(s.pkt)-len(head)))
		}
	}
	routers := make([]*Router, len(fuzzChains))
	clients := make([]*fakeVNet, len(fuzzChains))
	servers := make([]*fakeVNet, len(fuzzChains))
	for i, c := range fuzzChains {
		routers[i], clients[i], servers[i] = fakeRouter(f, mustChain(f, c), nil)
		servers[i].keep = true
	}
	buf := make([]byte, 0, tun.VNetHdrLen+maxFuzzHead+maxFuzzPayload)
	f.Fuzz(func(t *testing.T, chain uint8, hdr, head []byte, payloadLen uint16) {
		i := int(chain) % len(fuzzChains)
		r, c, s := routers[i], clients[i], servers[i]
		l := r.up
		if len(hdr) != tun.VNetHdrLen || len(head) > maxFuzzHead {
			return
		}
		b := append(append(buf[:0], hdr...), head...)
		for j := range int(payloadLen) % (maxFuzzPayload + 1) {
			b = append(b, byte(j*13+5))
		}
		c.pkts, c.next, c.budget = [][]byte{b}, 0, 1
		s.got = s.got[:0]
		before, live, written := r.Snapshot().Up, l.small.Live()+l.large.Live(), s.segs
		for end := time.Now().Add(time.Second); c.budget != 0 || l.dir.Len() > 0; {
			step(l)
			if time.Now().After(end) {
				t.Fatalf("chain %q: %d packets still in the link after 1 s", fuzzChains[i], l.dir.Len())
			}
		}
		after := r.Snapshot().Up
		bad := after.Malformed - before.Malformed
		in := after.Counters.Sent - before.Counters.Sent
		out := after.Counters.Delivered - before.Counters.Delivered
		dropped := after.Counters.Dropped - before.Counters.Dropped
		if bad > 1 || (bad == 1) == (in > 0) {
			t.Fatalf("chain %q: malformed +%d and %d segments in: want exactly one of the two", fuzzChains[i], bad, in)
		}
		if in != out+dropped || after.Counters.Queued != 0 {
			t.Fatalf("chain %q: %d segments in, %d out, %d dropped, %d queued", fuzzChains[i], in, out, dropped, after.Counters.Queued)
		}
		if got := l.small.Live() + l.large.Live(); got != live {
			t.Fatalf("chain %q: %d pool packets live after the link emptied, %d before", fuzzChains[i], got, live)
		}
		// A path that keeps super-packets whole passes one whose virtio-net
		// header the router cannot read as the kernel gave it (the
		// kernel validated it when the host sent it), counted as one
		// segment; a receiving kernel that refuses it shows as a write
		// drop. Every other packet is written.
		refused := after.WriteDrops - before.WriteDrops
		h, _ := packet.DecodeVirtioNetHdr(hdr)
		if _, err := inspect(b[len(hdr):], h); err == nil || !after.GSO.Whole || bad > 0 {
			if refused != 0 {
				t.Fatalf("chain %q: the egress refused a packet: %v", fuzzChains[i], after.WriteDropsByReason)
			}
		} else if refused > in {
			t.Fatalf("chain %q: %d write drops for %d segments in", fuzzChains[i], refused, in)
		}
		if segs := uint64(s.segs - written); segs != out-refused {
			t.Fatalf("chain %q: %d segments written, %d delivered, %d refused", fuzzChains[i], segs, out, refused)
		}
		for _, p := range s.got {
			if err := packet.CheckIPLength(p, false); err != nil {
				t.Fatalf("chain %q: wrote a packet the receiver drops: %v: % x", fuzzChains[i], err, p[:min(len(p), 40)])
			}
		}
	})
}

// The paths FuzzReadPath uses: whole, split by jitter, and a shaper with a
// child that hashes flows.
var fuzzChains = []string{"", "netem delay 1us 1us", "tbf rate 10gbit burst 200k latency 1ms; fq_codel"}

// Bounds of FuzzReadPath's packets: a fuzzed head of up to 128 bytes (IP
// and transport headers with options) and up to 8 KiB of payload.
const (
	maxFuzzHead    = 128
	maxFuzzPayload = 8192
)
