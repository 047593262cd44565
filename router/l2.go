package router

import "wanlab/packetsock"

// l2Headers holds the distinct link-layer headers the packets of one
// direction came with, read from a packet socket, so that a packet
// carries only its header's index (packet.Tag bits 16..31, see meta.go)
// through the link, duplicates and cut parts of super-packets included,
// and the egress writes it with the header it came with. Hosts are few
// and each keeps its MAC addresses, so the table stays small: it holds
// maxL2Headers at most and is never emptied, since a packet in the link
// may still name any entry.
type l2Headers struct {
	hdrs  []l2Header // entry i has index i+1
	index map[l2Header]uint16
	last  uint16 // the index intern returned last, 0 before the first
}

// l2Header is one header, its length in n.
type l2Header struct {
	b [packetsock.MaxMACLen]byte
	n uint8
}

// maxL2Headers is the most headers a table holds: the indexes fit 16 bits,
// 0 meaning none.
const maxL2Headers = 1<<16 - 1

func newL2Headers() *l2Headers { return &l2Headers{index: map[l2Header]uint16{}} }

// intern returns the index of header h (at most packetsock.MaxMACLen
// bytes), adding it if it is new; 0 when the table is full. It allocates
// only to add a header.
func (t *l2Headers) intern(h []byte) uint16 {
	if t.last != 0 {
		if e := &t.hdrs[t.last-1]; int(e.n) == len(h) && string(e.b[:e.n]) == string(h) {
			return t.last
		}
	}
	var k l2Header
	k.n = uint8(copy(k.b[:], h))
	i, ok := t.index[k]
	if !ok {
		if len(t.hdrs) == maxL2Headers {
			return 0
		}
		t.hdrs = append(t.hdrs, k)
		i = uint16(len(t.hdrs))
		t.index[k] = i
	}
	t.last = i
	return i
}

// get returns the header of index i, nil for 0.
func (t *l2Headers) get(i uint16) []byte {
	if i == 0 || int(i) > len(t.hdrs) {
		return nil
	}
	e := &t.hdrs[i-1]
	return e.b[:e.n]
}
