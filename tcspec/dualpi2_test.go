package tcspec

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"wanlab/qdisc"
)

func TestParseDualPI2(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	def := func(f func(c *qdisc.DualPI2Config)) qdisc.DualPI2Config {
		c := qdisc.DualPI2Config{Limit: 10000, Target: 15 * ms, TUpdate: 16 * ms, Alpha: 41, Beta: 819,
			StepThresh: ms, CouplingFactor: 2, ClassicProtection: 10, ClassicProtectionSet: true}
		if f != nil {
			f(&c)
		}
		return c
	}
	for _, tt := range []struct {
		in   string
		want qdisc.DualPI2Config
	}{
		{"dualpi2", def(nil)},
		{"dualpi2 limit 100 memlimit 200000 target 5ms tupdate 2500 alpha 0.5 beta 2.75", def(func(c *qdisc.DualPI2Config) {
			c.Limit, c.MemLimit, c.Target, c.TUpdate, c.Alpha, c.Beta = 100, 200000, 5*ms, 2500*us, 128, 704
		})},
		// strtof: 0.16 is 0.1599999964 as a float, ×256 = 40.96, truncated.
		{"dualpi2 alpha 0.16 beta 3.2", def(func(c *qdisc.DualPI2Config) { c.Alpha, c.Beta = 40, 819 })},
		{"dualpi2 step_thresh 10p min_qlen_step 3 coupling_factor 0x3 classic_protection 30", def(func(c *qdisc.DualPI2Config) {
			c.StepThresh, c.StepPackets, c.MinQlenStep, c.CouplingFactor, c.ClassicProtection = 0, 10, 3, 3, 30
		})},
		// A bare step_thresh is a time in µs (get_time is tried first);
		// the last of two wins.
		{"dualpi2 step_thresh 7packets step_thresh 250", def(func(c *qdisc.DualPI2Config) { c.StepThresh = 250 * us })},
		{"dualpi2 classic_protection 0% any_ect overflow drop_enqueue no_split_gso", def(func(c *qdisc.DualPI2Config) {
			c.ClassicProtection, c.AnyECT, c.Overflow, c.DropEnqueue, c.NoSplitGSO = 0, true, true, true, true
		})},
		{"dualpi2 any_ect l4s_ect overflow drop_on_overload drop_enqueue drop_dequeue no_split_gso split_gso", def(nil)},
		// rint(12.5) = 12 (round half to even).
		{"dualpi2 classic_protection 12.5%", def(func(c *qdisc.DualPI2Config) { c.ClassicProtection = 12 })},
		// max_rtt 100ms: typical 16666us, tupdate 16666us, alpha 42,
		// beta 768 (see qdisc's TestDualPI2FromRTT); target, tupdate,
		// alpha and beta given beside it are ignored, as tc ignores them.
		{"dualpi2 alpha 1 target 1ms max_rtt 100ms", def(func(c *qdisc.DualPI2Config) {
			c.MaxRTT, c.TypicalRTT, c.Target, c.TUpdate, c.Alpha, c.Beta = 100*ms, 16666*us, 16666*us, 16666*us, 42, 768
		})},
		{"dualpi2 typical_rtt 20ms", def(func(c *qdisc.DualPI2Config) {
			c.MaxRTT, c.TypicalRTT, c.Target, c.TUpdate, c.Alpha, c.Beta = 120*ms, 20*ms, 20*ms, 20*ms, 35, 640
		})},
	} {
		s, err := Parse(tt.in, Options{})
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(s, tt.want) {
			t.Errorf("Parse(%q)\n = %+v\nwant %+v", tt.in, s, tt.want)
		}
		roundTrip(t, tt.in)
	}
}

func TestDualPI2Errors(t *testing.T) {
	for _, tt := range []struct{ in, token, msg string }{
		{"dualpi2 frob", "frob", `"frob" is not a dualpi2 option`},
		{"dualpi2 lim 10", "lim", "not a dualpi2 option"}, // strcmp: whole words only
		{"dualpi2 limit 0", "0", "tc sends no limit"},
		{"dualpi2 limit 1k", "1k", "whole number"},
		{"dualpi2 memlimit 0", "0", "tc sends no memlimit"},
		{"dualpi2 target 0", "0", "tc sends no target"},
		{"dualpi2 tupdate 1x", "1x", "bad time"},
		{"dualpi2 alpha -1", "-1", "Illegal"},
		{"dualpi2 alpha 16777216", "16777216", "Illegal"},
		{"dualpi2 alpha 0.001", "0.001", "rounds to 0"},
		{"dualpi2 beta 9000000", "9000000", "up to 2147483647/256"},
		{"dualpi2 coupling_factor 256", "256", "1 to 255"},
		{"dualpi2 coupling_factor 0", "0", "refuses a coupling factor of 0"},
		{"dualpi2 classic_protection 101", "101", "bad percentage"},
		{"dualpi2 step_thresh 5q", "5q", "packet count"},
		{"dualpi2 step_thresh 0p", "0p", "tc sends no step_thresh"},
		{"dualpi2 step_thresh", "step_thresh", "needs a value"},
		{"dualpi2 max_rtt 10ms typical_rtt 20ms", "typical_rtt", "typical_rtt must be <= max_rtt"},
		{"dualpi2 max_rtt 10s", "max_rtt", "rounds alpha"},
	} {
		_, err := Parse(tt.in, Options{})
		var te *Error
		if !errors.As(err, &te) {
			t.Errorf("Parse(%q) = %v, want an *Error", tt.in, err)
			continue
		}
		if te.Kind != "dualpi2" || te.Token != tt.token || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Parse(%q) = %v (token %q); want token %q, containing %q", tt.in, err, te.Token, tt.token, tt.msg)
		}
	}
}

