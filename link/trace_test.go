package link

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/qdisc"
)

func TestParseTrace(t *testing.T) {
	tr, err := ParseTrace([]byte("0\n1\n1\n3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Period() != 3*ms || tr.Len() != 4 {
		t.Fatalf("period %v len %d", tr.Period(), tr.Len())
	}
	for _, c := range []struct{ at, want clock.Time }{
		{-5, 0}, {0, 0}, {1, ms}, {ms, ms}, {ms + 1, 3 * ms}, {3 * ms, 3 * ms},
		// Period 1 starts at 3 ms: its opportunities are 3, 4, 4, 6 ms.
		{3*ms + 1, 4 * ms}, {5 * ms, 6 * ms}, {6 * ms, 6 * ms}, {300*ms + 2, 301 * ms},
	} {
		if got := tr.Next(c.at); got != c.want {
			t.Errorf("Next(%v) = %v, want %v", c.at, got, c.want)
		}
	}
	if _, err := ParseTrace([]byte(" 5\r\n10")); err != nil {
		t.Errorf("spaces and CRLF: %v", err)
	}
}

func TestParseTraceErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"", "no timestamps"},
		{"\n", "no timestamps"},
		{"1\n\n2", "line 2: empty"},
		{"2\n1", "line 2: 1 ms comes after 2 ms"},
		{"0\n0", "last timestamp is 0"},
		{"1\nx", "line 2: \"x\""},
		{"-1\n3", "line 1: \"-1\""},
		{"1.5", "line 1"},
		{"99999999999999", "line 1: 99999999999999 ms is beyond"},
		{"0\n4294967297", "line 2: 4294967297 ms is beyond the largest supported timestamp 4294967296 ms"},
	} {
		_, err := ParseTrace([]byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseTrace(%q) error %v, want it to mention %q", c.text, err, c.want)
		}
	}
}

