package packetsock

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Offload is a set of GSO types a Device's interface segments in its
// driver or hardware, so that a super-packet of that type written to the
// Device leaves whole.
//
// It matters because writes skip the qdisc (PACKET_QDISC_BYPASS): the
// kernel's direct transmit path (__dev_direct_xmit) drops a super-packet
// the interface would have to have segmented in software rather than send
// its segments, and the write fails with ENOBUFS. A writer must split
// super-packets of a type the interface lacks before writing them.
type Offload uint

// The GSO types, after the interface features that take them.
const (
	// TSO4 is tx-tcp-segmentation and tx-tcp-ecn-segmentation: IPv4 TCP
	// super-packets, also with CWR set.
	TSO4 Offload = 1 << iota
	// TSO6 is tx-tcp6-segmentation (and tx-tcp-ecn-segmentation).
	TSO6
	// USO is tx-udp-segmentation: UDP super-packets, IPv4 and IPv6.
	USO
)

// The features each Offload needs. TCP super-packets need the ECN
// variant too, since one with CWR set is of that GSO type; a writer cannot
// know beforehand whether a flow will set it.
var offloadFeatures = []struct {
	o     Offload
	names []string
}{
	{TSO4, []string{"tx-tcp-segmentation", "tx-tcp-ecn-segmentation"}},
	{TSO6, []string{"tx-tcp6-segmentation", "tx-tcp-ecn-segmentation"}},
	{USO, []string{"tx-udp-segmentation"}},
}

// ethtool commands and string set (include/uapi/linux/ethtool.h).
const (
	ethtoolGStrings  = 0x1b
	ethtoolGSSetInfo = 0x37
	ethtoolGFeatures = 0x3a
	ethSSFeatures    = 4
	ethGStringLen    = 32
)

// ifreqData is struct ifreq with its ifr_data member, kept a pointer so
// that the garbage collector sees it.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

// ethtool runs the ethtool command whose structure is buf on ifname,
// through socket fd.
func ethtool(fd int, ifname string, buf []byte) error {
	req := ifreqData{data: unsafe.Pointer(&buf[0])}
	copy(req.name[:], ifname)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req))); e != 0 {
		return fmt.Errorf("ethtool command %#x: %w", binary.NativeEndian.Uint32(buf), e)
	}
	return nil
}

// offloads returns the GSO types interface ifname takes whole, from its
// active features (what `ethtool -k` lists as on), read through fd.
func offloads(fd int, ifname string) (Offload, error) {
	fail := func(err error) (Offload, error) {
		return 0, fmt.Errorf("packetsock: %s: read the interface's features: %w", ifname, err)
	}
	ne := binary.NativeEndian
	// struct ethtool_sset_info with one data word.
	info := make([]byte, 24)
	ne.PutUint32(info, ethtoolGSSetInfo)
	ne.PutUint64(info[8:], 1<<ethSSFeatures)
	if err := ethtool(fd, ifname, info); err != nil {
		return fail(err)
	}
	if ne.Uint64(info[8:]) == 0 {
		return 0, nil // no feature names: nothing known to be offloaded
	}
	n := int(ne.Uint32(info[16:]))
	// struct ethtool_gstrings.
	names := make([]byte, 12+n*ethGStringLen)
	ne.PutUint32(names, ethtoolGStrings)
	ne.PutUint32(names[4:], ethSSFeatures)
	ne.PutUint32(names[8:], uint32(n))
	if err := ethtool(fd, ifname, names); err != nil {
		return fail(err)
	}
	// struct ethtool_gfeatures: blocks of available, requested, active
	// and never_changed words, 32 features each.
	blocks := (n + 31) / 32
	feat := make([]byte, 8+16*blocks)
	ne.PutUint32(feat, ethtoolGFeatures)
	ne.PutUint32(feat[4:], uint32(blocks))
	if err := ethtool(fd, ifname, feat); err != nil {
		return fail(err)
	}
	active := map[string]bool{}
	for i := range n {
		s := names[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		if j := bytes.IndexByte(s, 0); j >= 0 {
			s = s[:j]
		}
		word := ne.Uint32(feat[8+16*(i/32)+8:])
		active[string(s)] = word&(1<<(i%32)) != 0
	}
	var o Offload
	for _, f := range offloadFeatures {
		on := true
		for _, name := range f.names {
			on = on && active[name]
		}
		if on {
			o |= f.o
		}
	}
	return o, nil
}
