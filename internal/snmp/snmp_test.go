package snmp

import "testing"

// A counter is found by its protocol's line of names; a missing protocol,
// name or value is reported as missing.
func TestCounter(t *testing.T) {
	const text = `Ip: Forwarding DefaultTTL
Ip: 2 64
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors
Udp: 19801 0 48 5 48
UdpLite: InDatagrams RcvbufErrors
UdpLite: 0 7
`
	for _, c := range []struct {
		proto, name string
		want        uint64
		ok          bool
	}{
		{"Udp", "RcvbufErrors", 48, true},
		{"Udp", "InDatagrams", 19801, true},
		{"UdpLite", "RcvbufErrors", 7, true},
		{"Udp", "SndbufErrors", 0, false},
		{"Tcp", "InErrs", 0, false},
	} {
		if v, ok := Counter(text, c.proto, c.name); v != c.want || ok != c.ok {
			t.Errorf("Counter(%s, %s) = %d, %v; want %d, %v", c.proto, c.name, v, ok, c.want, c.ok)
		}
	}
	if _, ok := Counter("Udp: InDatagrams\nUdp: x\n", "Udp", "InDatagrams"); ok {
		t.Error("a value that is no number was read")
	}
}
