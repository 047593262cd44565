package sim

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"wanlab/packet"
	"wanlab/qdisc"
)

func TestParseFlow(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Flow
	}{
		{"cbr rate=10mbit size=1500", CBR{Rate: 1250000, Size: 1500, Dir: "up"}},
		{"CBR rate=10MBit size=1500 dir=DOWN", CBR{Rate: 1250000, Size: 1500, Dir: "down"}},
		{"cbr rate=1.5gbit size=100 start=250ms count=7 tos=0xb8 ecn=ect0",
			CBR{Rate: 187500000, Size: 100, Dir: "up", Start: 250 * time.Millisecond, Count: 7, TOS: 0xb8, ECN: packet.ECT0}},
		{"cbr rate=100kbps size=64 ecn=ect1 tos=32", CBR{Rate: 100000, Size: 64, Dir: "up", ECN: packet.ECT1, TOS: 32}},
		{"cbr rate=800 size=28 start=3us", CBR{Rate: 100, Size: 28, Dir: "up", Start: 3 * time.Microsecond}},
		{"cbr rate=8bit size=28 start=2s", CBR{Rate: 1, Size: 28, Dir: "up", Start: 2 * time.Second}},
		{"cbr rate=2mbps size=1000 start=5ns", CBR{Rate: 2000000, Size: 1000, Dir: "up", Start: 5}},
		// iperf's letters are bits, as in iperf -b.
		{"cbr rate=20M size=1000", CBR{Rate: 2500000, Size: 1000, Dir: "up"}},
		{"cbr rate=500k size=100", CBR{Rate: 62500, Size: 100, Dir: "up"}},
		{"poisson rate=1gbit size=1500 dir=up", Poisson{Rate: 125000000, Size: 1500, Dir: "up"}},
		{"cbr rate=1mbit size=100 src=10.0.0.3 dst=10.0.1.9", CBR{Rate: 125000, Size: 100, Dir: "up",
			Src: netip.MustParseAddr("10.0.0.3"), Dst: netip.MustParseAddr("10.0.1.9")}},
		{"cbr rate=1mbit size=100 dir=down src=10.0.1.4", CBR{Rate: 125000, Size: 100, Dir: "down", Src: netip.MustParseAddr("10.0.1.4")}},
	} {
		got, err := ParseFlow(c.in)
		if err != nil {
			t.Errorf("ParseFlow(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseFlow(%q) = %#v, want %#v", c.in, got, c.want)
		}
		// String gives a form that parses back to the same flow.
		back, err := ParseFlow(got.String())
		if err != nil || back.base() != got.base() || back.poisson() != got.poisson() {
			t.Errorf("%q printed as %q, which parses to %#v, %v", c.in, got.String(), back, err)
		}
	}
	if s := (CBR{Rate: 1250000, Size: 1500, Start: 1500 * time.Microsecond}).String(); s != "cbr rate=10mbit size=1500 dir=up start=1500us" {
		t.Errorf("String = %q", s)
	}
}

func TestParseFlowErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "empty flow"},
		{"tcp rate=1mbit size=100", "unknown kind \"tcp\"; use cbr or poisson"},
		{"cbr size=100", "rate= is missing"},
		{"cbr rate=1mbit", "size= is missing"},
		{"cbr rate=1mbit size=100 colour=red", "\"colour=red\": unknown key"},
		{"cbr rate=1mbit size=100 size=200", "\"size\" is given twice"},
		{"cbr rate=1furlong size=100", "\"rate=1furlong\": bad rate \"1furlong\": unknown unit \"furlong\": use a number with a unit"},
		{"cbr rate=fast size=100", "\"rate=fast\": bad rate \"fast\": use a number with a unit"},
		{"cbr rate=-1mbit size=100", "\"rate=-1mbit\": bad rate \"-1mbit\": out of range"},
		{"cbr rate=1bit size=100", "at least 8bit"},
		{"cbr rate=1mbit size=20", "size=20 is outside 28..65535"},
		{"cbr rate=1mbit size=big", "\"size=big\": not a whole number"},
		{"cbr rate=1mbit size=100 start=5", "\"start=5\": no unit; write the number with ms or s"},
		{"cbr rate=1mbit size=100 start=5min", "unknown unit \"min\""},
		{"cbr rate=1mbit size=100 start=-1s", "non-negative"},
		{"cbr rate=1mbit size=100 dir=sideways", "\"dir=sideways\": use dir=up or dir=down"},
		{"cbr rate=1mbit size=100 count=-3", "count=-3"},
		{"cbr rate=1mbit size=100 tos=0x01", "tos=0x01 sets the ECN bits; give the DSCP part only (tos=0x00)"},
		{"cbr rate=1mbit size=100 tos=300", "\"tos=300\": not a byte"},
		{"cbr rate=1mbit size=100 ecn=yes", "\"ecn=yes\": use ecn=ect0"},
		{"cbr rate=1mbit size=100 dir", "\"dir\" is not KEY=VALUE"},
		{"cbr rate=1mbit size=100 src=fe80::1", "\"src=fe80::1\": not an IPv4 address; give e.g. src=10.0.0.3"},
		{"cbr rate=1mbit size=100 dst=10.0.1", "\"dst=10.0.1\": not an IPv4 address"},
		// A flow of no packets is refused, not taken as unlimited.
		{"cbr rate=1mbit size=100 count=0", "\"count=0\": a flow of no packets sends nothing"},
		// Long input is quoted in part, with its length.
		{"cbr rate=1mbit size=100 dir=" + strings.Repeat("x", 100000), "... (100004 bytes): use dir=up"},
	} {
		_, err := ParseFlow(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseFlow(%q) error %v, want it to contain %q", c.in, err, c.want)
		}
	}
}

func TestFormatRate(t *testing.T) {
	for r, want := range map[qdisc.Rate]string{1: "8bit", 125: "1kbit", 1250000: "10mbit", 187500000: "1500mbit", 125e9: "1tbit", 3: "24bit"} {
		if got := formatRate(r); got != want {
			t.Errorf("formatRate(%d) = %q, want %q", r, got, want)
		}
	}
}

func FuzzParseFlow(f *testing.F) {
	f.Add("cbr rate=10mbit size=1500 dir=down start=1ms count=5 tos=0x20 ecn=ect1")
	f.Add("poisson rate=3kbps size=28")
	f.Fuzz(func(t *testing.T, s string) {
		fl, err := ParseFlow(s)
		if err != nil {
			return
		}
		back, err := ParseFlow(fl.String())
		if err != nil || back.base() != fl.base() || back.poisson() != fl.poisson() {
			t.Fatalf("%q -> %q -> %#v, %v", s, fl.String(), back, err)
		}
	})
}

// The packets carry the addresses src= and dst= give, and the default
// client and server addresses by direction otherwise.
func TestFlowAddresses(t *testing.T) {
	for _, c := range []struct {
		flow     string
		src, dst [4]byte
	}{
		{"cbr rate=1mbit size=100", clientAddr, serverAddr},
		{"cbr rate=1mbit size=100 dir=down", serverAddr, clientAddr},
		{"cbr rate=1mbit size=100 src=10.0.0.7", [4]byte{10, 0, 0, 7}, serverAddr},
		{"cbr rate=1mbit size=100 dir=down dst=10.0.0.9", serverAddr, [4]byte{10, 0, 0, 9}},
		{"poisson rate=1mbit size=100 src=192.0.2.1 dst=198.51.100.2", [4]byte{192, 0, 2, 1}, [4]byte{198, 51, 100, 2}},
	} {
		f, err := ParseFlow(c.flow)
		if err != nil {
			t.Fatal(err)
		}
		p := packet.NewPool(2048, 64).Get()
		newSource(0, f, 1).emit(p)
		tu, err := packet.ParseTuple(p.Bytes())
		if src, dst := [4]byte(tu.Src[:4]), [4]byte(tu.Dst[:4]); err != nil || src != c.src || dst != c.dst {
			t.Errorf("%s: packet from %v to %v (%v), want %v to %v", c.flow, src, dst, err, c.src, c.dst)
		}
	}
}
