package tfrcflow

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"wanlab/internal/schematest"
	"wanlab/internal/traffictest"
	"wanlab/tfrc/tfrcudp"
	"wanlab/traffic"
)

var lo4 = netip.MustParseAddr("127.0.0.1")

func hosts(addr netip.Addr) (client, server traffic.Host) {
	return traffic.Host{Net: traffic.Local{}, Addr: addr}, traffic.Host{Net: traffic.Local{}, Addr: addr}
}

// noLeaks checks, when the test ends, that every goroutine and file
// descriptor the test started is gone (the sender's pacing thread and its
// eventfd among them).
func noLeaks(t *testing.T) { traffictest.NoLeaks(t) }

// A flow over loopback in each direction: the sender starts at Start, the
// samples begin there with counts that only grow, the receiver never
// counts more than was sent, feedback gives an RTT, and the flow stops
// sending at Stop while the receiver is still sampled.
func TestLoopbackFlow(t *testing.T) {
	for _, dir := range []traffic.Direction{traffic.Up, traffic.Down} {
		t.Run(dir.String(), func(t *testing.T) {
			noLeaks(t)
			c, s := hosts(lo4)
			f := traffictest.Must(t, New, Config{Label: "TFRC " + dir.String(), Client: c, Server: s, Dir: dir,
				Start: 200 * time.Millisecond, Stop: 1200 * time.Millisecond, TxQueueLen: tfrcudp.DefaultTxQueueLen})
			res, err := traffic.Run(t.Context(), traffic.Plan{Step: 100 * time.Millisecond, Length: 1600 * time.Millisecond, Flows: []traffic.Flow{f}})
			if err != nil {
				t.Fatal(err)
			}
			r := res.Flows[0].(*Result)
			if r.Error != "" {
				t.Fatalf("flow error: %s", r.Error)
			}
			if r.Kind != Kind || r.Dir != dir || r.PacketSize != 1472 || r.Payload != 1448 {
				t.Errorf("result kind %q dir %v packet size %d payload %d, want tfrc, %v, 1472, 1448", r.Kind, r.Dir, r.PacketSize, r.Payload, dir)
			}
			if !r.Sender.IsValid() || !r.Receiver.IsValid() || r.Sender.Port() == r.Receiver.Port() {
				t.Errorf("sockets %v → %v", r.Sender, r.Receiver)
			}
			if len(r.Samples) == 0 || r.Samples[0].K != 2 {
				t.Fatalf("%d samples, first %+v: want them from grid point 2 (200 ms)", len(r.Samples), r.Samples)
			}
			if last := r.Samples[len(r.Samples)-1]; last.K != 16 {
				t.Errorf("last sample at grid point %d, want 16 (the end of the run)", last.K)
			}
			prev := Sample{}
			for _, s := range r.Samples {
				if s.SentPackets < prev.SentPackets || s.ReceivedPayload < prev.ReceivedPayload || s.ReceivedPayload > s.SentPayload {
					t.Errorf("sample %d: sent %d packets, %d bytes; received %d bytes; previous %+v", s.K, s.SentPackets, s.SentPayload, s.ReceivedPayload, prev)
				}
				prev = s
			}
			last := r.Samples[len(r.Samples)-1]
			if r.ReceivedBytes == 0 || r.ReceivedBytes != int64(last.ReceivedPayload) || r.SentBytes < r.ReceivedBytes {
				t.Errorf("sent %d, received %d bytes; last sample received %d", r.SentBytes, r.ReceivedBytes, last.ReceivedPayload)
			}
			if last.RTT <= 0 || last.RTT > 100*time.Millisecond || last.Feedbacks == 0 || last.X <= 1472 {
				t.Errorf("last sample: RTT %v, %d feedbacks, X %g: want a loopback RTT and a rate above one packet a second", last.RTT, last.Feedbacks, last.X)
			}
			// After Stop (1.2 s) the sender sends nothing more.
			var atStop Sample
			for _, s := range r.Samples {
				if s.K == 13 {
					atStop = s
				}
			}
			if atStop.SentPackets != last.SentPackets {
				t.Errorf("sent %d packets by 1.3 s and %d by the end: the sender went on after Stop", atStop.SentPackets, last.SentPackets)
			}
			if got := r.StoppedAt.Sub(res.T0); got < 1200*time.Millisecond || got > 1300*time.Millisecond {
				t.Errorf("stopped %v after T0, want 1.2 s", got)
			}
		})
	}
}

// A flow that opens and is closed without running releases everything.
func TestCloseWithoutStart(t *testing.T) {
	noLeaks(t)
	c, s := hosts(lo4)
	f := traffictest.Must(t, New, Config{Label: "TFRC", Client: c, Server: s, Start: 0, Stop: time.Second})
	if err := f.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f.Close()
	if err := f.Open(t.Context()); err == nil {
		t.Error("a second Open succeeded")
	}
}

// Cancelling the run stops the flow at once and leaves nothing behind.
func TestCancel(t *testing.T) {
	noLeaks(t)
	c, s := hosts(lo4)
	f := traffictest.Must(t, New, Config{Label: "TFRC", Client: c, Server: s, Start: 0, Stop: 10 * time.Second})
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := traffic.Run(ctx, traffic.Plan{Step: 100 * time.Millisecond, Length: 10 * time.Second, Flows: []traffic.Flow{f}})
	if !errors.Is(err, context.DeadlineExceeded) || res == nil || !res.Partial {
		t.Fatalf("Run: %v, want a partial result and the deadline's error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the run took %v to end after its context", d)
	}
	if r := res.Flows[0].(*Result); r.ReceivedBytes == 0 {
		t.Error("nothing arrived in 500 ms")
	}
}

func TestConfigErrors(t *testing.T) {
	c, s := hosts(lo4)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		// udpflow checks the hosts, the direction and the TOS (its
		// TestSpecErrors); one case shows that New asks it.
		{Config{Label: "x", Server: s}, "tfrcflow: flow \"x\": both hosts need a Net"},
		{Config{Label: "x", Client: c, Server: s, TxQueueLen: -1}, "give 0 (unbounded"},
		{Config{Label: "x", Client: c, Server: s, TxQueueLen: MaxTxQueueLen + 1}, "to 10000"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
	// A packet size tfrcudp refuses is an error of Open, before T0.
	f := traffictest.Must(t, New, Config{Label: "x", Client: c, Server: s, PacketSize: 70000, Stop: time.Second})
	if err := f.Open(t.Context()); err == nil || !strings.Contains(err.Error(), "at most 65507") {
		t.Errorf("Open with a 70000-byte packet: %v", err)
	}
	f.Close()
}

// Every key of a TFRC flow's result is snake_case.
func TestResultJSONIsSnakeCase(t *testing.T) {
	r := &Result{FlowInfo: traffic.FlowInfo{Label: "TFRC upload", Kind: Kind}, Dir: traffic.Down,
		Sender: netip.MustParseAddrPort("10.0.0.1:5000"), Samples: []Sample{{K: 3, X: 1e5, RTT: 40 * time.Millisecond}}}
	schematest.CheckFilled(t, r, 35, `"kind":"tfrc"`, `"direction":"down"`, `"sender":"10.0.0.1:5000"`, `"rtt_ns":40000000`, `"x_bps":100000`)
}
