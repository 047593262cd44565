// Package tfrcflow is a bulk TFRC transfer as a traffic.Flow: the sending
// host pushes an application that always has data through a TFRC sender
// (package tfrc/tfrcudp, RFC 5348 with DCCP CCID-3's choices), the
// receiving host's TFRC receiver answers with feedback, and each grid
// point records both sides' state: the allowed rate X, the equation's
// rate, the receive rate X_recv, the loss event rate p, the RTT, the
// transmit buffer's occupancy and the packets and bytes sent, received
// and lost.
//
// TFRC has no connection, and the flow's lifecycle is package
// traffic/udpflow's, which the scalable sender's flow shares: the
// receiver's socket is bound before the run starts and answers whoever
// sends it data, and the sender sends to it from Start to Stop. The
// receiver keeps receiving after Stop until the end of the run, so that
// the data still in flight at Stop is counted.
//
// The transmit buffer is DCCP's net.dccp.default.tx_qlen: TxQueueLen
// packets (Linux's default was 5), or with 0 the socket's send buffer
// (tfrcudp.DefaultSendBuffer, 212992 bytes, about 147 full packets), as a
// DCCP socket whose tx_qlen was 0 was bounded by its sk_sndbuf. The
// application blocks while the buffer is full; the buffer's length decides
// how much data waits in the sender when the allowed rate falls.
//
// Rates and byte counts are those of the protocol: a TFRC packet is the
// whole UDP payload, header included (s of the throughput equation), and
// the application data is that minus the 24-byte TFRC header.
package tfrcflow
