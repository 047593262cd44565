package traffic

import "math/bits"

// seqLog is a receiver's record of a stream of packets numbered from 0:
// which numbers arrived, and how they arrived by RFC 4737 (section 3):
// a packet whose number is below NextExp, one more than the highest number
// seen so far, is reordered; otherwise it sets NextExp. A number seen
// before is a duplicate, counted apart and neither reordered nor new.
// Memory is one bit per number up to the highest seen, so the caller must
// reject numbers that were never sent.
type seqLog struct {
	seen      []uint64 // bit s%64 of word s/64 is set once s arrived
	next      uint64   // NextExp
	unique    uint64   // distinct numbers seen
	reordered uint64
	dups      uint64
}

// arrival is what one packet was, to a seqLog.
type arrival uint8

const (
	inOrder arrival = iota
	reordered
	duplicate
)

// add records the arrival of number seq.
func (l *seqLog) add(seq uint64) arrival {
	w, bit := seq/64, uint64(1)<<(seq%64)
	if w >= uint64(len(l.seen)) {
		// Double at least, so that growth costs O(1) per packet.
		grown := make([]uint64, max(w+1, 2*uint64(len(l.seen)), 64))
		copy(grown, l.seen)
		l.seen = grown
	}
	if l.seen[w]&bit != 0 {
		l.dups++
		return duplicate
	}
	l.seen[w] |= bit
	l.unique++
	if seq < l.next {
		l.reordered++
		return reordered
	}
	l.next = seq + 1
	return inOrder
}

// has reports whether seq arrived.
func (l *seqLog) has(seq uint64) bool {
	w := seq / 64
	return w < uint64(len(l.seen)) && l.seen[w]&(1<<(seq%64)) != 0
}

// missing counts the numbers in [from, to) that never arrived.
func (l *seqLog) missing(from, to uint64) uint64 {
	if to <= from {
		return 0
	}
	var got uint64
	for s := from; s < to; {
		w := s / 64
		if w >= uint64(len(l.seen)) {
			break
		}
		// The bits of word w from s up to (not including) to.
		lo := s % 64
		hi := min(to-w*64, 64)
		mask := ^uint64(0) << lo
		if hi < 64 {
			mask &= (1 << hi) - 1
		}
		got += uint64(bits.OnesCount64(l.seen[w] & mask))
		s = (w + 1) * 64
	}
	return to - from - got
}
