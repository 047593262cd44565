// Package scalableudp runs wanlab's built-in scalable sender (package
// scalable) over UDP: a Sender sends a bulk application's data, every
// packet marked ECT(1), to a Receiver, which reads each packet's ECN field
// and acknowledges with running counters of the CE marks.
//
// ECT(1) is set with IP_TOS (IPV6_TCLASS over IPv6): Linux lets a UDP
// socket set the ECN bits that way (it clears them only on TCP sockets,
// whose ECN the stack owns), and NewSender reads the option back to check
// that they held. The receiver asks for each datagram's TOS byte with
// IP_RECVTOS (IPV6_RECVTCLASS) and reads it from the control message.
// The ACKs carry the DSCP alone, Not-ECT.
//
// The caller makes both sockets (wanlab's lab makes them inside the hosts'
// namespaces) and hands them over: Run owns its socket from then on and
// closes it when its context ends, leaving no goroutine behind. Both must
// be *net.UDPConn: the ECN field is read and set through the socket.
//
// The socket loops are those of package tfrc/tfrcudp (package
// internal/dgram has them for both): the sender paces its packets on a
// goroutine locked to its own thread, sleeping in ppoll with a timer
// slack of 1 ns until the next packet's send time; ACKs are read on
// another goroutine and wake the pacer through an eventfd. No allocation
// is made per packet on either side.
package scalableudp
