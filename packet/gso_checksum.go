package packet

import (
	"encoding/binary"
	"math/bits"
)

// csumAdd adds b, read as big-endian 16-bit words with an odd last byte
// padded by a zero byte (RFC 1071), to the ones' complement accumulator
// acc and returns the new accumulator, to be folded with csumFold.
//
// It adds 64-bit words with end-around carry: since 2^16 ≡ 1 modulo
// 0xffff, a 64-bit word is congruent to the sum of its four 16-bit words,
// and the carry out of bit 63 (weight 2^64 ≡ 1) goes back in at bit 0.
// Eight bytes per add is what lets a 64 KiB super-packet be checksummed
// in a few microseconds; the byte-pair loop in Checksum would take ten
// times as long.
func csumAdd(b []byte, acc uint64) uint64 {
	var c uint64
	for len(b) >= 32 {
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[0:8]), c)
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[8:16]), c)
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[16:24]), c)
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[24:32]), c)
		b = b[32:]
	}
	for len(b) >= 8 {
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b), c)
		b = b[8:]
	}
	if len(b) > 0 {
		// Zero-padding the tail to a 64-bit word keeps every byte at the
		// weight its 16-bit word gives it.
		var tail [8]byte
		copy(tail[:], b)
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(tail[:]), c)
	}
	acc, c = bits.Add64(acc, 0, c)
	return acc + c
}

// csumFold folds a csumAdd accumulator to the 16-bit ones' complement sum.
// The result is 0 only if acc is 0.
func csumFold(acc uint64) uint16 {
	acc = acc>>32 + acc&0xffffffff
	acc = acc>>16 + acc&0xffff
	acc = acc>>16 + acc&0xffff
	acc = acc>>16 + acc&0xffff
	return uint16(acc)
}

// csumNeg returns a value that, added to an accumulator, subtracts the
// 32-bit quantity n from it in ones' complement arithmetic: -(hi·2^16+lo)
// ≡ ^hi + ^lo modulo 0xffff.
func csumNeg(n uint32) uint64 {
	return uint64(^uint16(n>>16)) + uint64(^uint16(n))
}
