// Package scalable is wanlab's built-in L4S sender: a window-based
// scalable congestion controller over UDP with DCTCP's response to ECN
// marks, as two steppable state machines on a virtual clock, a Sender and
// a Receiver. It is not DCTCP (no TCP, no kernel): it is the response of
// RFC 8257 (DCTCP) and RFC 9331 §4.3 (what an L4S sender must do) carried
// by wanlab's own packets, for paths where the kernel cannot send ECT(1)
// with DCTCP or TCP Prague.
//
// Like the qdisc and tfrc packages, nothing here does I/O, reads the wall
// clock or starts goroutines. Every method that depends on time takes
// now; each side says, through Deadline, when it next needs to be called.
// Package scalable/scalableudp carries the packets over UDP sockets,
// setting ECT(1) on the data and reading each packet's ECN field at the
// receiver.
//
// Where each part comes from:
//
//	RFC 9331 §4.3  ECT(1) on every data packet      (the socket's job: scalableudp)
//	RFC 9331 §4.3  a scalable response to marks     Sender.OnAck: cwnd ← cwnd·(1−α/2) once per RTT
//	RFC 8257 §3.3  α ← (1−g)·α + g·F per window       Sender.OnAck, g = 1/16, F from the counters
//	RFC 8257 §3.3  F by bytes                        CE bytes / bytes delivered in the window
//	RFC 8257 §3.5  loss as classic TCP               Sender.OnAck: halve, at most once per RTT
//	RFC 5681       slow start, +1 segment per RTT    Sender.OnAck
//	RFC 9768       running CE counters in every ACK  Ack, Receiver.OnData: a lost ACK loses no marks
//	RFC 6298       SRTT, RTTVAR, RTO                 Sender.OnAck, Sender.Poll
//	RFC 9331 §4.3  paced sending at about cwnd/SRTT  Sender.Poll, Sender.Deadline
//
// The window is in packets of PacketSize bytes (the whole UDP payload,
// header included). The receiver acknowledges every packet (or every
// second one) with the highest sequence number received, the echo of
// that packet's timestamp, and running totals of the packets and bytes
// received and of those that arrived CE-marked, ECT(1) and not-ECT. The
// sender takes losses as the gaps below the highest sequence acknowledged
// (highest+1 − packets received), so a packet reordered behind a later
// one counts as lost until it arrives; wanlab's paths keep a flow's
// packets in order.
//
// Unlike Linux's DCTCP, the window keeps its additive increase in the RTT
// after a reduction for marks (Linux holds it there, in its CWR state): the
// response is then the one DualPI2's coupling assumes (W = 2/p, RFC 9332
// §2.1), and beside CUBIC through a DualPI2 on this machine it took 3.4 of
// 10 Mbit/s against CUBIC's 6.1, where the held window took 2.1 against
// 7.5. A loss still holds the window for its RTT, as classic TCP's
// recovery does.
//
// Not implemented: RTT-independence (RFC 9331 §4.3 does not require it;
// TCP Prague's RTT-independence is not here), TCP Prague's fractional
// window below two packets, and a handshake: the first RTT sample comes
// from the first acknowledgement.
package scalable
