package quicflow

import (
	"context"
	"testing"
	"time"

	"wanlab/internal/traffictest"
	"wanlab/traffic"
)

// In a namespace of its own, QUIC flows over IPv4 and IPv6 carry their
// DSCP on every packet both ways, as a packet socket on the namespace's
// loopback device sees them, together with the ECN codepoint quic-go
// sets: the DSCP survives quic-go's per-packet ECN control messages. A
// flow without a TOS is the control: DSCP 0.
func TestDSCPOnTheWire(t *testing.T) {
	h, sn := traffictest.SniffedNamespace(t)
	noLeaks(t)
	var flows []traffic.Flow
	for _, c := range []struct {
		addr string
		tos  int
		dir  traffic.Direction
	}{{"127.0.0.1", 0xb8, traffic.Up}, {"::1", 0x20, traffic.Down}, {"127.0.0.1", 0, traffic.Up}} {
		host := traffic.Host{Net: traffic.InNamespace(h), Addr: lo4}
		if c.addr == "::1" {
			host.Addr = lo6
		}
		flows = append(flows, traffictest.Must(t, New, Config{Label: c.addr, Client: host, Server: host, Dir: c.dir, TOS: c.tos, Bytes: 4 << 20, Stop: 900 * time.Millisecond}))
	}
	res, err := traffic.Run(context.Background(), traffic.Plan{Step: 100 * time.Millisecond, Length: time.Second, Flows: flows})
	if err != nil {
		t.Fatal(err)
	}
	sn.Close()
	for i, fr := range res.Flows {
		r := fr.(*Result)
		tos := flows[i].(*Flow).t.cfg.TOS
		checkFlow(t, res, r, tos)
		seen := sn.Seen(r.Sender.Local.Port(), r.Sender.Remote.Port())
		var packets, ect0 int
		for b, n := range seen {
			packets += n
			if b&^3 != tos {
				t.Errorf("%s: %d packets with TOS %#x, want DSCP %#x", r.Label, n, b, tos)
			}
			if b&3 == 2 {
				ect0 += n
			}
		}
		// 4 MiB take some 3000 datagrams, fewer packets on loopback,
		// which carries quic-go's GSO batches whole; quic-go marks ECT(0)
		// on the packets it sends while it validates ECN and once the
		// path proves capable.
		if packets < 100 || ect0 == 0 {
			t.Errorf("%s: %d packets seen, %d of them ECT(0): %v", r.Label, packets, ect0, seen)
		}
		t.Logf("%s: TOS on the wire (TOS: packets) %v; ECN state %q", r.Label, seen, r.Samples[len(r.Samples)-1].Sender.ECNState)
	}
}
