package tfrcudp

import (
	"fmt"
	"net"
	"time"

	"wanlab/tfrc"
)

const (
	// DefaultTxQueueLen is Linux DCCP's default transmit buffer in
	// packets (net.dccp.default.tx_qlen).
	DefaultTxQueueLen = tfrc.DefaultTxQueueLen
	// DefaultSendBuffer bounds the application data an unbounded transmit
	// buffer holds, as the socket's send buffer (net.core.wmem_default,
	// 212992 bytes) bounded a DCCP socket whose tx_qlen was 0.
	DefaultSendBuffer = 212992
	ipv4UDPHeaders    = 28
	ipv6UDPHeaders    = 48
	mtu               = 1500
)

// Config configures a Sender.
type Config struct {
	// PacketSize is the UDP payload of a data packet in bytes, TFRC header
	// included: s of the throughput equation. 0 means the largest that
	// fits a 1500-byte MTU: 1472 to an IPv4 peer, 1452 to an IPv6 one.
	PacketSize int
	// TxQueueLen is the transmit buffer in packets, as Linux DCCP's
	// net.dccp.default.tx_qlen: Write blocks while it is full. 0 means
	// unbounded, as tx_qlen = 0 did, which leaves SendBuffer as the only
	// bound; Linux's default was DefaultTxQueueLen.
	TxQueueLen int
	// SendBuffer bounds the application bytes waiting in the transmit
	// buffer when TxQueueLen is 0. 0 means DefaultSendBuffer.
	SendBuffer int
	// TimerGranularity is t_gran of RFC 5348 §4.6 (0: 1 ms).
	TimerGranularity time.Duration
}

// resolve fills in the defaults for a peer at addr and checks cfg. It
// returns the packet size and the transmit buffer's capacity in packets.
func (c Config) resolve(addr net.Addr) (size, capacity int, err error) {
	size = c.PacketSize
	if size == 0 {
		size = mtu - ipv4UDPHeaders
		if u, ok := addr.(*net.UDPAddr); ok && u.IP.To4() == nil {
			size = mtu - ipv6UDPHeaders
		}
	}
	if size > 65507 {
		return 0, 0, fmt.Errorf("tfrcudp: packet size %d does not fit a UDP datagram: use at most 65507 (or the path MTU minus 28 for IPv4, 48 for IPv6)", size)
	}
	if c.SendBuffer < 0 {
		return 0, 0, fmt.Errorf("tfrcudp: send buffer %d is negative: use 0 for the default of %d bytes", c.SendBuffer, DefaultSendBuffer)
	}
	capacity = c.TxQueueLen
	if capacity == 0 {
		buf := c.SendBuffer
		if buf == 0 {
			buf = DefaultSendBuffer
		}
		capacity = max(1, buf/max(1, size-tfrc.DataHeaderLen))
	}
	return size, capacity, nil
}
