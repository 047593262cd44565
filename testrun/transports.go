package testrun

import (
	"wanlab/results"
	"wanlab/traffic/quicflow"
	"wanlab/traffic/scalableflow"
	"wanlab/traffic/tfrcflow"
)

// This file maps the results of wanlab's other transports (TFRC, QUIC, the
// built-in scalable sender) to
// series, as document.go maps TCP's.

// stateField is one figure of a flow's state at each sample, as a
// per-flow series.
type stateField[S any] struct {
	key, unit string
	get       func(*S) float64
	// skip, if set, says a sample has no value for the field.
	skip func(*S) bool
}

// stateSeries makes one series per field from samples at grid points ks.
func stateSeries[S any](b *docBuilder, label string, fields []stateField[S], ks []int, samples []S) []results.Series {
	out := make([]results.Series, len(fields))
	for i, f := range fields {
		out[i] = b.series(label+"::"+f.key, f.unit)
		for j := range samples {
			if f.skip != nil && f.skip(&samples[j]) {
				continue
			}
			out[i].Samples = append(out[i].Samples, results.Sample{T: b.gridTime(ks[j]), V: f.get(&samples[j])})
		}
	}
	return out
}

// mbit is a rate in bytes per second in Mbit/s.
func mbit(bytesPerSecond float64) float64 { return bytesPerSecond * 8 / 1e6 }

// tfrcFields are a TFRC flow's state series: RFC 5348's variables, rates
// in Mbit/s of TFRC packets (headers included, as X counts them).
var tfrcFields = []stateField[tfrcflow.Sample]{
	{key: "tfrc_x", unit: "Mbits/s", get: func(s *tfrcflow.Sample) float64 { return mbit(s.X) }},
	{key: "tfrc_x_calc", unit: "Mbits/s", get: func(s *tfrcflow.Sample) float64 { return mbit(s.XCalc) },
		skip: func(s *tfrcflow.Sample) bool { return s.XCalc == 0 }},
	{key: "tfrc_x_recv", unit: "Mbits/s", get: func(s *tfrcflow.Sample) float64 { return mbit(s.XRecv) }},
	{key: "tfrc_p", unit: "%", get: func(s *tfrcflow.Sample) float64 { return 100 * s.P }},
	{key: "tfrc_rtt", unit: "ms", get: func(s *tfrcflow.Sample) float64 { return ms(s.RTT) },
		skip: func(s *tfrcflow.Sample) bool { return s.RTT == 0 }},
	{key: "tfrc_queued", unit: "packets", get: func(s *tfrcflow.Sample) float64 { return float64(s.Queued) }},
	{key: "tfrc_lost", unit: "packets", get: func(s *tfrcflow.Sample) float64 { return float64(s.Lost) }},
	{key: "tfrc_loss_events", unit: "events", get: func(s *tfrcflow.Sample) float64 { return float64(s.LossEvents) }},
	{key: "tfrc_no_feedback", unit: "events", get: func(s *tfrcflow.Sample) float64 { return float64(s.NoFeedback) }},
}

// tfrc makes a TFRC flow's throughput series (the application data the
// receiver got per step) and its own series: the application data sent
// per step (sent_rate), the TFRC packets' bytes sent and received per
// step (tfrc_send_rate, tfrc_recv_rate: the unit of X), and the protocol's
// state at each grid point (tfrcFields).
func (b *docBuilder) tfrc(r *tfrcflow.Result) (results.Series, []results.Series) {
	main := b.series(r.Label, "Mbits/s")
	sent := b.series(r.Label+"::sent_rate", "Mbits/s")
	sendRate := b.series(r.Label+"::tfrc_send_rate", "Mbits/s")
	recvRate := b.series(r.Label+"::tfrc_recv_rate", "Mbits/s")
	n := len(r.Samples)
	ks := make([]int, n)
	got, wrote, out, in := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, s := range r.Samples {
		ks[i] = s.K
		got[i], wrote[i] = int64(s.ReceivedPayload), int64(s.SentPayload)
		out[i], in[i] = int64(s.SentBytes), int64(s.ReceivedBytes)
	}
	k0 := b.startK(r.Start)
	b.rateSteps(&main, k0, ks, got)
	b.rateSteps(&sent, k0, ks, wrote)
	b.rateSteps(&sendRate, k0, ks, out)
	b.rateSteps(&recvRate, k0, ks, in)
	own := append([]results.Series{sent, sendRate, recvRate}, stateSeries(b, r.Label, tfrcFields, ks, r.Samples)...)
	return main, own
}

// quicFields are a QUIC flow's sender's recovery state (RFC 9002's
// variables as quic-go keeps them) and the receiver's RTT.
var quicFields = []stateField[quicflow.Sample]{
	{key: "quic_rtt", unit: "ms", get: func(s *quicflow.Sample) float64 { return ms(s.Sender.SRTT) }},
	{key: "quic_rtt_var", unit: "ms", get: func(s *quicflow.Sample) float64 { return ms(s.Sender.RTTVar) }},
	{key: "quic_min_rtt", unit: "ms", get: func(s *quicflow.Sample) float64 { return ms(s.Sender.MinRTT) }},
	{key: "quic_cwnd", unit: "bytes", get: func(s *quicflow.Sample) float64 { return float64(s.Sender.Cwnd) }},
	{key: "quic_bytes_in_flight", unit: "bytes", get: func(s *quicflow.Sample) float64 { return float64(s.Sender.BytesInFlight) }},
	{key: "quic_packets_lost", unit: "packets", get: func(s *quicflow.Sample) float64 { return float64(s.Sender.PacketsLost) }},
	{key: "quic_bytes_retrans", unit: "bytes", get: func(s *quicflow.Sample) float64 { return float64(s.Sender.BytesRetrans) }},
	{key: "quic_ce_received", unit: "packets", get: func(s *quicflow.Sample) float64 { return float64(s.Receiver.CEReceived) }},
	{key: "receiver_quic_rtt", unit: "ms", get: func(s *quicflow.Sample) float64 { return ms(s.Receiver.SRTT) }},
}

