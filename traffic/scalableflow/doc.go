// Package scalableflow is a bulk transfer of wanlab's built-in L4S sender
// (package scalable/scalableudp: a window-based scalable congestion
// controller with DCTCP's response to CE marks, RFC 8257, over UDP, every
// data packet ECT(1) as RFC 9331 asks) as a traffic.Flow. It is not DCTCP
// or TCP Prague: the kernel's DCTCP needs a kernel that has it, and its
// packets are ECT(0) unless the kernel has the L4S patches; this sender
// is wanlab's own, so that an L4S queue (DualPI2's L queue, fq_codel's
// ce_threshold) can be driven on any kernel.
//
// Each grid point records both sides: the congestion window, α and the
// latest window's marking fraction F, the RTT estimates, the pacing rate,
// and the packets and bytes sent, received, CE-marked, per ECN codepoint,
// lost, and the window reductions for marks and for losses.
//
// Its lifecycle is package traffic/udpflow's, which TFRC's flow shares:
// it has no connection, the receiver's socket is bound before the run
// starts and answers whoever sends it data, and the sender sends to it
// from Start to Stop. The receiver keeps receiving after Stop until the
// end of the run, so that the data still in flight at Stop is counted.
package scalableflow
