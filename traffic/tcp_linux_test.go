package traffic

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"wanlab/internal/traffictest"
)

// checkTCP checks a finished bulk flow on an unimpaired path: every byte
// written was read, the samples cover the flow and add up to its totals,
// and both ends' TCP_INFO agree with the byte counts.
func checkTCP(t *testing.T, res *Result, r *TCPResult, cc string, tos int) {
	t.Helper()
	if r.Error != "" {
		t.Errorf("error: %s", r.Error)
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
		s    SocketInfo
	}{{"sender", r.Sender}, {"receiver", r.Receiver}} {
		if end.s.CC != cc || end.s.TOS != tos {
			t.Errorf("%s: congestion control %q, TOS %#x; want %q and %#x", end.name, end.s.CC, end.s.TOS, cc, tos)
		}
	}
	if r.Sender.Local != r.Receiver.Remote || r.Sender.Remote != r.Receiver.Local {
		t.Errorf("sender %v→%v, receiver %v→%v: not the two ends of one connection", r.Sender.Local, r.Sender.Remote, r.Receiver.Local, r.Receiver.Remote)
	}
	traffictest.CheckBulkSteps(t, res.Step, r.Start, r.ReceivedBytes, r.Samples, func(s TCPSample) traffictest.BulkPoint {
		return traffictest.BulkPoint{K: s.K, T: s.T, Sent: s.SentBytes, Received: s.ReceivedBytes}
	})
	for i, s := range r.Samples {
		if !s.Connected {
			continue
		}
		if s.Sender.SndCwnd == 0 || s.Sender.SRTT == 0 || s.Sender.SndMSS == 0 || s.Receiver.RcvSpace == 0 {
			t.Errorf("sample %d: cwnd %d srtt %v mss %d rcv_space %d", i, s.Sender.SndCwnd, s.Sender.SRTT, s.Sender.SndMSS, s.Receiver.RcvSpace)
		}
		// The kernel counts what it acknowledged and received; the
		// application has written at least that and read at most that.
		if int64(s.Sender.BytesAcked) > s.SentBytes+2 || int64(s.Receiver.BytesReceived) < s.ReceivedBytes {
			t.Errorf("sample %d: bytes_acked %d of %d written; bytes_received %d, %d read", i, s.Sender.BytesAcked, s.SentBytes, s.Receiver.BytesReceived, s.ReceivedBytes)
		}
	}
	last := r.Samples[len(r.Samples)-1]
	// At the end both kernels have counted every byte, plus the SYN
	// (counted by the connecting side) and the FIN, each one sequence
	// number.
	acked, rcvd := int64(last.Sender.BytesAcked), int64(last.Receiver.BytesReceived)
	if acked < r.SentBytes || acked > r.SentBytes+2 || rcvd < r.SentBytes || rcvd > r.SentBytes+2 {
		t.Errorf("last sample: bytes_acked %d, bytes_received %d; %d bytes were sent", acked, rcvd, r.SentBytes)
	}
	if last.Sender.SndCwnd == 0 || last.Sender.DataSegsOut == 0 || last.Receiver.DataSegsIn == 0 {
		t.Errorf("last sample: cwnd %d, data segments out %d in %d", last.Sender.SndCwnd, last.Sender.DataSegsOut, last.Receiver.DataSegsIn)
	}
	t.Logf("%s: %d bytes in %v (%.0f Mbit/s), %d samples, cwnd %d, srtt %v", r.Label, r.SentBytes, r.StoppedAt.Sub(r.ConnectedAt), float64(r.SentBytes)*8/r.StoppedAt.Sub(r.ConnectedAt).Seconds()/1e6, len(r.Samples), last.Sender.SndCwnd, last.Sender.SRTT)
}

func TestTCPBulkLoopback(t *testing.T) {
	noLeaks(t)
	var flows []Flow
	for _, addr := range []netip.Addr{lo4, lo6} {
		for _, dir := range []Direction{Up, Down} {
			c, s := loopback(addr)
			flows = append(flows, traffictest.Must(t, NewTCP, TCPConfig{Label: addr.String() + " " + dir.String(), Client: c, Server: s, Dir: dir, CC: "reno", TOS: 0x20,
				Start: 150 * time.Millisecond, Stop: 600 * time.Millisecond}))
		}
	}
	res, err := Run(context.Background(), Plan{Step: 100 * time.Millisecond, Length: time.Second, Flows: flows})
	if err != nil {
		t.Fatal(err)
	}
	for _, fr := range res.Flows {
		r := fr.(*TCPResult)
		t.Run(r.Label, func(t *testing.T) { checkTCP(t, res, r, "reno", 0x20) })
	}
}

// A flow with a byte count sends exactly that much and ends complete long
// before its Stop; the explicit buffer sizes are what the sockets got (the
// kernel doubles them, socket(7)).
func TestTCPByteCountAndBuffers(t *testing.T) {
	noLeaks(t)
	c, s := loopback(lo4)
	const n = 3<<20 + 12345
	f := traffictest.Must(t, NewTCP, TCPConfig{Label: "bytes", Client: c, Server: s, Dir: Down, Bytes: n, SendBuffer: 256 << 10, ReceiveBuffer: 512 << 10, Stop: 1500 * time.Millisecond})
	res, err := Run(context.Background(), Plan{Step: 100 * time.Millisecond, Length: 1500 * time.Millisecond, Flows: []Flow{f}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Flows[0].(*TCPResult)
	if r.SentBytes != n || r.ReceivedBytes != n || !r.Complete {
		t.Fatalf("sent %d received %d complete %v; want %d", r.SentBytes, r.ReceivedBytes, r.Complete, n)
	}
	if r.Sender.SendBuffer != 2*256<<10 || r.Receiver.ReceiveBuffer != 2*512<<10 {
		t.Errorf("sender SO_SNDBUF %d, receiver SO_RCVBUF %d; want %d and %d", r.Sender.SendBuffer, r.Receiver.ReceiveBuffer, 2*256<<10, 2*512<<10)
	}
	if r.CompletedAt.Sub(res.T0) > time.Second {
		t.Errorf("3 MB on loopback completed %v after T0", r.CompletedAt.Sub(res.T0))
	}
	// Sampling ends once the flow has: its last sample is the first grid
	// point after completion.
	last := r.Samples[len(r.Samples)-1]
	if last.T < r.CompletedAt || last.T.Sub(r.CompletedAt) > 2*res.Step+50*time.Millisecond {
		t.Errorf("last sample %v after T0, completion %v", last.T.Sub(res.T0), r.CompletedAt.Sub(res.T0))
	}
	checkTCP(t, res, r, r.Sender.CC, 0)
}
