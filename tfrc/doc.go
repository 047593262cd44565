// Package tfrc implements TCP-Friendly Rate Control (RFC 5348) with the
// choices of DCCP's CCID 3 (RFC 4342) where they matter, as two steppable
// state machines on a virtual clock: a Sender and a Receiver.
//
// Like the qdisc package, nothing here does I/O, reads the wall clock or
// starts goroutines. Every method that depends on time takes now; each side
// says, through Deadline, when it next needs to be called. The edge driver
// (package tfrcudp) carries the packets this package encodes over UDP; the
// tests run both sides through a simulated bottleneck on a virtual clock.
//
// Where each part of the RFCs lives:
//
//	§3.1   the throughput equation                Throughput, LossEventRateFor
//	§3.2   packet contents                        DataHeader, Feedback, Append*/Parse*
//	§4.2   sender initialisation                  NewSender
//	§4.3   sender on feedback                     Sender.OnFeedback
//	§4.4   the nofeedback timer                   Sender.Deadline, Sender.Poll
//	§4.6   scheduling of transmissions            Sender.Poll
//	§5     loss events and loss intervals         Receiver.OnData, MeanLossInterval
//	§6     receiver feedback                      Receiver.Poll
//	§6.3.1 the first loss interval                Receiver (synthesised from X_recv)
//
// Rates are in bytes per second, as in the RFC; s is the packet size in
// bytes that the equation uses, the whole TFRC packet (header and payload)
// as it leaves in one UDP datagram.
//
// Not implemented: the optional oscillation reduction of §4.5, the history
// discounting of §5.5, ECN (UDP sockets do not expose it here), and the
// CCVal window counter of RFC 4342 §8.1: data packets carry the sender's
// RTT estimate instead, as RFC 5348 §3.2.1 describes, and the receiver
// groups losses into loss events with it (§5.2).
package tfrc
