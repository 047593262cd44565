package packetsock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"wanlab/internal/ppoll"
	"wanlab/netns"
	"wanlab/packet"
)

// VNetHdrLen is the size of the virtio-net header (packet.VirtioNetHdr)
// in front of every packet TryRead stores and WriteOne takes.
const VNetHdrLen = packet.VirtioNetHdrLen

// MaxPacket is the largest packet (what follows the Ethernet header) a
// reader's buffer must hold beyond its offset: a GSO super-packet of
// 64 KiB, the kernel's GSO_LEGACY_MAX_SIZE. A frame whose packet does not
// fit the buffer given is not handed over (Stats.Skipped).
const MaxPacket = 65536

// MaxMACLen is the longest link-layer header a Frame holds: Ethernet with
// two VLAN tags. Frames with more tags cross as frames of the third tag's
// type, their packet beginning with it.
const MaxMACLen = 22

// minMACLen is an Ethernet header without a tag.
const minMACLen = 14

// DefaultFrames is the receive ring's size in frames when Options.Frames
// is 0: the packets the kernel holds for a reader that falls behind, as
// many as a TUN device's ring holds (tun.DefaultTxQueueLen), which was
// measured to take the router's bursts without drops. Each frame holds a
// super-packet, so the ring takes 1 MiB of kernel memory per 15 frames:
// 69 MiB at the default.
const DefaultFrames = 1024

// Ring geometry. A block must be a power-of-two number of pages, since the
// kernel allocates each with one high-order allocation (alloc_pg_vec), and
// it holds framesPerBlock whole frames. A frame holds the tpacket2 header,
// the sockaddr_ll and padding up to the frame's data (80 bytes), the
// virtio-net header, up to 18 bytes of Ethernet header and a 64 KiB
// packet, with room to spare for a larger one (which is then skipped, not
// cut: see take).
const (
	blockSize      = 1 << 20
	framesPerBlock = 15
	frameSize      = blockSize / framesPerBlock &^ (unix.TPACKET_ALIGNMENT - 1)
)

// Options configure Open.
type Options struct {
	// Frames is the receive ring's size in frames (DefaultFrames when 0);
	// it is rounded up to a multiple of 15, the frames of one 1 MiB block.
	Frames int
}

// Frame describes one frame TryRead stored.
type Frame struct {
	// Len is the length of the packet stored at the buffer's offset:
	// what followed the Ethernet header (an IP packet, or an ARP or other
	// non-IP payload).
	Len int
	// Time is when the frame arrived, in nanoseconds since the Unix epoch
	// on CLOCK_REALTIME: the kernel's software timestamp, taken in its
	// receive path (when the interface's driver handed the frame over if
	// some socket on the machine asked for receive timestamps, otherwise
	// when the frame reached this socket's ring). The kernel stamps a
	// frame after copying it into its slot (tpacket_rcv), so frames taken
	// in on two CPUs at once can be stamped out of their order in the
	// ring, by about the time one copy takes.
	Time int64
	// MACLen is the length of the Ethernet header in MAC: 14, or 18 or 22
	// with one or two VLAN tags.
	MACLen int
	// MAC holds the Ethernet header as the frame carried it on the wire:
	// destination, source, any VLAN tags and the EtherType of the packet.
	MAC [MaxMACLen]byte
}

// Header returns the frame's Ethernet header.
func (f *Frame) Header() []byte { return f.MAC[:f.MACLen] }

// EtherType returns the type of the packet the header announces (after
// any VLAN tags): 0x0800 for IPv4, 0x86dd for IPv6, 0x0806 for ARP.
func (f *Frame) EtherType() uint16 {
	return binary.BigEndian.Uint16(f.MAC[f.MACLen-2:])
}

