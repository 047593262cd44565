package link

import (
	"encoding/json"
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
