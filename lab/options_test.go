package lab

import (
	"errors"
	"strings"
	"testing"

	"wanlab/qdisc"
	"wanlab/tcspec"
)

// mustChain parses a tc chain or fails the test.
func mustChain(t *testing.T, s string) []qdisc.Spec {
	t.Helper()
	specs, err := tcspec.ParseChain(s, tcspec.Options{})
	if err != nil {
		t.Fatalf("ParseChain(%q): %v", s, err)
	}
	return specs
}

// TestOptionsCheck: whatever Up would fail on for its input alone, Check
// finds first, as ErrBadInput, with a message that names the setting.
func TestOptionsCheck(t *testing.T) {
	good := []Options{
		{},
		{Name: "lab", CC: "bbr", TCPRmem: "4096 131072 6291456", TCPWmem: "1 1 1", ECN: ECNOff},
		{Up: mustChain(t, "netem delay 1ms; tbf rate 1mbit burst 10k latency 1ms; fq_codel")},
	}
	for _, o := range good {
		if err := o.Check(); err != nil {
			t.Errorf("Check(%+v) = %v, want nil", o, err)
		}
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Name: "-x"}, "starts with '-'"},
		{Options{Name: "A"}, "testbed name"},
		{Options{ECN: -2}, "ECN -2"},
		{Options{CC: "bbr; rm"}, "congestion control"},
		{Options{TCPRmem: "1 2"}, `net.ipv4.tcp_rmem "1 2": 2 values`},
		{Options{TCPWmem: "1 2 3 4"}, "net.ipv4.tcp_wmem"},
		{Options{TCPRmem: "3 2 1"}, "not in order"},
		{Options{TCPRmem: "0 2 3"}, `"0" is not a size`},
		{Options{TCPRmem: "1 2 2147483648"}, "is not a size"},
		{Options{RealTimePriority: 100}, "real-time priority"},
		{Options{Up: mustChain(t, "fq_codel; netem delay 1ms")}, "up: "},
		{Options{Down: mustChain(t, "pfifo limit 10; codel")}, "down: "},
	} {
		err := c.o.Check()
		if err == nil || !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%+v) = %v; want ErrBadInput saying %q", c.o, err, c.want)
		}
	}
}

// TestCheckBridgeRefusesHostOptions: a bridge has no hosts, so their
// settings are refused, saying why, before any interface is looked at.
func TestCheckBridgeRefusesHostOptions(t *testing.T) {
	ports := [2]string{"wl-x0", "wl-x1"}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Ports: ports, CC: "bbr"}, "a congestion control is a setting of the testbed's hosts, and a bridge has none"},
		{Options{Ports: ports, TCPRmem: "1 2 3"}, "TCP buffer sizes"},
		{Options{Ports: ports, ECN: 1}, "ECN"},
		{Options{Ports: ports, DataPlane: PacketPlane}, "a data plane"},
		{Options{Ports: [2]string{"wl-x0", ""}}, "give two interfaces"},
		{Options{Ports: ports, Name: "Br"}, "testbed name"},
	} {
		_, err := CheckBridge(c.o)
		if err == nil || !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckBridge(%+v) = %v; want ErrBadInput saying %q", c.o, err, c.want)
		}
	}
}

func TestParseDataPlane(t *testing.T) {
	for _, p := range []DataPlane{TUNPlane, PacketPlane} {
		if got, err := ParseDataPlane(p.String()); err != nil || got != p {
			t.Errorf("ParseDataPlane(%q) = %v, %v", p, got, err)
		}
	}
	if _, err := ParseDataPlane("xdp"); err == nil || !strings.Contains(err.Error(), "use tun or packet") {
		t.Errorf("ParseDataPlane(xdp) = %v", err)
	}
	if err := (Options{DataPlane: 7}).Check(); !errors.Is(err, ErrBadInput) {
		t.Errorf("Check of data plane 7: %v", err)
	}
}