// Stats are the kernel's and the device's counts of the frames offered to
// the device, from its opening on.
type Stats struct {
	// Frames is the ring's size in frames.
	Frames int
	// Packets counts the frames the kernel offered the ring, Drops those
	// it dropped because the ring was full (or because their offloads
	// cannot be described by a virtio-net header): the kernel's
	// PACKET_STATISTICS tp_packets and tp_drops, summed over reads.
	Packets, Drops uint64
	// Skipped counts frames the device took from the ring but did not
	// hand over: cut short by the kernel (longer than a ring slot), longer
	// than the reader's buffer, or with an Ethernet header it cannot take
	// apart.
	Skipped uint64
}

// Device is an AF_PACKET socket bound to one Ethernet interface. One
// goroutine may read (TryRead, Wait) and one write (WriteOne) at a time;
// Stats and Close may be called from any goroutine.
type Device struct {
	fd      int
	closeEv int // eventfd written by Close so that a Wait returns
	name    string
	ifindex int
	ring    []byte // the mmap-ed receive ring
	frames  int
	next    int // the next frame to read; the reader's
	offload Offload

	// whdr and wiov are WriteOne's: the virtio-net and Ethernet headers of
	// the frame being written and the two pieces of the write.
	whdr [VNetHdrLen + MaxMACLen]byte
	wiov [2]unix.Iovec

	// mu is held shared by every operation on fd and the ring and
	// exclusively by Close, so that neither is released (and the
	// descriptor's number reused) while a system call or a read uses it.
	mu     sync.RWMutex
	closed atomic.Bool

	statsMu sync.Mutex // guards total
	total   Stats
	skipped atomic.Uint64
}

var (
	errClosed = fmt.Errorf("packetsock: %w", os.ErrClosed)
	errOffset = errors.New("packetsock: TryRead and WriteOne need an offset of at least VNetHdrLen bytes")
)

// Open opens a packet socket on the Ethernet interface ifname in ns (nil:
// the calling process's own namespace, as `wanlab bridge` takes the
// machine's NICs), on a thread inside ns, with its receive ring,
// virtio-net headers, transmit past the qdisc and the interface in
// promiscuous mode for as long as the socket is open. The interface must
// exist; Open does not bring it up.
func Open(ns *netns.Handle, ifname string, o Options) (*Device, error) {
	if err := netns.CheckIfName(ifname); err != nil {
		return nil, fmt.Errorf("packetsock: %w", err)
	}
	if o.Frames < 0 {
		return nil, fmt.Errorf("packetsock: %s: ring of %d frames: give a positive number, or 0 for %d", ifname, o.Frames, DefaultFrames)
	}
	if o.Frames == 0 {
		o.Frames = DefaultFrames
	}
	// Threads outside netns.Do are in the process's own namespace, and so
	// are the sockets of netlink's package functions made on them.
	where, linkByName, do := "this namespace", netlink.LinkByName, func(f func() error) error { return f() }
	if ns != nil {
		where, linkByName, do = ns.Name(), ns.Netlink().LinkByName, func(f func() error) error { return netns.Do(ns, f) }
	}
	l, err := linkByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("packetsock: %s: no interface %s: %w", where, ifname, err)
	}
	if enc := l.Attrs().EncapType; enc != "ether" {
		return nil, fmt.Errorf("packetsock: %s: %s is not an Ethernet interface (link type %q): use a TUN device (package tun) for interfaces without an Ethernet header", where, ifname, enc)
	}
	var d *Device
	err = do(func() (err error) {
		d, err = open(ifname, l.Attrs().Index, o.Frames)
		return err
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// open creates the socket; the caller runs it on a thread inside the
// interface's namespace.
func open(ifname string, ifindex, frames int) (_ *Device, err error) {
	// Protocol 0: nothing is received before bind names the interface.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("packetsock: socket: %w", err)
	}
	d := &Device{fd: fd, closeEv: -1, name: ifname, ifindex: ifindex}
	defer func() {
		if err != nil {
			if d.ring != nil {
				unix.Munmap(d.ring)
			}
			if d.closeEv >= 0 {
				unix.Close(d.closeEv)
			}
			unix.Close(fd)
		}
	}()
	set := func(what string, opt, v int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, opt, v); err != nil {
			return fmt.Errorf("packetsock: %s: %s: %w", ifname, what, err)
		}
		return nil
	}
	// The version and the virtio-net header must be set before the ring.
	if err := set("PACKET_VERSION TPACKET_V2", unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, err
	}
	if err := set("PACKET_VNET_HDR", unix.PACKET_VNET_HDR, 1); err != nil {
		return nil, err
	}
	blocks := (frames + framesPerBlock - 1) / framesPerBlock
	d.frames = blocks * framesPerBlock
	req := unix.TpacketReq{Block_size: blockSize, Block_nr: uint32(blocks), Frame_size: frameSize, Frame_nr: uint32(d.frames)}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, fmt.Errorf("packetsock: %s: receive ring of %d frames (%d MiB): %w", ifname, d.frames, blocks, err)
	}
	if d.ring, err = unix.Mmap(fd, 0, blocks*blockSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return nil, fmt.Errorf("packetsock: %s: map the receive ring: %w", ifname, err)
	}
	if err := set("PACKET_IGNORE_OUTGOING", unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return nil, err
	}
	if err := set("PACKET_QDISC_BYPASS", unix.PACKET_QDISC_BYPASS, 1); err != nil {
		return nil, err
	}
	// The frames written wait in the receiving side's backlog, charged to
	// this socket; a TUN device writes without such a bound (its sndbuf
	// is INT_MAX), and so does this socket.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 1<<30); err != nil {
		return nil, fmt.Errorf("packetsock: %s: SO_SNDBUFFORCE: %w", ifname, err)
	}
	if d.offload, err = offloads(fd, ifname); err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		return nil, fmt.Errorf("packetsock: bind to %s: %w", ifname, err)
	}
	mreq := unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return nil, fmt.Errorf("packetsock: %s: promiscuous membership: %w", ifname, err)
	}
	if d.closeEv, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("packetsock: eventfd: %w", err)
	}
	d.total.Frames = d.frames
	return d, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Name returns the interface's name.
