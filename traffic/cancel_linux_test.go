package traffic

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/traffictest"
)

// Cancelling the context ends a run with every kind of flow at once: Run
// returns promptly with the samples taken until then, marked partial, and
// leaves no goroutine and no socket behind.
func TestCancelEndsRunPromptly(t *testing.T) {
	noLeaks(t)
	c4, s4 := loopback(lo4)
	c6, s6 := loopback(lo6)
	flows := []Flow{
		traffictest.Must(t, NewTCP, TCPConfig{Label: "tcp up", Client: c4, Server: s4, CC: "reno", Stop: 20 * time.Second}),
		traffictest.Must(t, NewTCP, TCPConfig{Label: "tcp down", Client: c6, Server: s6, Dir: Down, Stop: 20 * time.Second}),
		// Starts after the cancellation: its client never connects.
		traffictest.Must(t, NewTCP, TCPConfig{Label: "tcp late", Client: c4, Server: s4, Start: 10 * time.Second, Stop: 20 * time.Second}),
		traffictest.Must(t, NewUDPProbe, UDPProbeConfig{Label: "udp", Client: c4, Server: s4, Interval: 10 * time.Millisecond, Stop: 20 * time.Second}),
		traffictest.Must(t, NewFlood, FloodConfig{Label: "flood", Client: c6, Server: s6, Rate: 10e6, Stop: 20 * time.Second}),
	}
	if isRoot() {
		flows = append(flows, traffictest.Must(t, NewICMPProbe, ICMPProbeConfig{Label: "icmp", Client: c4, Target: lo4, Stop: 20 * time.Second}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled time.Time
	res, err := Run(ctx, Plan{Step: 50 * time.Millisecond, Length: 20 * time.Second, Flows: flows,
		OnStep: func(k int, _ clock.Time) {
			if k == 6 {
				cancel()
				cancelled = time.Now()
			}
		}})
	took := time.Since(cancelled)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if took > time.Second {
		t.Errorf("Run returned %v after the cancellation", took)
	}
	if res == nil || !res.Partial || len(res.Ticks) != 7 || res.Ticks[6].K != 6 || len(res.Flows) != len(flows) {
		t.Fatalf("result %+v", res)
	}
	for _, fr := range res.Flows {
		if e := fr.Info().Error; e != "" {
			t.Errorf("%s: error %s: a cancellation is not the flow's failure", fr.Info().Label, e)
		}
		switch r := fr.(type) {
		case *TCPResult:
			if r.Label == "tcp late" {
				if r.Connected || len(r.Samples) != 0 {
					t.Errorf("%s: connected %v, %d samples", r.Label, r.Connected, len(r.Samples))
				}
				continue
			}
			if !r.Connected || len(r.Samples) != 7 || r.Samples[6].ReceivedBytes == 0 || r.Complete {
				t.Errorf("%s: connected %v, %d samples, complete %v", r.Label, r.Connected, len(r.Samples), r.Complete)
			}
		case *ProbeResult:
			if r.Answered < 3 || len(r.Probes) == 0 {
				t.Errorf("%s: %d probes, %d answered", r.Label, len(r.Probes), r.Answered)
			}
			// Whatever was unanswered at the end is lost at the end.
			for _, p := range r.Probes {
				if p.Lost && !p.LostAtEnd {
					t.Errorf("%s: probe %d lost before the end on loopback", r.Label, p.Seq)
				}
			}
		case *FloodResult:
			if len(r.Steps) != 7 || r.Total.ReceivedPackets == 0 {
				t.Errorf("%s: %d steps, %d packets received", r.Label, len(r.Steps), r.Total.ReceivedPackets)
			}
		}
	}
}

// A congestion control the kernel lacks is refused when the flow opens,
// before the run starts, with what to do about it; nothing is left open.
func TestUnknownCongestionControl(t *testing.T) {
	noLeaks(t)
	c, s := loopback(lo4)
	ok := traffictest.Must(t, NewUDPProbe, UDPProbeConfig{Label: "udp", Client: c, Server: s, Stop: time.Second})
	bad := traffictest.Must(t, NewTCP, TCPConfig{Label: "TCP upload", Client: c, Server: s, CC: "nosuchcc", Stop: time.Second})
	res, err := Run(context.Background(), Plan{Step: 100 * time.Millisecond, Length: time.Second, Flows: []Flow{ok, bad}})
	if err == nil || res != nil {
		t.Fatalf("err %v", err)
	}
	for _, want := range []string{"flow 1 (TCP upload)", `"nosuchcc" is not available`, "tcp_available_congestion_control"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err %q does not say %q", err, want)
		}
	}
	if _, err := Run(context.Background(), Plan{Step: 100 * time.Millisecond, Length: time.Second, Flows: []Flow{ok}}); err == nil || !strings.Contains(err.Error(), "runs once") {
		t.Errorf("a second run of the same flow: err %v", err)
	}
}
