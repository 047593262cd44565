package tun

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/netns"
)

func TestOpenRejectsBadOptions(t *testing.T) {
	h := newNamespace(t)
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"wl-0123456789abc", Options{}, "1 to 15 bytes"},
		{"wl-tun", Options{MTU: 40}, "outside [68, 65535]"},
		{"wl-tun", Options{TxQueueLen: -1}, "must not be negative"},
		{"wl-tun", Options{Kind: Kind(7)}, "unknown device kind"},
	} {
		d, err := Open(h, tc.name, tc.o)
		if err == nil {
			d.Close()
			t.Errorf("Open(%q, %+v) succeeded", tc.name, tc.o)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q, %+v) = %v, want it to say %q", tc.name, tc.o, err, tc.want)
		}
	}
}

func TestOpenSetsUpTheQueue(t *testing.T) {
	for _, kind := range []Kind{Offload, Raw} {
		t.Run(kind.String(), func(t *testing.T) {
			h := newNamespace(t)
			d, err := Open(h, tunName, Options{Kind: kind, MTU: 1400})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if d.Name() != tunName {
				t.Errorf("Name() = %q", d.Name())
			}
			if wantBatch := map[Kind]int{Offload: 128, Raw: 1}[kind]; d.BatchSize() != wantBatch {
				t.Errorf("BatchSize() = %d, want %d", d.BatchSize(), wantBatch)
			}
			s, err := ReadStats(h, tunName)
			if err != nil {
				t.Fatal(err)
			}
			if s.Qdisc != "pfifo" || s.TxQueueLen != DefaultTxQueueLen {
				t.Errorf("queue = %+v, want pfifo and txqueuelen %d", s, DefaultTxQueueLen)
			}
			out, err := netns.Command(h, "tc", "qdisc", "show", "dev", tunName).Output()
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("limit %dp", DefaultTxQueueLen); !strings.Contains(string(out), "pfifo") || !strings.Contains(string(out), want) {
				t.Errorf("tc qdisc show: %q, want pfifo with %s", out, want)
			}
			link, err := netns.Command(h, "ip", "-d", "link", "show", tunName).Output()
			if err != nil {
				t.Fatal(err)
			}
			wantHdr := map[Kind]string{Offload: "vnet_hdr on", Raw: "vnet_hdr off"}[kind]
			if !strings.Contains(string(link), "mtu 1400") || !strings.Contains(string(link), wantHdr) {
				t.Errorf("ip -d link: %s\nwant mtu 1400 and %s", link, wantHdr)
			}
			if _, err := d.Write([][]byte{make([]byte, 40)}, MinOffset-1); err == nil {
				t.Error("Write accepted an offset below MinOffset")
			}
		})
	}
}

