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
