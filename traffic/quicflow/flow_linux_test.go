package quicflow

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"wanlab/clock"
	"wanlab/internal/traffictest"
	"wanlab/traffic"
)

// checkFlow checks a finished bulk flow on an unimpaired path: every byte
// written was read, the samples cover the flow and add up to its totals,
// and both ends' recovery state is present and agrees with the byte
// counts.
func checkFlow(t *testing.T, res *traffic.Result, r *Result, tos int) {
	t.Helper()
	if r.Error != "" {
		t.Errorf("error: %s", r.Error)
	}
	if r.Kind != Kind || r.CC != CongestionControl || r.StreamWindow != DefaultStreamWindow || r.ConnectionWindow != DefaultConnectionWindow {
		t.Errorf("kind %q, cc %q, windows %d and %d", r.Kind, r.CC, r.StreamWindow, r.ConnectionWindow)
	}
	if !r.Connected || !r.Complete || r.SentBytes == 0 || r.ReceivedBytes != r.SentBytes {
		t.Fatalf("connected %v complete %v: sent %d, received %d", r.Connected, r.Complete, r.SentBytes, r.ReceivedBytes)
	}
	t0 := res.T0
	if r.ConnectedAt < t0.Add(r.Start) || r.StoppedAt < r.ConnectedAt || r.CompletedAt < r.StoppedAt {
		t.Errorf("connected %v, stopped %v, completed %v after T0, for a flow from %v", r.ConnectedAt.Sub(t0), r.StoppedAt.Sub(t0), r.CompletedAt.Sub(t0), r.Start)
	}
	for _, end := range []struct {
		name string
		e    EndInfo
	}{{"sender", r.Sender}, {"receiver", r.Receiver}} {
		if end.e.TOS != tos || end.e.ALPN != ALPN || end.e.Version != "v1" || end.e.SendBuffer == 0 || end.e.ReceiveBuffer == 0 {
			t.Errorf("%s: %+v; want TOS %#x, ALPN %q, QUIC v1", end.name, end.e, tos, ALPN)
		}
	}
	if r.Sender.Local != r.Receiver.Remote || r.Sender.Remote != r.Receiver.Local {
		t.Errorf("sender %v→%v, receiver %v→%v: not the two ends of one connection", r.Sender.Local, r.Sender.Remote, r.Receiver.Local, r.Receiver.Remote)
	}
	traffictest.CheckBulkSteps(t, res.Step, r.Start, r.ReceivedBytes, r.Samples, func(s Sample) traffictest.BulkPoint {
		return traffictest.BulkPoint{K: s.K, T: s.T, Sent: s.SentBytes, Received: s.ReceivedBytes}
	})
	inFlight, sending := false, 0
	for i, s := range r.Samples {
		if !s.Connected {
			continue
		}
		checkEndStats(t, i, "sender", s.Sender)
		checkEndStats(t, i, "receiver", s.Receiver)
		// Stream bytes travel in packets: each end's packet bytes cover
		// what the receiver has read.
		if s.Receiver.BytesReceived < uint64(s.ReceivedBytes) || s.Sender.BytesSent < uint64(s.ReceivedBytes) {
			t.Errorf("sample %d: %d bytes read, but the sender sent %d and the receiver received %d bytes of packets", i, s.ReceivedBytes, s.Sender.BytesSent, s.Receiver.BytesReceived)
		}
		if s.Sender.CongestionState == "" {
			t.Errorf("sample %d: the sender has no congestion state", i)
		}
		inFlight = inFlight || s.Sender.BytesInFlight > 0
		if s.T < r.StoppedAt {
			sending++
		}
	}
	// A sender sampled while it sent more than once was seen with data in
	// flight at least once.
	if sending > 1 && !inFlight {
		t.Errorf("none of %d samples taken while the sender sent saw bytes in flight", sending)
	}
	last := r.Samples[len(r.Samples)-1]
	if last.Sender.BytesSent < uint64(r.SentBytes) || last.Sender.PacketsSent < uint64(r.SentBytes)/1452 {
		t.Errorf("last sample: the sender sent %d packets of %d bytes for %d bytes of stream", last.Sender.PacketsSent, last.Sender.BytesSent, r.SentBytes)
	}
	took := r.CompletedAt.Sub(r.ConnectedAt)
	t.Logf("%s: %d bytes in %v (%.0f Mbit/s), %d samples; sender: cwnd %d, srtt %v, min_rtt %v, lost %d (spurious %d), retransmitted %d bytes, max UDP payload %d, GSO %v",
		r.Label, r.SentBytes, took, float64(r.SentBytes)*8/took.Seconds()/1e6, len(r.Samples),
		last.Sender.Cwnd, last.Sender.SRTT, last.Sender.MinRTT, last.Sender.PacketsLost, last.Sender.SpuriousLosses, last.Sender.BytesRetrans, last.Sender.MaxUDPPayload, r.Sender.GSO)
}

