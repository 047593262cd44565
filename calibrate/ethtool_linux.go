package calibrate

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"wanlab/netns"
)

// The legacy ethtool commands that switch one offload (linux/ethtool.h);
// every driver with ndo_fix_features, veth included, still takes them.
const (
	ethtoolSTSO = 0x1f // TCP segmentation offload
	ethtoolSGSO = 0x24 // generic segmentation offload
	ethtoolSGRO = 0x2c // generic receive offload
)

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ifreqData is struct ifreq (40 bytes) with its ifr_data member, kept a
// pointer so that the garbage collector sees it.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

// OffloadsOff turns TSO, GSO and GRO off on dev inside ns, as
// `ethtool -K dev tso off gso off gro off` does, so that the device hands
// its qdiscs and its peer one skb per wire segment: how the kernel's side
// of a comparison is built, so that its qdiscs decide per segment as
// wanlab's do.
func OffloadsOff(ns *netns.Handle, dev string) error {
	return netns.Do(ns, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("calibrate: ethtool socket in %s: %w", ns.Name(), err)
		}
		defer unix.Close(fd)
		for _, cmd := range []uint32{ethtoolSTSO, ethtoolSGSO, ethtoolSGRO} {
			v := ethtoolValue{cmd: cmd}
			req := ifreqData{data: unsafe.Pointer(&v)}
			copy(req.name[:], dev)
			if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req))); e != 0 {
				return fmt.Errorf("calibrate: %s in %s: ethtool command %#x: %w", dev, ns.Name(), cmd, e)
			}
		}
		return nil
	})
}
