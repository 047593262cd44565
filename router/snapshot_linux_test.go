package router

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"wanlab/internal/schematest"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/tun"
)

// TestDropsByInstance sends segments of a super-packet stream through
// `netem loss 50%; netem loss 50%`: each instance reports its own drops
// (about half of what reaches it), by reason, and they add up to the
// direction's.
func TestDropsByInstance(t *testing.T) {
	const payload, mss = 14480, 1448 // 10 segments per super-packet
	r, c, s := fakeRouter(t, mustChain(t, "netem loss 50%; netem loss 50%"), superPkts(false, payload, mss))
	c.budget = 400
	deadline := time.Now().Add(5 * time.Second)
	for c.budget != 0 && time.Now().Before(deadline) {
		step(r.up)
	}
	for range 10 {
		step(r.up)
	}
	snap := r.Snapshot().Up
	const sent = 4000
	if snap.Counters.Sent != sent || len(snap.Qdiscs) != 2 {
		t.Fatalf("sent %d segments through %d qdiscs; want %d through 2", snap.Counters.Sent, len(snap.Qdiscs), sent)
	}
	first, second := snap.Qdiscs[0], snap.Qdiscs[1]
	if first.Handle != "1:" || first.Parent != "root" || second.Handle != "2:" || second.Parent != "1:1" ||
		first.Options != "limit 1000 loss random 50%" || second.Options != first.Options {
		t.Errorf("qdiscs %+v", snap.Qdiscs)
	}
	// Binomial counts: within five standard deviations of the mean.
	within := func(name string, got uint64, n, p float64) {
		if mean, sd := n*p, math.Sqrt(n*p*(1-p)); math.Abs(float64(got)-mean) > 5*sd {
			t.Errorf("%s dropped %d of %.0f, want %.0f ± %.0f", name, got, n, mean, 5*sd)
		}
	}
	d1, d2 := first.Counters.Dropped, second.Counters.Dropped
	within("first netem", d1, sent, 0.5)
	within("second netem", d2, float64(sent-d1), 0.5)
	if d1+d2 != snap.Counters.Dropped || snap.Counters.Dropped+snap.Counters.Delivered != sent || uint64(s.segs) != snap.Counters.Delivered {
		t.Errorf("drops %d + %d, direction dropped %d delivered %d, server got %d, of %d", d1, d2, snap.Counters.Dropped, snap.Counters.Delivered, s.segs, sent)
	}
	for i, q := range snap.Qdiscs {
		if q.Counters.DroppedByReason[qdisc.ReasonLoss] != q.Counters.Dropped || q.Counters.DroppedByReason.Total() != q.Counters.Dropped {
			t.Errorf("qdisc %d: dropped %d, by reason %v", i, q.Counters.Dropped, q.Counters.DroppedByReason)
		}
	}
	// As in the kernel, a parent counts as sent what leaves it through
	// its child: both count what left the tree.
	if first.Counters.Packets != snap.Counters.Delivered || second.Counters.Packets != snap.Counters.Delivered {
		t.Errorf("dequeued %d and %d, want %d each", first.Counters.Packets, second.Counters.Packets, snap.Counters.Delivered)
	}
}

// TestSnapshotJSON checks the snapshot's JSON: snake_case keys everywhere
// (no Go field names), all documented, drops by reason as named keys, a
// readable flow key and the time of the snapshot.
func TestSnapshotJSON(t *testing.T) {
	r, c, _ := fakeRouter(t, mustChain(t, "netem delay 1s limit 20"), superPkts(false, 14480, 1448))
	c.budget = 3
	for range 5 {
		r.up.pass()
	}
	m := schematest.CheckKeys(t, r.Snapshot())
	up := m["up"].(map[string]any)
	if up["framing"] != "ethernet" || m["clock_ns"].(float64) <= 0 || m["wall"] == "" || up["clock_ns"].(float64) < m["clock_ns"].(float64) {
		t.Errorf("framing or times missing: %v", m)
	}
	// Three super-packets of ten segments offered to a netem that holds
	// twenty: the third is dropped by the limit, as its ten segments.
	drops := up["counters"].(map[string]any)["dropped_by_reason"].(map[string]any)
	q := up["qdiscs"].([]any)[0].(map[string]any)
	if drops["limit"] != 10.0 || q["counters"].(map[string]any)["dropped_by_reason"].(map[string]any)["limit"] != 10.0 {
		t.Errorf("drops by reason: direction %v, qdisc %v", drops, q["counters"])
	}
	flow := up["flows"].([]any)[0].(map[string]any)["flow"].(map[string]any)
	if flow["proto"] != "tcp" || flow["src"] != "10.0.0.1:40000" || flow["dst"] != "10.0.0.2:5201" {
		t.Errorf("flow key %v", flow)
	}
}