func (d *Device) Name() string { return d.name }

// Frames returns the receive ring's size in frames.
func (d *Device) Frames() int { return d.frames }

// TryRead takes up to len(bufs) frames the kernel has put in the ring,
// without waiting, and returns how many it stored: the i-th frame's packet
// (what follows its Ethernet header) at bufs[i][offset:], its virtio-net
// header at bufs[i][offset-VNetHdrLen:offset] with offsets counted from
// the packet's start, and the rest in frames[i]. It returns 0 and no error
// when the ring is empty. offset must be at least VNetHdrLen and
// len(frames) at least len(bufs). It does not allocate.
func (d *Device) TryRead(bufs [][]byte, frames []Frame, offset int) (int, error) {
	if offset < VNetHdrLen {
		return 0, errOffset
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed.Load() {
		return 0, errClosed
	}
	n := 0
	for n < len(bufs) && n < len(frames) {
		// Frames do not cross blocks, and a block's frames may leave a
		// few bytes at its end.
		at := d.next/framesPerBlock*blockSize + d.next%framesPerBlock*frameSize
		f := d.ring[at : at+frameSize]
		h := (*unix.Tpacket2Hdr)(unsafe.Pointer(&f[0]))
		status := atomic.LoadUint32(&h.Status)
		if status&unix.TP_STATUS_USER == 0 {
			break
		}
		ok := take(f, h, status, bufs[n], &frames[n], offset)
		// The slot goes back to the kernel once copied out.
		atomic.StoreUint32(&h.Status, unix.TP_STATUS_KERNEL)
		if d.next++; d.next == d.frames {
			d.next = 0
		}
		if !ok {
			d.skipped.Add(1)
			continue
		}
		n++
	}
	return n, nil
}

// take copies the frame in ring slot f, whose header is h, into buf and fr,
// and reports whether it could.
func take(f []byte, h *unix.Tpacket2Hdr, status uint32, buf []byte, fr *Frame, offset int) bool {
	mac, net, snap := int(h.Mac), int(h.Net), int(h.Snaplen)
	if snap < int(h.Len) || mac < VNetHdrLen || net < mac || mac+snap > len(f) || net > mac+snap {
		return false
	}
	l2 := net - mac
	if l2 < minMACLen || l2 > MaxMACLen {
		return false
	}
	data := f[mac : mac+snap]
	m := 0
	if status&unix.TP_STATUS_VLAN_VALID != 0 {
		// The driver or the receive path took the outer tag off: put it
		// back where it was.
		if l2+4 > MaxMACLen {
			return false
		}
		tpid := uint16(unix.ETH_P_8021Q)
		if status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
			tpid = h.Vlan_tpid
		}
		m = copy(fr.MAC[:], data[:12])
		binary.BigEndian.PutUint16(fr.MAC[m:], tpid)
		binary.BigEndian.PutUint16(fr.MAC[m+2:], h.Vlan_tci)
		m += 4
		m += copy(fr.MAC[m:], data[12:l2])
	} else {
		m = copy(fr.MAC[:], data[:l2])
	}
	pkt := data[l2:]
	// Tags left in the frame (a second one, or one no part of the kernel
	// took off) belong to the header too.
	for isVLAN(binary.BigEndian.Uint16(fr.MAC[m-2:])) && m+4 <= MaxMACLen && len(pkt) >= 4 {
		m += copy(fr.MAC[m:], pkt[:4])
		pkt = pkt[4:]
	}
	if offset+len(pkt) > len(buf) {
		return false
	}
	// The kernel's offsets count from the frame's start in the ring; the
	// packet's from its own.
	skip := uint16(len(data) - len(pkt))
	hdr := buf[offset-VNetHdrLen : offset]
	copy(hdr, f[mac-VNetHdrLen:mac])
	if hdr[0]&packet.VirtioNetHdrNeedsCsum != 0 {
		cs := binary.LittleEndian.Uint16(hdr[6:])
		if cs < skip {
			return false
		}
		binary.LittleEndian.PutUint16(hdr[6:], cs-skip)
	}
	hl := binary.LittleEndian.Uint16(hdr[2:])
	binary.LittleEndian.PutUint16(hdr[2:], hl-min(hl, skip))
	copy(buf[offset:], pkt)
	fr.Len = len(pkt)
	fr.MACLen = m
	fr.Time = int64(h.Sec)*1e9 + int64(h.Nsec)
	return true
}

