package traffic

import (
	"net/netip"
	"strings"
	"testing"
)

func TestFlowConfigErrors(t *testing.T) {
	c, s := loopback(lo4)
	_, s6 := loopback(lo6)
	for _, tc := range []struct {
		err  func() error
		want string
	}{
		{func() error { _, err := NewTCP(TCPConfig{Label: "x", Client: c}); return err }, "need a Net"},
		{func() error {
			_, err := NewTCP(TCPConfig{Label: "x", Client: c, Server: Host{Net: Local{}}})
			return err
		}, "set Server.Addr"},
		{func() error { _, err := NewTCP(TCPConfig{Label: "x", Client: c, Server: s6}); return err }, "different IP versions"},
		{func() error { _, err := NewTCP(TCPConfig{Label: "x", Client: c, Server: s, TOS: 256}); return err }, "TOS 256 is not a byte"},
		{func() error { _, err := NewTCP(TCPConfig{Label: "x", Client: c, Server: s, Dir: 7}); return err }, "use traffic.Up or traffic.Down"},
		{func() error {
			_, err := NewTCP(TCPConfig{Label: "x", Client: c, Server: s, CC: "averyveryverylongname"})
			return err
		}, "longer than the kernel allows"},
		{func() error {
			_, err := NewUDPProbe(UDPProbeConfig{Label: "x", Client: c, Server: s, Size: 20})
			return err
		}, "size 20: give a UDP payload from 40"},
		{func() error { _, err := NewICMPProbe(ICMPProbeConfig{Label: "x", Client: c}); return err }, "set Target"},
		{func() error { _, err := NewFlood(FloodConfig{Label: "x", Client: c, Server: s}); return err }, "give a positive rate"},
		{func() error {
			_, err := NewFlood(FloodConfig{Label: "x", Client: Host{Net: Local{}}, Server: s, Dir: Down, Rate: 1e6})
			return err
		}, "set Client.Addr"},
	} {
		if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want one containing %q", err, tc.want)
		}
	}
	if _, err := NewFlood(FloodConfig{Label: "x", Client: c, Server: Host{Net: Local{}, Addr: netip.MustParseAddr("::1")}, Rate: 1e6}); err == nil {
		t.Error("a flood from IPv4 to IPv6 was accepted")
	}
}
