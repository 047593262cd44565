package router

import (
	"wanlab/netns"
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
