package router

import (
	"testing"
	"time"
)

// A tree of classes: the snapshot lists its qdiscs with the handles its
// tc lines give and its classes with their own counters, as tc -s qdisc
// and class show would; each qdisc's drops are its own, and TCDrops adds
// those below it, as tc shows them.
func TestClassSnapshots(t *testing.T) {
	chain := mustChain(t, `tc qdisc add dev eth0 root handle 1: htb default 20
tc class add dev eth0 parent 1: classid 1:1 htb rate 100mbit
tc class add dev eth0 parent 1:1 classid 1:10 htb rate 10mbit ceil 100mbit
tc class add dev eth0 parent 1:1 classid 1:20 htb rate 10mbit ceil 100mbit
tc qdisc add dev eth0 parent 1:10 handle 10: pfifo limit 5
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip protocol 6 0xff flowid 1:10`)
	r, c, s := fakeRouter(t, chain, superPkts(false, 14480, 1448))
	c.budget = 50
	deadline := time.Now().Add(5 * time.Second)
	for (c.budget != 0 || r.up.dir.Len() > 0) && time.Now().Before(deadline) {
		step(r.up)
	}
	snap := r.Snapshot().Up
	if len(snap.Qdiscs) != 2 || snap.Qdiscs[0].Handle != "1:" || snap.Qdiscs[0].Parent != "root" ||
		snap.Qdiscs[1].Kind != "pfifo" || snap.Qdiscs[1].Handle != "10:" || snap.Qdiscs[1].Parent != "1:10" {
		t.Fatalf("qdiscs %+v", snap.Qdiscs)
	}
	if len(snap.Classes) != 3 {
		t.Fatalf("classes %+v", snap.Classes)
	}
	root, leaf, other := snap.Classes[0], snap.Classes[1], snap.Classes[2]
	if root.ClassID != "1:1" || root.Parent != "root" || root.Level != 7 ||
		leaf.ClassID != "1:10" || leaf.Parent != "1:1" || leaf.Leaf != "10:" || leaf.Level != 0 ||
		other.ClassID != "1:20" || other.Leaf != "" || leaf.Options != "htb rate 10Mbit ceil 100Mbit burst 1600 cburst 1600 quantum 125000 mtu 1600" {
		t.Errorf("classes %+v", snap.Classes)
	}
	cn := snap.Counters
	if cn.Dropped == 0 || cn.Delivered+cn.Dropped != cn.Sent || uint64(s.segs) != cn.Delivered {
		t.Fatalf("sent %d, delivered %d, dropped %d, server got %d: want drops at the pfifo of 5", cn.Sent, cn.Delivered, cn.Dropped, s.segs)
	}
	if leaf.Counters.Packets != cn.Delivered || leaf.Counters.Dropped != cn.Dropped || other.Counters.Packets != 0 || root.Counters.Packets != cn.Delivered {
		t.Errorf("class counters: 1:1 %+v, 1:10 %+v, 1:20 %+v; delivered %d, dropped %d", root.Counters, leaf.Counters, other.Counters, cn.Delivered, cn.Dropped)
	}
	if leaf.Lends+leaf.Borrows != cn.Delivered {
		t.Errorf("1:10 lent %d and borrowed %d of %d", leaf.Lends, leaf.Borrows, cn.Delivered)
	}
	if own := snap.Qdiscs[0].Counters.Dropped; own != 0 || snap.Qdiscs[1].Counters.Dropped != cn.Dropped {
		t.Errorf("own drops: htb %d, pfifo %d; want 0 and %d", own, snap.Qdiscs[1].Counters.Dropped, cn.Dropped)
	}
	if d := snap.TCDrops(); d[0] != cn.Dropped || d[1] != cn.Dropped {
		t.Errorf("TCDrops = %v, want %d each", d, cn.Dropped)
	}
}
