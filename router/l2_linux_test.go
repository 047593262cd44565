package router

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestL2Headers interns headers: the same bytes get the same index, others
// another, get returns them, and a full table refuses new ones with 0 while
// the ones it holds keep their indexes.
func TestL2Headers(t *testing.T) {
	h := newL2Headers()
	a, b := ether(2, 1, 0, etherIPv4), ether(2, 1, 7, etherIPv4)
	ia, ib := h.intern(a), h.intern(b)
	if ia == 0 || ib == 0 || ia == ib || h.intern(bytes.Clone(a)) != ia || h.intern(b) != ib {
		t.Fatalf("indexes %d, %d, then %d, %d", ia, ib, h.intern(a), h.intern(b))
	}
	if !bytes.Equal(h.get(ia), a) || !bytes.Equal(h.get(ib), b) || h.get(0) != nil || h.get(ib+1) != nil {
		t.Errorf("get: % x, % x, % x, % x", h.get(ia), h.get(ib), h.get(0), h.get(ib+1))
	}
	if allocs := testing.AllocsPerRun(100, func() { h.intern(a); h.intern(b) }); allocs != 0 {
		t.Errorf("%v allocations interning known headers", allocs)
	}
	for i := len(h.hdrs); i < maxL2Headers; i++ {
		x := ether(2, 1, 0, etherIPv4)
		binary.BigEndian.PutUint32(x[6:], uint32(i))
		if h.intern(x) == 0 {
			t.Fatalf("table full at %d headers", i)
		}
	}
	if i := h.intern(ether(9, 9, 0, etherIPv4)); i != 0 {
		t.Errorf("a full table gave a new header index %d", i)
	}
	if h.intern(a) != ia || !bytes.Equal(h.get(ib), b) {
		t.Error("a full table lost its headers")
	}
}
