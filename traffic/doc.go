// Package traffic generates wanlab's own traffic and measures it: bulk TCP
// flows, UDP latency probes with one-way delays, ICMP echo probes and
// constant-rate UDP floods, all from one process and all sampled on one
// exact time grid. It needs no external tool (netperf, irtt, fping,
// iperf).
//
// The package knows nothing of namespaces, the router or result files. A
// flow is given Hosts, each with a Net that makes its sockets (Local for
// this process's namespace; the lab supplies one that makes them inside a
// host's namespace), and Run returns samples.
//
// # A run
//
// A Plan holds the grid's step, the run's length and the flows, each with
// its start and stop as offsets from T0 (Flent runs its probes over lead,
// load and tail and its load flows only during the load). Run opens every
// flow first, so that a bad option is an error before anything starts,
// then reads T0 and samples every flow at T0 + k·Step for k = 0 …
// ⌊Length/Step⌋ on an absolute schedule; Plan.OnStep sees the same points.
// Cancelling the context ends the run at once with the samples taken so
// far, marked partial. No goroutine and no socket outlives Run.
//
// All times in results are readings of the run's clock (clock.Real, the
// process's monotonic clock), in nanoseconds since that clock's zero;
// Result.T0 is the grid's origin and Result.Start its wall-clock time.
// Because every end of every flow reads the same clock, one-way delays
// are true one-way delays, with no clock synchronisation to trust.
//
// # The flows
//
// TCP: the client connects, one side writes as fast as its socket takes
// and the other reads and discards; per flow congestion control, TOS and
// socket buffers. Each grid point records the bytes written and read and
// both ends' TCP_INFO. The TCP_INFO fields are the kernel's tcp_info
// (include/uapi/linux/tcp.h).
//
// UDP probes, like irtt: one probe per interval carrying its number and
// send time; the server (in this process too) echoes it with its own
// receive and send times, giving the RTT and both one-way delays, and
// records which probes it received, so that every lost probe has a
// direction. The loss timeout is described at LossTimeoutMin. A probe's
// (and an ICMP reply's) receive time is when the kernel received it
// (SO_TIMESTAMPNS), not when the reading goroutine woke up, which on a
// busy machine is a tenth of a millisecond later.
//
// ICMP probes, like ping -i: echo requests from a raw socket, answered by
// the target's kernel; lost requests are recorded, direction unknown.
//
// UDP flood, like iperf -u: packets of a given size at a given rate of UDP
// payload bits, paced on an absolute schedule and sent in batches with
// sendmmsg(2). The receiver counts per step and in total: rate, loss
// (charged to the step a packet was sent in), RFC 3550 jitter, RFC 4737
// reordering, duplicates and one-way delay.
//
// Another transport joins by implementing Flow and returning its own
// FlowResult (TFRC, a user's program), or, for a bulk flow of one stream,
// by implementing BulkTransport and embedding the BulkFlow that runs it,
// as TCP and QUIC do: BulkFlow starts, connects, writes, reads, samples
// and closes every bulk flow the same way.
package traffic
