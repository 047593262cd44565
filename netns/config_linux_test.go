package netns

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestConfigFromInside(t *testing.T) {
	h := newNamespace(t)
	if err := h.LoopbackUp(); err != nil {
		t.Fatal(err)
	}
	// A veth pair with both ends inside stands in for the TUN (which the
	// tun package tests); the kernel may lack the dummy driver.
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "wl-d0"}, PeerName: "wl-d1"}
	if err := h.Netlink().LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		what string
		err  error
	}{
		{"mtu", h.SetMTU("wl-d0", 1400)},
		{"txqueuelen", h.SetTxQueueLen("wl-d0", 1234)},
		{"v4", h.AddAddr("wl-d0", netip.MustParsePrefix("10.250.7.1/24"))},
		{"v4 peer", h.AddPeerAddr("wl-d0", netip.MustParseAddr("10.250.8.1"), netip.MustParsePrefix("10.250.8.2/32"))},
		{"v6", h.AddAddr("wl-d0", netip.MustParsePrefix("fd77:7::1/64"))},
		{"v6 peer while down", wantErr(h.AddPeerAddr("wl-d0", netip.MustParseAddr("fd77:8::1"), netip.MustParsePrefix("fd77:8::2/128")), "before adding the IPv6 peer")},
		{"up", h.SetLinkUp("wl-d0")},
		{"v6 peer", h.AddPeerAddr("wl-d0", netip.MustParseAddr("fd77:8::1"), netip.MustParsePrefix("fd77:8::2/128"))},
		{"default", h.AddRoute(Route{Dst: netip.MustParsePrefix("0.0.0.0/0"), Dev: "wl-d0"})},
		{"default6", h.AddRoute(Route{Dst: netip.MustParsePrefix("::/0"), Dev: "wl-d0"})},
		{"via", h.AddRoute(Route{Dst: netip.MustParsePrefix("10.251.0.0/16"), Dev: "wl-d0", Via: netip.MustParseAddr("10.250.7.2"), Src: netip.MustParseAddr("10.250.7.1")})},
	}
	for _, s := range steps {
		if s.err != nil {
			t.Fatalf("%s: %v", s.what, s.err)
		}
	}
	link := ipNetnsExec(t, h.Name(), "ip", "-o", "link", "show", "wl-d0")
	for _, want := range []string{"mtu 1400", "qlen 1234", ",UP"} {
		if !strings.Contains(link, want) {
			t.Errorf("ip link lacks %q:\n%s", want, link)
		}
	}
	addrs := ipNetnsExec(t, h.Name(), "ip", "-o", "addr", "show", "dev", "wl-d0")
	for _, want := range []string{"inet 10.250.7.1/24", "inet 10.250.8.1 peer 10.250.8.2/32", "inet6 fd77:7::1/64", "inet6 fd77:8::1 peer fd77:8::2/128"} {
		if !strings.Contains(addrs, want) {
			t.Errorf("ip addr lacks %q:\n%s", want, addrs)
		}
	}
	for _, line := range strings.Split(addrs, "\n") {
		if strings.Contains(line, "fd77:7::1") && (strings.Contains(line, "tentative") || !strings.Contains(line, "nodad")) {
			t.Errorf("IPv6 address should be nodad and not tentative:\n%s", line)
		}
	}
	routes := ipNetnsExec(t, h.Name(), "ip", "route", "show")
	for _, want := range []string{"default dev wl-d0 scope link", "10.251.0.0/16 via 10.250.7.2 dev wl-d0 src 10.250.7.1"} {
		if !strings.Contains(routes, want) {
			t.Errorf("ip route lacks %q:\n%s", want, routes)
		}
	}
	r6 := ipNetnsExec(t, h.Name(), "ip", "-6", "route", "show")
	for _, want := range []string{"default dev wl-d0", "fd77:8::2 dev wl-d0"} {
		if !strings.Contains(r6, want) {
			t.Errorf("ip -6 route lacks %q:\n%s", want, r6)
		}
	}
	// Nothing of this reached the root namespace.
	if out, _ := exec.Command("ip", "-o", "link", "show", "wl-d0").CombinedOutput(); !strings.Contains(string(out), "does not exist") {
		t.Errorf("wl-d0 is visible in the root namespace:\n%s", out)
	}
	if err := h.SetMTU("wl-nosuch", 1400); err == nil || !strings.Contains(err.Error(), "no interface wl-nosuch") {
		t.Errorf("SetMTU on a missing interface: %v", err)
	}
	if err := h.AddPeerAddr("wl-d0", netip.MustParseAddr("10.1.1.1"), netip.MustParsePrefix("fd00::2/128")); err == nil {
		t.Error("a v4 address with a v6 peer was accepted")
	}
}

func TestLinkStatsCountsPackets(t *testing.T) {
	tb := newTestbed(t)
	h := mustNamespace(t, tb, "a")
	if err := h.LoopbackUp(); err != nil {
		t.Fatal(err)
	}
	before, err := h.LinkStats("lo")
	if err != nil {
		t.Fatal(err)
	}
	out, err := tb.Command(h, "ping", "-c", "2", "-i", "0.2", "-W", "2", "127.0.0.1").CombinedOutput()
	if err != nil {
		t.Fatalf("ping on loopback: %v\n%s", err, out)
	}
	after, err := h.LinkStats("lo")
	if err != nil {
		t.Fatal(err)
	}
	// Two echo requests and two replies cross lo.
	if d := after.TxPackets - before.TxPackets; d < 4 {
		t.Errorf("lo sent %d packets during ping -c 2, want at least 4", d)
	}
}

// wantErr turns an expected error into nil and its absence into an error.
func wantErr(err error, substr string) error {
	if err != nil && strings.Contains(err.Error(), substr) {
		return nil
	}
	return fmt.Errorf("got error %v, want one containing %q", err, substr)
}
