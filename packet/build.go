package packet

import "encoding/binary"

// UDP4 describes a synthetic IPv4/UDP packet, as the simulator and tests
// make them.
type UDP4 struct {
	Src, Dst         [4]byte
	SrcPort, DstPort uint16
	TOS              uint8 // DSCP << 2 | ECN
	TTL              uint8 // 64 if zero
	ID               uint16
}

// WriteUDP4 writes an IPv4 header (valid checksum) and a UDP header into b
// for a packet of total IP length size, and returns size. The payload is left
// as it is. It panics if size < 28 or b is shorter than size.
func WriteUDP4(b []byte, h UDP4, size int) int {
	if size < 28 || len(b) < size {
		panic("packet: WriteUDP4 needs 28 <= size <= len(b)")
	}
	ttl := h.TTL
	if ttl == 0 {
		ttl = 64
	}
	b[0] = 0x45
	b[1] = h.TOS
	binary.BigEndian.PutUint16(b[2:], uint16(size))
	binary.BigEndian.PutUint16(b[4:], h.ID)
	binary.BigEndian.PutUint16(b[6:], 0x4000) // DF
	b[8] = ttl
	b[9] = ProtoUDP
	b[10], b[11] = 0, 0
	copy(b[12:16], h.Src[:])
	copy(b[16:20], h.Dst[:])
	binary.BigEndian.PutUint16(b[10:], Checksum(b[:20]))
	binary.BigEndian.PutUint16(b[20:], h.SrcPort)
	binary.BigEndian.PutUint16(b[22:], h.DstPort)
	binary.BigEndian.PutUint16(b[24:], uint16(size-20))
	b[26], b[27] = 0, 0 // UDP checksum optional on IPv4
	return size
}
