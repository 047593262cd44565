// Package coretest holds what the tests of the emulation core share: the
// packets they feed the disciplines and the check that none leaked. It is
// for tests only; internal/layering keeps it out of the core's code.
package coretest

import (
	"testing"

	"wanlab/packet"
)

// UDP returns a packet from pool: an IPv4/UDP datagram of size bytes (at
// least 28) from 10.0.0.1:port to 10.0.0.2:5001 with the given TOS byte
// (its low two bits are the ECN field), whose Seq and IP ID are seq.
func UDP(pool *packet.Pool, size int, port uint16, tos uint8, seq int64) *packet.Packet {
	p := pool.Get()
	p.SetLen(size)
	packet.WriteUDP4(p.Bytes(), packet.UDP4{
		Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2},
		SrcPort: port, DstPort: 5001, TOS: tos, ID: uint16(seq),
	}, size)
	p.Seq = seq
	return p
}

// CheckLive fails t unless exactly want packets of pool are live (taken
// and not freed): more means a leak, fewer a packet freed twice or freed
// while still held.
func CheckLive(t testing.TB, pool *packet.Pool, want int) {
	t.Helper()
	if got := pool.Live(); got != want {
		t.Errorf("pool has %d live packets, want %d: a leak or a double free", got, want)
	}
}
