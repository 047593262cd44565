// Package tun opens TUN devices inside network namespaces and moves packets
// through them in batches: the router's window onto the kernels of the
// emulated hosts.
//
// Two implementations share the Device interface so that the router can
// compare them. Offload uses wireguard-go's TUN with IFF_VNET_HDR and TSO
// (and USO where the kernel has it): the kernel hands over TCP and UDP
// super-packets of up to 64 KiB, Read splits them into MTU-sized packets,
// and Write coalesces consecutive segments of a flow back into super-packets
// (GRO), so a whole batch costs a few system calls. Raw is a plain
// /dev/net/tun with IFF_NO_PI: one packet per read or write system call.
//
// Open also sizes the device's transmit ring and replaces its qdisc so that
// the kernel's side of the TUN neither reorders nor silently drops; see
// SetupQueue and Stats.
package tun

import (
	"errors"

	wgtun "golang.zx2c4.com/wireguard/tun"
)

// ErrTooManySegments is returned by the offload device's Read when a
// super-packet has more segments than the caller gave buffers for.
var ErrTooManySegments = wgtun.ErrTooManySegments

// ErrMalformed is wrapped by the error of a Read that took a packet from
// the kernel but could not hand it over: the offload device's segmentation
// (wireguard-go's) refuses a virtio-net header that does not fit its
// packet, such as a super-packet whose IP version is neither 4 nor 6. The
// packet is dropped; the device stays usable and the next Read goes on.
// Such packets never come from a host's IP stack, only from a raw socket
// on the device.
var ErrMalformed = errors.New("tun: malformed packet dropped")

// errOffset is returned by Write for an offset below MinOffset.
var errOffset = errors.New("tun: Write needs an offset of at least MinOffset bytes")

// Device is one TUN device. Read and Write may be called concurrently with
// each other (one reader, one writer), and Close unblocks both.
type Device interface {
	// Read waits for the kernel to send at least one packet through the
	// device and stores up to len(bufs) packets, the i-th at bufs[i][offset:]
	// with its length in sizes[i]. It returns the number of packets stored.
	// len(sizes) must be at least len(bufs), len(bufs) should be BatchSize()
	// and every bufs[i][offset:] must hold an MTU-sized packet: a
	// super-packet with more segments than len(bufs) loses the rest and
	// yields ErrTooManySegments along with the packets that fit. A packet
	// the device cannot take apart yields an error wrapping ErrMalformed
	// and no packets. After Close it returns an error wrapping
	// os.ErrClosed.
	Read(bufs [][]byte, sizes []int, offset int) (int, error)

	// Write hands the packets bufs[i][offset:] to the kernel, as if they had
	// arrived on the device. offset must be at least MinOffset. Write may
	// rewrite the buffers and the slice headers in bufs (the offload device
	// coalesces packets in place), so the caller must treat them as consumed.
	// It returns len(bufs) when every packet was accepted; otherwise an error
	// and the number of packets known to be accepted (the raw device knows
	// exactly; the offload device, whose coalesced writes hide which packet
	// failed, reports 0).
	Write(bufs [][]byte, offset int) (int, error)

	// BatchSize is the most packets one Read returns and the batch size
	// Write handles best. It does not change.
	BatchSize() int

	// Name returns the interface name.
	Name() string

	// Close removes the device (TUN devices are not persistent) and
	// releases its file descriptor.
	Close() error
}

// MinOffset is the smallest offset Write accepts: the room, in front of each
// packet, for the virtio-net header that the offload device prepends.
const MinOffset = 10

// MaxCoalesced is the largest super-packet the offload device's Write
// builds. A write buffer whose capacity beyond offset is smaller than this
// limits how many segments can be coalesced into it; it is never an error.
const MaxCoalesced = 65535

// Kind selects the Device implementation.
type Kind int

const (
	// Offload is wireguard-go's TUN with virtio-net headers, TSO/USO,
	// segmentation on Read and coalescing on Write.
	Offload Kind = iota
	// Raw is a plain TUN device: one packet per system call.
	Raw
	// VNet is a TUN with virtio-net headers and TSO/USO whose packets stay
	// whole, super-packets included; see VNetDevice.
	VNet
)

// String returns "offload", "raw" or "vnet".
func (k Kind) String() string {
	switch k {
	case Offload:
		return "offload"
	case Raw:
		return "raw"
	case VNet:
		return "vnet"
	}
	return "Kind(?)"
}

// Defaults for Options' zero fields.
const (
	DefaultMTU = 1500
	// DefaultTxQueueLen is the transmit ring size Open gives a device: the
	// packets the kernel holds for a reader that falls behind. Packets
	// waiting there are invisible to the router (their arrival time is
	// when it reads them), so the ring is kept as small as the router's
	// bursts allow, and falling behind shows as counted drops instead of
	// hidden delay. Measured on a 2-CPU virtual machine through the
	// router (bench/routerbench -txqlen, 3 s of iperf3 each): TCP through
	// an empty path, a constant netem delay, a jittered netem that splits
	// super-packets, and TUNs without virtio-net headers dropped nothing
	// at 1024, while 256 dropped the ACK bursts of the split and offload
	// cases (546 and 28 ACKs) and 64 dropped data on the empty path. A
	// loop starved of CPU under a UDP flood (TestStarvedLoopShowsItself)
	// let ping RTTs reach 150-450 ms with a ring of 10000 and no drop
	// counted anywhere; with 1024 the ring dropped tens of thousands of
	// datagrams, counted, and RTTs were those of the loop's own stalls.
	DefaultTxQueueLen = 1024
)

// Options configure Open. Zero fields take the defaults.
type Options struct {
	Kind Kind
	// MTU is the device MTU in bytes (DefaultMTU).
	MTU int
	// TxQueueLen is the number of packets the kernel can hold for the
	// reader before it drops (DefaultTxQueueLen): the ring in front of
	// the reader.
	TxQueueLen int
}

func (o Options) withDefaults() Options {
	if o.MTU == 0 {
		o.MTU = DefaultMTU
	}
	if o.TxQueueLen == 0 {
		o.TxQueueLen = DefaultTxQueueLen
	}
	return o
}
