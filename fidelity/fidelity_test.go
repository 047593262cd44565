package fidelity

import (
	"os"
	"testing"
	"time"

	"wanlab/tcspec"
)

func TestTolerance(t *testing.T) {
	for _, c := range []struct{ delay, want time.Duration }{
		{0, time.Millisecond},
		{2 * time.Millisecond, 200 * time.Microsecond},
		{10 * time.Millisecond, time.Millisecond},
		{100 * time.Millisecond, time.Millisecond},
	} {
		if got := Tolerance(c.delay); got != c.want {
			t.Errorf("Tolerance(%v) = %v, want %v", c.delay, got, c.want)
		}
	}
}

func TestJudge(t *testing.T) {
	ok := Judge(Direction{Name: "up", Releases: 1000, LatenessP99: 90 * time.Microsecond}, time.Millisecond)
	if !ok.Faithful || len(ok.Causes) != 0 || ok.ToleranceNs != 100000 {
		t.Errorf("90 µs against 1 ms of delay: %+v", ok)
	}
	late := Judge(Direction{Name: "up", Releases: 1000, LatenessP99: 110 * time.Microsecond}, time.Millisecond)
	if late.Faithful || len(late.Causes) != 1 || late.Causes[0].Code != "late_releases" {
		t.Errorf("110 µs against 1 ms of delay: %+v", late)
	}
	ring := Judge(Direction{Name: "down", RingDrops: 3}, 0)
	if ring.Faithful || ring.Causes[0].Code != "ring_drops" {
		t.Errorf("ring drops: %+v", ring)
	}
	both := Judge(Direction{Name: "down", Releases: 5, LatenessP99: 5 * time.Millisecond, RingDrops: 1}, 0)
	if both.Faithful || len(both.Causes) != 2 {
		t.Errorf("both causes: %+v", both)
	}
}

func TestMinDelay(t *testing.T) {
	up, _ := tcspec.ParseChain("netem delay 30ms; netem delay 5ms 1ms; tbf rate 1mbit burst 10k latency 50ms", tcspec.Options{})
	down, _ := tcspec.ParseChain("netem delay 10ms", tcspec.Options{})
	none, _ := tcspec.ParseChain("tbf rate 1mbit burst 10k latency 50ms", tcspec.Options{})
	if d := OneWayDelay(up); d != 35*time.Millisecond {
		t.Errorf("OneWayDelay(up) = %v", d)
	}
	if d := MinDelay(up, down, none); d != 10*time.Millisecond {
		t.Errorf("MinDelay = %v, want 10ms", d)
	}
	if d := MinDelay(none, nil); d != 0 {
		t.Errorf("MinDelay without delays = %v", d)
	}
}

// The bottleneck is the smallest rate of a chain's tbfs and netems; a
// netem without a rate sets none.
func TestBottleneckRate(t *testing.T) {
	for _, c := range []struct {
		chain string
		want  uint64 // bit/s
	}{
		{"netem delay 30ms rate 20mbit; tbf rate 5mbit burst 10k latency 50ms", 5e6},
		{"tbf rate 8mbit burst 10k latency 50ms; netem delay 5ms rate 2mbit", 2e6},
		{"netem delay 10ms; pfifo limit 100", 0},
		{"", 0},
	} {
		chain, err := tcspec.ParseChain(c.chain, tcspec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := BottleneckRate(chain).BitsPerSecond(); got != c.want {
			t.Errorf("BottleneckRate(%q) = %d bit/s, want %d", c.chain, got, c.want)
		}
	}
}

// A tree's rate: an htb's root classes' ceilings added (each lowered to
// its leaf's rate), a prio's bands' rates added unless a band has none.
func TestBottleneckRateOfTrees(t *testing.T) {
	const htb = `tc qdisc add dev eth0 root handle 1: htb default 20
tc class add dev eth0 parent 1: classid 1:1 htb rate 2mbit ceil 6mbit
tc class add dev eth0 parent 1:1 classid 1:10 htb rate 1mbit ceil 6mbit
tc class add dev eth0 parent 1:1 classid 1:11 htb rate 1mbit ceil 6mbit
tc class add dev eth0 parent 1: classid 1:20 htb rate 3mbit
tc class add dev eth0 parent 1: classid 1:30 htb rate 1mbit ceil 50mbit
tc qdisc add dev eth0 parent 1:30 handle 30: tbf rate 500kbit burst 5k latency 50ms
`
	const prio = `tc qdisc add dev eth0 root handle 1: prio bands 2 priomap 1 1 1 1 1 1 0 0 1 1 1 1 1 1 1 1
tc qdisc add dev eth0 parent 1:1 handle 10: tbf rate 1mbit burst 5k latency 50ms
`
	for _, c := range []struct {
		name, script string
		want         uint64 // bit/s
	}{
		// 6 (1:1's ceil) + 3 (1:20's rate) + 0.5 (1:30's ceil lowered to its tbf).
		{"htb", htb, 9.5e6},
		{"dscp3.sh", "", 10e6},
		{"prio, a band unlimited", prio, 0},
		{"prio, both bands limited", prio + "tc qdisc add dev eth0 parent 1:2 handle 20: netem delay 1ms rate 3mbit\n", 4e6},
	} {
		text := c.script
		if text == "" {
			b, err := os.ReadFile("../examples/dscp3.sh")
			if err != nil {
				t.Fatal(err)
			}
			text = string(b)
		}
		s, err := tcspec.ParseScript(text, tcspec.ScriptOptions{})
		if err != nil {
			t.Fatal(err)
		}
		chain, err := s.Chain(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := BottleneckRate(chain).BitsPerSecond(); got != c.want {
			t.Errorf("%s: BottleneckRate = %d bit/s, want %d", c.name, got, c.want)
		}
	}
}

// TestCPUSaturated checks the cpu_saturated cause: a loop busy, or busy
// and holding reads back, at least MaxBusy of its time is saturated, one
// below is not, one whose time is unknown is not judged on it.
func TestCPUSaturated(t *testing.T) {
	for _, c := range []struct {
		running, busy, held time.Duration
		want                bool
	}{
		{10 * time.Second, 9600 * time.Millisecond, 0, true},
		{10 * time.Second, 9400 * time.Millisecond, 0, false},
		{10 * time.Second, 6000 * time.Millisecond, 3600 * time.Millisecond, true},
		{10 * time.Second, 6000 * time.Millisecond, 3000 * time.Millisecond, false},
		{0, 0, 0, false},
	} {
		v := Judge(Direction{Name: "up", Running: c.running, Busy: c.busy, Held: c.held}, 10*time.Millisecond)
		got := len(v.Causes) == 1 && v.Causes[0].Code == "cpu_saturated"
		if got != c.want || v.Faithful == c.want {
			t.Errorf("busy %v, held %v of %v: verdict %+v, want saturated %v", c.busy, c.held, c.running, v, c.want)
		}
	}
}