// everyMs is a 12 Mbit/s trace: one opportunity each millisecond from 1 to
// 10 ms, repeating every 10 ms.
func everyMs(t *testing.T) *Trace {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintln(&b, i)
	}
	tr, err := ParseTrace([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

type leave struct {
	seq int64
	at  clock.Time
}

// step runs the direction on its own deadlines until until, returning when
// each packet left.
func step(d *Direction, from, until clock.Time) []leave {
	out, _ := stepCounted(d, from, until)
	return out
}

// stepCounted is step that also counts its calls of Dequeue.
func stepCounted(d *Direction, from, until clock.Time) (out []leave, calls int) {
	for now := from; now <= until; {
		seqs, next := drainAll(d, now)
		calls += len(seqs) + 1
		for _, seq := range seqs {
			out = append(out, leave{seq, now})
		}
		now = next
	}
	return out, calls
}

func TestTraceDeliveryLikeMahimahi(t *testing.T) {
	pool := newPool()
	d, err := New(Config{Trace: everyMs(t), Env: qdisc.Env{Pool: pool}})
	if err != nil {
		t.Fatal(err)
	}
	// Three 500-byte packets share the 1 ms opportunity.
	for i := range 3 {
		d.Enqueue(0, mk(pool, 0, int64(i), 500, 0))
	}
	if p, next := d.Dequeue(0); p != nil || next != ms {
		t.Fatalf("Dequeue(0) = %v, %v; want nil, 1ms", p, next)
	}
	got := step(d, 0, ms)
	// Two 1000-byte packets: the first leaves at 2 ms; the second takes the
	// remaining 500 bytes of that opportunity and 500 of the next.
	d.Enqueue(1500*us, mk(pool, 0, 3, 1000, 0))
	d.Enqueue(1500*us, mk(pool, 0, 4, 1000, 0))
	got = append(got, step(d, 1500*us, 3*ms)...)
	// A 4000-byte packet spans the opportunities at 4, 5 and 6 ms.
	d.Enqueue(3500*us, mk(pool, 0, 5, 4000, 0))
	got = append(got, step(d, 3500*us, 6*ms)...)
	// The 7 ms opportunity passes unused; a packet at 7.5 ms waits for 8 ms.
	d.Enqueue(7500*us, mk(pool, 0, 6, 1500, 0))
	got = append(got, step(d, 7500*us, 8*ms)...)
	// A packet arriving at an opportunity's instant can use it.
	d.Enqueue(9*ms, mk(pool, 0, 7, 100, 0))
	got = append(got, step(d, 9*ms, 9*ms)...)
	// The trace repeats: after 10 ms the next opportunity is at 11 ms.
	d.Enqueue(10*ms+1, mk(pool, 0, 8, 100, 0))
	got = append(got, step(d, 10*ms+1, 11*ms)...)
	want := []leave{{0, ms}, {1, ms}, {2, ms}, {3, 2 * ms}, {4, 3 * ms}, {5, 6 * ms}, {6, 8 * ms}, {7, 9 * ms}, {8, 11 * ms}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("left at\n%v, want\n%v", got, want)
	}
	checkBalance(t, d, pool, 0)
}

func TestTraceLeftoverBytesAreLostWhenIdle(t *testing.T) {
	pool := newPool()
	d, _ := New(Config{Trace: everyMs(t)})
	d.Enqueue(0, mk(pool, 0, 0, 1000, 0))
	got := step(d, 0, ms)
	// The 500 bytes left at 1 ms are not saved for a later packet.
	d.Enqueue(ms+1, mk(pool, 0, 1, 1000, 0))
	got = append(got, step(d, ms+1, 3*ms)...)
	if fmt.Sprint(got) != fmt.Sprint([]leave{{0, ms}, {1, 2 * ms}}) {
		t.Errorf("left at %v", got)
	}
}

func TestTraceWithQdiscTree(t *testing.T) {
	pool := newPool()
	d := newWithRoot(t, Config{Trace: everyMs(t), Env: qdisc.Env{Pool: pool}},
		delayBuilder(delaySpec{Delay: 2500 * time.Microsecond}))
	d.Enqueue(0, mk(pool, 0, 0, 1500, 0))
	d.Enqueue(0, mk(pool, 0, 1, 1500, 0))
	// Opportunities at 1 and 2 ms find nothing ready; the packets become
	// ready at 2.5 ms and leave one per opportunity.
	got, calls := stepCounted(d, 0, 5*ms)
	if fmt.Sprint(got) != fmt.Sprint([]leave{{0, 3 * ms}, {1, 4 * ms}}) {
		t.Errorf("left at %v", got)
	}
	// 0 -> 1 ms (the tree may have something), 1 ms -> 3 ms (it said 2.5),
	// 3 ms (one out), 3 ms -> 4 ms, 4 ms (one out), 4 ms -> Never.
	if calls > 7 {
		t.Errorf("%d Dequeue calls: idle opportunities are not skipped", calls)
	}
	coretest.CheckLive(t, pool, 0)
}

func TestTraceSkipsLongIdleStretches(t *testing.T) {
	pool := newPool()
	d, _ := New(Config{Trace: everyMs(t)})
	// A day of idle opportunities must not be visited one by one.
	day := clock.Time(24 * time.Hour)
	if p, next := d.Dequeue(day); p != nil || next != clock.Never {
		t.Fatalf("idle: %v %v", p, next)
	}
	d.Enqueue(day+1, mk(pool, 0, 0, 100, 0))
	if got := step(d, day+1, day+ms); fmt.Sprint(got) != fmt.Sprint([]leave{{0, day + ms}}) {
		t.Errorf("left at %v", got)
	}
}

func FuzzParseTrace(f *testing.F) {
	f.Add([]byte("0\n1\n1\n3\n"))
	f.Add([]byte("5\n5\n5\n10"))
	f.Add([]byte("1\n\n2"))
	f.Add([]byte("3\n2\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		tr, err := ParseTrace(text)
		if err != nil {
			if tr != nil {
				t.Fatal("trace and error both returned")
			}
			return
		}
		if tr.Period() <= 0 || tr.Len() == 0 {
			t.Fatalf("period %v len %d", tr.Period(), tr.Len())
		}
		// Within [0, 3 periods], Next is at or after its argument,
		// non-decreasing, and every opportunity is found.
		prev := clock.Time(-1)
		for _, at := range []clock.Time{0, 1, tr.Period() - 1, tr.Period(), tr.Period() + 1, 2*tr.Period() + 7} {
			n := tr.Next(at)
			if n < at || n < prev || n > at+tr.Period() {
				t.Fatalf("Next(%v) = %v (previous %v, period %v)", at, n, prev, tr.Period())
			}
			prev = n
		}
		c := tr.seek(0)
		for range 2 * tr.Len() {
			nc := tr.next(c)
			if nc.t < c.t || !nc.after(c) {
				t.Fatalf("opportunities out of order: %v then %v", c, nc)
			}
			if tr.Next(nc.t) != nc.t {
				t.Fatalf("Next(%v) = %v", nc.t, tr.Next(nc.t))
			}
			c = nc
		}
	})
}
