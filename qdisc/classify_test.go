package qdisc

import (
	"encoding/binary"
	"testing"

	"wanlab/internal/coretest"
	"wanlab/packet"
)

// id returns the class 1:minor.
func id(minor uint16) ClassID { return MakeClassID(1, minor) }

func ptrs(fs []Filter) []*Filter {
	out := make([]*Filter, len(fs))
	for i := range fs {
		out[i] = &fs[i]
	}
	return out
}

// Filters run by prio, then in the order given; a filter of another
// protocol is skipped; one that reads beyond the packet ends its prio.
func TestClassifierOrder(t *testing.T) {
	mk := func(prio uint16, proto FilterProtocol, class uint16, keys ...U32Key) Filter {
		return Filter{Prio: prio, Protocol: proto, ClassID: id(class), Keys: keys}
	}
	far := U32Key{Off: 1000}                    // beyond a 100-byte packet
	miss := U32Key{Val: 1 << 31, Mask: 1 << 31} // the version nibble's top bit is 0 for IPv4
	for _, c := range []struct {
		name string
		fs   []Filter
		want uint16
	}{
		{"prio first", []Filter{mk(5, ProtocolIP, 5), mk(2, ProtocolIP, 2)}, 2},
		{"insertion within a prio", []Filter{mk(3, ProtocolIP, 1), mk(3, ProtocolIP, 2)}, 1},
		{"protocol", []Filter{mk(1, ProtocolIPv6, 6), mk(2, ProtocolAll, 7)}, 7},
		{"a miss goes on", []Filter{mk(1, ProtocolIP, 1, miss), mk(1, ProtocolIP, 2)}, 2},
		{"a short read ends the prio", []Filter{mk(1, ProtocolIP, 1, far), mk(1, ProtocolIP, 2), mk(2, ProtocolIP, 3)}, 3},
		{"a miss before a short read does not", []Filter{mk(1, ProtocolIP, 1, miss, far), mk(1, ProtocolIP, 2)}, 2},
		{"nothing matches", []Filter{mk(1, ProtocolIP, 1, miss)}, 0},
	} {
		cl := newClassifier(ptrs(c.fs))
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		p := coretest.UDP(pool, 100, 1, 0, 0)
		got, ok := cl.classify(p.Bytes())
		var want ClassID
		if c.want != 0 {
			want = id(c.want)
		}
		if ok != (c.want != 0) || got != want {
			t.Errorf("%s: %v %v, want 1:%x", c.name, got, ok, c.want)
		}
	}
}

// refClassify is the rules of classify written as plainly as possible.
func refClassify(fs []Filter, b []byte) (ClassID, bool) {
	var proto FilterProtocol
	if len(b) > 0 {
		switch b[0] >> 4 {
		case 4:
			proto = ProtocolIP
		case 6:
			proto = ProtocolIPv6
		}
	}
	for prio := 0; prio <= 0xffff; prio++ {
	filters:
		for _, f := range fs {
			if int(f.Prio) != prio || (f.Protocol != ProtocolAll && f.Protocol != proto) {
				continue
			}
			for _, k := range f.Keys {
				if int(k.Off)+4 > len(b) {
					break filters
				}
				if (binary.BigEndian.Uint32(b[k.Off:])^k.Val)&k.Mask != 0 {
					continue filters
				}
			}
			return f.ClassID, true
		}
	}
	return 0, false
}

// FuzzClassify checks the classifier, on any packet bytes and any keys,
// against refClassify.
func FuzzClassify(f *testing.F) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	p := coretest.UDP(pool, 60, 7, 0x28, 0)
	f.Add(p.Bytes(), []byte{0, 0x28, 0xfc, 1, 20, 7, 0xff, 2})
	f.Add([]byte{0x60, 0xb8}, []byte{0, 0xb8, 0xff, 1, 40, 80, 0xff, 2})
	f.Fuzz(func(t *testing.T, pkt, rules []byte) {
		// Each 4 bytes of rules make a key: an offset (a multiple of 4
		// up to 60), a byte value, a byte mask and a filter number (its
		// prio and class); the filters take protocols in turn.
		var fs []Filter
		for len(rules) >= 4 && len(fs) < 16 {
			n := int(rules[3] % 6)
			for len(fs) <= n {
				fs = append(fs, Filter{Prio: uint16(1 + len(fs)%3), Protocol: []FilterProtocol{ProtocolIP, ProtocolIPv6, ProtocolAll}[len(fs)%3], ClassID: id(uint16(len(fs) + 1))})
			}
			shift := 8 * (rules[0] % 4)
			k := U32Key{Off: int32(rules[0]/4%16) * 4, Val: uint32(rules[1]) << shift, Mask: uint32(rules[2]) << shift}
			k.Val &= k.Mask
			fs[n].Keys = append(fs[n].Keys, k)
			rules = rules[4:]
		}
		// Filters of one prio share a protocol, as checkFilters makes them.
		for i := range fs {
			fs[i].Protocol = []FilterProtocol{ProtocolIP, ProtocolIPv6, ProtocolAll}[fs[i].Prio%3]
		}
		c := newClassifier(ptrs(fs))
		got, ok := c.classify(pkt)
		want, wok := refClassify(fs, pkt)
		if got != want || ok != wok {
			t.Fatalf("classify = %v %v, want %v %v (filters %+v)", got, ok, want, wok, fs)
		}
	})
}

// dscpClasses is the classifier of the measures: three u32 filters by
// DSCP, the packet matching the last.
func dscpClasses(tb testing.TB) ([]Filter, *packet.Packet) {
	var fs []Filter
	for i, tos := range []uint8{0x28, 0x48, 0x88} {
		f := Filter{Prio: 1, Protocol: ProtocolIP, ClassID: id(uint16(0x10 * (i + 1)))}
		if err := f.MatchField("ip", "dsfield", uint32(tos), 0xfc); err != nil {
			tb.Fatal(err)
		}
		fs = append(fs, f)
	}
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	return fs, coretest.UDP(pool, 1500, 1, 0x88, 0)
}

// Classifying allocates nothing.
func TestClassifyAllocatesNothing(t *testing.T) {
	fs, p := dscpClasses(t)
	c := newClassifier(ptrs(fs))
	if n := testing.AllocsPerRun(1000, func() { c.classify(p.Bytes()) }); n != 0 {
		t.Errorf("%v allocations per packet", n)
	}
}

// BenchmarkClassify measures the classifier of the measures, per packet.
func BenchmarkClassify(b *testing.B) {
	fs, p := dscpClasses(b)
	c := newClassifier(ptrs(fs))
	b.ReportAllocs()
	for b.Loop() {
		c.classify(p.Bytes())
	}
}
