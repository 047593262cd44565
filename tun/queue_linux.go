package tun

import (
	"fmt"

	"github.com/vishvananda/netlink"

	"wanlab/netns"
)

// SetupQueue makes the kernel's queue in front of the TUN device ifname in
// ns a plain FIFO of txqlen packets that drops nothing unseen:
//
//   - txqueuelen becomes txqlen. On a TUN it is also the size of the ring
//     between the kernel and the reader (Linux resizes the ring with it);
//     that ring is the one place where the kernel drops packets the reader
//     has not taken in time, and it counts them as the device's TX drops.
//   - The root qdisc becomes pfifo, whose limit is taken from txqueuelen.
//     A TUN device never stops its transmit queue (Linux up to at least 6.18
//     drops at the ring instead), so the qdisc never holds a packet; should
//     a kernel ever push back, pfifo keeps packets in order, unlike the
//     default pfifo_fast whose three bands reorder by TOS, and it counts its
//     drops.
//
// ReadStats reads both counters (Stats.RingDrops adds them up).
func SetupQueue(ns *netns.Handle, ifname string, txqlen int) error {
	if err := ns.SetTxQueueLen(ifname, txqlen); err != nil {
		return fmt.Errorf("tun: %w", err)
	}
	l, err := ns.Netlink().LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("tun: %s: %s: %w", ns.Name(), ifname, err)
	}
	q := &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: l.Attrs().Index,
			Parent:    netlink.HANDLE_ROOT,
			Handle:    netlink.MakeHandle(1, 0),
		},
		QdiscType: "pfifo",
	}
	if err := ns.Netlink().QdiscReplace(q); err != nil {
		return fmt.Errorf("tun: %s: replace the root qdisc of %s with pfifo: %w", ns.Name(), ifname, err)
	}
	return nil
}

// Stats are the kernel's counters for the queue in front of a TUN device.
type Stats struct {
	// TxQueueLen is the device's txqueuelen: the ring size in packets.
	TxQueueLen int
	// Qdisc is the kind of the root qdisc ("pfifo" after SetupQueue).
	Qdisc string
	// TxDropped counts packets the kernel dropped because the ring to the
	// reader was full (or the device was down): TX dropped in ip -s link.
	TxDropped uint64
	// QdiscDrops and QdiscBacklog are the root qdisc's drop count and
	// current backlog in packets (tc -s qdisc).
	QdiscDrops   uint64
	QdiscBacklog uint64
	// RxDropped counts packets written to the device that the kernel's
	// receive path dropped.
	RxDropped uint64
	// TxPackets and RxPackets count packets the kernel sent to the reader
	// and received from the writer.
	TxPackets, RxPackets uint64
}

// ReadStats returns the queue counters of the interface ifname in ns.
func ReadStats(ns *netns.Handle, ifname string) (Stats, error) {
	nl := ns.Netlink()
	l, err := nl.LinkByName(ifname)
	if err != nil {
		return Stats{}, fmt.Errorf("tun: %s: %s: %w", ns.Name(), ifname, err)
	}
	a := l.Attrs()
	if a.Statistics == nil {
		return Stats{}, fmt.Errorf("tun: %s: kernel sent no statistics for %s", ns.Name(), ifname)
	}
	s := Stats{
		TxQueueLen: a.TxQLen,
		TxDropped:  a.Statistics.TxDropped,
		RxDropped:  a.Statistics.RxDropped,
		TxPackets:  a.Statistics.TxPackets,
		RxPackets:  a.Statistics.RxPackets,
	}
	qs, err := nl.QdiscList(l)
	if err != nil {
		return Stats{}, fmt.Errorf("tun: %s: qdiscs of %s: %w", ns.Name(), ifname, err)
	}
	for _, q := range qs {
		qa := q.Attrs()
		if qa.Parent != netlink.HANDLE_ROOT {
			continue
		}
		s.Qdisc = q.Type()
		if st := qa.Statistics; st != nil && st.Queue != nil {
			s.QdiscDrops = uint64(st.Queue.Drops)
			s.QdiscBacklog = uint64(st.Queue.Qlen)
		}
	}
	return s, nil
}

// RingDrops returns how many packets the kernel has dropped in front of the
// device, at the ring or in the root qdisc, since it was created. With a
// reader that keeps up it stays 0; the router reports it as the emulator's
// own loss.
func (s Stats) RingDrops() uint64 { return s.TxDropped + s.QdiscDrops }
