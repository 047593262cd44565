package packet

import (
	"encoding/binary"
	"math/bits"
)

// This file is the package's one Internet checksum routine (RFC 1071),
// used for IPv4 headers, TCP and UDP checksums, segmentation and the
// router's USO batches.

// Checksum returns the Internet checksum (RFC 1071) of b: the complement of
// its ones' complement sum.
func Checksum(b []byte) uint16 { return ^ChecksumFold(ChecksumAdd(b, 0)) }

// ChecksumAdd adds b, read as big-endian 16-bit words with an odd last byte
// padded by a zero byte (RFC 1071), to the ones' complement accumulator
// acc and returns the new accumulator, to be folded with ChecksumFold. To
// sum a message in pieces, every piece but the last must have an even
// length. acc may be any 64-bit value: a pseudo-header's fields can be
// added to it directly.
//
// It adds 64-bit words with end-around carry: since 2^16 ≡ 1 modulo
// 0xffff, a 64-bit word is congruent to the sum of its four 16-bit words,
// and the carry out of bit 63 (weight 2^64 ≡ 1) goes back in at bit 0.
// Eight bytes per add is what lets a 64 KiB super-packet be checksummed
// in a few microseconds; a loop over byte pairs takes ten times as long.
func ChecksumAdd(b []byte, acc uint64) uint64 {
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

// ChecksumFold folds a ChecksumAdd accumulator to the 16-bit ones'
// complement sum; the checksum field takes its complement. The result is
// 0 only if acc is 0. A message whose checksum is correct sums to 0xffff.
func ChecksumFold(acc uint64) uint16 {
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

// checksumUpdate returns the Internet checksum after one 16-bit word of the
// covered data changed from old to new (RFC 1624, eqn. 3).
func checksumUpdate(sum, old, new uint16) uint16 {
	s := uint32(^sum) + uint32(^old) + uint32(new)
	s = (s & 0xffff) + (s >> 16)
	s = (s & 0xffff) + (s >> 16)
	return ^uint16(s)
}
