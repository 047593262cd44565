package experiment

import (
	"strings"
	"testing"
)

func TestSweepFile(t *testing.T) {
	text, err := SweepFile(SweepSpec{
		Name: "tcp_upload-sweep", Test: "tcp_upload",
		Sweeps: []string{"delay=10ms, 30ms,50ms", "cc=reno,cubic"},
		Up:     "netem delay ${delay}; tbf rate 10mbit burst 32k latency 50ms", Down: "netem delay ${delay}",
		Options: []Option{{Key: "cc", Values: []string{"${cc}"}}, {Key: "duration", Values: []string{"10s"}}, {Key: "sysctl", Values: []string{"net.ipv4.tcp_recovery=0", "net.ipv4.tcp_max_reordering=3"}}},
		Repeat:  2, Seed: 7,
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load("sweep", text, LoadOptions{Backend: &fakeBackend{}})
	if err != nil {
		t.Fatalf("the sweep's file does not load: %v\n%s", err, text)
	}
	if len(p.Cases) != 6 || p.Repeat != 2 || p.Seed != 7 || p.Cases[1].Label() != "delay=10ms cc=cubic" {
		t.Fatalf("%d cases, repeat %d, case 2 %q:\n%s", len(p.Cases), p.Repeat, p.Cases[1].Label(), text)
	}
	r := p.Cases[5].Runs[0]
	if r.Case.Up != "netem delay 50ms; tbf rate 10mbit burst 32k latency 50ms" || r.Case.Down != "netem delay 50ms" {
		t.Errorf("chains %q / %q", r.Case.Up, r.Case.Down)
	}
	if cc, _ := r.Option("cc"); cc[0] != "cubic" {
		t.Errorf("cc %v", cc)
	}
	if s, _ := r.Option("sysctl"); len(s) != 2 {
		t.Errorf("sysctl %v", s)
	}
	for _, c := range []struct {
		sweeps []string
		want   string
	}{
		{nil, "no --sweep"},
		{[]string{"delay"}, "write VAR=V1,V2"},
		{[]string{"1x=a"}, "letters, digits"},
		{[]string{"d=a,,b"}, "empty value"},
		{[]string{"d=a,a"}, "twice"},
		{[]string{"d=a", "d=b"}, "given twice"},
		{[]string{"test=a"}, "reserved"},
	} {
		if _, err := SweepFile(SweepSpec{Test: "ping", Sweeps: c.sweeps}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.sweeps, err, c.want)
		}
	}
}