// checkEndStats checks that one end's recovery state is plausible: RTTs
// measured, a congestion window within quic-go's limits.
func checkEndStats(t *testing.T, i int, end string, s EndStats) {
	t.Helper()
	if s.MinRTT <= 0 || s.LatestRTT < s.MinRTT || s.SRTT < s.MinRTT || s.SRTT > 2*time.Second {
		t.Errorf("sample %d: %s: srtt %v, min_rtt %v, latest_rtt %v", i, end, s.SRTT, s.MinRTT, s.LatestRTT)
	}
	if s.Cwnd < 2*1200 || s.Cwnd > 10000*1452 {
		t.Errorf("sample %d: %s: cwnd %d bytes, outside 2 and 10000 datagrams", i, end, s.Cwnd)
	}
	// A loss shrinks the window at once (quic-go's NewReno to 0.7 of it)
	// while what was sent under the old one is still in flight, so the
	// bound is the window before that: at most twice this one.
	if s.PacketsSent == 0 || s.PacketsReceived == 0 || s.BytesInFlight < 0 || uint64(s.BytesInFlight) > 2*s.Cwnd+1452 {
		t.Errorf("sample %d: %s: %d packets sent, %d received, %d bytes in flight with cwnd %d", i, end, s.PacketsSent, s.PacketsReceived, s.BytesInFlight, s.Cwnd)
	}
}

func TestLoopback(t *testing.T) {
	noLeaks(t)
	var flows []traffic.Flow
	for _, addr := range []netip.Addr{lo4, lo6} {
		for _, dir := range []traffic.Direction{traffic.Up, traffic.Down} {
			c, s := loopback(addr)
			flows = append(flows, traffictest.Must(t, New, Config{Label: addr.String() + " " + dir.String(), Client: c, Server: s, Dir: dir,
				Start: 150 * time.Millisecond, Stop: 700 * time.Millisecond}))
		}
	}
	res, err := traffic.Run(context.Background(), traffic.Plan{Step: 100 * time.Millisecond, Length: 1500 * time.Millisecond, Flows: flows})
	if err != nil {
		t.Fatal(err)
	}
	for _, fr := range res.Flows {
		r := fr.(*Result)
		t.Run(r.Label, func(t *testing.T) { checkFlow(t, res, r, 0) })
	}
}

