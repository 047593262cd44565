package router

import (
	"wanlab/netns"
	"wanlab/packetsock"
	"wanlab/tun"
)

// TUNRing returns a reader for Config.UpRing or DownRing: the ring size and
// drops of the TUN device ifname in ns (tun.ReadStats).
func TUNRing(ns *netns.Handle, ifname string) func() (RingCounters, error) {
	return func() (RingCounters, error) {
		s, err := tun.ReadStats(ns, ifname)
		return RingCounters{Size: s.TxQueueLen, Drops: s.RingDrops()}, err
	}
}

// PacketRing returns a reader for Config.UpRing or DownRing: the receive
// ring of the packet socket dev, its size in frames and the frames lost in
// front of the router: those the kernel dropped for want of room and those
// the device skipped (packetsock.Stats).
func PacketRing(dev *packetsock.Device) func() (RingCounters, error) {
	return func() (RingCounters, error) {
		s, err := dev.Stats()
		return RingCounters{Size: s.Frames, Drops: s.Drops + s.Skipped}, err
	}
}
