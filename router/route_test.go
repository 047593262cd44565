package router

import (
	"net/netip"
	"testing"
)

// routeHosts fills a table as 16 receiving hosts with an IPv4 and an
// IPv6 address each would.
func routeHosts() *routeTable {
	var t routeTable
	for i := range 16 {
		t.add(netip.AddrFrom4([4]byte{10, 0, 1, byte(i)}), i)
		t.add(netip.AddrFrom16([16]byte{0xfd, 15: byte(i)}), i)
	}
	return &t
}

func ipv4To(dst [4]byte) []byte {
	p := make([]byte, 28)
	p[0] = 0x45
	copy(p[16:], dst[:])
	return p
}

func ipv6To(dst [16]byte) []byte {
	p := make([]byte, 48)
	p[0] = 0x60
	copy(p[24:], dst[:])
	return p
}

func TestRouteLookup(t *testing.T) {
	rt := routeHosts()
	rt.add(netip.MustParseAddr("::ffff:10.0.2.1"), 3) // taken as 10.0.2.1
	for _, tc := range []struct {
		name string
		pkt  []byte
		port int
		ok   bool
	}{
		{"v4 first", ipv4To([4]byte{10, 0, 1, 0}), 0, true},
		{"v4 last", ipv4To([4]byte{10, 0, 1, 15}), 15, true},
		{"v4 mapped", ipv4To([4]byte{10, 0, 2, 1}), 3, true},
		{"v6", ipv6To([16]byte{0xfd, 15: 7}), 7, true},
		{"v4 nowhere", ipv4To([4]byte{10, 0, 1, 16}), 0, false},
		{"v6 nowhere", ipv6To([16]byte{0xfe, 0x80, 15: 7}), 0, false},
		{"short v4", ipv4To([4]byte{10, 0, 1, 0})[:19], 0, false},
		{"short v6", ipv6To([16]byte{0xfd, 15: 7})[:39], 0, false},
		{"not IP", []byte{0x20, 0, 0, 0}, 0, false},
	} {
		port, ok := rt.lookup(tc.pkt)
		if port != tc.port || ok != tc.ok {
			t.Errorf("%s: port %d, %v; want %d, %v", tc.name, port, ok, tc.port, tc.ok)
		}
	}
}

// BenchmarkRouteLookup chooses the egress port of packets to the last
// host of a full table, the longest scan there is.
func BenchmarkRouteLookup(b *testing.B) {
	rt := routeHosts()
	v4, v6 := ipv4To([4]byte{10, 0, 1, 15}), ipv6To([16]byte{0xfd, 15: 15})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		pkt := v4
		if i&1 == 1 {
			pkt = v6
		}
		if port, ok := rt.lookup(pkt); !ok || port != 15 {
			b.Fatal(port, ok)
		}
	}
}