// A flow with a byte count sends exactly that much and ends complete long
// before its Stop; sampling ends with it.
func TestByteCount(t *testing.T) {
	noLeaks(t)
	c, s := loopback(lo4)
	const n = 3<<20 + 12345
	f := traffictest.Must(t, New, Config{Label: "bytes", Client: c, Server: s, Dir: traffic.Down, Bytes: n, Stop: 2 * time.Second})
	res, err := traffic.Run(context.Background(), traffic.Plan{Step: 100 * time.Millisecond, Length: 2 * time.Second, Flows: []traffic.Flow{f}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Flows[0].(*Result)
	if r.SentBytes != n || r.ReceivedBytes != n || !r.Complete {
		t.Fatalf("sent %d received %d complete %v; want %d", r.SentBytes, r.ReceivedBytes, r.Complete, n)
	}
	if r.CompletedAt.Sub(res.T0) > 1500*time.Millisecond {
		t.Errorf("3 MB on loopback completed %v after T0", r.CompletedAt.Sub(res.T0))
	}
	// Its last sample is the first grid point after completion.
	last := r.Samples[len(r.Samples)-1]
	if last.T < r.CompletedAt || last.T.Sub(r.CompletedAt) > 2*res.Step+50*time.Millisecond {
		t.Errorf("last sample %v after T0, completion %v", last.T.Sub(res.T0), r.CompletedAt.Sub(res.T0))
	}
	checkFlow(t, res, r, 0)
}

// Cancelling the context ends a run with QUIC flows at once: Run returns
// promptly with the samples taken until then, and no goroutine and no
// socket is left, whether the flow was sending, receiving or had not yet
// dialed.
func TestCancelEndsFlowsPromptly(t *testing.T) {
	noLeaks(t)
	c4, s4 := loopback(lo4)
	c6, s6 := loopback(lo6)
	flows := []traffic.Flow{
		traffictest.Must(t, New, Config{Label: "up", Client: c4, Server: s4, Stop: 20 * time.Second}),
		traffictest.Must(t, New, Config{Label: "down", Client: c6, Server: s6, Dir: traffic.Down, TOS: 0x20, Stop: 20 * time.Second}),
		// Starts after the cancellation: its client never dials.
		traffictest.Must(t, New, Config{Label: "late", Client: c4, Server: s4, Start: 10 * time.Second, Stop: 20 * time.Second}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled time.Time
	res, err := traffic.Run(ctx, traffic.Plan{Step: 50 * time.Millisecond, Length: 20 * time.Second, Flows: flows,
		OnStep: func(k int, _ clock.Time) {
			if k == 6 {
				cancel()
				cancelled = time.Now()
			}
		}})
	took := time.Since(cancelled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if took > time.Second {
		t.Errorf("Run returned %v after the cancellation", took)
	}
	if res == nil || !res.Partial || len(res.Flows) != len(flows) {
		t.Fatalf("result %+v", res)
	}
	for _, fr := range res.Flows {
		r := fr.(*Result)
		if r.Error != "" {
			t.Errorf("%s: error %s: a cancellation is not the flow's failure", r.Label, r.Error)
		}
		if r.Label == "late" {
			if r.Connected || len(r.Samples) != 0 {
				t.Errorf("%s: connected %v, %d samples", r.Label, r.Connected, len(r.Samples))
			}
			continue
		}
		if !r.Connected || len(r.Samples) != 7 || r.Samples[6].ReceivedBytes == 0 || r.Complete {
			t.Errorf("%s: connected %v, %d samples, complete %v", r.Label, r.Connected, len(r.Samples), r.Complete)
		}
	}
}

// Bad options are refused by New, saying what to change.
func TestConfigErrors(t *testing.T) {
	c, s := loopback(lo4)
	_, s6 := loopback(lo6)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Server: s, Stop: time.Second}, "both hosts need a Net"},
		{Config{Client: c, Server: traffic.Host{Net: traffic.Local{}}, Stop: time.Second}, "set Server.Addr"},
		{Config{Client: c, Server: s6, Stop: time.Second}, "use two IPv4 or two IPv6 addresses"},
		{Config{Client: c, Server: s, Dir: 7, Stop: time.Second}, "use traffic.Up or traffic.Down"},
		{Config{Client: c, Server: s, TOS: 0x100, Stop: time.Second}, "give the DSCP shifted left by two"},
		{Config{Client: c, Server: s, TOS: 0xb9, Stop: time.Second}, "use 0xb8"},
		{Config{Client: c, Server: s, Bytes: -1, Stop: time.Second}, "use 0 to send until Stop"},
		{Config{Client: c, Server: s, StreamWindow: 1 << 62, Stop: time.Second}, "2^62-1"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
}

// A flow opens once; a second run of it is refused before anything
// starts.
func TestRunsOnce(t *testing.T) {
	noLeaks(t)
	c, s := loopback(lo4)
	f := traffictest.Must(t, New, Config{Label: "once", Client: c, Server: s, Bytes: 1 << 20, Stop: 500 * time.Millisecond})
	plan := traffic.Plan{Step: 100 * time.Millisecond, Length: 500 * time.Millisecond, Flows: []traffic.Flow{f}}
	if _, err := traffic.Run(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	if _, err := traffic.Run(context.Background(), plan); err == nil || !strings.Contains(err.Error(), "runs once") {
		t.Errorf("a second run of the same flow: err %v", err)
	}
}

// A client host without an address binds the unspecified address and
// lets the kernel choose the source; the server still takes its
// connection, by its port, and the flow completes.
func TestUnboundClient(t *testing.T) {
	noLeaks(t)
	_, s := loopback(lo6)
	c := traffic.Host{Net: traffic.Local{}}
	f := traffictest.Must(t, New, Config{Label: "unbound", Client: c, Server: s, Bytes: 1 << 20, Stop: 500 * time.Millisecond})
	res, err := traffic.Run(context.Background(), traffic.Plan{Step: 100 * time.Millisecond, Length: 500 * time.Millisecond, Flows: []traffic.Flow{f}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Flows[0].(*Result)
	if r.Error != "" || !r.Complete || r.ReceivedBytes != 1<<20 {
		t.Fatalf("error %q, complete %v, %d bytes received", r.Error, r.Complete, r.ReceivedBytes)
	}
	if !r.Sender.Local.Addr().IsUnspecified() || r.Sender.Local.Port() != r.Receiver.Remote.Port() || r.Receiver.Remote.Addr() != lo6 {
		t.Errorf("sender bound to %v, seen by the receiver as %v", r.Sender.Local, r.Receiver.Remote)
	}
}

// The server takes one connection, from the flow's client socket: a
// stranger's handshake, even with the right certificate and ALPN, is
// refused (CONNECTION_REFUSED) before it begins.
func TestStrangerRefused(t *testing.T) {
	noLeaks(t)
	c, s := loopback(lo4)
	f := traffictest.Must(t, New, Config{Label: "guarded", Client: c, Server: s, Stop: time.Second})
	if err := f.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	tr := &quic.Transport{Conn: pc}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	conn, err := tr.Dial(ctx, f.t.ln.Addr(), f.t.clientTLS, &quic.Config{})
	var terr *quic.TransportError
	if !errors.As(err, &terr) || terr.ErrorCode != quic.ConnectionRefused {
		if conn != nil {
			conn.CloseWithError(0, "")
		}
		t.Fatalf("a stranger's dial: %v, want CONNECTION_REFUSED", err)
	}
}
