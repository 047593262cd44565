package qdisc

import (
	"testing"
	"time"

	"wanlab/clock"
)

// Three 1500-byte IP packets at 10 Mbit/s. On a TUN device (the kernel
// figures: the length is the IP length) they are 1.2 ms apart, 1.2112 ms
// with "rate 10mbit 14" and 1.2304 ms with overhead 38 (the whole Ethernet
// wire). On Ethernet, the default, the 14-byte header is already part of
// the length: 1.2112 ms, and overhead 24 (preamble, FCS, gap) gives the
// wire's 1.2304 ms.
func TestNetemSerialisation(t *testing.T) {
	for _, tc := range []struct {
		framing  Framing
		overhead int32
		spacing  clock.Time
	}{
		{FramingIP, 0, 1200 * clock.Time(time.Microsecond)},
		{FramingIP, 14, 1211200},
		{FramingIP, 38, 1230400},
		{FramingEthernet, 0, 1211200},
		{FramingEthernet, 24, 1230400},
	} {
		b := newFramedBench(t, NetemConfig{Rate: mbit(10), PacketOverhead: tc.overhead}, tc.framing)
		for range 3 {
			b.send(0, 1500)
		}
		b.runUntil(0, clock.Time(time.Second))
		if len(b.out) != 3 {
			t.Fatalf("%v overhead %d: %d departures, want 3", tc.framing, tc.overhead, len(b.out))
		}
		for i, d := range b.out {
			if want := clock.Time(i+1) * tc.spacing; d.at != want {
				t.Errorf("%v overhead %d: packet %d departs at %v, want %v", tc.framing, tc.overhead, i, d.at, want)
			}
		}
		b.checkLeaks(0)
	}
}

// The kernel figures for "delay 50ms rate 10mbit", worked out for a TUN
// device (IP length only, hence FramingIP).
func TestNetemRateDelay(t *testing.T) {
	b := newFramedBench(t, NetemConfig{Delay: 50 * time.Millisecond, Rate: mbit(10)}, FramingIP)
	for range 3 {
		b.send(0, 1500)
	}
	b.runUntil(0, 10*ms)
	b.send(10*ms, 1500)
	b.runUntil(10*ms, 100*ms)
	want := []clock.Time{51200000, 52400000, 53600000, 61200000}
	if len(b.out) != len(want) {
		t.Fatalf("%d departures, want %d", len(b.out), len(want))
	}
	for i, d := range b.out {
		if d.at != want[i] {
			t.Errorf("packet %d departs at %v, want %v", i, d.at, want[i])
		}
	}
	// After idle, "now" is the reference again.
	b.out = nil
	b.send(500*ms, 1500)
	b.runUntil(500*ms, clock.Time(time.Second))
	if len(b.out) != 1 || b.out[0].at != 500*ms+51200000 {
		t.Errorf("after idle: departures %v, want one at 551.2ms", b.out)
	}
	b.checkLeaks(0)
}

// The cell figures hold on both framings: 1014 bytes still make 11 cells
// of 100 and 1514 bytes 32 cells of 48.
func TestNetemCells(t *testing.T) {
	for _, tc := range []struct {
		cfg  NetemConfig
		size int
		want clock.Time
	}{
		{NetemConfig{Rate: Rate(5000 / 8), PacketOverhead: 20, CellSize: 100, CellOverhead: 5}, 1000, 1848 * ms},
		{NetemConfig{Rate: mbit(1), CellSize: 48, CellOverhead: 5}, 1500, 13568 * clock.Time(time.Microsecond)},
	} {
		b := newBench(t, tc.cfg)
		b.send(0, tc.size)
		b.runUntil(0, 10*clock.Time(time.Second))
		if len(b.out) != 1 || b.out[0].at != tc.want {
			t.Errorf("%+v: departures %v, want one at %v", tc.cfg, b.out, tc.want)
		}
		b.checkLeaks(0)
	}
}

func TestNetemLimit(t *testing.T) {
	b := newBench(t, NetemConfig{Delay: 100 * time.Millisecond})
	const spacing = 12 * clock.Time(time.Microsecond) // 1500 B at 1 Gbit/s
	firstDrop := int64(-1)
	var firstDropAt clock.Time
	end := clock.Time(time.Second)
	for now := clock.Time(0); now < end; now += spacing {
		b.drain(now, false)
		p, v := b.send(now, 1500)
		if v == Dropped && firstDrop < 0 {
			firstDrop, firstDropAt = p.Seq, now
		}
	}
	if firstDrop != 1000 || firstDropAt != 1000*spacing {
		t.Errorf("first drop: packet %d at %v, want packet 1000 (the 1001st) at 12ms", firstDrop, firstDropAt)
	}
	// Measure past the first 100 ms, in which the pipe fills: from then on
	// 1000 packets leave per 100 ms.
	from := 200 * ms
	delivered := 0
	for _, d := range b.out {
		if d.at >= from && d.at < end {
			delivered++
		}
	}
	goodput := float64(delivered*1500*8) / (end - from).Seconds() / 1e6
	if goodput < 119 || goodput > 121 {
		t.Errorf("goodput %.1f Mbit/s, want about 120 (a 1000-packet limit over 100 ms)", goodput)
	}
	st := b.q.Stats()
	if st.DropsByReason[ReasonLimit] == 0 || st.Drops != st.DropsByReason[ReasonLimit] {
		t.Errorf("stats %+v: want only limit drops", st)
	}
	b.checkLeaks(0)
}
