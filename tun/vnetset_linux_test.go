package tun

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
	"wanlab/netns"
)

// notVNet is a VNetDevice that Open did not make.
type notVNet struct{ VNetDevice }

func (notVNet) Name() string { return "fake" }

// TestVNetSet waits on two VNet TUNs of one namespace: a packet sent
// through the second makes it, and only it, readable; the wake eventfd
// ends a wait; a closed device ends it with os.ErrClosed.
func TestVNetSet(t *testing.T) {
	tb := roottest.NewTestbed(t)
	ns, err := tb.Namespace("a")
	if err != nil {
		t.Fatal(err)
	}
	// No IPv6: its router solicitations would make a device readable.
	if err := ns.SetSysctl("net.ipv6.conf.default.disable_ipv6", "1"); err != nil {
		t.Fatal(err)
	}
	var devs []VNetDevice
	for _, name := range []string{"wl-tun0", "wl-tun1"} {
		d, err := Open(ns, name, Options{Kind: VNet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		if err := tb.AddDevice(ns, name); err != nil {
			t.Fatal(err)
		}
		if err := ns.SetLinkUp(name); err != nil {
			t.Fatal(err)
		}
		devs = append(devs, d.(VNetDevice))
	}
	peer := netip.MustParseAddr("10.249.0.2")
	if err := ns.AddPeerAddr("wl-tun1", netip.MustParseAddr("10.249.0.1"), netip.PrefixFrom(peer, 32)); err != nil {
		t.Fatal(err)
	}
	if _, err := NewVNetSet([]VNetDevice{devs[0], notVNet{}}); err == nil || !strings.Contains(err.Error(), "fake") {
		t.Errorf("a set of a device Open did not make: %v; want an error naming it", err)
	}
	s, err := NewVNetSet(devs)
	if err != nil {
		t.Fatal(err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(wake)
	if woken, err := s.Wait(wake, 20*time.Millisecond); err != nil || woken || s.Readable(0) || s.Readable(1) {
		t.Fatalf("an idle wait: woken %v, readable %v %v, %v; want nothing", woken, s.Readable(0), s.Readable(1), err)
	}
	var conn net.Conn
	if err := netns.Do(ns, func() (err error) {
		conn, err = net.Dial("udp4", netip.AddrPortFrom(peer, 9).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("to the router")); err != nil {
		t.Fatal(err)
	}
	if woken, err := s.Wait(wake, time.Second); err != nil || woken || s.Readable(0) || !s.Readable(1) {
		t.Fatalf("after a datagram out of wl-tun1: woken %v, readable %v %v, %v; want wl-tun1 alone", woken, s.Readable(0), s.Readable(1), err)
	}
	unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	if woken, err := s.Wait(wake, time.Second); err != nil || !woken {
		t.Fatalf("a signalled wake: woken %v, %v", woken, err)
	}
	devs[0].Close()
	if _, err := s.Wait(-1, time.Second); !errors.Is(err, os.ErrClosed) {
		t.Errorf("a wait on a closed device: %v; want os.ErrClosed", err)
	}
}
