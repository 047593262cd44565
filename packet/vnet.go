package packet

import (
	"encoding/binary"
	"errors"
)

// VirtioNetHdrLen is the size of struct virtio_net_hdr
// (include/uapi/linux/virtio_net.h), which a TUN device opened with
// IFF_VNET_HDR puts in front of every packet it reads and expects in front
// of every packet written to it (TUNSETVNETHDRSZ left at its default).
const VirtioNetHdrLen = 10

// Bits of VirtioNetHdr.Flags.
const (
	// VirtioNetHdrNeedsCsum (VIRTIO_NET_HDR_F_NEEDS_CSUM) says that the
	// checksum at CsumStart+CsumOffset is not complete: it holds only the
	// folded pseudo-header sum, and the ones' complement of the sum of
	// everything from CsumStart to the end of the packet must still be
	// written there (the kernel's CHECKSUM_PARTIAL).
	VirtioNetHdrNeedsCsum uint8 = 1
	// VirtioNetHdrDataValid (VIRTIO_NET_HDR_F_DATA_VALID) says that the
	// checksum has already been verified.
	VirtioNetHdrDataValid uint8 = 2
)

// Values of VirtioNetHdr.GSOType.
const (
	// GSONone marks a packet that is not a super-packet.
	GSONone uint8 = 0
	// GSOTCPv4 marks an IPv4 TCP super-packet (TSO).
	GSOTCPv4 uint8 = 1
	// GSOUDP marks UDP fragmentation offload (UFO). It is recognised so
	// that it can be named, but SplitGSO and GSOSegments reject it: a TUN
	// device hands it over only if TUN_F_UFO was set, which wanlab does not.
	GSOUDP uint8 = 3
	// GSOTCPv6 marks an IPv6 TCP super-packet (TSO).
	GSOTCPv6 uint8 = 4
	// GSOUDPL4 marks a UDP super-packet over IPv4 or IPv6 (USO): it
	// becomes one UDP datagram per segment, not IP fragments.
	GSOUDPL4 uint8 = 5
	// GSOECN is or-ed into a TCP type when the super-packet has CWR set
	// (the kernel's SKB_GSO_TCP_ECN). SplitGSO keeps CWR on the first
	// segment only whether or not the bit is set, as tcp_gso_segment does
	// for RFC 3168 ECN, and ignores the bit on UDP_L4, as
	// virtio_net_hdr_to_skb accepts it there.
	GSOECN uint8 = 0x80
)

// ErrVirtioNetHdrShort is returned when fewer than VirtioNetHdrLen bytes
// are given to decode.
var ErrVirtioNetHdrShort = errors.New("packet: virtio_net_hdr needs 10 bytes")

// VirtioNetHdr is struct virtio_net_hdr, the per-packet offload
// information of a TUN device with IFF_VNET_HDR. Offsets count from the
// start of the IP header, since a TUN device (IFF_TUN) has no link-layer
// header.
type VirtioNetHdr struct {
	// Flags holds VirtioNetHdrNeedsCsum and VirtioNetHdrDataValid.
	Flags uint8
	// GSOType is one of the GSO* types, possibly with GSOECN.
	GSOType uint8
	// HdrLen is a hint about the length of the headers. On a read the
	// kernel sets it to the length of the skb's linear part
	// (virtio_net_hdr_from_skb), which may include payload, so the
	// segmenting code here takes the header length from the transport
	// header itself and only checks that HdrLen lies within the packet.
	HdrLen uint16
	// GSOSize is the payload bytes of every segment but the last (the MSS).
	GSOSize uint16
	// CsumStart is the offset of the transport header, where the checksum
	// coverage starts.
	CsumStart uint16
	// CsumOffset is the offset of the checksum field from CsumStart: 16
	// for TCP, 6 for UDP.
	CsumOffset uint16
}

// DecodeVirtioNetHdr reads a virtio_net_hdr from the first VirtioNetHdrLen
// bytes of b. Its 16-bit fields are little-endian, as a TUN device writes
// them on a little-endian host (and on any host after TUNSETVNETLE). The
// fields are not validated: SplitGSO, GSOSegments and CompleteChecksum
// check them against the packet.
func DecodeVirtioNetHdr(b []byte) (VirtioNetHdr, error) {
	if len(b) < VirtioNetHdrLen {
		return VirtioNetHdr{}, ErrVirtioNetHdrShort
	}
	return VirtioNetHdr{
		Flags:      b[0],
		GSOType:    b[1],
		HdrLen:     binary.LittleEndian.Uint16(b[2:]),
		GSOSize:    binary.LittleEndian.Uint16(b[4:]),
		CsumStart:  binary.LittleEndian.Uint16(b[6:]),
		CsumOffset: binary.LittleEndian.Uint16(b[8:]),
	}, nil
}

// Encode writes h into the first VirtioNetHdrLen bytes of b in the byte
// order DecodeVirtioNetHdr reads. It panics if b is shorter, as
// binary.ByteOrder's Put methods do.
func (h VirtioNetHdr) Encode(b []byte) {
	_ = b[VirtioNetHdrLen-1]
	b[0] = h.Flags
	b[1] = h.GSOType
	binary.LittleEndian.PutUint16(b[2:], h.HdrLen)
	binary.LittleEndian.PutUint16(b[4:], h.GSOSize)
	binary.LittleEndian.PutUint16(b[6:], h.CsumStart)
	binary.LittleEndian.PutUint16(b[8:], h.CsumOffset)
}
