// Package tfrcudp runs TFRC (package tfrc) over UDP: a Sender pushes an
// application's data through a net.PacketConn towards a Receiver on
// another one, which answers with feedback.
//
// The caller makes both sockets (wanlab's lab makes them inside the hosts'
// namespaces) and hands them over: Run owns its socket from then on and
// closes it when its context ends, leaving no goroutine behind.
//
// The sender paces its packets by absolute time on a goroutine locked to
// its own thread, which sleeps in ppoll with a timer slack of 1 ns until the
// next packet's nominal send time (Go's own timers wake up to a millisecond
// late, more than the 1.2 ms between packets at 10 Mbit/s). Feedback is read
// on another goroutine and wakes the pacer through an eventfd, as does the
// application when it refills an empty transmit buffer. These socket loops
// are package internal/dgram's, shared with scalable/scalableudp; TFRC's
// part is what goes into each packet and what each feedback does.
//
// Stats on either side may be read at any time, for per-step sampling: the
// allowed rate X, the RTT, the loss event rate, the receive rate, the
// packets sent, received and lost, and the application bytes delivered.
package tfrcudp