// isVLAN reports whether t is the EtherType of a VLAN tag (802.1Q or
// 802.1ad).
func isVLAN(t uint16) bool { return t == unix.ETH_P_8021Q || t == unix.ETH_P_8021AD }

// Wait waits until the ring has a frame to read, the file descriptor wake
// (an eventfd or a pipe; -1 for none) is readable, or timeout passes; a
// negative timeout waits for ever. It reports whether the ring has a frame
// and whether wake is readable; it reads neither. A signal interrupts it
// early with neither set, so callers wait in a loop. Once Close has begun
// it returns an error wrapping os.ErrClosed, also when Close ends a Wait
// in progress; an interface that went down or away ends it with an error
// saying so.
func (d *Device) Wait(wake int, timeout time.Duration) (readable, woken bool, err error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed.Load() {
		return false, false, errClosed
	}
	revents, closing, woken, err := ppoll.Device(d.fd, d.closeEv, wake, timeout)
	if err != nil {
		return false, false, fmt.Errorf("packetsock: poll %s: %w", d.name, err)
	}
	// closed too: a signal can end the poll after Close began but before
	// its eventfd write was seen.
	if closing || d.closed.Load() {
		return false, false, errClosed
	}
	if revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
		// The kernel reports an interface that went down or was removed
		// as the socket's error (packet_notifier); reading it clears it.
		e, _ := unix.GetsockoptInt(d.fd, unix.SOL_SOCKET, unix.SO_ERROR)
		return false, false, fmt.Errorf("packetsock: %s: %w (poll revents %#x)", d.name, syscall.Errno(e), revents)
	}
	return revents&unix.POLLIN != 0, woken, nil
}

