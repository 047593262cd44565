package scalableflow

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"wanlab/internal/schematest"
	"wanlab/internal/traffictest"
	"wanlab/traffic"
)

var lo4 = netip.MustParseAddr("127.0.0.1")

func hosts(addr netip.Addr) (client, server traffic.Host) {
	return traffic.Host{Net: traffic.Local{}, Addr: addr}, traffic.Host{Net: traffic.Local{}, Addr: addr}
}

// A flow over loopback in each direction: the sender starts at Start, its
// packets arrive ECT(1) with the DSCP asked for, the samples begin there
// with counts that only grow, and the sender stops at Stop while the
// receiver is still sampled. Nothing is left behind.
func TestLoopbackFlow(t *testing.T) {
	for _, dir := range []traffic.Direction{traffic.Up, traffic.Down} {
		t.Run(dir.String(), func(t *testing.T) {
			traffictest.NoLeaks(t)
			c, s := hosts(lo4)
			f := traffictest.Must(t, New, Config{Label: "L4S scalable UDP " + dir.String(), Client: c, Server: s, Dir: dir, TOS: 0x20,
				Start: 200 * time.Millisecond, Stop: 700 * time.Millisecond})
			res, err := traffic.Run(t.Context(), traffic.Plan{Step: 100 * time.Millisecond, Length: 1000 * time.Millisecond, Flows: []traffic.Flow{f}})
			if err != nil {
				t.Fatal(err)
			}
			r := res.Flows[0].(*Result)
			if r.Error != "" {
				t.Fatalf("flow error: %s", r.Error)
			}
			if r.Kind != Kind || r.Dir != dir || r.PacketSize != 1472 || r.Payload != 1452 || r.TOS != 0x21 {
				t.Errorf("result kind %q dir %v packet size %d payload %d TOS %#x, want scalable, %v, 1472, 1452, 0x21", r.Kind, r.Dir, r.PacketSize, r.Payload, r.TOS, dir)
			}
			if len(r.Samples) == 0 || r.Samples[0].K != 2 {
				t.Fatalf("%d samples, first %+v: want them from grid point 2 (200 ms)", len(r.Samples), r.Samples)
			}
			prev := Sample{}
			for _, s := range r.Samples {
				if s.SentPackets < prev.SentPackets || s.ReceivedPayload < prev.ReceivedPayload || s.ReceivedPayload > s.SentPayload {
					t.Errorf("sample %d: sent %d packets, %d bytes; received %d bytes; previous %+v", s.K, s.SentPackets, s.SentPayload, s.ReceivedPayload, prev)
				}
				prev = s
			}
			last := r.Samples[len(r.Samples)-1]
			if last.ReceivedPackets == 0 || last.ECT1Packets+last.CEPackets != last.ReceivedPackets {
				t.Errorf("%d packets received, %d ECT(1), %d CE: want all ECT(1) or CE", last.ReceivedPackets, last.ECT1Packets, last.CEPackets)
			}
			if r.ReceivedBytes == 0 || r.ReceivedBytes != int64(last.ReceivedPayload) || r.SentBytes < r.ReceivedBytes {
				t.Errorf("sent %d, received %d bytes; last sample received %d", r.SentBytes, r.ReceivedBytes, last.ReceivedPayload)
			}
			if last.SRTT <= 0 || last.SRTT > 100*time.Millisecond || last.Acks == 0 || last.Alpha <= 0 {
				t.Errorf("last sample: SRTT %v, %d ACKs, α %v", last.SRTT, last.Acks, last.Alpha)
			}
			var atStop Sample
			for _, s := range r.Samples {
				if s.K == 8 {
					atStop = s
				}
			}
			if atStop.SentPackets != last.SentPackets {
				t.Errorf("sent %d packets by 0.8 s and %d by the end: the sender went on after Stop", atStop.SentPackets, last.SentPackets)
			}
		})
	}
}

// A flow that opens and is closed without running releases everything.
func TestCloseWithoutStart(t *testing.T) {
	traffictest.NoLeaks(t)
	c, s := hosts(lo4)
	f := traffictest.Must(t, New, Config{Label: "L4S", Client: c, Server: s, Start: 0, Stop: time.Second})
	if err := f.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f.Close()
	if err := f.Open(t.Context()); err == nil {
		t.Error("a second Open succeeded")
	}
}

func TestConfigErrors(t *testing.T) {
	traffictest.NoLeaks(t)
	c, s := hosts(lo4)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		// udpflow checks the hosts, the direction and the TOS (its
		// TestSpecErrors); one case shows that New asks it.
		{Config{Label: "x", Server: s}, "scalableflow: flow \"x\": both hosts need a Net"},
		{Config{Label: "x", Client: c, Server: s, AckEvery: 3}, "use 1 (every packet) or 2"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
	f := traffictest.Must(t, New, Config{Label: "x", Client: c, Server: s, PacketSize: 70000, Stop: time.Second})
	if err := f.Open(t.Context()); err == nil || !strings.Contains(err.Error(), "at most 65507") {
		t.Errorf("Open with a 70000-byte packet: %v", err)
	}
	f.Close()
}

// Every key of a scalable flow's result is snake_case.
func TestResultJSONIsSnakeCase(t *testing.T) {
	r := &Result{FlowInfo: traffic.FlowInfo{Label: "L4S scalable UDP upload", Kind: Kind}, Dir: traffic.Down,
		Sender: netip.MustParseAddrPort("10.0.0.1:5000"), Samples: []Sample{{K: 3, Cwnd: 12.5, SRTT: 40 * time.Millisecond}}}
	schematest.CheckFilled(t, r, 38, `"kind":"scalable"`, `"direction":"down"`, `"sender":"10.0.0.1:5000"`, `"srtt_ns":40000000`, `"cwnd":12.5`)
}