// TestFramedBytes sends super-packets that cross whole and checks the
// byte counts of the direction and of the flow on both framings: per wire
// segment, its IP bytes and the framing's header; the flow's payload is
// the TCP payload either way.
func TestFramedBytes(t *testing.T) {
	const payload, mss = 14480, 1448 // 10 segments of 52 header bytes
	const segs = payload / mss
	for _, f := range []qdisc.Framing{qdisc.FramingEthernet, qdisc.FramingIP} {
		r, c, s := fakeRouterFramed(t, nil, superPkts(false, payload, mss), f)
		c.budget = 5
		for range 5 {
			step(r.up)
		}
		snap := r.Snapshot().Up
		want := uint64(5 * (payload + segs*(52+f.HeaderLen())))
		n := snap.Counters
		if snap.Framing != f || !snap.GSO.Whole || s.written != 5 || n.Delivered != 5*segs || n.BytesIn != want || n.BytesOut != want {
			t.Errorf("%s: framing %s, whole %v, %d writes; delivered %d, bytes %d in %d out; want %d segments of %d bytes",
				f, snap.Framing, snap.GSO.Whole, s.written, n.Delivered, n.BytesIn, n.BytesOut, 5*segs, want)
		}
		if len(snap.Flows) != 1 || snap.Flows[0].Bytes != want || snap.Flows[0].Payload != 5*payload {
			t.Errorf("%s: flows %+v, want %d bytes and %d payload", f, snap.Flows, want, 5*payload)
		}
	}
}

// TestFlowMarksDropsAndDelay: a flow's own counters add up to its
// direction's. One ECN-capable flow into a token bucket whose queue is
// CoDel with ECN: CoDel marks instead of dropping, and the flow's marks,
// drops by reason and delay through the router are the direction's.
func TestFlowMarksDropsAndDelay(t *testing.T) {
	pkts := superPkts(false, 14480, 1448)
	ip := pkts[0][tun.VNetHdrLen:]
	ip[1] = 0x02 // ECT(0)
	binary.BigEndian.PutUint16(ip[10:], 0)
	binary.BigEndian.PutUint16(ip[10:], packet.Checksum(ip[:20]))
	r, c, s := fakeRouter(t, mustChain(t, "tbf rate 20mbit burst 16k latency 500ms; codel limit 300 target 1ms interval 5ms ecn"), pkts)
	c.budget = 60 // 600 segments: about 360 ms at 20 Mbit/s
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		step(r.up)
		if snap := r.Snapshot().Up; c.budget == 0 && snap.Counters.Queued == 0 {
			break
		}
	}
	snap := r.Snapshot().Up
	cn := snap.Counters
	if len(snap.Flows) != 1 || cn.Queued != 0 {
		t.Fatalf("flows %+v, %d queued", snap.Flows, cn.Queued)
	}
	f := snap.Flows[0]
	t.Logf("direction: delivered %d, dropped %d %v, marked %d, delay %+v; flow: %+v", cn.Delivered, cn.Dropped, cn.DroppedByReason, cn.Marked, cn.Delay, f)
	if cn.Marked == 0 || f.Marked != cn.Marked {
		t.Errorf("marks: flow %d, direction %d; want the same, and some", f.Marked, cn.Marked)
	}
	if f.Dropped != cn.Dropped || f.DroppedByReason != cn.DroppedByReason || f.Packets != cn.Delivered || uint64(s.segs) != f.Packets {
		t.Errorf("flow dropped %d %v, delivered %d; direction dropped %d %v, delivered %d; server got %d",
			f.Dropped, f.DroppedByReason, f.Packets, cn.Dropped, cn.DroppedByReason, cn.Delivered, s.segs)
	}
	// CoDel decides per packet, so the super-packets were split: one
	// delay sample per segment, as the direction's.
	if f.Delay.N != cn.Delay.N || math.Abs(f.Delay.MeanNs-cn.Delay.Mean) > 1e6 || f.Delay.MaxNs < int64(cn.Delay.Max) ||
		cn.Delay.Mean < 10e6 {
		t.Errorf("flow delay %+v, direction %+v: want the same within 1 ms, and the queue's tens of ms", f.Delay, cn.Delay)
	}
}