// quic makes a QUIC flow's throughput series (the stream bytes the
// receiver read per step) and its own series: the bytes the sender wrote
// per step (sent_rate) and both ends' recovery state while connected
// (quicFields).
func (b *docBuilder) quic(r *quicflow.Result) (results.Series, []results.Series) {
	main := b.series(r.Label, "Mbits/s")
	sent := b.series(r.Label+"::sent_rate", "Mbits/s")
	n := len(r.Samples)
	ks := make([]int, n)
	rcvd, wrote := make([]int64, n), make([]int64, n)
	var connected []quicflow.Sample
	var connectedK []int
	for i, s := range r.Samples {
		ks[i], rcvd[i], wrote[i] = s.K, s.ReceivedBytes, s.SentBytes
		if s.Connected {
			connected = append(connected, s)
			connectedK = append(connectedK, s.K)
		}
	}
	k0 := b.startK(r.Start)
	b.rateSteps(&main, k0, ks, rcvd)
	b.rateSteps(&sent, k0, ks, wrote)
	return main, append([]results.Series{sent}, stateSeries(b, r.Label, quicFields, connectedK, connected)...)
}

// scalableFields are the built-in scalable sender's state series: its
// congestion window, DCTCP's α and the latest window's F (RFC 8257, in %
// as TFRC's p is), its
// RTT estimates and pacing rate, and the running counts of marks, losses
// and window reductions.
var scalableFields = []stateField[scalableflow.Sample]{
	{key: "l4s_cwnd", unit: "packets", get: func(s *scalableflow.Sample) float64 { return s.Cwnd }},
	{key: "l4s_alpha", unit: "%", get: func(s *scalableflow.Sample) float64 { return 100 * s.Alpha }},
	{key: "l4s_f", unit: "%", get: func(s *scalableflow.Sample) float64 { return 100 * s.F }},
	{key: "l4s_srtt", unit: "ms", get: func(s *scalableflow.Sample) float64 { return ms(s.SRTT) },
		skip: func(s *scalableflow.Sample) bool { return s.SRTT == 0 }},
	{key: "l4s_min_rtt", unit: "ms", get: func(s *scalableflow.Sample) float64 { return ms(s.MinRTT) },
		skip: func(s *scalableflow.Sample) bool { return s.MinRTT == 0 }},
	{key: "l4s_pacing_rate", unit: "Mbits/s", get: func(s *scalableflow.Sample) float64 { return mbit(s.PacingRate) }},
	{key: "l4s_inflight", unit: "packets", get: func(s *scalableflow.Sample) float64 { return float64(s.Inflight) }},
	{key: "l4s_ce_packets", unit: "packets", get: func(s *scalableflow.Sample) float64 { return float64(s.CEPackets) }},
	{key: "l4s_ect1_packets", unit: "packets", get: func(s *scalableflow.Sample) float64 { return float64(s.ECT1Packets) }},
	{key: "l4s_not_ect_packets", unit: "packets", get: func(s *scalableflow.Sample) float64 { return float64(s.NotECTPackets + s.ECT0Packets) }},
	{key: "l4s_lost", unit: "packets", get: func(s *scalableflow.Sample) float64 { return float64(s.Lost) }},
	{key: "l4s_ce_reductions", unit: "events", get: func(s *scalableflow.Sample) float64 { return float64(s.CEReductions) }},
	{key: "l4s_loss_reductions", unit: "events", get: func(s *scalableflow.Sample) float64 { return float64(s.LossReductions) }},
	{key: "l4s_timeouts", unit: "events", get: func(s *scalableflow.Sample) float64 { return float64(s.Timeouts) }},
}

// scalable makes the built-in scalable sender's throughput series (the
// application data the receiver got per step) and its own series: the
// application data sent per step (sent_rate), the packets' bytes (header
// included) received per step (l4s_recv_rate), the percentage of the
// packets received per step that arrived CE (l4s_ce_fraction), and its
// state at each grid point (scalableFields).
func (b *docBuilder) scalable(r *scalableflow.Result) (results.Series, []results.Series) {
	main := b.series(r.Label, "Mbits/s")
	sent := b.series(r.Label+"::sent_rate", "Mbits/s")
	recvRate := b.series(r.Label+"::l4s_recv_rate", "Mbits/s")
	ceFrac := b.series(r.Label+"::l4s_ce_fraction", "%")
	n := len(r.Samples)
	ks := make([]int, n)
	got, wrote, in := make([]int64, n), make([]int64, n), make([]int64, n)
	var prev scalableflow.Sample
	for i, s := range r.Samples {
		ks[i] = s.K
		got[i], wrote[i], in[i] = int64(s.ReceivedPayload), int64(s.SentPayload), int64(s.ReceivedBytes)
		if d := s.ReceivedPackets - prev.ReceivedPackets; i > 0 && d > 0 {
			ceFrac.Samples = append(ceFrac.Samples, results.Sample{T: b.gridTime(s.K), V: 100 * float64(s.CEPackets-prev.CEPackets) / float64(d)})
		}
		prev = s
	}
	k0 := b.startK(r.Start)
	b.rateSteps(&main, k0, ks, got)
	b.rateSteps(&sent, k0, ks, wrote)
	b.rateSteps(&recvRate, k0, ks, in)
	own := append([]results.Series{sent, recvRate, ceFrac}, stateSeries(b, r.Label, scalableFields, ks, r.Samples)...)
	return main, own
}
