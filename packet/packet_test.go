package packet

import (
	"bytes"
	"reflect"
	"testing"

	"wanlab/clock"
)

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

func TestPoolLiveCounts(t *testing.T) {
	pool := NewPool(256, 32)
	var ps []*Packet
	for i := 1; i <= 5; i++ {
		ps = append(ps, pool.Get())
		if pool.Live() != i || pool.Allocated() != i {
			t.Fatalf("after %d Gets: Live %d Allocated %d", i, pool.Live(), pool.Allocated())
		}
	}
	ps[0].Free()
	pool.Put(ps[1])
	if pool.Live() != 3 {
		t.Errorf("after 2 frees: Live %d, want 3", pool.Live())
	}
	// Freed buffers are reused before new ones are made.
	a, b := pool.Get(), pool.Get()
	if pool.Allocated() != 5 || pool.Live() != 5 {
		t.Errorf("reuse: Allocated %d Live %d, want 5 5", pool.Allocated(), pool.Live())
	}
	for _, p := range []*Packet{a, b, ps[2], ps[3], ps[4]} {
		p.Free()
	}
	if pool.Live() != 0 {
		t.Errorf("all freed: Live %d", pool.Live())
	}
	if pool.BufferSize() != 256 {
		t.Errorf("BufferSize = %d", pool.BufferSize())
	}
}

func TestPoolMisuse(t *testing.T) {
	pool, other := NewPool(256, 32), NewPool(256, 32)
	p := pool.Get()
	p.Free()
	mustPanic(t, "double free", func() { p.Free() })
	mustPanic(t, "double Put", func() { pool.Put(p) })
	if pool.Live() != 0 {
		t.Errorf("a refused double free changed Live to %d", pool.Live())
	}
	q := other.Get()
	mustPanic(t, "Put into another pool", func() { pool.Put(q) })
	mustPanic(t, "NewPool with headroom >= size", func() { NewPool(64, 64) })
	mustPanic(t, "NewPool with negative headroom", func() { NewPool(64, -1) })
	mustPanic(t, "SetLen beyond Cap", func() { q.SetLen(q.Cap() + 1) })
	mustPanic(t, "SetLen negative", func() { q.SetLen(-1) })
	mustPanic(t, "SetData outside the buffer", func() { q.SetData(200, 57) })
	var zero Packet
	zero.Free() // a packet from no pool: nothing to return it to
}

func TestGetResets(t *testing.T) {
	pool := NewPool(256, 32)
	p := pool.Get()
	p.SetLen(100)
	p.Arrival, p.Enqueued, p.TimeToSend, p.Order = 1, 2, 3, 4
	p.Hash, p.Flow, p.Seq, p.Segs, p.Tag = 5, 6, 7, 8, 9
	p.Dup, p.Marked, p.Corrupted, p.Reordered = true, true, true, true
	p.SetData(0, 10)
	p.Free()
	q := pool.Get()
	if q != p {
		t.Fatal("the freed packet was not reused")
	}
	want := Packet{Segs: 1}
	got := *q
	got.buf, got.pool, got.off, got.live = nil, nil, 0, false
	if !reflect.DeepEqual(got, want) || q.Headroom() != 32 || q.Len() != 0 || q.Cap() != 224 {
		t.Errorf("reused packet not reset: %+v headroom %d len %d", got, q.Headroom(), q.Len())
	}
}

func TestClone(t *testing.T) {
	pool := NewPool(2048, DefaultHeadroom)
	p := pool.Get()
	p.SetLen(80)
	WriteUDP4(p.Bytes(), UDP4{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, SrcPort: 1, DstPort: 2, TOS: 2}, 80)
	p.Arrival, p.Enqueued, p.TimeToSend = clock.Time(10), clock.Time(20), clock.Time(30)
	p.Order, p.Hash, p.Flow, p.Seq, p.Segs, p.Tag = 4, 5, 6, 7, 3, 99
	p.Dup, p.Marked = true, true
	c := pool.Clone(p)
	if pool.Live() != 2 {
		t.Errorf("Live = %d after Clone, want 2", pool.Live())
	}
	if !bytes.Equal(c.Bytes(), p.Bytes()) || c.Headroom() != p.Headroom() {
		t.Error("Clone did not copy the data")
	}
	cm, pm := *c, *p
	cm.buf, pm.buf = nil, nil
	if !reflect.DeepEqual(cm, pm) {
		t.Errorf("Clone metadata %+v, want %+v", cm, pm)
	}
	// The copy has its own buffer.
	SetCE(c.Bytes())
	if ECNOf(p.Bytes()) != ECT0 || ECNOf(c.Bytes()) != CE {
		t.Error("changing the clone changed the original")
	}
	c.Free()
	p.Free()
	mustPanic(t, "freeing a clone twice", func() { c.Free() })
	if pool.Live() != 0 {
		t.Errorf("Live = %d", pool.Live())
	}
	// A packet whose data was moved into the headroom keeps its offset.
	p = pool.Get()
	p.SetData(10, 40)
	copy(p.Bytes(), "0123456789012345678901234567890123456789")
	c = pool.Clone(p)
	if c.Headroom() != 10 || string(c.Bytes()) != string(p.Bytes()) {
		t.Errorf("clone of moved data: headroom %d data %q", c.Headroom(), c.Bytes())
	}
	buf, off := c.Buffer()
	if off != 10 || len(buf) != 2048 {
		t.Errorf("Buffer() = %d bytes, offset %d", len(buf), off)
	}
}

// Clone takes the copy from pl; the original may come from a pool with
// larger buffers (a router cloning between directions, say). Either Clone
// refuses at once, or the copy must hold all of the data.
func TestCloneFromLargerPool(t *testing.T) {
	big, small := NewPool(4096, DefaultHeadroom), NewPool(2048, DefaultHeadroom)
	p := big.Get()
	p.SetLen(3000)
	var c *Packet
	refused := func() (r bool) {
		defer func() { r = recover() != nil }()
		c = small.Clone(p)
		return false
	}()
	if refused {
		return
	}
	if c.Len() > c.Cap() {
		t.Fatalf("clone claims %d bytes in a buffer with room for %d", c.Len(), c.Cap())
	}
	if !bytes.Equal(c.Bytes(), p.Bytes()) {
		t.Fatal("clone lost data")
	}
}
