// Package quicflow is a bulk QUIC transfer as a traffic.Flow: the client
// host dials the server host, one side writes a unidirectional stream as
// fast as the stack takes it and the other reads and discards, and each
// grid point records the bytes written and read and both ends' recovery
// state (RTT, congestion window, bytes in flight, losses).
//
// # The stack
//
// The QUIC stack is quic-go (github.com/quic-go/quic-go, v0.65.0): the
// well-kept Go implementation of QUIC, pure Go and so built into wanlab
// with no C library or external program, and an implementation of RFC 9000
// (transport), RFC 9001 (TLS) and RFC 9002 (loss detection and congestion
// control) with path MTU discovery (RFC 8899), ECN, pacing and UDP GSO on
// Linux. Each end runs its own quic.Transport over a UDP socket its host's
// traffic.Net made, so the packets cross the lab's path like any other
// program's. The handshake is TLS 1.3 with ALPN "wanlab-bulk" and a
// self-signed ECDSA P-256 certificate generated in memory for each flow,
// which the client trusts and verifies and nothing else does.
//
// # Congestion control
//
// quic-go has one congestion controller, NewReno (as
// catalog.QUICCongestionControl records); docs/quic.md describes what it
// does, read from the quic-go release go.mod names, with its figures that
// differ from RFC 9002's.
//
// # Flow control
//
// The receiver offers StreamWindow bytes of stream credit and
// ConnectionWindow bytes of connection credit from the start, as both the
// initial and the maximum window, so that flow control never holds the
// sender back and the window does not wait for quic-go's auto-tuning: the
// 32 MiB defaults are a bandwidth-delay product of 1 Gbit/s at 268 ms, and
// more than twice the 10000-packet congestion window quic-go caps itself
// at (about 14 MB), so that the window also covers the data sent while a
// lost packet is retransmitted. The receiver reads as fast as data
// arrives, so the credit costs memory only while a hole waits for its
// retransmission.
//
// # TOS and ECN
//
// The TOS option sets the DSCP of both ends' packets. quic-go sets the ECN
// field itself, on each packet through a control message (ECT(0) while it
// tests the path for ECN and once the path proves capable, RFC 9000
// §13.4.2), and the kernel takes that control message's byte as the whole
// TOS byte: the flow writes its DSCP into that byte, so that every packet
// carries the DSCP and quic-go's ECN bits together. The ECN bits of TOS
// must therefore be 0.
//
// # What is measured
//
// SentBytes and ReceivedBytes are application bytes of the stream, counted
// by the two ends: goodput. The RTT figures and the congestion window come
// from quic-go's ConnectionStats; bytes in flight, the congestion state,
// lost and retransmitted data and CE marks come from a qlog recorder
// (qlogwriter.Trace) that quic-go feeds with its recovery events. The
// sender's figures are those of the congestion controller at work; the
// receiver sends almost nothing but acknowledgements, and its figures are
// given for completeness.
package quicflow
