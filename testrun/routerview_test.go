package testrun

import (
	"testing"

	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/router"
)

// A dumbbell direction's ports are read from the router's snapshot and
// reported with their counts over the run: less the base's, by host and
// place, the delay's mean over the run and its percentiles from the end;
// a port without an access link has none; no_route counts over the run.
func TestPortsOverRun(t *testing.T) {
	snap := func(k uint64) router.DirSnapshot {
		var limit link.Reasons
		limit[qdisc.ReasonLimit] = 2 * k
		c1 := link.Counters{Sent: 100 * k, BytesIn: 150_000 * k, Delivered: 98 * k, BytesOut: 147_000 * k, Dropped: 2 * k, DroppedByReason: limit,
			Marked: k, Reordered: k, Delay: link.Delay{N: 98 * k, Mean: float64(5e6 * k), P50: float64(4e6 * k), P99: float64(9e6 * k)}}
		access := link.Counters{Sent: 50 * k, Delivered: 50 * k, Delay: link.Delay{N: 50 * k, Mean: 5e6, P50: 5e6, P99: 5e6}}
		return router.DirSnapshot{Name: "up", NoRoute: 3 * k, Ports: []router.PortSnapshot{
			{Host: "c1", Place: "ingress", If: "c1if", Counters: c1, Ring: router.RingSnapshot{Drops: k}},
			{Host: "s1", Place: "egress", If: "s1if", Chain: "netem delay 5ms", Counters: c1, Access: &access, WriteDrops: k},
		}}
	}
	base, end := viewOf(snap(1)), viewOf(snap(3))
	ports := portsOverRun(base, end)
	if len(ports) != 2 || sub(end.NoRoute, base.NoRoute) != 6 {
		t.Fatalf("ports %+v, no route %d", ports, end.NoRoute)
	}
	c1, s1 := ports[0], ports[1]
	// Over the run: 300-100 sent, 294-98 delivered with their delays
	// summing 294·15 ms - 98·5 ms, so a mean of 20 ms; percentiles from
	// the end (12 ms, 27 ms).
	if c1.Host != "c1" || c1.Place != "ingress" || c1.If != "c1if" || c1.Chain != "" || c1.Sent != 200 || c1.BytesIn != 300_000 ||
		c1.Delivered != 196 || c1.BytesOut != 294_000 || c1.Dropped != 4 || c1.DroppedByReason["limit"] != 4 || c1.Marked != 2 || c1.Reordered != 2 ||
		c1.Delay.N != 196 || c1.Delay.MeanNs != 20e6 || c1.Delay.P50Ns != 12e6 || c1.Delay.P99Ns != 27e6 || c1.RingDrops != 2 || c1.Access != nil {
		t.Errorf("c1 %+v", c1)
	}
	if s1.Chain != "netem delay 5ms" || s1.WriteDrops != 2 || s1.Access == nil || s1.Access.Sent != 100 || s1.Access.Delivered != 100 ||
		s1.Access.Delay.N != 100 || s1.Access.Delay.MeanNs != 5e6 || s1.Access.Dropped != 0 || s1.Access.DroppedByReason != nil {
		t.Errorf("s1 %+v access %+v", s1, s1.Access)
	}
	// A port the base did not have counts from zero.
	if p := portsOverRun(dirView{}, end); p[0].Sent != 300 || p[1].Access.Sent != 150 {
		t.Errorf("without a base: %+v", p)
	}
}