// TestQueueDropsCountsRingOverflow fills the ring of a device nobody reads
// and checks that every packet beyond txqueuelen is counted as dropped, at
// the ring and not in the qdisc.
func TestQueueDropsCountsRingOverflow(t *testing.T) {
	const ring, sent = 16, 100
	for _, kind := range []Kind{Offload, Raw} {
		t.Run(kind.String(), func(t *testing.T) {
			h := newNamespace(t)
			// No IPv6 on the device, so that no router solicitation
			// or MLD report takes a ring slot.
			for _, k := range []string{"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"} {
				if err := h.SetSysctl(k, "1"); err != nil {
					t.Fatal(err)
				}
			}
			d, err := Open(h, tunName, Options{Kind: kind, TxQueueLen: ring})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			local, peer := netip.MustParseAddr("10.250.0.1"), netip.MustParseAddr("10.250.0.2")
			if err := h.AddPeerAddr(tunName, local, netip.PrefixFrom(peer, 32)); err != nil {
				t.Fatal(err)
			}
			if err := h.SetLinkUp(tunName); err != nil {
				t.Fatal(err)
			}
			var conn net.Conn
			if err := netns.Do(h, func() (err error) {
				conn, err = net.Dial("udp4", "10.250.0.2:9")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for range sent {
				if _, err := conn.Write(make([]byte, 100)); err != nil {
					t.Fatal(err)
				}
			}
			s, err := ReadStats(h, tunName)
			if err != nil {
				t.Fatal(err)
			}
			if s.TxDropped != sent-ring || s.QdiscDrops != 0 || s.QdiscBacklog != 0 {
				t.Errorf("after %d datagrams into a ring of %d: %+v; want TxDropped %d and nothing in the qdisc",
					sent, ring, s, sent-ring)
			}
			if n := s.RingDrops(); n != sent-ring {
				t.Errorf("RingDrops = %d; want %d", n, sent-ring)
			}
			// The ring holds exactly the first txqueuelen datagrams.
			got := make(chan int)
			go func() {
				bufs := [][]byte{make([]byte, 2048)}
				if d.BatchSize() > 1 {
					bufs = make([][]byte, d.BatchSize())
					for i := range bufs {
						bufs[i] = make([]byte, 2048)
					}
				}
				sizes := make([]int, len(bufs))
				total := 0
				for {
					n, err := d.Read(bufs, sizes, MinOffset)
					if err != nil {
						got <- total
						return
					}
					for i := range n {
						if sizes[i] != 128 { // 20 IP + 8 UDP + 100
							t.Errorf("read a %d-byte packet, want 128", sizes[i])
						}
					}
					if total += n; total == ring {
						got <- total
					}
				}
			}()
			select {
			case n := <-got:
				if n != ring {
					t.Errorf("read %d packets from the ring, want %d", n, ring)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the ring did not yield %d packets", ring)
			}
		})
	}
}

// TestForwardingBetweenNamespaces joins a client and a server namespace by
// two TUN devices and a copying loop, then pings and moves 50 MB of TCP
// across, once with each kind of device.
func TestForwardingBetweenNamespaces(t *testing.T) {
	size := 50 << 20
	if raceEnabled {
		size = 8 << 20
	}
	data := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{'w', 'l'})
	rng.Read(data)
	for _, kind := range []Kind{Offload, Raw} {
		t.Run(kind.String(), func(t *testing.T) {
			tb, c, s := newPair(t, kind)
			up, down := startForwarding(t, c, s)
			for _, dst := range []netip.Addr{s.v4, s.v6} {
				cmd := tb.Command(c.ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", dst.String())
				cmd.Args[0] = netns.Prefix + tb.Name() + "-ping"
				out, err := cmd.CombinedOutput()
				if err != nil || !strings.Contains(string(out), "3 received") {
					t.Fatalf("ping %s from %s: %v\n%s", dst, c.ns.Name(), err, out)
				}
			}
			for _, tc := range []struct {
				dst  netip.Addr
				data []byte
			}{{s.v4, data}, {s.v6, data[:4<<20]}} {
				elapsed := roottest.Transfer(t, c.ns, s.ns, tc.dst, tc.data)
				t.Logf("%s, %s: %d MB in %v = %.0f Mbit/s", kind, tc.dst, len(tc.data)>>20, elapsed.Round(time.Millisecond),
					float64(len(tc.data))*8/elapsed.Seconds()/1e6)
			}
			t.Logf("%s: client->server %d packets in %d reads (%.1f per read), server->client %d in %d",
				kind, up.packets.Load(), up.reads.Load(), float64(up.packets.Load())/float64(up.reads.Load()),
				down.packets.Load(), down.reads.Load())
			for _, h := range []*host{c, s} {
				// Under the race detector the copying loop may fall
				// behind: only a reader at full speed keeps the ring.
				if st, err := ReadStats(h.ns, tunName); err != nil || st.RingDrops() != 0 && !raceEnabled {
					t.Errorf("%s: RingDrops = %d, %v; want 0 with a reader that keeps up", h.ns.Name(), st.RingDrops(), err)
				}
			}
			// The kernel counts a coalesced write as one packet.
			if st, err := ReadStats(s.ns, tunName); err == nil {
				t.Logf("%s: the server's kernel received %d packets for the %d forwarded", kind, st.RxPackets, up.packets.Load())
			}
		})
	}
}