// What dualpi2_print_opt prints for the kernel's dump: every attribute
// (dualpi2_dump puts them all). The numbers come from sch_dualpi2.c's
// arithmetic: memlimit = limit × 2 × psched_mtu (1514 on Ethernet, 1500
// on TUN); alpha and beta dumped as unscale(scale(v)), 41 → 40 (0.156250)
// and 819 → 818 (3.1953125, printed 3.195312); 128 → 127 (0.496094),
// 512 → 511 (1.996094); tupdate and step_thresh held in u32 ns, so 5s
// comes back as 4294967us, "4.29s"; target 16666us prints "16.7ms".
func TestShowDualPI2(t *testing.T) {
	tun := &qdisc.Env{Framing: qdisc.FramingIP}
	for _, tt := range []struct {
		in   string
		env  *qdisc.Env
		want string
	}{
		{"dualpi2", nil, "qdisc dualpi2 1: root refcnt 2 limit 10000p memlimit 30280000B target 15ms tupdate 16ms alpha 0.156250 beta 3.195312 step_thresh 1ms min_qlen_step 0p coupling_factor 2 drop_on_overload drop_dequeue classic_protection 10% l4s_ect split_gso "},
		{"dualpi2", tun, "qdisc dualpi2 1: root refcnt 2 limit 10000p memlimit 30000000B target 15ms tupdate 16ms alpha 0.156250 beta 3.195312 step_thresh 1ms min_qlen_step 0p coupling_factor 2 drop_on_overload drop_dequeue classic_protection 10% l4s_ect split_gso "},
		{"dualpi2 limit 100 memlimit 200000 step_thresh 10p alpha 0.5 beta 2 classic_protection 30 any_ect overflow drop_enqueue no_split_gso min_qlen_step 3 coupling_factor 3", nil,
			"qdisc dualpi2 1: root refcnt 2 limit 100p memlimit 200000B target 15ms tupdate 16ms alpha 0.496094 beta 1.996094 step_thresh 10p min_qlen_step 3p coupling_factor 3 overflow drop_enqueue classic_protection 30% any_ect no_split_gso "},
		{"dualpi2 tupdate 5s step_thresh 5s target 5s limit 7", nil,
			"qdisc dualpi2 1: root refcnt 2 limit 7p memlimit 21196B target 5s tupdate 4.29s alpha 0.156250 beta 3.195312 step_thresh 4.29s min_qlen_step 0p coupling_factor 2 drop_on_overload drop_dequeue classic_protection 10% l4s_ect split_gso "},
		{"dualpi2 max_rtt 100ms", nil,
			"qdisc dualpi2 1: root refcnt 2 limit 10000p memlimit 30280000B target 16.7ms tupdate 16.7ms alpha 0.160156 beta 2.996094 step_thresh 1ms min_qlen_step 0p coupling_factor 2 drop_on_overload drop_dequeue classic_protection 10% l4s_ect split_gso "},
	} {
		s, err := Parse(tt.in, Options{})
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.in, err)
		}
		if got := ShowQdisc(s, Placement{Handle: "1:"}, tt.env); got != tt.want {
			t.Errorf("%q shows\n %q\nwant\n %q", tt.in, got, tt.want)
		}
	}
}

// Random dualpi2 lines that parse print back to the same value.
func TestDualPI2RoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 9332))
	opts := []func() string{
		func() string { return fmt.Sprintf("limit %d", 1+r.IntN(20000)) },
		func() string { return fmt.Sprintf("memlimit %d", 1+r.IntN(1<<30)) },
		func() string { return fmt.Sprintf("target %dus", 1+r.IntN(100000)) },
		func() string { return fmt.Sprintf("tupdate %dms", 1+r.IntN(6000)) },
		func() string { return fmt.Sprintf("alpha %g", r.Float64()*100) },
		func() string { return fmt.Sprintf("beta %g", r.Float64()*1000) },
		func() string { return fmt.Sprintf("step_thresh %dus", 1+r.IntN(5000000)) },
		func() string { return fmt.Sprintf("step_thresh %dp", 1+r.IntN(100)) },
		func() string { return fmt.Sprintf("min_qlen_step %d", r.IntN(10)) },
		func() string { return fmt.Sprintf("coupling_factor %d", 1+r.IntN(255)) },
		func() string { return fmt.Sprintf("classic_protection %g%%", r.Float64()*100) },
		func() string { return fmt.Sprintf("max_rtt %dms", 1+r.IntN(2000)) },
		func() string { return fmt.Sprintf("typical_rtt %dms", 1+r.IntN(300)) },
		func() string {
			return []string{"l4s_ect", "any_ect", "overflow", "drop_on_overload", "drop_enqueue", "drop_dequeue", "split_gso", "no_split_gso"}[r.IntN(8)]
		},
	}
	for range 2000 {
		line := "dualpi2"
		for n := r.IntN(6); n >= 0; n-- {
			line += " " + opts[r.IntN(len(opts))]()
		}
		roundTrip(t, line)
	}
}
