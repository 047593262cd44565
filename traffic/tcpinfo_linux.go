package traffic

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// tcpi_options' ECN bits (include/uapi/linux/tcp.h).
const (
	tcpiOptECN     = 8  // TCPI_OPT_ECN: ECN was negotiated at the handshake
	tcpiOptECNSeen = 16 // TCPI_OPT_ECN_SEEN: a packet with ECT or CE arrived
)

// readTCPInfo reads fd's TCP_INFO.
func readTCPInfo(fd int) (TCPInfo, error) {
	k, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return TCPInfo{}, err
	}
	us := func(v uint32) time.Duration { return time.Duration(v) * time.Microsecond }
	us64 := func(v uint64) time.Duration { return time.Duration(v) * time.Microsecond }
	return TCPInfo{
		State:              k.State,
		CAState:            k.Ca_state,
		Retransmits:        k.Retransmits,
		SndCwnd:            k.Snd_cwnd,
		SndSsthresh:        k.Snd_ssthresh,
		SndMSS:             k.Snd_mss,
		RcvMSS:             k.Rcv_mss,
		SRTT:               us(k.Rtt),
		RTTVar:             us(k.Rttvar),
		MinRTT:             us(k.Min_rtt),
		RTO:                us(k.Rto),
		RcvRTT:             us(k.Rcv_rtt),
		Unacked:            k.Unacked,
		Sacked:             k.Sacked,
		Lost:               k.Lost,
		Retrans:            k.Retrans,
		TotalRetrans:       k.Total_retrans,
		Reordering:         k.Reordering,
		ReordSeen:          k.Reord_seen,
		DSACKDups:          k.Dsack_dups,
		RcvOOOPack:         k.Rcv_ooopack,
		DeliveryRate:       k.Delivery_rate,
		PacingRate:         k.Pacing_rate,
		MaxPacingRate:      k.Max_pacing_rate,
		BytesAcked:         k.Bytes_acked,
		BytesReceived:      k.Bytes_received,
		BytesSent:          k.Bytes_sent,
		BytesRetrans:       k.Bytes_retrans,
		NotsentBytes:       k.Notsent_bytes,
		ECN:                k.Options&tcpiOptECN != 0,
		ECNSeen:            k.Options&tcpiOptECNSeen != 0,
		Delivered:          k.Delivered,
		DeliveredCE:        k.Delivered_ce,
		DataSegsOut:        k.Data_segs_out,
		DataSegsIn:         k.Data_segs_in,
		RcvSpace:           k.Rcv_space,
		RcvSsthresh:        k.Rcv_ssthresh,
		SndWnd:             k.Snd_wnd,
		RcvWnd:             k.Rcv_wnd,
		BusyTime:           us64(k.Busy_time),
		RwndLimited:        us64(k.Rwnd_limited),
		SndbufLimited:      us64(k.Sndbuf_limited),
		TotalRTO:           k.Total_rto,
		TotalRTORecoveries: k.Total_rto_recoveries,
	}, nil
}

// tcpInfoOf reads the TCP_INFO of connection c.
func tcpInfoOf(c net.Conn) (TCPInfo, error) {
	rc, err := rawConn(c)
	if err != nil {
		return TCPInfo{}, err
	}
	var info TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) { info, ierr = readTCPInfo(int(fd)) }); err != nil {
		return TCPInfo{}, err
	}
	return info, ierr
}
