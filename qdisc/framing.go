package qdisc

import "fmt"

// Framing is what the emulated device counts in a packet's length. The
// kernel's qdiscs take a packet's length from skb->len (qdisc_pkt_len),
// which on an Ethernet device includes the 14-byte MAC header (but not the
// FCS, preamble or inter-frame gap) and on a TUN device is the IP length
// alone. Rates, byte limits, quantum, memory accounting and tc's
// overhead/linklayer arithmetic all start from that length, so the framing
// shifts every throughput figure by about 1 % for full-size packets.
type Framing uint8

const (
	// FramingEthernet counts the 14-byte Ethernet header in every packet,
	// as Linux does on an Ethernet interface (veth, a NIC). It is the zero
	// value and wanlab's default: the paths people compare with are
	// Ethernet.
	FramingEthernet Framing = iota
	// FramingIP counts the IP packet alone, as Linux does on a TUN device.
	FramingIP
)

// EthernetHeaderLen is the hard header length of an Ethernet device.
const EthernetHeaderLen = 14

// HeaderLen returns the bytes the framing adds to each packet's IP length:
// the device's hard_header_len.
func (f Framing) HeaderLen() int {
	if f == FramingIP {
		return 0
	}
	return EthernetHeaderLen
}

// String returns the framing's name as the command line takes it.
func (f Framing) String() string {
	if f == FramingIP {
		return "ip"
	}
	return "ethernet"
}

// MarshalText implements encoding.TextMarshaler ("ethernet" or "ip").
func (f Framing) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (f *Framing) UnmarshalText(b []byte) error {
	v, err := ParseFraming(string(b))
	if err == nil {
		*f = v
	}
	return err
}

// ParseFraming reads "ethernet" or "ip".
func ParseFraming(s string) (Framing, error) {
	switch s {
	case "ethernet", "eth":
		return FramingEthernet, nil
	case "ip":
		return FramingIP, nil
	}
	return 0, fmt.Errorf("framing %q is unknown: use ethernet (the kernel's view of an Ethernet interface, 14 header bytes per packet) or ip (a TUN device's view, IP bytes only)", s)
}
