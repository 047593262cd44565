package traffic

import "time"

// TCPInfo is one reading of a TCP socket's state: the kernel's struct
// tcp_info (include/uapi/linux/tcp.h, filled by tcp_get_info in
// net/ipv4/tcp.c), read with getsockopt(TCP_INFO). Field names follow the
// kernel's tcpi_ names. Times the kernel gives in microseconds are
// durations here; rates are bytes per second, as the kernel gives them;
// window and segment counts are in segments. A field the running kernel
// does not fill (an older kernel's shorter struct) reads 0.
type TCPInfo struct {
	// State is the TCP state (1 established, 4 FIN_WAIT1, 8 CLOSE_WAIT,
	// ...; include/net/tcp_states.h).
	State uint8 `json:"state"`
	// CAState is the congestion avoidance state (0 open, 1 disorder,
	// 2 CWR, 3 recovery, 4 loss).
	CAState uint8 `json:"ca_state"`
	// Retransmits is the number of consecutive timeouts of the oldest
	// unacknowledged segment (icsk_retransmits); 0 when all is well.
	Retransmits uint8 `json:"retransmits"`

	// SndCwnd is the congestion window, in segments.
	SndCwnd uint32 `json:"snd_cwnd"`
	// SndSsthresh is the slow-start threshold, in segments (a huge value
	// before the first loss).
	SndSsthresh uint32 `json:"snd_ssthresh"`
	// SndMSS and RcvMSS are the segment sizes used to send and seen
	// arriving, in bytes.
	SndMSS uint32 `json:"snd_mss"`
	RcvMSS uint32 `json:"rcv_mss"`

	// SRTT is the smoothed round-trip time and RTTVar its mean deviation
	// (RFC 6298's SRTT and RTTVAR); MinRTT is the smallest RTT seen in the
	// kernel's window; RTO is the retransmission timeout; RcvRTT is the
	// receiver's estimate of the RTT, used for receive-buffer autotuning.
	SRTT   time.Duration `json:"srtt_ns"`
	RTTVar time.Duration `json:"rttvar_ns"`
	MinRTT time.Duration `json:"min_rtt_ns"`
	RTO    time.Duration `json:"rto_ns"`
	RcvRTT time.Duration `json:"rcv_rtt_ns"`

	// Unacked, Sacked, Lost and Retrans count segments in flight now:
	// sent and not acknowledged, selectively acknowledged, presumed lost,
	// and retransmitted.
	Unacked uint32 `json:"unacked"`
	Sacked  uint32 `json:"sacked"`
	Lost    uint32 `json:"lost"`
	Retrans uint32 `json:"retrans"`
	// TotalRetrans counts every segment retransmitted over the
	// connection's life.
	TotalRetrans uint32 `json:"total_retrans"`
	// Reordering is the sender's reordering tolerance (in segments), which
	// grows when it detects reordering; ReordSeen counts the reordering
	// events it detected.
	Reordering uint32 `json:"reordering"`
	ReordSeen  uint32 `json:"reord_seen"`
	// DSACKDups counts duplicate segments reported by D-SACK; RcvOOOPack
	// counts segments that arrived out of order at this end.
	DSACKDups  uint32 `json:"dsack_dups"`
	RcvOOOPack uint32 `json:"rcv_ooopack"`

	// DeliveryRate is the most recent delivery-rate sample and PacingRate
	// the current pacing rate (MaxPacingRate its cap), in bytes per
	// second.
	DeliveryRate  uint64 `json:"delivery_rate"`
	PacingRate    uint64 `json:"pacing_rate"`
	MaxPacingRate uint64 `json:"max_pacing_rate"`

	// BytesAcked counts payload bytes the peer acknowledged (the sender's
	// goodput counter); BytesReceived counts payload bytes received in
	// order (the receiver's); BytesSent counts payload bytes sent,
	// retransmissions included, and BytesRetrans the retransmitted ones.
	BytesAcked    uint64 `json:"bytes_acked"`
	BytesReceived uint64 `json:"bytes_received"`
	BytesSent     uint64 `json:"bytes_sent"`
	BytesRetrans  uint64 `json:"bytes_retrans"`
	// NotsentBytes is what the application wrote that has not been sent
	// yet.
	NotsentBytes uint32 `json:"notsent_bytes"`

	// ECN says the connection negotiated ECN at its handshake
	// (TCPI_OPT_ECN); ECNSeen that this end has received at least one
	// packet carrying an ECN codepoint, ECT or CE (TCPI_OPT_ECN_SEEN).
	ECN     bool `json:"ecn"`
	ECNSeen bool `json:"ecn_seen"`
	// Delivered counts segments delivered (acknowledged), DeliveredCE
	// those whose delivery the receiver echoed as CE-marked (ECN).
	Delivered   uint32 `json:"delivered"`
	DeliveredCE uint32 `json:"delivered_ce"`
	// DataSegsOut and DataSegsIn count segments carrying data sent and
	// received.
	DataSegsOut uint32 `json:"data_segs_out"`
	DataSegsIn  uint32 `json:"data_segs_in"`

	// RcvSpace is the receiver's current estimate of the space it needs
	// (autotuning), in bytes; RcvSsthresh is the current clamp on the
	// window it advertises; SndWnd and RcvWnd are the peer's advertised
	// window and our own, in bytes.
	RcvSpace    uint32 `json:"rcv_space"`
	RcvSsthresh uint32 `json:"rcv_ssthresh"`
	SndWnd      uint32 `json:"snd_wnd"`
	RcvWnd      uint32 `json:"rcv_wnd"`

	// BusyTime is how long the socket has had data to send; RwndLimited
	// and SndbufLimited are how much of that the receive window and the
	// send buffer held it back (tcp_chrono in net/ipv4/tcp_output.c).
	BusyTime      time.Duration `json:"busy_time_ns"`
	RwndLimited   time.Duration `json:"rwnd_limited_ns"`
	SndbufLimited time.Duration `json:"sndbuf_limited_ns"`

	// TotalRTO counts retransmission timeouts and TotalRTORecoveries the
	// recoveries they started.
	TotalRTO           uint16 `json:"total_rto"`
	TotalRTORecoveries uint16 `json:"total_rto_recoveries"`
}