// WriteOne sends one frame out of the interface: the Ethernet header mac,
// then the packet b[offset:], with its virtio-net header at
// b[offset-VNetHdrLen:offset], offsets counted from the packet's start as
// TryRead gives them (a super-packet read from one Device can be written
// to another as it is). It returns the errno of a refused write, 0 when
// the kernel took the frame; it never waits (a full path shows as ENOBUFS
// or EAGAIN) and does not allocate. mac must be 14 to MaxMACLen bytes.
func (d *Device) WriteOne(mac, b []byte, offset int) syscall.Errno {
	m := len(mac)
	if offset < VNetHdrLen || offset > len(b) || m < minMACLen || m > MaxMACLen {
		return unix.EINVAL
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed.Load() {
		return unix.EBADF
	}
	hdr := d.whdr[:VNetHdrLen+m]
	copy(hdr, b[offset-VNetHdrLen:offset])
	// The kernel counts the header's offsets from the frame's start.
	if hdr[0]&packet.VirtioNetHdrNeedsCsum != 0 {
		binary.LittleEndian.PutUint16(hdr[6:], binary.LittleEndian.Uint16(hdr[6:])+uint16(m))
	}
	if hl := binary.LittleEndian.Uint16(hdr[2:]); hl != 0 {
		binary.LittleEndian.PutUint16(hdr[2:], hl+uint16(m))
	}
	copy(hdr[VNetHdrLen:], mac)
	d.wiov[0].Base, d.wiov[0].Len = &hdr[0], uint64(len(hdr))
	iovs := 1
	if p := b[offset:]; len(p) > 0 {
		d.wiov[1].Base, d.wiov[1].Len = &p[0], uint64(len(p))
		iovs = 2
	}
	var e syscall.Errno
	for {
		_, _, e = unix.Syscall(unix.SYS_WRITEV, uintptr(d.fd), uintptr(unsafe.Pointer(&d.wiov[0])), uintptr(iovs))
		if e != unix.EINTR {
			break
		}
	}
	d.wiov[1].Base = nil // keep no caller's buffer alive
	return e
}

// Offloads returns the GSO types frames written to the device may carry
// (see Offload).
func (d *Device) Offloads() Offload { return d.offload }

// Stats returns the counts of the frames offered to the device since it
// was opened; after Close, those it had when it was closed.
func (d *Device) Stats() (Stats, error) {
	d.mu.RLock()
	var err error
	if !d.closed.Load() {
		err = d.collect()
	}
	d.mu.RUnlock()
	d.statsMu.Lock()
	defer d.statsMu.Unlock()
	s := d.total
	s.Skipped = d.skipped.Load()
	return s, err
}

// collect adds the kernel's counts since the last collect to d.total (the
// kernel clears them on each read); the caller holds d.mu.
func (d *Device) collect() error {
	st, err := unix.GetsockoptTpacketStats(d.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return fmt.Errorf("packetsock: %s: PACKET_STATISTICS: %w", d.name, err)
	}
	d.statsMu.Lock()
	d.total.Packets += uint64(st.Packets)
	d.total.Drops += uint64(st.Drops)
	d.statsMu.Unlock()
	return nil
}

// Close closes the socket, which ends its promiscuous membership, and
// releases the ring; a Wait in progress returns.
func (d *Device) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	one := [8]byte{1}
	unix.Write(d.closeEv, one[:])
	d.mu.Lock()
	defer d.mu.Unlock()
	d.collect()
	// The mapping holds the socket open as long as it exists: unmap it
	// first, so that closing the descriptor releases the socket.
	err := unix.Munmap(d.ring)
	d.ring = nil
	if cerr := unix.Close(d.fd); err == nil {
		err = cerr
	}
	unix.Close(d.closeEv)
	if err != nil {
		return fmt.Errorf("packetsock: close %s: %w", d.name, err)
	}
	return nil
}
