package tun

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/netns"
)

func TestVNetOpens(t *testing.T) {
	tb := newTestbed(t)
	h, err := tb.Namespace("a")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(h, tunName, Options{Kind: VNet, MTU: 1400})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	v, ok := d.(VNetDevice)
	if !ok {
		t.Fatalf("a VNet device is a %T, not a VNetDevice", d)
	}
	if off := v.Offloads(); off&(tunFCSUM|tunFTSO4|tunFTSO6) != tunFCSUM|tunFTSO4|tunFTSO6 {
		t.Errorf("offloads %#x lack checksum or TSO", off)
	}
	link, err := netns.Command(h, "ip", "-d", "link", "show", tunName).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(link), "mtu 1400") || !strings.Contains(string(link), "vnet_hdr on") {
		t.Errorf("ip -d link: %s\nwant mtu 1400 and vnet_hdr on", link)
	}
	bufs, sizes := [][]byte{make([]byte, 100)}, []int{0}
	if n, err := v.TryRead(bufs, sizes, VNetHdrLen); n != 0 || err != nil {
		t.Errorf("TryRead on a device that is down = %d, %v; want 0, nil", n, err)
	}
	start := time.Now()
	if r, w, err := v.Wait(-1, 20*time.Millisecond); r || w || err != nil || time.Since(start) < 20*time.Millisecond {
		t.Errorf("Wait with nothing to read = %v, %v, %v after %v", r, w, err, time.Since(start))
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := v.Wait(-1, -1)
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	d.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Wait returned no error after Close")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not end a Wait")
	}
}

// TestVNetForwarding copies packets between two VNet devices with their
// virtio-net headers as they are: super-packets and partial checksums
// cross, and the kernels accept them.
func TestVNetForwarding(t *testing.T) {
	tb, c, s := newPair(t, VNet)
	up, _ := startForwarding(t, c, s)
	for _, dst := range []netip.Addr{s.v4, s.v6} {
		cmd := tb.Command(c.ns, "ping", "-c", "2", "-i", "0.2", "-W", "2", dst.String())
		cmd.Args[0] = netns.Prefix + tb.Name() + "-ping"
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "2 received") {
			t.Fatalf("ping %s: %v\n%s", dst, err, out)
		}
	}
	data := make([]byte, 32<<20)
	rand.NewChaCha8([32]byte{'v'}).Read(data)
	before := up.packets.Load()
	el := roottest.Transfer(t, c.ns, s.ns, s.v4, data)
	n := up.packets.Load() - before
	t.Logf("32 MB in %v (%.1f Gbit/s), %d packets up: %.0f bytes each", el.Round(time.Millisecond),
		float64(len(data))*8/el.Seconds()/1e9, n, float64(len(data))/float64(n))
	// Super-packets: far fewer reads than MTU-sized segments would need.
	if n == 0 || len(data)/int(n) < 4000 {
		t.Errorf("%d packets for %d bytes: the kernel sent no super-packets", n, len(data))
	}
}
