package link

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"wanlab/clock"
	"wanlab/qdisc"
)

// TestBytesFollowFraming counts the same packets on both framings: the
// 14-byte Ethernet header per packet, or the IP length alone.
func TestBytesFollowFraming(t *testing.T) {
	for _, f := range []struct {
		framing qdisc.Framing
		want    uint64
	}{{qdisc.FramingEthernet, 2 * (1500 + 14)}, {qdisc.FramingIP, 2 * 1500}} {
		pool := newPool()
		d, err := New(Config{Name: "up", Env: qdisc.Env{Pool: pool, Framing: f.framing}, PerFlow: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			d.Enqueue(0, mk(pool, 0, int64(i), 1500, 0))
		}
		drainAll(d, clock.Time(0))
		c, fc := d.Counters(), d.FlowCounters()[0]
		if c.BytesIn != f.want || c.BytesOut != f.want || fc.BytesIn != f.want || fc.BytesOut != f.want {
			t.Errorf("%s framing: bytes in %d out %d, flow %d %d; want %d", f.framing, c.BytesIn, c.BytesOut, fc.BytesIn, fc.BytesOut, f.want)
		}
	}
}

func TestCountersJSON(t *testing.T) {
	c := Counters{Sent: 5, Dropped: 4}
	c.DroppedByReason[qdisc.ReasonLimit] = 3
	c.DroppedByReason[qdisc.ReasonCoDel] = 1
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"sent":5`, `"bytes_in":0`, `"dropped_by_reason":{"limit":3,"codel":1}`, `"delay":{"n":0,"min_ns":0`} {
		if !strings.Contains(s, want) {
			t.Errorf("%s lacks %s", s, want)
		}
	}
	var back Counters
	if err := json.Unmarshal(b, &back); err != nil || back != c {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, c)
	}
	if err := json.Unmarshal([]byte(`{"dropped_by_reason":{"gremlins":1}}`), &back); err == nil {
		t.Error("an unknown reason was accepted")
	}
	if c.DroppedByReason.Total() != 4 {
		t.Errorf("total %d", c.DroppedByReason.Total())
	}
}

// TestKeptDelaysAreBounded: with KeepDelays, a direction keeps exact
// delays only up to MaxKeptDelays (per flow and total together); from
// there its percentiles come from histograms, within their 1%, and no
// more delays are kept.
func TestKeptDelaysAreBounded(t *testing.T) {
	for _, bound := range []int{0, 10} {
		pool := newPool()
		d, err := New(Config{Name: "up", Env: qdisc.Env{Pool: pool}, PerFlow: true, KeepDelays: true, MaxKeptDelays: bound})
		if err != nil {
			t.Fatal(err)
		}
		d.ReserveDelays(1<<30, map[int32]int{0: 1 << 30})
		if c := cap(d.total.samples); bound == 10 && c > 10 {
			t.Errorf("max %d: reserved room for %d delays", bound, c)
		}
		// Packet i waits i+1 ms: delays 1..100 ms.
		for i := range 100 {
			at := clock.Time(i) * 1000 * ms
			d.Enqueue(at, mk(pool, 0, int64(i), 100, 0))
			if p, _ := d.Dequeue(at + clock.Time(i+1)*ms); p == nil {
				t.Fatal("direct path held a packet")
			} else {
				pool.Put(p)
			}
		}
		exact := bound == 0
		for name, c := range map[string]Counters{"total": d.Counters(), "flow": d.FlowCounters()[0]} {
			got := c.Delay
			if got.N != 100 || got.Exact != exact {
				t.Errorf("max %d, %s: N %d exact %v, want 100 and %v", bound, name, got.N, got.Exact, exact)
			}
			// numpy's linear percentiles of 1..100 ms.
			for _, w := range []struct{ got, want float64 }{{got.P50, 50.5e6}, {got.P90, 90.1e6}, {got.P99, 99.01e6}} {
				if math.Abs(w.got-w.want) > 0.01*w.want {
					t.Errorf("max %d, %s: percentile %.0f, want %.0f within 1%%", bound, name, w.got, w.want)
				}
			}
			if got.Min != 1e6 || got.Max != 100e6 || got.Mean != 50.5e6 {
				t.Errorf("max %d, %s: min %v max %v mean %v", bound, name, got.Min, got.Max, got.Mean)
			}
		}
		if bound == 10 && (d.total.samples != nil || d.flow(0).samples != nil) {
			t.Errorf("max %d: delays still kept after the bound", bound)
		}
	}
}
